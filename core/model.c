/* model.c: the one model of a backend, its filters and its estimate.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The filters behind the estimate (model.h): a ring of delivery
 * slots and the last completions for delivery-rate samples
 * (max-bandwidth), ten buckets of the fastest near and far read
 * (min-latency), and moving averages of a read's size and time (the
 * line fit, and the "as fast as the pool" test).  A read for a slot or
 * bucket newer than the one in its place reuses the place (the old one
 * left the window long ago); a read for an older one is too late to
 * count.  Terms and which decision reads which field: docs/DESIGN.md
 * §6.2.
 */

#include <config.h>

#include <stddef.h>
#include <string.h>

#include "minmax.h"
#include "model.h"

#define BUCKET_NS (ADAPTRA_MODEL_LATENCY_NS / ADAPTRA_MODEL_BUCKETS)

enum adaptra_model_distance
adaptra_model_start (struct adaptra_model *m, uint64_t offset, uint64_t bytes)
{
  __atomic_fetch_add (&m->running, bytes, __ATOMIC_RELAXED);
  __atomic_fetch_add (&m->reads, 1, __ATOMIC_RELAXED);
  return __atomic_exchange_n (&m->next_offset, offset + bytes,
                              __ATOMIC_RELAXED) == offset
    ? ADAPTRA_MODEL_NEAR : ADAPTRA_MODEL_FAR;
}

void
adaptra_model_end (struct adaptra_model *m, uint64_t bytes)
{
  __atomic_fetch_sub (&m->running, bytes, __ATOMIC_RELAXED);
  __atomic_fetch_sub (&m->reads, 1, __ATOMIC_RELAXED);
}

uint64_t
adaptra_model_running (const struct adaptra_model *m)
{
  return __atomic_load_n (&m->running, __ATOMIC_RELAXED);
}

uint64_t
adaptra_model_reads (const struct adaptra_model *m)
{
  return __atomic_load_n (&m->reads, __ATOMIC_RELAXED);
}

uint64_t
adaptra_model_delivered (const struct adaptra_model *m)
{
  return m->delivered;
}

/* Slot ids are the slot's number + 1, so that 0 is a place unused. */
static uint64_t
slot_id (uint64_t t)
{
  return t / ADAPTRA_MODEL_SLOT_NS + 1;
}

static void
keep_fastest (struct adaptra_model_fastest *f, uint64_t bytes, uint64_t t)
{
  if (f->ns == 0 || t < f->ns) {
    f->ns = t > 0 ? t : 1;
    f->bytes = bytes;
  }
}

/* Move a moving average towards x (the first sample: x itself). */
static void
average (double *avg, double x, bool first)
{
  *avg = first ? x : *avg + (x - *avg) / ADAPTRA_MODEL_EWMA;
}

/* The delivery rate of a read from t0 to t1 that delivered bytes
 * (model.h): bytes a second since the newest completion kept at or
 * before t0, 0 if none is kept.  *served: when the backend turned to
 * the read (model.h): the latest completion kept between t0 and t1,
 * else t0.  *since: where the read's pace starts (ADAPTRA_MODEL_FAST_*):
 * *served if a completion came during the read, else that newest one
 * before it, else t0.  Records the completion.
 */
static uint64_t
delivery_rate (struct adaptra_model *m, uint64_t bytes, uint64_t t0,
               uint64_t t1, uint64_t *served, uint64_t *since)
{
  unsigned i, n = m->ndone < ADAPTRA_MODEL_DONE ? m->ndone
    : ADAPTRA_MODEL_DONE;
  uint64_t rate = 0;
  struct adaptra_model_done *d;

  m->delivered += bytes;
  *served = *since = t0;
  for (i = 1; i <= n; i++) {
    d = &m->done[(m->ndone - i) % ADAPTRA_MODEL_DONE];
    if (d->t > *served && d->t < t1)
      *served = d->t;
    if (d->t <= t0) {
      *since = d->t;
      if (t1 > d->t)
        rate = (uint64_t) ((double) (m->delivered - d->delivered) * 1e9 /
                           (double) (t1 - d->t));
      break;
    }
  }
  if (*served > t0)
    *since = *served;
  d = &m->done[m->ndone++ % ADAPTRA_MODEL_DONE];
  d->t = t1;
  d->delivered = m->delivered;
  return rate;
}

void
adaptra_model_deliver (struct adaptra_model *m, uint64_t bytes)
{
  __atomic_fetch_add (&m->unsampled, bytes, __ATOMIC_RELAXED);
}

/* A read's pace (ADAPTRA_MODEL_FAST_*): a read of bytes that took t
 * (its time less what its thread waited for a CPU) and ended at t1,
 * one of the reads that together delivered delivered bytes from since
 * to t1: its share of that span, or t where shorter.
 */
static double
pace_of (uint64_t bytes, uint64_t delivered, uint64_t t, uint64_t since,
         uint64_t t1)
{
  double span = t1 > since ? (double) (t1 - since) : 0;

  if (delivered > 0)
    span = span * (double) bytes / (double) delivered;
  return span < (double) t ? span : (double) t;
}

/* Move the moving average of the pace (ADAPTRA_MODEL_FAST_*) towards
 * the median of the last ADAPTRA_MODEL_FAST_MEDIAN samples' paces, x
 * the newest (m->paces holds the others, oldest first); first: they
 * all start at x.
 */
static void
pace_step (struct adaptra_model *m, double x, bool first)
{
  double sorted[ADAPTRA_MODEL_FAST_MEDIAN], v;
  unsigned i, j;

  for (i = 0; i < ADAPTRA_MODEL_FAST_MEDIAN; i++) {
    v = first || i == 0 ? x : m->paces[i - 1];
    for (j = i; j > 0 && sorted[j - 1] > v; j--)
      sorted[j] = sorted[j - 1];
    sorted[j] = v;
  }
  for (i = 0; i + 1 < ADAPTRA_MODEL_FAST_MEDIAN; i++)
    m->paces[i] = first || i + 2 == ADAPTRA_MODEL_FAST_MEDIAN ? x
      : m->paces[i + 1];
  average (&m->pace, sorted[ADAPTRA_MODEL_FAST_MEDIAN / 2], first);
}

/* Move the moving averages of a read's size and time towards a read
 * of n bytes in t ns; first: they start there.
 */
static void
mean_step (struct adaptra_model_mean *mean, double n, double t, bool first)
{
  average (&mean->n, n, first);
  average (&mean->t, t, first);
  average (&mean->nn, n * n, first);
  average (&mean->nt, n * t, first);
}

static void judge_distance (struct adaptra_model *m, uint64_t now);
static void least_latency (const struct adaptra_model *m, uint64_t now,
                           uint64_t rate, bool halve, uint64_t *near,
                           uint64_t *far, uint64_t *far_reads);

void
adaptra_model_sample (struct adaptra_model *m, uint64_t bytes,
                      uint64_t t0, uint64_t t1,
                      enum adaptra_model_distance where)
{
  adaptra_model_sample_waited (m, bytes, t0, t1, where, 0);
}

void
adaptra_model_sample_waited (struct adaptra_model *m, uint64_t bytes,
                             uint64_t t0, uint64_t t1,
                             enum adaptra_model_distance where,
                             uint64_t waited_ns)
{
  uint64_t id = slot_id (t1), second = t1 / BUCKET_NS + 1;
  uint64_t t = t1 > t0 ? t1 - t0 : 0;
  struct adaptra_model_slot *s = &m->slot[id % ADAPTRA_MODEL_SLOTS];
  struct adaptra_model_bucket *b = &m->bucket[second % ADAPTRA_MODEL_BUCKETS];
  double n = (double) bytes, dt = (double) t;
  /* The engine's own samples find none: no locked exchange for them. */
  uint64_t unsampled = __atomic_load_n (&m->unsampled, __ATOMIC_RELAXED)
    ? __atomic_exchange_n (&m->unsampled, 0, __ATOMIC_RELAXED) : 0;
  uint64_t served, since, rate = delivery_rate (m, bytes + unsampled, t0, t1,
                                                &served, &since);

  bool first = m->samples++ == 0;
  struct adaptra_model_mean *mean = where == ADAPTRA_MODEL_NEAR ? &m->near
    : where == ADAPTRA_MODEL_FAR ? &m->far : NULL;

  mean_step (&m->all, n, dt, first);
  pace_step (m, pace_of (bytes, bytes + unsampled,
                         t > waited_ns ? t - waited_ns : 0, since, t1),
             first);
  average (&m->beside, (double) adaptra_model_reads (m), first);
  if (mean)
    mean_step (mean, n, dt > 0 ? dt : 1, mean->t == 0);
  if (mean && served > t0 && where == ADAPTRA_MODEL_FAR) {
    /* A far read's: not before the fastest read's time from its start
     * (model.h).
     */
    uint64_t near, far, far_reads;

    least_latency (m, t1, 0, false, &near, &far, &far_reads);
    near = near < far ? near : far;
    if (near != UINT64_MAX && served < t0 + near)
      served = t0 + near;
  }
  if (mean && served > t0 && t1 > served) {
    memcpy (m->served_before, m->served, sizeof m->served);
    mean_step (&m->served[where], n, (double) (t1 - served),
               m->served[where].t == 0);
  }

  if (id > m->newest)
    m->newest = id;
  if (s->id < id) {
    s->id = id;
    s->bytes = s->rate = 0;
  }
  if (s->id == id) {
    s->bytes += bytes + unsampled;
    if (rate > s->rate)
      s->rate = rate;
  }

  if (b->id < second) {
    b->id = second;
    b->near = b->far = (struct adaptra_model_fastest) { 0 };
    b->far_reads = 0;
  }
  if (b->id == second && where == ADAPTRA_MODEL_NEAR)
    keep_fastest (&b->near, bytes, t);
  if (b->id == second && where == ADAPTRA_MODEL_FAR) {
    keep_fastest (&b->far, bytes, t);
    b->far_reads++;
  }
  judge_distance (m, t1);
}

/* The line t = latency + n * slope through a mean's moving averages
 * of n, t, n^2 and n*t; slope 0 when the sizes do not spread.
 * Returns whether they do.
 */
static bool
fit_line (const struct adaptra_model_mean *mean, double *latency,
          double *slope)
{
  double var = mean->nn - mean->n * mean->n;
  double cov = mean->nt - mean->n * mean->t;
  bool spread = var > ADAPTRA_MODEL_FIT_SPREAD * mean->n * mean->n;

  *latency = mean->t;
  *slope = 0;
  if (spread && cov > 0) {
    *slope = cov / var;
    *latency = mean->t - mean->n * *slope;
    if (*latency < 0)
      *latency = 0;
  }
  return spread;
}

/* The least latency at rate, near reads or far, for the latency the
 * engine sizes by (least_latency's halve); UINT64_MAX where none was
 * seen.
 */
static uint64_t
least_of (const struct adaptra_model *m, uint64_t now, uint64_t rate)
{
  uint64_t near, far, far_reads;

  least_latency (m, now, rate, true, &near, &far, &far_reads);
  return near < far ? near : far;
}

/* Do the reads queue (model.h, ADAPTRA_MODEL_FIT_BESIDE): is the
 * line's fixed cost, fixed_ns, more than the limit's gain over the
 * least latency, least (UINT64_MAX where none was seen)?
 */
static bool
queued (uint64_t least, double fixed_ns)
{
  return least != UINT64_MAX &&
    fixed_ns * ADAPTRA_MODEL_GAIN_DEN > (double) least * ADAPTRA_MODEL_GAIN_NUM;
}

/* The max-bandwidth filter: the most of three lower bounds of what the
 * backend moves a second (model.h).  *transfer is the most of the two
 * that measure the transfer alone (the slots, or the rate samples in
 * startup, and the line), by which a read's transfer is taken off its
 * time: a lone read's n / t would take all of it off.  The bandwidth
 * returned, which sizes what goes in flight, counts the line in startup
 * in full only where reads go one at a time (ADAPTRA_MODEL_FIT_BESIDE),
 * else at most the gain over the rate samples: a token bucket's burst
 * puts its slope at nought (model.h); and so wherever reads queue
 * (queued): their times are their places in the queue, not their sizes.
 * *least, unless least is NULL: the least latency at the *transfer
 * rate (least_of), which the estimate sizes by.
 */
static uint64_t
bandwidth (const struct adaptra_model *m, uint64_t now, uint64_t *transfer,
           bool *startup, uint64_t *least)
{
  uint64_t id = slot_id (now), most = 0, sampled = 0, rate, line = 0;
  uint64_t least_ns = UINT64_MAX;
  double latency, slope;
  size_t i;

  for (i = 0; i < ADAPTRA_MODEL_SLOTS; i++) {
    const struct adaptra_model_slot *s = &m->slot[i];

    /* In the last second; over (two slots ago or older, by now and by
     * what completed) for its bytes.
     */
    if (s->id == 0 || s->id > id ||
        s->id + 2 + ADAPTRA_MODEL_WINDOW_SLOTS <= id)
      continue;
    if (s->id + 2 <= id && s->id + 2 <= m->newest && s->bytes > most)
      most = s->bytes;
    if (s->rate > sampled)
      sampled = s->rate;
  }
  *startup = most == 0;
  rate = most > 0 ? (uint64_t) ((double) most * 1e9 / ADAPTRA_MODEL_SLOT_NS)
    : sampled;
  if (m->samples > 0) {
    fit_line (&m->all, &latency, &slope);
    if (slope > 0)
      line = (uint64_t) (1e9 / slope);
  }
  *transfer = line > rate ? line : rate;
  if (least || line > rate)
    least_ns = least_of (m, now, *transfer);
  if (least)
    *least = least_ns;
  if (line > rate &&
      ((*startup && m->beside >= ADAPTRA_MODEL_FIT_BESIDE) ||
       (m->samples > 0 && queued (least_ns, latency))))
    line = line < rate * ADAPTRA_MODEL_GAIN_NUM / ADAPTRA_MODEL_GAIN_DEN
      ? line : rate * ADAPTRA_MODEL_GAIN_NUM / ADAPTRA_MODEL_GAIN_DEN;
  if (line > rate)
    rate = line;
  if (m->all.t > 0 && m->all.n * 1e9 / m->all.t > (double) rate)
    rate = (uint64_t) (m->all.n * 1e9 / m->all.t);
  return rate;
}

/* A fastest read's latency at bandwidth rate: its time less its
 * transfer.  For the latency the engine sizes by (halve true), at most
 * half its time comes off: under a light load (one read at a time, all
 * of one size) the bandwidth is the reads themselves, whose whole time
 * would pass for transfer.  For the distance test (halve false), all
 * of it: a near read on a disk is all transfer, and its bandwidth is
 * known from those very reads.
 */
static uint64_t
latency_of (const struct adaptra_model_fastest *f, uint64_t rate, bool halve)
{
  uint64_t transfer = rate ? (uint64_t) ((double) f->bytes * 1e9 /
                                         (double) rate) : 0;

  if (halve && transfer > f->ns / 2)
    transfer = f->ns / 2;
  return sub_sat_u64 (f->ns, transfer);
}

/* The min-latency filter over the buckets of the window, near and far
 * reads apart; UINT64_MAX where none was seen.  *far_reads: the far
 * reads of the window.
 */
static void
least_latency (const struct adaptra_model *m, uint64_t now, uint64_t rate,
               bool halve, uint64_t *near, uint64_t *far,
               uint64_t *far_reads)
{
  uint64_t second = now / BUCKET_NS + 1;
  size_t i;

  *near = *far = UINT64_MAX;
  *far_reads = 0;
  for (i = 0; i < ADAPTRA_MODEL_BUCKETS; i++) {
    const struct adaptra_model_bucket *b = &m->bucket[i];
    uint64_t l;

    if (b->id == 0 || b->id > second ||
        b->id + ADAPTRA_MODEL_BUCKETS <= second)
      continue;
    if (b->near.ns && (l = latency_of (&b->near, rate, halve)) < *near)
      *near = l;
    if (b->far.ns && (l = latency_of (&b->far, rate, halve)) < *far)
      *far = l;
    *far_reads += b->far_reads;
  }
}

/* Is gap at least ADAPTRA_MODEL_SEEK_NS longer than base, and
 * ADAPTRA_MODEL_SEEK_RATIO times as long?
 */
static bool
seek_like (uint64_t base, uint64_t gap)
{
  return gap >= base + ADAPTRA_MODEL_SEEK_NS &&
    gap >= ADAPTRA_MODEL_SEEK_RATIO * base;
}

/* By the whole times: what the fastest far read waits longer than the
 * fastest near one, their transfer at rate taken off; 0 if not a seek
 * (seek_like).
 */
static uint64_t
seek_gap (const struct adaptra_model *m, uint64_t now, uint64_t rate)
{
  uint64_t near, far, far_reads;

  least_latency (m, now, rate, false, &near, &far, &far_reads);
  return near != UINT64_MAX && far != UINT64_MAX && seek_like (near, far)
    ? far - near : 0;
}

/* The near reads' service time at a read of bytes (model.h): where
 * their sizes spread, by the line through their service times; else
 * their mean scaled to bytes.
 */
static double
served_at (const struct adaptra_model_mean *near, double bytes)
{
  double latency, slope;

  return fit_line (near, &latency, &slope) ? latency + slope * bytes
    : near->t * bytes / near->n;
}

/* By the service times of the reads that queued (model.h): what the
 * mean far read is served longer than the near ones at its size
 * (served_at); 0 if the window holds fewer than
 * ADAPTRA_MODEL_SEEK_READS far reads, or if not a seek: seek_like,
 * or staying (the model sees seeks already), at least
 * ADAPTRA_MODEL_SEEK_STAY_NS longer, by the means now or else by
 * those before the last read that queued (model.h: a swapped
 * completion).
 */
static uint64_t
served_gap (const struct adaptra_model *m, uint64_t now, bool staying)
{
  uint64_t near, far, far_reads;
  const struct adaptra_model_mean *served = m->served;
  unsigned i;

  least_latency (m, now, 0, false, &near, &far, &far_reads);
  if (far_reads < ADAPTRA_MODEL_SEEK_READS)
    return 0;
  for (i = 0; i < (staying ? 2 : 1); i++, served = m->served_before) {
    const struct adaptra_model_mean *n = &served[ADAPTRA_MODEL_NEAR];
    const struct adaptra_model_mean *f = &served[ADAPTRA_MODEL_FAR];

    if (n->n <= 0 || f->t == 0)
      continue;
    near = (uint64_t) served_at (n, f->n);
    far = (uint64_t) f->t;
    if (seek_like (near, far) ||
        (staying && far >= near + ADAPTRA_MODEL_SEEK_STAY_NS))
      return far - near;
  }
  return 0;
}

/* What a seek costs where distance costs: by the service times where
 * reads queued (served, from served_gap), else how much longer the
 * mean far read takes than the mean near one, their sizes' difference
 * at bandwidth rate taken off, at least gap (from seek_gap).  The
 * fastest far read is a short hop, where the mean far read is the
 * seek the queue's turns make; and a queued read's whole time is
 * mostly the reads ahead of it at the head, near or far.
 */
static uint64_t
seek_cost (const struct adaptra_model *m, uint64_t rate, uint64_t gap,
           uint64_t served)
{
  double mean;

  if (served > 0)
    return served;
  if (m->near.t == 0 || m->far.t == 0 || rate == 0)
    return gap;
  mean = m->far.t - m->near.t - (m->far.n - m->near.n) * 1e9 / (double) rate;
  return mean > (double) gap ? (uint64_t) mean : gap;
}

/* Does distance cost (model.h), by either test, at bandwidth rate,
 * and is the seek at least 1/ADAPTRA_MODEL_SEEK_LATENCY_DIV of the
 * latency, the fastest read's, near or far?  was: the model's last
 * answer (the hysteresis).  *gap and *served: the tests' answers.
 */
static bool
distance_costs (const struct adaptra_model *m, uint64_t now, uint64_t rate,
                bool was, uint64_t *gap, uint64_t *served)
{
  uint64_t near, far, far_reads;

  *gap = seek_gap (m, now, rate);
  *served = served_gap (m, now, was);
  if (*gap == 0 && *served == 0)
    return false;
  /* Not the fastest near read's alone: at one head, reads in parallel
   * make every near read wait behind far ones (model.h).
   */
  least_latency (m, now, rate, false, &near, &far, &far_reads);
  if (far < near)
    near = far;
  return near == UINT64_MAX ||
    seek_cost (m, rate, *gap, *served) * ADAPTRA_MODEL_SEEK_LATENCY_DIV >=
    near;
}

/* Judge distance at time now, after a sample: the tests' answer
 * turns the model's only once it has outnumbered the model's own by
 * ADAPTRA_MODEL_SEEK_HOLD samples (model.h: each contrary answer adds
 * one to the count, each agreeing one takes one off).  While the
 * tests see seeks, record what one costs.
 */
static void
judge_distance (struct adaptra_model *m, uint64_t now)
{
  uint64_t transfer, gap, served;
  bool startup, costs;

  bandwidth (m, now, &transfer, &startup, NULL);
  costs = distance_costs (m, now, transfer, m->seeking, &gap, &served);
  if (costs)
    m->seek_ns = seek_cost (m, transfer, gap, served);
  if (costs == m->seeking) {
    if (m->contrary > 0)
      m->contrary--;
  }
  else if (++m->contrary >= ADAPTRA_MODEL_SEEK_HOLD) {
    m->seeking = costs;
    m->contrary = 0;
  }
}

/* The largest power of two not over n (n > 0). */
static uint64_t
pow2_floor (uint64_t n)
{
  return UINT64_C (1) << (63 - __builtin_clzll (n));
}

static uint64_t
clamp (uint64_t n, uint64_t lo, uint64_t hi)
{
  return n < lo ? lo : n > hi ? hi : n;
}

/* Where distance costs, the head's transfer rate (model.h): the near
 * reads' size over their service time, moving averages of the reads
 * that queued; 0 where none has been served so.
 */
static uint64_t
head_rate (const struct adaptra_model *m)
{
  const struct adaptra_model_mean *near = &m->served[ADAPTRA_MODEL_NEAR];

  return near->t > 0 ? (uint64_t) (near->n * 1e9 / near->t) : 0;
}

void
adaptra_model_estimate (const struct adaptra_model *m, uint64_t now,
                        struct adaptra_model_estimate *est)
{
  uint64_t least, transfer;
  double fit_latency, slope;

  est->bandwidth = bandwidth (m, now, &transfer, &est->startup, &least);
  est->seeks = m->seeking;
  est->seek_ns = est->seeks ? m->seek_ns : 0;
  if (est->seeks && head_rate (m) > 0)
    est->bandwidth = head_rate (m);
  est->latency_ns = least == UINT64_MAX ? 0 : least;
  est->bdp = (uint64_t) ((double) est->bandwidth *
                         (double) est->latency_ns / 1e9);
  est->read_ns = (uint64_t) m->all.t;
  fit_line (&m->all, &fit_latency, &slope);
  est->fixed_ns = m->samples ? (uint64_t) fit_latency : 0;
  est->latency_bound = least != UINT64_MAX && !est->seeks &&
    est->latency_ns >= ADAPTRA_MODEL_LATENCY_MIN;

  est->depth = est->latency_bound ? 0 : ADAPTRA_MODEL_DEPTH;
  est->limit = UINT64_MAX;
  est->turn_ns = 0;
  if (est->latency_bound && est->bandwidth > 0) {
    /* A read holds its bytes in flight for its latency and its own
     * transfer: the product, and the mean read (model.h).
     */
    uint64_t held = est->bdp + (uint64_t) m->all.n;

    est->limit = est->startup ? held * ADAPTRA_MODEL_STARTUP_GAIN
      : held * ADAPTRA_MODEL_GAIN_NUM / ADAPTRA_MODEL_GAIN_DEN;
    if (est->limit < ADAPTRA_MODEL_LIMIT_MIN)
      est->limit = ADAPTRA_MODEL_LIMIT_MIN;
  }

  if (est->limit != UINT64_MAX) {
    /* In startup the product is the rate samples', which a token
     * bucket's burst inflates (model.h): competing streams' jobs stay
     * small until a slot has measured the bandwidth.
     */
    est->chunk = est->startup ? ADAPTRA_MODEL_CHUNK_MIN
      : pow2_floor (clamp (est->bdp / ADAPTRA_MODEL_CHUNK_DIVISOR,
                           ADAPTRA_MODEL_CHUNK_MIN,
                           ADAPTRA_MODEL_CHUNK_MAX));
    est->budget = est->chunk;
    est->job_min = est->limit / ADAPTRA_MODEL_STREAM_READS;
    if (est->job_min < ADAPTRA_MODEL_CHUNK_FLOOR)
      est->job_min = ADAPTRA_MODEL_CHUNK_FLOOR;
    est->job_max = ADAPTRA_MODEL_JOB_BDPS * est->bdp;
    if (est->job_max < est->job_min)
      est->job_max = est->job_min;
  }
  else {
    /* The line's product: a read's fixed cost at the transfer rate. */
    est->chunk = clamp (m->samples && slope > 0
                        ? (uint64_t) (fit_latency / slope)
                        : (uint64_t) m->all.n,
                        ADAPTRA_MODEL_CHUNK_FLOOR, ADAPTRA_MODEL_CHUNK_MAX);
    est->budget = ADAPTRA_MODEL_BUDGET;
    if (est->seeks) {
      /* A turn's transfer, ADAPTRA_MODEL_SEEK_TURN seeks' worth; and
       * while streams compete a job is a turn: a window goes to the
       * head in one read, not in pieces that race there.
       */
      est->budget = clamp ((uint64_t) ((double) est->seek_ns *
                                       ADAPTRA_MODEL_SEEK_TURN *
                                       (double) est->bandwidth / 1e9),
                           ADAPTRA_MODEL_CHUNK_MAX,
                           ADAPTRA_REQUEST_MAX);
      est->chunk = est->budget;
      if (est->bandwidth > 0)
        est->turn_ns = est->seek_ns +
          (uint64_t) ((double) est->budget * 1e9 / (double) est->bandwidth);
    }
    est->job_min = ADAPTRA_MODEL_CHUNK_FLOOR;
    /* Where it seeks, no job holds the head longer than a turn: a read
     * started cannot be cut, and every other stream's reader waits
     * behind it, however its turn is bounded.
     */
    est->job_max = est->seeks ? est->budget : UINT64_MAX;
  }
}

uint64_t
adaptra_model_chunk (const struct adaptra_model_estimate *est,
                     uint64_t streams)
{
  uint64_t fill;

  if (est->limit == UINT64_MAX || est->startup || streams == 0)
    return est->chunk;
  fill = est->limit / (streams * ADAPTRA_MODEL_STREAM_READS);
  if (fill <= est->chunk)
    return est->chunk;
  return fill >= ADAPTRA_MODEL_CHUNK_MAX ? ADAPTRA_MODEL_CHUNK_MAX
    : pow2_floor (fill) << (fill & (fill - 1) ? 1 : 0);
}

uint64_t
adaptra_model_fetch_ns (const struct adaptra_model_estimate *est,
                        uint64_t bytes)
{
  if (est->bandwidth == 0)
    return est->fixed_ns;
  return est->fixed_ns +
    (uint64_t) ((double) bytes * 1e9 / (double) est->bandwidth);
}

bool
adaptra_model_fast (const struct adaptra_model *m, uint64_t now,
                    bool was_fast)
{
  double slack = was_fast ? 2 : 1;
  double bound = ADAPTRA_MODEL_FAST_LATENCY_NS +
    m->all.n * 1e9 / (double) ADAPTRA_MODEL_FAST_BYTES_PER_SEC;
  struct adaptra_model_estimate est;

  if (m->samples < ADAPTRA_MODEL_FAST_SAMPLES || m->pace > slack * bound ||
      m->all.n * 1e9 * slack < m->pace * (double) ADAPTRA_MODEL_FAST_RATE)
    return false;
  adaptra_model_estimate (m, now, &est);
  return !est.seeks && !est.latency_bound;
}
