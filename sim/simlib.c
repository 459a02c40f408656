/* simlib.c: adaptra-sim's parsers, backend models and latency statistics.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* adaptra-sim's parsers, backend models and latency statistics (see
 * simlib.h for the contracts).
 */

#include <config.h>

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <time.h>

#include "simlib.h"

int
sim_parse_size (const char *s, uint64_t *bytes)
{
  char *end;
  double v, scale = 1;

  if (!s || !isdigit ((unsigned char) *s))
    return -1;
  errno = 0;
  v = strtod (s, &end);
  if (errno != 0 || end == s)
    return -1;
  switch (toupper ((unsigned char) *end)) {
  case '\0': break;
  case 'K': scale = 1024.0; end++; break;
  case 'M': scale = 1024.0 * 1024; end++; break;
  case 'G': scale = 1024.0 * 1024 * 1024; end++; break;
  case 'T': scale = 1024.0 * 1024 * 1024 * 1024; end++; break;
  default: return -1;
  }
  if (*end == 'i' && end[1] == 'B')
    end += 2;
  else if (*end == 'B')
    end++;
  v *= scale;
  /* 2^63: far past any pool or export, and exact in a double. */
  if (*end != '\0' || v >= 9223372036854775808.0)
    return -1;
  *bytes = (uint64_t) v;
  return 0;
}

int
sim_parse_duration (const char *s, uint64_t *ns)
{
  char *end;
  double v, scale = 1e9;

  if (!s || !(isdigit ((unsigned char) *s) || *s == '.'))
    return -1;
  errno = 0;
  v = strtod (s, &end);
  if (errno != 0 || end == s)
    return -1;
  if (strcmp (end, "ms") == 0)
    scale = 1e6;
  else if (strcmp (end, "us") == 0)
    scale = 1e3;
  else if (strcmp (end, "ns") == 0)
    scale = 1;
  else if (strcmp (end, "s") != 0 && *end != '\0')
    return -1;
  v *= scale;
  /* More than 292 years does not fit in the nanosecond clock. */
  if (v >= 9.2e18)
    return -1;
  *ns = (uint64_t) llround (v);
  return 0;
}

int
sim_model_parse (const char *spec, struct sim_model *m, char *why,
                 size_t len)
{
  char latency[64], bandwidth[64], burst[64] = "0.05", copy[64] = "3G";
  char overshoot[64] = "";
  uint64_t bw, burst_ns, copy_rate;

  memset (m, 0, sizeof *m);
  if (strcmp (spec, "disk") == 0) {
    /* The bench's disk model: 150 MiB/s, seeks 0.5 ms to 8 ms. */
    m->kind = SIM_DISK;
    m->bandwidth = 150.0 * 1024 * 1024;
    m->min_seek_ns = 500000;
    m->max_seek_ns = 8000000;
    return 0;
  }
  if (sscanf (spec, "remote:%63[^:]:%63[^:]:%63[^:]:%63[^:]:%63s", latency,
              bandwidth, burst, copy, overshoot) < 2 ||
      strncmp (spec, "remote:", 7) != 0) {
    snprintf (why, len, "--backend=%s: expected remote:LATENCY:BANDWIDTH"
              "[:BURST[:COPY[:OVERSHOOT]]] (e.g. remote:5ms:200M) or disk",
              spec);
    return -1;
  }
  m->kind = SIM_REMOTE;
  if (sim_parse_duration (latency, &m->latency_ns) == -1) {
    snprintf (why, len, "--backend=%s: cannot parse latency '%s' "
              "(e.g. 5ms, 200us)", spec, latency);
    return -1;
  }
  if (sim_parse_size (bandwidth, &bw) == -1 || bw == 0) {
    snprintf (why, len, "--backend=%s: cannot parse bandwidth '%s' "
              "(bytes per second, e.g. 200M)", spec, bandwidth);
    return -1;
  }
  m->bandwidth = (double) bw;
  /* An empty bucket passes no read: each run adds nothing to it. */
  if (sim_parse_duration (burst, &burst_ns) == -1 || burst_ns == 0) {
    snprintf (why, len, "--backend=%s: cannot parse burst '%s' "
              "(seconds of bandwidth, more than 0, e.g. 0.05)", spec, burst);
    return -1;
  }
  /* The bucket starts full (bucket_init). */
  m->burst_bytes = m->level = m->bandwidth * (double) burst_ns / 1e9;
  if (sim_parse_size (copy, &copy_rate) == -1) {
    snprintf (why, len, "--backend=%s: cannot parse copy rate '%s' "
              "(bytes per second, e.g. 3G, or 0)", spec, copy);
    return -1;
  }
  m->copy_rate = (double) copy_rate;
  m->overshoot_ns = SIM_RATE_OVERSHOOT_NS;
  if (*overshoot && sim_parse_duration (overshoot, &m->overshoot_ns) == -1) {
    snprintf (why, len, "--backend=%s: cannot parse overshoot '%s' "
              "(e.g. 100us, or 0)", spec, overshoot);
    return -1;
  }
  return 0;
}

static uint64_t
transfer_ns (const struct sim_model *m, uint64_t count)
{
  return (uint64_t) llround ((double) count * 1e9 / m->bandwidth);
}

int
sim_model_fits (const struct sim_model *m, uint64_t span_ns, uint64_t bytes)
{
  return (double) span_ns + (double) bytes * 1e9 / m->bandwidth <
    (double) SIM_HORIZON_NS ? 0 : -1;
}

/* What a read got from the bucket in a run: the bytes it took at
 * each of its runs of it.
 */
struct share {
  struct sim_grab *grabs;
  size_t ngrabs, capgrabs;
};

/* A thousandth of a byte: what a read may lack and be complete, so
 * that the rounding of bytes to nanoseconds (200 MiB/s is 0.2097152
 * bytes a nanosecond, inexact in binary) costs no extra step.
 */
#define BYTE_EPS 1e-3

/* Nanoseconds for the bucket's flow to bring bytes (> 0), at least 1
 * so that every sleep moves on: the filter's sleep for what a read
 * lacks (bucket_run's nsec = 1e9 * n / rate).
 */
static uint64_t
ns_for (double bytes, double rate)
{
  double ns = ceil ((bytes - BYTE_EPS) / rate);

  return ns < 1 ? 1 : (uint64_t) ns;
}

/* The first pinned grab at or after t. */
static size_t
first_grab (const struct sim_model *m, uint64_t t)
{
  size_t lo = 0, hi = m->ngrabs;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;

    if (m->grabs[mid].at < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int
grow (void **v, size_t *cap, size_t n, size_t size)
{
  size_t c;
  void *p;

  if (n < *cap)
    return 0;
  c = *cap ? 2 * *cap : 64;
  p = realloc (*v, c * size);
  if (!p)
    return -1;
  *v = p;
  *cap = c;
  return 0;
}

static int
share_grab (struct share *rec, uint64_t at, double bytes)
{
  if (grow ((void **) &rec->grabs, &rec->capgrabs, rec->ngrabs,
            sizeof *rec->grabs) == -1)
    return -1;
  rec->grabs[rec->ngrabs].at = at;
  rec->grabs[rec->ngrabs].bytes = bytes;
  rec->ngrabs++;
  return 0;
}

/* Open read o completes at t in this run. */
static void
complete (struct sim_model *m, struct sim_open *o, uint64_t t,
          size_t *pending)
{
  o->run_left = 0;
  if (o->done != t) {
    o->done = t;
    m->generation++;
  }
  (*pending)--;
}

/* The bytes the bucket must keep at t for the pinned reads' takes from
 * grab gi on: what the flow cannot bring before them.  A read booked
 * later takes only the rest, so that a pinned read's completion, final,
 * never takes bytes the link did not carry (the bucket's capacity
 * aside, which a saturated link does not reach).  The reserve only
 * ever goes against the bucket's level, so the count stops once it
 * reaches level: the bucket has nothing to give then, however much
 * more it would keep.  On a saturated link, where the calendar runs
 * far ahead and a waiting read wakes again and again to nothing, that
 * is most calls, and a few grabs each instead of the whole calendar.
 */
static double
reserved (const struct sim_model *m, size_t gi, uint64_t t, double rate,
          double level)
{
  double sum = 0, most = 0;

  for (; gi < m->ngrabs && most < level; gi++) {
    double need;

    sum += m->grabs[gi].bytes;
    need = sum - (double) (m->grabs[gi].at - t) * rate;
    if (need > most)
      most = need;
  }
  return most;
}

/* Open read o runs the bucket at t, as bucket_run does: takes what it
 * lacks if the bucket has it to give, else all it has and sleeps for
 * the rest (nbdkit_nanosleep, which wakes m->overshoot_ns late).
 * Returns the bytes it took.
 */
static double
run_once (struct sim_model *m, struct sim_open *o, uint64_t t, double *level,
          double reserve, size_t *pending)
{
  double give = *level - reserve;
  double take = give <= 0 ? 0
    : give >= o->run_left - BYTE_EPS ? o->run_left : give;

  o->run_left -= take;
  *level -= take;
  if (o->run_left <= BYTE_EPS)
    complete (m, o, t, pending);
  else
    o->run_wake = t + ns_for (o->run_left, m->bandwidth / 1e9) +
      m->overshoot_ns;
  return take;
}

/* Run the rate filter from the checkpoint (simlib.h), event by event:
 * the pinned reads' takes as booked and the open reads' runs of the
 * bucket, in time order (the pinned first at a tie: they were booked
 * first; open reads in booking order), the bucket filling at the rate
 * between them up to its capacity.  It runs up to stop, or with stop
 * UINT64_MAX until every open read has completed (setting their done);
 * with a target (an index into m->open, else -1) until that one has,
 * recording its takes in rec.  commit: the state at stop becomes the
 * checkpoint.  Returns 0, or -1 when out of memory.
 */
static int
run_bucket (struct sim_model *m, uint64_t stop, ssize_t target,
            struct share *rec, bool commit)
{
  const double rate = m->bandwidth / 1e9;       /* bytes a ns */
  uint64_t t = m->checkpoint;
  double level = m->level;
  size_t gi = first_grab (m, t), pending = 0, nrunning = 0, i, k;
  bool target_done = false;

  /* The open reads that run the bucket in this run: those not pinned
   * and not complete at the checkpoint, in their order in m->open,
   * listed once so that each step looks at them only (a pinned read,
   * however many stay open, never runs it: its takes are grabs).
   */
  if (m->nopen > m->caprunning) {
    size_t *r = realloc (m->running, m->nopen * sizeof *r);

    if (!r)
      return -1;
    m->running = r;
    m->caprunning = m->nopen;
  }
  for (i = 0; i < m->nopen; i++) {
    struct sim_open *o = &m->open[i];

    o->run_left = o->left;
    o->run_wake = o->wake;
    if (!o->pinned && o->left > BYTE_EPS)
      m->running[nrunning++] = i;
  }
  pending = nrunning;
  if (target >= 0 && m->open[target].left <= BYTE_EPS)
    return 0;                   /* complete before the checkpoint */
  while (!target_done && (stop != UINT64_MAX || pending > 0)) {
    uint64_t next = stop;

    if (gi < m->ngrabs && m->grabs[gi].at < next)
      next = m->grabs[gi].at;
    for (k = 0; k < nrunning; k++) {
      const struct sim_open *o = &m->open[m->running[k]];

      if (o->run_left > BYTE_EPS && o->run_wake < next)
        next = o->run_wake;
    }

    /* The flow from t to next; a full bucket drops what comes in. */
    level += (double) (next - t) * rate;
    if (level > m->burst_bytes)
      level = m->burst_bytes;
    t = next;
    if (t >= stop)
      break;

    /* The runs of the bucket at t. */
    while (gi < m->ngrabs && m->grabs[gi].at <= t)
      level -= m->grabs[gi++].bytes;
    for (k = 0; k < nrunning; k++) {
      struct sim_open *o = &m->open[m->running[k]];
      double take;

      if (o->run_left <= BYTE_EPS || o->run_wake > t)
        continue;
      take = run_once (m, o, t, &level, reserved (m, gi, t, rate, level),
                       &pending);
      if ((ssize_t) m->running[k] == target) {
        if (rec && take > 0 && share_grab (rec, t, take) == -1)
          return -1;
        target_done = o->run_left <= BYTE_EPS;
      }
    }
  }
  if (commit) {
    m->checkpoint = t;
    m->level = level;
    for (i = 0; i < m->nopen; i++) {
      m->open[i].left = m->open[i].run_left;
      m->open[i].wake = m->open[i].run_wake;
    }
  }
  return 0;
}

/* Pin a read's share: its takes join the calendar. */
static int
pin_share (struct sim_model *m, const struct share *rec)
{
  size_t i, k;

  for (i = 0; i < rec->ngrabs; i++) {
    if (grow ((void **) &m->grabs, &m->capgrabs, m->ngrabs,
              sizeof *m->grabs) == -1)
      return -1;
    /* After the grabs of the same time: they were booked first. */
    k = first_grab (m, rec->grabs[i].at + 1);
    memmove (&m->grabs[k + 1], &m->grabs[k],
             (m->ngrabs - k) * sizeof *m->grabs);
    m->grabs[k] = rec->grabs[i];
    m->ngrabs++;
  }
  return 0;
}

/* Run the bucket with open read i as the target, and pin its share. */
static int
pin_open (struct sim_model *m, size_t i)
{
  struct share rec = { 0 };
  int r = run_bucket (m, UINT64_MAX, (ssize_t) i, &rec, false);

  if (r == 0)
    r = pin_share (m, &rec);
  free (rec.grabs);
  m->open[i].pinned = true;
  m->stale = true;
  return r;
}

/* A new open read: the one after the last. */
static struct sim_open *
add_open (struct sim_model *m, uint64_t now, uint64_t count, unsigned key)
{
  struct sim_open *o;

  if (grow ((void **) &m->open, &m->capopen, m->nopen, sizeof *m->open) == -1)
    return NULL;
  o = &m->open[m->nopen++];
  memset (o, 0, sizeof *o);
  o->key = key;
  o->wake = now + m->latency_ns;
  /* No read arrives before the checkpoint (sim_model_forget). */
  if (o->wake < m->checkpoint)
    o->wake = m->checkpoint;
  o->left = (double) count;
  if (m->copy_rate > 0)
    o->copy_ns = (uint64_t) llround ((double) count * 1e9 / m->copy_rate);
  return o;
}

static struct sim_open *
find_open (struct sim_model *m, unsigned key)
{
  size_t i;

  for (i = 0; i < m->nopen; i++)
    if (m->open[i].key == key)
      return &m->open[i];
  return NULL;
}

/* The disk's head: every request in arrival order. */
static uint64_t
disk_read (struct sim_model *m, uint64_t now, uint64_t offset,
           uint64_t count)
{
  uint64_t start, seek = 0, distance;

  distance = offset > m->head ? offset - m->head : m->head - offset;
  if (distance > 0 && m->size > 0)
    seek = m->min_seek_ns +
      (uint64_t) ((double) (m->max_seek_ns - m->min_seek_ns) *
                  (double) distance / (double) m->size);
  start = now > m->free_at ? now : m->free_at;
  m->free_at = start + seek + transfer_ns (m, count);
  m->head = offset + count;
  m->seek_ns += seek;
  if (m->head_log)
    fprintf (m->head_log, "%.6f %.6f %.6f %" PRIu64 " %" PRIu64 " %.6f\n",
             (double) now / 1e9, (double) start / 1e9,
             (double) m->free_at / 1e9, offset, count, (double) seek / 1e9);
  return m->free_at;
}

uint64_t
sim_model_read (struct sim_model *m, uint64_t now, uint64_t offset,
                uint64_t count)
{
  uint64_t done;

  if (m->kind == SIM_DISK)
    return disk_read (m, now, offset, count);
  /* Booked as an open read, pinned, and no longer open. */
  if (!add_open (m, now, count, UINT_MAX) ||
      pin_open (m, m->nopen - 1) == -1)
    return UINT64_MAX;
  m->nopen--;
  done = m->open[m->nopen].done + m->open[m->nopen].copy_ns;
  return done;
}

int
sim_model_start (struct sim_model *m, uint64_t now, uint64_t offset,
                 uint64_t count, unsigned key)
{
  struct sim_open *o = add_open (m, now, count, key);

  if (!o)
    return -1;
  if (m->kind == SIM_DISK) {
    o->done = disk_read (m, now, offset, count);
    o->pinned = true;
  }
  m->stale = true;
  return 0;
}

uint64_t
sim_model_done (struct sim_model *m, unsigned key)
{
  struct sim_open *o = find_open (m, key);

  if (!o)
    return UINT64_MAX;
  if (!o->pinned && m->stale) {
    if (run_bucket (m, UINT64_MAX, -1, NULL, false) == -1)
      return UINT64_MAX;
    m->stale = false;
  }
  return o->done + o->copy_ns;
}

uint64_t
sim_model_pin (struct sim_model *m, unsigned key)
{
  struct sim_open *o = find_open (m, key);

  if (!o)
    return UINT64_MAX;
  if (!o->pinned && pin_open (m, (size_t) (o - m->open)) == -1)
    return UINT64_MAX;
  return o->done + o->copy_ns;
}

void
sim_model_finish (struct sim_model *m, unsigned key)
{
  struct sim_open *o = find_open (m, key);

  if (!o)
    return;
  *o = m->open[--m->nopen];
}

/* Drop the first past of the *n entries of a calendar once they are
 * half of it, so that the move costs O(1) a read.
 */
static void
drop_past (void *entries, size_t *n, size_t past, size_t size)
{
  if (past == 0 || past < *n / 2)
    return;
  memmove (entries, (char *) entries + past * size, (*n - past) * size);
  *n -= past;
}

void
sim_model_forget (struct sim_model *m, uint64_t now)
{
  uint64_t checkpoint = now + m->latency_ns;

  if (m->kind == SIM_DISK || checkpoint <= m->checkpoint)
    return;
  /* Reads issued from now on arrive at checkpoint or later: what the
   * bucket did before is settled.  (No memory is taken by a run
   * without a target.)
   */
  run_bucket (m, checkpoint, -1, NULL, true);
  drop_past (m->grabs, &m->ngrabs, first_grab (m, checkpoint),
             sizeof *m->grabs);
}

void
sim_model_free (struct sim_model *m)
{
  free (m->grabs);
  free (m->open);
  free (m->running);
  m->grabs = NULL;
  m->open = NULL;
  m->running = NULL;
  m->ngrabs = m->capgrabs = 0;
  m->nopen = m->capopen = 0;
  m->caprunning = 0;
}

/* Seconds since the epoch of a log line's "YYYY-MM-DD HH:MM:SS.US". */
static int
log_time (const char *line, uint64_t *ns, int *used)
{
  struct tm tm;
  double sec;
  time_t t;

  memset (&tm, 0, sizeof tm);
  if (sscanf (line, "%4d-%2d-%2d %2d:%2d:%lf%n", &tm.tm_year, &tm.tm_mon,
              &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &sec, used) != 6)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_sec = 0;
  t = timegm (&tm);
  if (t == (time_t) -1 || sec < 0 || sec >= 61)
    return -1;
  *ns = (uint64_t) t * 1000000000 + (uint64_t) llround (sec * 1e9);
  return 0;
}

/* Whether the number scanf reads from s has no sign: its unsigned
 * conversions take one, and "-4096" would be 2^64 - 4096.
 */
static bool
unsigned_at (const char *s)
{
  s += strspn (s, " \t");
  return *s != '-' && *s != '+';
}

static int
parse_log_line (const char *line, struct sim_record *r)
{
  char op[16];
  int used, at[2];

  if (log_time (line, &r->t_ns, &used) == -1)
    return -1;
  line += used;
  if (sscanf (line, " connection=%" SCNu64 " %15s", &r->conn, op) != 2)
    return 0;                   /* not a connected call */
  if (strcmp (op, "Read") == 0)
    r->op = SIM_OP_READ;
  else if (strcmp (op, "Write") == 0 || strcmp (op, "Trim") == 0 ||
           strcmp (op, "Zero") == 0)
    r->op = SIM_OP_WRITE;
  else
    return 0;                   /* replies ("...Read"), other calls */
  line = strstr (line, " offset=");
  if (!line ||
      sscanf (line, " offset=0x%n%" SCNx64 " count=0x%n%" SCNx64,
              &at[0], &r->offset, &at[1], &r->length) != 2 ||
      !unsigned_at (line + at[0]) || !unsigned_at (line + at[1]))
    return -1;
  return 1;
}

static int
parse_csv_line (const char *line, struct sim_record *r)
{
  char op[16], *end;
  double t_ms, dur_ms;
  int at[3], used = 0;

  if (sscanf (line, "%lf,%15[^,],%n%" SCNu64 ",%n%" SCNu64 ",%n%" SCNu64
              "%n", &t_ms, op, &at[0], &r->offset, &at[1], &r->length,
              &at[2], &r->conn, &used) != 5 ||
      !unsigned_at (line + at[0]) || !unsigned_at (line + at[1]) ||
      !unsigned_at (line + at[2]) ||
      !(t_ms >= 0 && t_ms * 1e6 < (double) SIM_HORIZON_NS))
    return -1;
  line += used;
  if (*line == ',') {           /* dur_ms, as the fleet's traces have */
    dur_ms = strtod (line + 1, &end);
    if (!(dur_ms >= 0) || end == line + 1)
      return -1;
    line = end;
  }
  line += strspn (line, " \t");
  if (*line != '\0')
    return -1;
  if (strcasecmp (op, "flush") == 0 || strcasecmp (op, "f") == 0)
    return 0;
  if (strcasecmp (op, "read") == 0 || strcasecmp (op, "r") == 0)
    r->op = SIM_OP_READ;
  else if (strcasecmp (op, "write") == 0 || strcasecmp (op, "w") == 0 ||
           strcasecmp (op, "trim") == 0 || strcasecmp (op, "zero") == 0)
    r->op = SIM_OP_WRITE;
  else
    return -1;
  r->t_ns = (uint64_t) llround (t_ms * 1e6);
  return 1;
}

int
sim_trace_parse_line (const char *line, struct sim_record *r)
{
  memset (r, 0, sizeof *r);
  while (*line == ' ' || *line == '\t')
    line++;
  if (*line == '\0' || *line == '\n' || *line == '#' ||
      strncmp (line, "t_ms", 4) == 0)
    return 0;
  /* A log line starts with a date: "2026-"; a CSV line's first field
   * has no '-' in its first five characters.
   */
  if (strlen (line) > 10 && line[4] == '-' && line[7] == '-')
    return parse_log_line (line, r);
  return parse_csv_line (line, r);
}

int
sim_latency_add (struct sim_latency *l, double ms)
{
  assert (ms >= 0);
  if (ms == 0) {
    l->zeros++;
    return 0;
  }
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 4096;
    double *v = realloc (l->v, cap * sizeof *v);

    if (!v)
      return -1;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = ms;
  l->sum += ms;
  return 0;
}

double
sim_latency_mean (const struct sim_latency *l)
{
  uint64_t all = l->n + l->zeros;

  return all ? l->sum / (double) all : 0;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

double
sim_latency_percentile (struct sim_latency *l, double p)
{
  uint64_t all = l->n + l->zeros, rank;

  if (all == 0)
    return 0;
  rank = (uint64_t) ceil (p / 100.0 * (double) all);
  if (rank < 1)
    rank = 1;
  if (rank > all)
    rank = all;
  /* The zeros come first in the order. */
  if (rank <= l->zeros)
    return 0;
  qsort (l->v, l->n, sizeof *l->v, cmp_double);
  return l->v[rank - l->zeros - 1];
}

double
sim_median (double *v, size_t n)
{
  if (n == 0)
    return 0;
  qsort (v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void
sim_latency_free (struct sim_latency *l)
{
  free (l->v);
  memset (l, 0, sizeof *l);
}
