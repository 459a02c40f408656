/* test-model.c: unit tests of core/model.c against fake backends.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A fake backend is a function from a read (its offset and size) to
 * its time.  Five of them: fast (the page cache), remote (5 ms, then
 * 200 MiB/s), a seeking disk (one head at 150 MB/s, a seek from
 * 0.5 ms up with the distance), one that turns slow, and a delay
 * (2 ms a read, then the page cache's speed).  Each test
 * reads through one as the engine would (model_start, the read,
 * model_end, sample) and checks the estimate and every decision it
 * feeds: latency-bound, seeks (and their cost), depth, limit, chunk,
 * budget, fast.
 */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../core/model.h"

#define US UINT64_C (1000)
#define MS UINT64_C (1000000)
#define SEC UINT64_C (1000000000)
#define KIB UINT64_C (1024)
#define MIB (1024 * KIB)
#define DISK_SIZE (64 * 1024 * MIB)

enum kind { FAST, REMOTE, DISK, SLOW, DELAY };

/* The time a read takes on a backend of kind k. */
static uint64_t
read_ns (enum kind k, uint64_t offset, uint64_t bytes, uint64_t last_end)
{
  uint64_t distance;

  switch (k) {
  case FAST:
    return 10 * US + bytes / 3;                 /* 3 GB/s */
  case REMOTE:
    return 5 * MS + bytes * SEC / (200 * MIB);
  case SLOW:
    return 50 * MS + bytes * SEC / (200 * MIB);
  case DELAY:                                   /* no bandwidth cap */
    return 2 * MS + bytes / 8;                  /* 8 GB/s */
  case DISK: default:
    distance = offset > last_end ? offset - last_end : last_end - offset;
    return (offset == last_end ? 0
            : 500 * US + 7500 * US * distance / DISK_SIZE) +
      bytes * SEC / (150 * 1000 * 1000);
  }
}

/* Most reads in flight at the disk's head (struct backend's depth). */
#define HEAD_DEPTH_MAX 16

struct backend {
  struct adaptra_model m;
  enum kind kind;
  uint64_t now;                 /* virtual time, ns */
  uint64_t last_end;            /* the disk head */
  unsigned turns;               /* reads head_turns queued */
  unsigned streams;             /* the streams that take turns at the
                                   head, 0: 8 */
  unsigned depth;               /* reads in flight at the head, 0:
                                   ADAPTRA_MODEL_DEPTH */
  struct {
    uint64_t offset, bytes, t0;
    enum adaptra_model_distance where;
  } at_head[HEAD_DEPTH_MAX];    /* reads in flight at the head, served
                                   in the order they started */
  unsigned head, tail;          /* at_head[head % MAX] is served next */
};

/* One read of bytes at offset, alone. */
static void
one_read (struct backend *b, uint64_t offset, uint64_t bytes)
{
  enum adaptra_model_distance where =
    adaptra_model_start (&b->m, offset, bytes);
  uint64_t t0 = b->now;

  b->now += read_ns (b->kind, offset, bytes, b->last_end);
  b->last_end = offset + bytes;
  adaptra_model_end (&b->m, bytes);
  adaptra_model_sample (&b->m, bytes, t0, b->now, where);
}

/* A sequential scan for seconds: demand reads of 64 KiB, each
 * followed by a read-ahead window of 1 MiB, so that sizes spread.  On
 * the disk, every eighth window is another stream's, from other on.
 */
static void
scan_with (struct backend *b, uint64_t seconds, uint64_t other)
{
  uint64_t end = b->now + seconds * SEC, at = 0;
  unsigned i;

  for (i = 0; b->now < end; i++) {
    one_read (b, at, 64 * KIB);
    one_read (b, at + 64 * KIB, MIB);
    at += 64 * KIB + MIB;
    if (i % 8 == 7) {
      one_read (b, other, MIB);
      other += MIB;
    }
  }
}

/* The same with the other stream half the disk away. */
static void
scan (struct backend *b, uint64_t seconds)
{
  scan_with (b, seconds, DISK_SIZE / 2);
}

/* Many reads in parallel on the remote backend, saturating its link
 * for seconds: completions every chunk / 200 MiB/s, each read 5 ms
 * plus the time the link takes for it and the reads ahead of it, up
 * to 8 of them once the queue has built up.  The reads take turns
 * between streams a gigabyte apart, two chunks a turn.
 */
static void
saturate (struct backend *b, uint64_t seconds, uint64_t chunk,
          unsigned streams)
{
  uint64_t end = b->now + seconds * SEC;
  uint64_t gap = chunk * SEC / (200 * MIB), queued = 0, i;

  for (i = 0; b->now < end; b->now += gap, i++) {
    uint64_t at = i / 2 % streams * 1024 * MIB + i / 2 / streams * 2 * chunk +
      i % 2 * chunk;
    enum adaptra_model_distance where =
      adaptra_model_start (&b->m, at, chunk);

    adaptra_model_end (&b->m, chunk);
    adaptra_model_sample (&b->m, chunk, b->now - 5 * MS - (queued + 1) * gap,
                          b->now, where);
    queued += queued < 8;
  }
}

static struct adaptra_model_estimate
estimate (const struct backend *b)
{
  struct adaptra_model_estimate est;

  adaptra_model_estimate (&b->m, b->now, &est);
  return est;
}

static void
assert_within (uint64_t got, uint64_t lo, uint64_t hi)
{
  if (got < lo || got > hi)
    fail_msg ("%llu not in [%llu, %llu]", (unsigned long long) got,
              (unsigned long long) lo, (unsigned long long) hi);
}

static void
test_nothing_known (void **state)
{
  struct backend b = { .kind = FAST, .now = 10 * SEC };
  struct adaptra_model_estimate est = estimate (&b);

  (void) state;
  assert_int_equal (est.latency_ns, 0);
  assert_int_equal (est.bandwidth, 0);
  assert_int_equal (est.bdp, 0);
  assert_false (est.seeks);
  assert_false (est.latency_bound);
  assert_true (est.limit == UINT64_MAX);
  assert_int_equal (est.depth, ADAPTRA_MODEL_DEPTH);
  assert_int_equal (est.budget, ADAPTRA_MODEL_BUDGET);
  assert_int_equal (est.chunk, ADAPTRA_MODEL_CHUNK_FLOOR);
  assert_false (adaptra_model_fast (&b.m, b.now, false));
}

/* The page cache: as fast as the pool, no seeks, not latency-bound:
 * the default depth and budget, no limit.
 */
static void
test_fast (void **state)
{
  struct backend b = { .kind = FAST, .now = SEC };
  struct adaptra_model_estimate est;

  (void) state;
  scan (&b, 1);
  est = estimate (&b);
  assert_true (est.latency_ns < 100 * US);
  assert_true (est.bandwidth >= UINT64_C (2900000000));
  assert_false (est.seeks);
  assert_false (est.latency_bound);
  assert_true (est.limit == UINT64_MAX);
  assert_int_equal (est.depth, ADAPTRA_MODEL_DEPTH);
  assert_int_equal (est.budget, ADAPTRA_MODEL_BUDGET);
  assert_true (adaptra_model_fast (&b.m, b.now, false));
}

/* One scan at a time on the remote backend: latency-bound, with the
 * line's bandwidth and the fastest read's latency, so a limit of 5/4
 * of their product and a mean read (the scan's are 64 KiB and 1 MiB);
 * chunks of a sixteenth of it (64 KiB) and a budget
 * of one chunk: streams interleave finely.  Never as fast as the pool.
 */
static void
test_remote (void **state)
{
  struct backend b = { .kind = REMOTE, .now = SEC };
  struct adaptra_model_estimate est;

  (void) state;
  scan (&b, 3);
  est = estimate (&b);
  assert_within (est.latency_ns, 4900 * US, 5100 * US);
  assert_within (est.bandwidth, 195 * MIB, 205 * MIB);
  assert_within (est.bdp, MIB * 97 / 100, MIB * 103 / 100);
  assert_true (est.latency_bound);
  assert_false (est.seeks);
  assert_int_equal (est.seek_ns, 0);
  assert_int_equal (est.turn_ns, 0);
  assert_int_equal (est.depth, 0);
  assert_within (est.limit, (est.bdp + 64 * KIB) * 5 / 4,
                 (est.bdp + MIB) * 5 / 4);
  assert_int_equal (est.chunk, 64 * KIB);
  assert_int_equal (est.budget, est.chunk);
  /* One stream's jobs: a share of the limit, at least the floor. */
  assert_int_equal (est.job_min,
                    est.limit / ADAPTRA_MODEL_STREAM_READS
                    > ADAPTRA_MODEL_CHUNK_FLOOR
                    ? est.limit / ADAPTRA_MODEL_STREAM_READS
                    : ADAPTRA_MODEL_CHUNK_FLOOR);
  assert_int_equal (est.job_max, ADAPTRA_MODEL_JOB_BDPS * est.bdp);
  assert_within (est.fixed_ns, 4900 * US, 5100 * US);
  assert_within (adaptra_model_fetch_ns (&est, MIB), 9900 * US, 10100 * US);
  assert_false (adaptra_model_fast (&b.m, b.now, false));
}

/* A remote backend after its first read: latency-bound, but its
 * bandwidth not known (64 KiB in 5 ms say 13 MB/s), so the product is
 * small.  The limit is ADAPTRA_MODEL_LIMIT_MIN, not none, and the
 * chunks the smallest: streams that start together neither start
 * every worker nor read a large first job in line with a request.
 */
static void
test_remote_first_read (void **state)
{
  struct backend b = { .kind = REMOTE, .now = SEC };
  struct adaptra_model_estimate est;

  (void) state;
  one_read (&b, 0, 64 * KIB);
  est = estimate (&b);
  assert_true (est.latency_bound);
  assert_true (est.bdp < ADAPTRA_MODEL_LIMIT_MIN);
  assert_int_equal (est.limit, ADAPTRA_MODEL_LIMIT_MIN);
  assert_int_equal (est.chunk, ADAPTRA_MODEL_CHUNK_MIN);
  assert_int_equal (est.budget, est.chunk);
  assert_int_equal (est.job_min, ADAPTRA_MODEL_CHUNK_FLOOR);
}

/* Saturated by many streams, the bandwidth is what was delivered a
 * slot, and the latency still the fastest read's, queueing left out.
 */
static void
test_remote_saturated (void **state)
{
  struct backend b = { .kind = REMOTE, .now = SEC };
  struct adaptra_model_estimate est;

  (void) state;
  saturate (&b, 2, 64 * KIB, 1);
  est = estimate (&b);
  assert_within (est.bandwidth, 196 * MIB, 204 * MIB);
  assert_within (est.latency_ns, 4900 * US, 5100 * US);
  assert_true (est.latency_bound);
  assert_true (est.limit != UINT64_MAX);
}

/* The same with eight streams in turn: half the reads far, each
 * served, from the completion before its own, in a gap alike near or
 * far.  Not a seek.
 */
static void
test_remote_streams_do_not_seek (void **state)
{
  struct backend b = { .kind = REMOTE, .now = SEC };
  struct adaptra_model_estimate est;

  (void) state;
  saturate (&b, 2, 64 * KIB, 8);
  est = estimate (&b);
  assert_false (est.seeks);
  assert_true (est.latency_bound);
}

/* A remote store whose token bucket lets large reads through faster
 * than its rate: its near reads (large windows) look 0.6 ms faster
 * than its far ones (small demand reads).  Not a seek: still
 * latency-bound, with a limit.
 */
static void
test_remote_bursts_do_not_seek (void **state)
{
  struct adaptra_model m = { 0 };
  struct adaptra_model_estimate est;
  uint64_t t = SEC;
  unsigned i;

  (void) state;
  for (i = 0; i < 400; i++, t += 10 * MS) {
    uint64_t n = i % 2 ? MIB : 512 * KIB;

    adaptra_model_sample (&m, n, t - 4400 * US - n * SEC / (200 * MIB),
                          t, ADAPTRA_MODEL_NEAR);
    adaptra_model_sample (&m, 64 * KIB,
                          t - 5 * MS - 64 * KIB * SEC / (200 * MIB), t,
                          ADAPTRA_MODEL_FAR);
  }
  adaptra_model_estimate (&m, t, &est);
  assert_false (est.seeks);
  assert_true (est.latency_bound);
  assert_true (est.limit != UINT64_MAX);
}

/* A remote store read in bursts: eight near reads start together and
 * complete one after another, queued behind each other at the link,
 * then a far read alone.  The far read's service time is its whole
 * 5 ms, the near ones' the gaps between completions: not alike, and
 * not a seek (the far reads that did not queue are left out).
 */
static void
test_remote_lone_far_reads_do_not_seek (void **state)
{
  struct adaptra_model m = { 0 };
  struct adaptra_model_estimate est;
  uint64_t t = SEC, gap = 64 * KIB * SEC / (200 * MIB);
  unsigned i, j;

  (void) state;
  for (i = 0; i < 400; i++, t += 14 * MS) {
    for (j = 0; j < 8; j++)
      adaptra_model_sample (&m, 64 * KIB, t, t + 5 * MS + j * gap,
                            ADAPTRA_MODEL_NEAR);
    adaptra_model_sample (&m, 64 * KIB, t + 5 * MS + 8 * gap,
                          t + 10 * MS + 9 * gap, ADAPTRA_MODEL_FAR);
  }
  adaptra_model_estimate (&m, t, &est);
  assert_false (est.seeks);
  assert_true (est.latency_bound);
}

/* The two remote jitter tests below: a remote store's link, a round a
 * millisecond for a second.  A round's 1 MiB window (near) completes
 * near_ns after it started; far_after later, a 64 KiB demand read
 * (far) completes far_ns after it started, every other one far_jitter
 * longer.  The model is asked as each round's far read completes, as
 * the engine asks after a read: *est is its last answer, the return
 * value the rounds it saw a seek after.
 */
static unsigned
remote_rounds (uint64_t near_ns, uint64_t far_after, uint64_t far_ns,
               uint64_t far_jitter, struct adaptra_model_estimate *est)
{
  struct adaptra_model m = { 0 };
  uint64_t t = SEC;
  unsigned i, seeks = 0;

  for (i = 0; i < 1000; i++, t += MS) {
    uint64_t far_end = t + far_after;

    adaptra_model_sample (&m, MIB, t - near_ns, t, ADAPTRA_MODEL_NEAR);
    adaptra_model_sample (&m, 64 * KIB,
                          far_end - far_ns - (i % 2 ? far_jitter : 0),
                          far_end, ADAPTRA_MODEL_FAR);
    adaptra_model_estimate (&m, far_end, est);
    seeks += est->seeks;
  }
  return seeks;
}

/* A remote store read by many streams: a read completes every 0.5 ms,
 * by turns a stream's 1 MiB window (near, 9 ms) and another stream's
 * 64 KiB demand read (far, 5 ms, every other one 5.5 ms).  The slower
 * far reads are served 0.5 ms, from the near completion before them
 * (the faster ones, their service starting the fastest read's time
 * after their start, model.h, none); each near read is served 0.5 ms
 * from the far completion before it, 31 us scaled to a far read's
 * size, so the far reads look served 0.47 ms longer, sixteen times as
 * long: by the service times alone a seek.  But under a tenth of the
 * fastest read's 5 ms latency is jitter that reads in parallel hide,
 * not a seek (ADAPTRA_MODEL_SEEK_LATENCY_DIV): never a seek, still
 * latency-bound, with a limit, chunks under it.  Without the jitter no
 * far read would be served at all, and the test would not reach the
 * latency's share.
 */
static void
test_remote_served_jitter_does_not_seek (void **state)
{
  struct adaptra_model_estimate est;

  (void) state;
  assert_int_equal (remote_rounds (9 * MS, 500 * US, 5 * MS, 500 * US, &est),
                    0);
  assert_true (est.latency_bound);
  assert_true (est.limit != UINT64_MAX);
  assert_true (est.chunk <= ADAPTRA_MODEL_CHUNK_MAX);
}

/* The remote store's counterpart of a disk read in parallel chunks
 * (test_disk_parallel_chunks_seek): a window's 1 MiB near pieces wait
 * behind each other at the link (12 ms each, the fastest near read's
 * latency 7 ms), one completing every millisecond, while far 64 KiB
 * demand reads take the latency, 5.3 ms, and every other one 0.9 ms
 * more, served that long from the near completion before it.  By the
 * service times a seek (0.9 ms against microseconds); but a quarter of
 * the latency, the fastest read's (the far ones', 5 ms), is more:
 * jitter that reads in parallel hide.  Never a seek, still
 * latency-bound.
 */
static void
test_remote_queued_near_reads_do_not_seek (void **state)
{
  struct adaptra_model_estimate est;

  (void) state;
  assert_int_equal (remote_rounds (12 * MS, 900 * US, 5300 * US, 900 * US,
                                   &est), 0);
  assert_true (est.latency_bound);
  assert_true (est.limit != UINT64_MAX);
}

/* A remote store read by a stream and random noise (W6): the stream's
 * 1 MiB jobs, two at a time, complete every 5 ms at the link's
 * 200 MiB/s, 10 ms after they start; a 4 KiB far read at a time takes
 * the latency, 5 ms, and a job completes during each.
 * From that completion the far read is served up to 5 ms; the jobs
 * from the completion before theirs, scaled to 4 KiB, microseconds:
 * twice as long and more.  But a completion during a far read's
 * latency is not the link turning to it (model.h): no service starts
 * before the fastest read's time from its start, and the stream's
 * windows keep their limit.
 */
static void
test_remote_noise_does_not_seek (void **state)
{
  struct adaptra_model m = { 0 };
  struct adaptra_model_estimate est;
  const uint64_t noise = 5 * MS + 20 * US;
  uint64_t job = SEC + 10 * MS, far = SEC;

  (void) state;
  while (job < 4 * SEC) {
    if (job <= far + noise) {
      adaptra_model_sample (&m, MIB, job - 10 * MS, job, ADAPTRA_MODEL_NEAR);
      job += 5 * MS;
    }
    else {
      adaptra_model_sample (&m, 4 * KIB, far, far + noise,
                            ADAPTRA_MODEL_FAR);
      far += noise;
    }
  }
  adaptra_model_estimate (&m, job, &est);
  assert_false (est.seeks);
  assert_true (est.latency_bound);
  assert_true (est.limit != UINT64_MAX);
}

/* The same store's token bucket runs dry now and then: for a few
 * reads the link stalls, and each far read completes stall_ns after
 * the read before it, served that long by the completions, while a
 * near read issued with it completes right after it.  Spells of
 * stalls reads long, ADAPTRA_MODEL_SEEK_HOLD apart.  After every read
 * the model is asked, as the engine does: never a seek, never out of
 * latency-bound.
 */
static void
test_remote_stalls_do_not_seek (void **state)
{
  struct adaptra_model m = { 0 };
  struct adaptra_model_estimate est;
  uint64_t t = SEC, stall_ns = 4 * MS;
  unsigned i, j, stalls = ADAPTRA_MODEL_SEEK_HOLD / 4;

  (void) state;
  for (i = 0; i < 1000; i++) {
    bool stalled = i % (2 * ADAPTRA_MODEL_SEEK_HOLD) < stalls;

    t += stalled ? stall_ns : 500 * US;
    adaptra_model_sample (&m, 64 * KIB, t - 5 * MS, t, ADAPTRA_MODEL_FAR);
    t += 20 * US;
    adaptra_model_sample (&m, 256 * KIB, t - 6 * MS, t, ADAPTRA_MODEL_NEAR);
    for (j = 0; j < 2; j++) {
      adaptra_model_estimate (&m, t, &est);
      assert_false (est.seeks);
      assert_true (est.latency_bound);
    }
  }
}

/* A budget for a seek of seek_ns at the estimate's bandwidth. */
static uint64_t
seek_budget (const struct adaptra_model_estimate *est, uint64_t seek_ns)
{
  return (uint64_t) ((double) seek_ns * ADAPTRA_MODEL_SEEK_TURN *
                     (double) est->bandwidth / 1e9);
}

/* A disk: reads that continue the last cost no seek, others do.
 * Distance costs: no limit, never latency-bound nor as fast as the
 * pool, though its near reads take no latency at all.  The seek the
 * queue's turns make is the scan's hop to the other stream and back,
 * half the disk (4.25 ms), not the fastest far read's: the budget is
 * ADAPTRA_MODEL_SEEK_TURN of them at the disk's bandwidth, and a chunk
 * while streams compete is a budget, a window read in one piece.  A
 * turn takes the head for its seek and its budget's transfer
 * (turn_ns), of which the seek is 1 / (1 + ADAPTRA_MODEL_SEEK_TURN):
 * long enough to amortise it, and no job is longer (job_max), so that
 * no read holds the head for more than a turn.
 */
static void
test_disk (void **state)
{
  struct backend b = { .kind = DISK, .now = SEC };
  struct adaptra_model_estimate est;

  (void) state;
  scan (&b, 3);
  est = estimate (&b);
  assert_true (est.seeks);
  assert_false (est.latency_bound);
  assert_true (est.limit == UINT64_MAX);
  assert_int_equal (est.depth, ADAPTRA_MODEL_DEPTH);
  assert_within (est.seek_ns, 4000 * US, 4500 * US);
  assert_within (est.budget, seek_budget (&est, 4000 * US),
                 seek_budget (&est, 4500 * US));
  assert_int_equal (est.chunk, est.budget);
  assert_int_equal (est.job_min, ADAPTRA_MODEL_CHUNK_FLOOR);
  assert_int_equal (est.job_max, est.budget);
  assert_within (est.bandwidth, UINT64_C (135000000), UINT64_C (165000000));
  assert_within (est.turn_ns,
                 est.seek_ns * (1 + ADAPTRA_MODEL_SEEK_TURN) * 99 / 100,
                 est.seek_ns * (1 + ADAPTRA_MODEL_SEEK_TURN) * 101 / 100);
  assert_int_equal (est.turn_ns,
                    est.seek_ns + (uint64_t) ((double) est.budget * 1e9 /
                                              (double) est.bandwidth));
  assert_false (adaptra_model_fast (&b.m, b.now, false));
}

/* The disk from its first read, asked after every read as the engine
 * does: it turns to seeking ADAPTRA_MODEL_SEEK_HOLD reads after the
 * scan's first far read (its 24th read) and stays so.
 */
static void
test_disk_seeks_from_startup (void **state)
{
  struct backend b = { .kind = DISK, .now = SEC };
  uint64_t at = 0, other = DISK_SIZE / 2, reads = 0, first = 0;
  unsigned i;

  (void) state;
  for (i = 0; i < 2000; i++) {
    uint64_t offset[3] = { at, at + 64 * KIB, other };
    uint64_t bytes[3] = { 64 * KIB, MIB, MIB };
    unsigned j;

    for (j = 0; j < (i % 8 == 7 ? 3 : 2); j++) {
      one_read (&b, offset[j], bytes[j]);
      reads++;
      if (estimate (&b).seeks && first == 0)
        first = reads;
      assert_true (first == 0 || estimate (&b).seeks);
    }
    at += 64 * KIB + MIB;
    other += i % 8 == 7 ? MIB : 0;
  }
  assert_true (first > 0);
  assert_true (first <= 24 + ADAPTRA_MODEL_SEEK_HOLD);
}

/* The same disk, the other stream an eighth of it away: shorter seeks
 * (1.44 ms), a shorter budget; but never under the largest chunk of a
 * backend that does not seek.
 */
static void
test_disk_short_seeks (void **state)
{
  struct backend b = { .kind = DISK, .now = SEC };
  struct adaptra_model_estimate est;

  (void) state;
  scan_with (&b, 3, DISK_SIZE / 8);
  est = estimate (&b);
  assert_true (est.seeks);
  assert_within (est.seek_ns, 1300 * US, 1600 * US);
  assert_within (est.budget, seek_budget (&est, 1300 * US),
                 seek_budget (&est, 1600 * US));
  assert_int_equal (est.chunk, est.budget);

  b = (struct backend) { .kind = DISK, .now = SEC };
  scan_with (&b, 3, 4 * MIB);
  est = estimate (&b);
  assert_true (est.seeks);
  assert_int_equal (est.budget, ADAPTRA_MODEL_CHUNK_MAX);
}

/* The head serves the read that started first of those in flight. */
static void
head_serve (struct backend *b)
{
  const unsigned i = b->head++ % HEAD_DEPTH_MAX;
  const uint64_t offset = b->at_head[i].offset, bytes = b->at_head[i].bytes;

  b->now += read_ns (DISK, offset, bytes, b->last_end);
  b->last_end = offset + bytes;
  adaptra_model_end (&b->m, bytes);
  adaptra_model_sample (&b->m, bytes, b->at_head[i].t0, b->now,
                        b->at_head[i].where);
}

/* Eight streams over the disk's one head, each an eighth of it from
 * the next: each stream's first read of chunk bytes alone; pos: where
 * each reads next.
 */
static void
first_reads (struct backend *b, uint64_t *pos, uint64_t chunk)
{
  unsigned s;

  for (s = 0; s < 8; s++) {
    pos[s] = s * DISK_SIZE / 8 + DISK_SIZE / 16;
    one_read (b, pos[s], chunk);
    pos[s] += chunk;
  }
}

/* Then the streams' reads for ns, as the engine's queue sends them:
 * b->depth reads of chunk bytes in flight at the head, served in the
 * order they started; turn reads of a stream in a row (the first far,
 * the others near), the b->streams streams in turn, on from where the
 * last call left off (b->turns).  Reads in flight at the end stay in
 * flight (queued_turns completes them).
 */
static void
head_turns (struct backend *b, uint64_t *pos, uint64_t ns, uint64_t chunk,
            unsigned turn)
{
  const unsigned streams = b->streams ? b->streams : 8;
  const unsigned depth = b->depth ? b->depth : ADAPTRA_MODEL_DEPTH;
  uint64_t end = b->now + ns;
  unsigned s;

  while (b->now < end) {
    while (b->tail - b->head < depth) {
      s = b->turns++ / turn % streams;
      b->at_head[b->tail % HEAD_DEPTH_MAX].offset = pos[s];
      b->at_head[b->tail % HEAD_DEPTH_MAX].bytes = chunk;
      b->at_head[b->tail % HEAD_DEPTH_MAX].t0 = b->now;
      b->at_head[b->tail++ % HEAD_DEPTH_MAX].where =
        adaptra_model_start (&b->m, pos[s], chunk);
      pos[s] += chunk;
    }
    head_serve (b);
  }
}

/* The same, and the reads in flight at the end complete. */
static void
queued_turns (struct backend *b, uint64_t *pos, uint64_t ns, uint64_t chunk,
              unsigned turn)
{
  head_turns (b, pos, ns, chunk, turn);
  while (b->head < b->tail)
    head_serve (b);
}

/* The eight streams as the engine reads them when the model takes the
 * disk for latency-bound: pairs of 64 KiB chunks (a far read, the
 * near one after it).  The first far reads, alone, take their seek
 * and transfer (1.9 ms); every near read waits behind the far read
 * before it and more, so its whole time never looks half a far
 * read's.  From when the head turned to it, a near read is its
 * transfer alone: distance costs.
 */
static void
test_disk_queued_near_reads (void **state)
{
  struct backend b = { .kind = DISK, .now = SEC };
  struct adaptra_model_estimate est;
  uint64_t pos[8];

  (void) state;
  first_reads (&b, pos, 64 * KIB);
  queued_turns (&b, pos, 3 * SEC, 64 * KIB, 2);
  est = estimate (&b);
  assert_true (est.seeks);
  assert_false (est.latency_bound);
  assert_true (est.limit == UINT64_MAX);
  assert_int_equal (est.depth, ADAPTRA_MODEL_DEPTH);
  /* At least the hop from one stream to the next, less a transfer. */
  assert_within (est.seek_ns, 900 * US, 8 * MS);
}

/* Four streams a quarter of the disk apart read as the engine reads
 * them when the model takes the disk for latency-bound (beside's
 * U-4conn in about one run of four): 64 KiB chunks in turn, eight
 * reads in flight at the head from the first.  Only for a moment does
 * one stream's window go out in pairs, and its near reads then wait
 * behind seven others: the fastest near read's whole time (20 ms) is
 * six times a seek, the fastest far one's (the first read's) about a
 * seek.  From when the head turned to it a near read is its transfer
 * alone, a far one a seek more: distance costs, and the seek is more
 * than a quarter of the latency (ADAPTRA_MODEL_SEEK_LATENCY_DIV), the
 * fastest read's, near or far.  Judged by the fastest near read's (a
 * quarter of 20 ms is 5 ms), it was not, and the chunks went on, each
 * a seek: U-4conn read at a seventh of the disk's speed.
 */
static void
test_disk_parallel_chunks_seek (void **state)
{
  struct backend b = { .kind = DISK, .now = SEC, .streams = 4, .depth = 8 };
  struct adaptra_model_estimate est;
  uint64_t pos[4];
  unsigned s;

  (void) state;
  for (s = 0; s < 4; s++)
    pos[s] = s * DISK_SIZE / 4 + DISK_SIZE / 8;
  head_turns (&b, pos, 1, 64 * KIB, 1);
  head_turns (&b, pos, 10 * MS, 64 * KIB, 2);
  queued_turns (&b, pos, 3 * SEC, 64 * KIB, 1);
  est = estimate (&b);
  assert_true (est.seeks);
  assert_false (est.latency_bound);
  assert_true (est.limit == UINT64_MAX);
  /* The mean hop of the turns: three of 2.4 ms and one of 6.1 ms. */
  assert_within (est.seek_ns, 2500 * US, 4 * MS);
}

/* The eight streams' first reads, then a second of pairs of 64 KiB
 * chunks at the head: the model sees seeks.
 */
static void
seeking_turns (struct backend *b, uint64_t *pos)
{
  first_reads (b, pos, 64 * KIB);
  queued_turns (b, pos, SEC, 64 * KIB, 2);
  assert_true (estimate (b).seeks);
}

/* Then the queue batches, and the runs grow: four reads of 1 MiB a
 * turn.  A far read's seek (1.4 ms to the next stream) is now a
 * fraction of its transfer (7 ms), so its service time is never
 * twice a near one's: the model that saw seeks keeps seeing them
 * (ADAPTRA_MODEL_SEEK_NS longer is enough to stay), every tenth of a
 * second, rather than take the disk for latency-bound and undo the
 * runs.  A seek costs the mean hop the turns make, by the service
 * times: seven of 1.44 ms and one of 7.06 ms back, 2.14 ms, not the
 * queueing in the reads' whole times (which made it 1.2 or 10 ms).
 */
static void
test_disk_long_runs_still_seek (void **state)
{
  struct backend b = { .kind = DISK, .now = SEC };
  struct adaptra_model_estimate est;
  uint64_t pos[8];
  unsigned i;

  (void) state;
  seeking_turns (&b, pos);
  for (i = 0; i < 30; i++) {
    queued_turns (&b, pos, SEC / 10, MIB, 4);
    est = estimate (&b);
    assert_true (est.seeks);
    assert_false (est.latency_bound);
  }
  /* The mean of the last far reads, about a turn of the eight. */
  assert_within (est.seek_ns, 1800 * US, 2600 * US);
}

/* est is the head's: seeks, the disk's 150 MB/s within 5%, and a
 * budget of a turn of seeks at that rate (at least a chunk).
 */
static void
assert_heads (struct adaptra_model_estimate est)
{
  assert_true (est.seeks);
  assert_within (est.bandwidth, UINT64_C (142000000), UINT64_C (158000000));
  assert_int_equal (est.budget,
                    est.seek_ns * ADAPTRA_MODEL_SEEK_TURN * est.bandwidth
                    / SEC < ADAPTRA_MODEL_CHUNK_MAX
                    ? ADAPTRA_MODEL_CHUNK_MAX
                    : seek_budget (&est, est.seek_ns));
}

/* Runs of varying sizes, as the windows of the eight streams come:
 * a turn of four reads of 64 KiB to 2 MiB, the size changing every
 * tenth of a second.  Queued at the one head, a read's whole time is
 * mostly the reads ahead of it, and the line through the reads' sizes
 * and times (the bandwidth where reads go one at a time) took any
 * slope: in adaptra-sim's disk W3 the bandwidth swung from 72 MB/s to
 * 2.4 GB/s, and the budget with it.  Where distance costs the
 * bandwidth is the head's transfer rate, the near reads' by their
 * service times: the disk's 150 MB/s at every estimate, and the
 * budget a turn of seeks at that rate.
 */
static void
test_disk_bandwidth_is_the_heads (void **state)
{
  static const uint64_t sizes[] = { 64 * KIB, 2 * MIB, 256 * KIB, MIB,
                                    128 * KIB, 512 * KIB };
  struct backend b = { .kind = DISK, .now = SEC };
  uint64_t pos[8], round;

  (void) state;
  seeking_turns (&b, pos);
  for (round = 0; round < 60; round++) {
    head_turns (&b, pos, SEC / 10, sizes[round % 6], 4);
    assert_heads (estimate (&b));
  }
}

/* The engine learns a read's end when its bytes are copied too, after
 * the head (at COPY_BYTES_PER_SEC): a window's small tail piece,
 * served right after a large piece, is reported first, and by the
 * completions it was served in the large one's time, the large one in
 * almost none.  Turns of the eight streams as runs of the queue: a far
 * MiB, a near 512 KiB, a near 2 MiB, a near 40 KiB tail, each started
 * when the read ADAPTRA_MODEL_DEPTH ahead of it at the head is
 * reported, for ns; sampled in the order they are reported.
 */
#define COPY_BYTES_PER_SEC (4 * UINT64_C (1000000000))

static void
swapped_turns (struct backend *b, uint64_t *pos, uint64_t ns)
{
  static const uint64_t sizes[] = { MIB, 512 * KIB, 2 * MIB, 40 * KIB };
  struct { uint64_t t0, t1; enum adaptra_model_distance where; } q[4];
  uint64_t end = b->now + ns, head = b->now;
  uint64_t reported[ADAPTRA_MODEL_DEPTH];
  unsigned i, s, k = 0;

  for (i = 0; i < ADAPTRA_MODEL_DEPTH; i++)
    reported[i] = b->now;
  while (b->now < end) {
    s = b->turns++ % 8;
    for (i = 0; i < 4; i++, k++) {
      q[i].t0 = reported[k % ADAPTRA_MODEL_DEPTH];
      q[i].where = adaptra_model_start (&b->m, pos[s], sizes[i]);
      if (head < q[i].t0)
        head = q[i].t0;
      head += read_ns (DISK, pos[s], sizes[i], b->last_end);
      b->last_end = pos[s] + sizes[i];
      pos[s] += sizes[i];
      q[i].t1 = head + sizes[i] * SEC / COPY_BYTES_PER_SEC;
      reported[k % ADAPTRA_MODEL_DEPTH] = q[i].t1;
      adaptra_model_end (&b->m, sizes[i]);
    }
    for (i = 0; i < 4; i++) {
      unsigned r = i < 2 ? i : 5 - i;   /* the tail before the 2 MiB */

      adaptra_model_sample (&b->m, sizes[r], q[r].t0, q[r].t1, q[r].where);
    }
    b->now = q[2].t1;
  }
}

/* A service swapped so belongs to neither read: by the bytes, the
 * near reads are served at the head's rate, the far ones a seek
 * longer.  Scaled up from a 40 KiB read, a large read's service made
 * the near reads look slower per byte than the far ones, the model
 * took the disk for latency-bound, and the queue cut every window
 * into 64 KiB chunks, each a seek (disk W3 lost a tenth).
 */
static void
test_disk_swapped_completions_still_seek (void **state)
{
  struct backend b = { .kind = DISK, .now = SEC };
  struct adaptra_model_estimate est;
  uint64_t pos[8];
  unsigned i;

  (void) state;
  first_reads (&b, pos, 64 * KIB);
  queued_turns (&b, pos, SEC, 64 * KIB, 2);
  queued_turns (&b, pos, SEC, MIB, 4);
  assert_true (estimate (&b).seeks);
  for (i = 0; i < 30; i++) {
    swapped_turns (&b, pos, SEC / 10);
    est = estimate (&b);
    assert_true (est.seeks);
    assert_false (est.latency_bound);
  }
}

/* Groups of three reads 10 ms apart, each 5 ms: a near one alone, a
 * far one that completes far_ns after it, and a near one near_ns
 * after that: the last two queued, served in far_ns and near_ns.  All
 * of 64 KiB, but the last near one of every other group is of
 * near_bytes.  Their whole times never look like a seek.
 */
static void
served_groups (struct adaptra_model *m, uint64_t *t, unsigned groups,
               uint64_t far_ns, uint64_t near_ns, uint64_t near_bytes)
{
  uint64_t n = 64 * KIB;
  unsigned i;

  for (i = 0; i < groups; i++, *t += 10 * MS) {
    adaptra_model_sample (m, n, *t, *t + 5 * MS, ADAPTRA_MODEL_NEAR);
    adaptra_model_sample (m, n, *t + 100 * US, *t + 5 * MS + far_ns,
                          ADAPTRA_MODEL_FAR);
    adaptra_model_sample (m, i % 2 ? near_bytes : n, *t + 200 * US,
                          *t + 5 * MS + far_ns + near_ns,
                          ADAPTRA_MODEL_NEAR);
  }
}

/* A disk's far reads served 2 ms longer than its near ones, but one
 * group in four swapped (a completion reported out of turn): its far
 * read served in 0.1 ms, its near one in 3 ms.  The tests answer
 * "no" for a few reads after each such group, never seeks for
 * ADAPTRA_MODEL_SEEK_HOLD reads in a row; yet they answer seeks far
 * more often than not, and the model turns (each agreeing answer takes
 * one contrary one off).
 */
static void
test_disk_seeks_through_swapped_groups (void **state)
{
  struct adaptra_model plain = { 0 }, swapped = { 0 };
  struct adaptra_model_estimate est;
  uint64_t t = SEC, u = SEC;
  unsigned k, first = 0, first_plain = 0;

  (void) state;
  for (k = 1; k <= 400 && (first == 0 || first_plain == 0); k++) {
    served_groups (&plain, &t, 1, 2 * MS, 200 * US, 64 * KIB);
    adaptra_model_estimate (&plain, t, &est);
    if (est.seeks && first_plain == 0)
      first_plain = k;
    if (k % 4)
      served_groups (&swapped, &u, 1, 2 * MS, 200 * US, 64 * KIB);
    else
      served_groups (&swapped, &u, 1, 100 * US, 3 * MS, 64 * KIB);
    adaptra_model_estimate (&swapped, u, &est);
    if (est.seeks && first == 0)
      first = k;
  }
  assert_true (first_plain > 0);
  assert_true (first > 0);              /* 52 groups, 12 without swaps */
  /* And it stays so through the swaps. */
  for (k = 1; k <= 400; k++) {
    if (k % 4)
      served_groups (&swapped, &u, 1, 2 * MS, 200 * US, 64 * KIB);
    else
      served_groups (&swapped, &u, 1, 100 * US, 3 * MS, 64 * KIB);
    adaptra_model_estimate (&swapped, u, &est);
    assert_true (est.seeks);
  }
}

/* The hysteresis's bound: a backend that looked seeking (its far
 * reads served 0.7 ms longer than its near ones, over twice as long)
 * and whose far reads then take 0.4 ms longer, under twice as long,
 * less than a disk's shortest seek (ADAPTRA_MODEL_SEEK_STAY_NS): the
 * model stops seeing seeks.
 */
static void
test_seeks_end_under_a_seek (void **state)
{
  struct adaptra_model m = { 0 };
  struct adaptra_model_estimate est;
  uint64_t t = SEC;

  (void) state;
  served_groups (&m, &t, 200, 1000 * US, 300 * US, 64 * KIB);
  adaptra_model_estimate (&m, t, &est);
  assert_true (est.seeks);
  served_groups (&m, &t, 200, 900 * US, 500 * US, 64 * KIB);
  adaptra_model_estimate (&m, t, &est);
  assert_false (est.seeks);
}

/* A store that serves reads in parallel, its link stalled: every
 * read completes 1.5 ms after the one before, the far ones and the
 * near ones alike, whatever their size (64 KiB or 2 MiB).  Scaled to
 * a far read's size as if a head had transferred them, the near reads
 * would look served in 0.1 ms, 1.4 ms less than the far ones: the
 * line through their service times says their size does not matter,
 * and distance costs nothing.
 */
static void
test_parallel_pieces_do_not_seek (void **state)
{
  struct adaptra_model m = { 0 };
  struct adaptra_model_estimate est;
  uint64_t t = SEC;

  (void) state;
  served_groups (&m, &t, 400, 1500 * US, 1500 * US, 2 * MIB);
  adaptra_model_estimate (&m, t, &est);
  assert_false (est.seeks);
}

/* A disk read sequentially in small requests: each within the pool's
 * latency bound, but at a seventh of its speed: never as fast as the
 * pool (stepping aside would lose the read-ahead a disk needs).
 */
static void
test_sequential_disk_is_not_fast (void **state)
{
  struct backend b = { .kind = DISK, .now = SEC };
  uint64_t at;

  (void) state;
  for (at = 0; at < 64 * MIB; at += 4 * KIB)
    one_read (&b, at, 4 * KIB);
  assert_true (b.m.all.t < ADAPTRA_MODEL_FAST_LATENCY_NS);
  assert_false (adaptra_model_fast (&b.m, b.now, false));
  assert_false (estimate (&b).latency_bound);
}

/* A remote store without a bandwidth cap, read in windows of 4 MiB:
 * each read within the fast bounds (1.6 GB/s), but 2 ms of it is
 * latency, which read-ahead hides and stepping aside would make every
 * read of a client wait: latency-bound, never as fast as the pool.
 */
static void
test_large_reads_of_a_delay_are_not_fast (void **state)
{
  struct backend b = { .kind = DELAY, .now = SEC };
  uint64_t at;

  (void) state;
  for (at = 0; at < 1024 * MIB; at += 4 * MIB)
    one_read (&b, at, 4 * MIB);
  assert_true (b.m.all.t < ADAPTRA_MODEL_FAST_LATENCY_NS +
               4.0 * MIB * SEC / ADAPTRA_MODEL_FAST_BYTES_PER_SEC);
  assert_true (estimate (&b).latency_bound);
  assert_false (adaptra_model_fast (&b.m, b.now, false));
  assert_false (adaptra_model_fast (&b.m, b.now, true));
}

/* The fast test waits for ADAPTRA_MODEL_FAST_SAMPLES reads. */
static void
test_fast_needs_samples (void **state)
{
  struct backend b = { .kind = FAST, .now = SEC };
  unsigned i;

  (void) state;
  for (i = 0; i + 1 < ADAPTRA_MODEL_FAST_SAMPLES; i++)
    one_read (&b, i * 64 * KIB, 64 * KIB);
  assert_false (adaptra_model_fast (&b.m, b.now, false));
  one_read (&b, i * 64 * KIB, 64 * KIB);
  assert_true (adaptra_model_fast (&b.m, b.now, false));
}

/* A fast backend that turns slow: the fast test follows within a few
 * reads (moving averages), the latency and the decisions on it once
 * the min filter's window has passed over the fast reads.
 */
static void
test_turns_slow (void **state)
{
  struct backend b = { .kind = FAST, .now = SEC };
  struct adaptra_model_estimate est;
  unsigned i;

  (void) state;
  scan (&b, 1);
  assert_true (adaptra_model_fast (&b.m, b.now, true));
  assert_false (estimate (&b).latency_bound);
  b.kind = SLOW;
  for (i = 0; i < 4; i++)
    one_read (&b, i * 64 * KIB, 64 * KIB);
  assert_false (adaptra_model_fast (&b.m, b.now, true));
  scan (&b, ADAPTRA_MODEL_LATENCY_NS / SEC + 1);
  est = estimate (&b);
  assert_within (est.latency_ns, 49 * MS, 51 * MS);
  assert_true (est.latency_bound);
  assert_true (est.limit != UINT64_MAX);
  assert_int_equal (est.depth, 0);
  assert_int_equal (est.budget, est.chunk);
  /* A sixteenth of 50 ms x 200 MiB/s, 640 KiB, as a power of two;
   * one stream's jobs, a quarter of the limit.
   */
  assert_int_equal (est.chunk, 512 * KIB);
  assert_int_equal (est.job_min, est.limit / ADAPTRA_MODEL_STREAM_READS);
}

/* Reads of 4 KiB in parallel, depth of them in flight and one
 * completing every gap ns: each takes depth gaps, and every
 * STALL_EVERY-th one sampled stall ns more (a read that runs long on
 * its CPU, or a thread descheduled in its read where the clock does
 * not tell).  Of every read's time its thread waited wait ns for a
 * CPU (as core/aside.c's machine_ns tells the model).  With sample_ns
 * 0 every read is sampled, as the engine's are; otherwise as a
 * stepped-aside volume's (core/aside.c): the first read that starts
 * sample_ns after the last sampled one's start, the rest delivered
 * unsampled.  After each sample, asks the fast test as the engine
 * does (its last answer, *fast, for the hysteresis); returns how often
 * the answer changed.
 */
#define STALL_EVERY 50

static unsigned
parallel (struct backend *b, unsigned reads, unsigned depth, uint64_t gap,
          uint64_t stall, uint64_t wait, uint64_t sample_ns, bool *fast)
{
  uint64_t sampled = 0;
  unsigned i, n = 0, switches = 0;
  bool now_fast;

  for (i = 1; i <= reads; i++) {
    uint64_t t0;

    b->now += gap;
    t0 = b->now - depth * gap;
    if (sample_ns && t0 < sampled + sample_ns) {
      adaptra_model_deliver (&b->m, 4 * KIB);
      continue;
    }
    sampled = t0;
    if (++n % STALL_EVERY == 0)
      t0 -= stall;
    adaptra_model_sample_waited (&b->m, 4 * KIB, t0, b->now,
                                 ADAPTRA_MODEL_UNKNOWN, wait);
    now_fast = adaptra_model_fast (&b->m, b->now, *fast);
    switches += now_fast != *fast;
    *fast = now_fast;
  }
  return switches;
}

/* The page cache under random 4 KiB reads at queue depth 16 on two
 * CPUs: a read completes every 2.5 us (1.6 GB/s together), yet each
 * takes 40 us, and one in STALL_EVERY a millisecond more.  By its own
 * time no read is as fast as the pool (4 KiB in 40 us is 100 MB/s);
 * together they are.  The volume steps aside once, from the engine's
 * samples, and stays aside on its own once-a-millisecond samples for
 * three seconds.
 */
static void
test_fast_in_parallel (void **state)
{
  struct backend b = { .kind = FAST, .now = SEC };
  bool fast = false;

  (void) state;
  assert_int_equal (parallel (&b, 1000, 16, 2500, MS, 0, 0, &fast), 1);
  assert_true (fast);
  assert_int_equal (parallel (&b, 3 * SEC / 2500, 16, 2500, MS, 0, MS, &fast),
                    0);
  assert_true (fast);
  /* The slots count the reads not sampled too. */
  assert_true (estimate (&b).bandwidth >= UINT64_C (1500000000));
}

/* A disk's head at 150 MB/s under 4 KiB reads at queue depth 16: they
 * only queue, a completion every 27 us, each read 16 times that:
 * never as fast as the pool, whether each read is sampled or one a
 * millisecond.
 */
static void
test_disk_in_parallel_is_not_fast (void **state)
{
  const uint64_t gap = 4 * KIB * SEC / (150 * 1000 * 1000);
  struct backend b = { .kind = DISK, .now = SEC };
  bool fast = true;

  (void) state;
  parallel (&b, 1000, 16, gap, MS, 0, 0, &fast);
  assert_false (fast);
  assert_false (adaptra_model_fast (&b.m, b.now, true));
  fast = true;
  parallel (&b, SEC / gap, 16, gap, MS, 0, MS, &fast);
  assert_false (fast);
  assert_false (adaptra_model_fast (&b.m, b.now, true));
}

/* A stepped-aside volume whose backend turns slow under queue depth
 * 16 (50 ms a read: a completion every 3.1 ms): read-ahead comes back
 * within a few of its samples.
 */
static void
test_turns_slow_in_parallel (void **state)
{
  struct backend b = { .kind = FAST, .now = SEC };
  bool fast = false;

  (void) state;
  parallel (&b, SEC / 2500, 16, 2500, MS, 0, 0, &fast);
  assert_true (fast);
  parallel (&b, SEC / 2500, 16, 2500, MS, 0, MS, &fast);
  assert_true (fast);
  assert_int_equal (parallel (&b, 4, 16, 50 * MS / 16, 0, 0, MS, &fast), 1);
  assert_false (fast);
}

/* The page cache at queue depth 16 on a loaded machine (a CPU hog
 * beside the readers): for a spell of two seconds the reads complete
 * at a sixtieth of the rate (one every 150 us, 27 MB/s together), each
 * takes 2.4 ms of which all but 5 us its thread waited for a CPU.  By
 * what they deliver together they are slower than
 * ADAPTRA_MODEL_FAST_RATE, and so is each read's own time, yet the
 * backend is not: its reads take 5 us of the CPUs the pool's copies
 * would wait for too.  The volume stays aside through the spell,
 * sampled once a millisecond, and after it.  Then the backend turns
 * slow while the machine is still loaded (its reads wait a
 * millisecond each for a CPU, beside 50 ms at the backend): the wait
 * taken out, read-ahead still comes back within the samples
 * test_turns_slow_in_parallel allows.
 */
static void
test_fast_on_a_loaded_machine (void **state)
{
  struct backend b = { .kind = FAST, .now = SEC };
  bool fast = false;

  (void) state;
  parallel (&b, SEC / 2500, 16, 2500, MS, 0, 0, &fast);
  assert_true (fast);
  assert_int_equal (parallel (&b, 2 * SEC / (150 * US), 16, 150 * US, 0,
                              2395 * US, MS, &fast), 0);
  assert_true (fast);
  assert_int_equal (parallel (&b, SEC / 2500, 16, 2500, MS, 0, MS, &fast),
                    0);
  assert_true (fast);
  parallel (&b, SEC / (150 * US), 16, 150 * US, 0, 2395 * US, MS, &fast);
  assert_true (fast);
  assert_int_equal (parallel (&b, 4, 16, 50 * MS / 16 + MS / 16, 0, MS, MS,
                              &fast), 1);
  assert_false (fast);
}

/* The same loaded spell where one sampled read in STALL_EVERY runs
 * 200 us on its CPU (a page fault, a buffer grown in a layer below):
 * with the aggregate share as slow, that read's pace is 200 us, and
 * moved the moving average past the bar in one sample.  The median of
 * three leaves it out: the volume stays aside.
 */
static void
test_fast_with_lone_slow_reads (void **state)
{
  struct backend b = { .kind = FAST, .now = SEC };
  bool fast = false;

  (void) state;
  parallel (&b, SEC / 2500, 16, 2500, MS, 0, 0, &fast);
  assert_true (fast);
  assert_int_equal (parallel (&b, 2 * SEC / (150 * US), 16, 150 * US,
                              200 * US, 2395 * US, MS, &fast), 0);
  assert_true (fast);
}

/* The bandwidth of a slot counts once the slot is over (reads complete
 * two slots later), and is forgotten after a second.
 */
static void
test_slots (void **state)
{
  struct adaptra_model m = { 0 };
  struct adaptra_model_estimate est;
  const uint64_t slot = ADAPTRA_MODEL_SLOT_NS, t0 = 10 * slot;
  unsigned i;

  (void) state;
  /* 20 reads of 1 MiB in 100 ms each complete in one slot: alone,
   * each moves 10 MiB/s, together 200 MiB/s, which counts only once
   * the slot is over, and for a second.
   */
  for (i = 0; i < 20; i++)
    adaptra_model_sample (&m, MIB, t0 - slot, t0, ADAPTRA_MODEL_UNKNOWN);
  adaptra_model_estimate (&m, t0 + slot, &est);
  assert_within (est.bandwidth, 10 * MIB, 10 * MIB);
  adaptra_model_sample (&m, MIB, t0 + slot, t0 + 2 * slot,
                        ADAPTRA_MODEL_UNKNOWN);
  adaptra_model_estimate (&m, t0 + 2 * slot, &est);
  assert_within (est.bandwidth, 200 * MIB, 200 * MIB);
  adaptra_model_estimate (&m, t0 + 20 * slot, &est);
  assert_within (est.bandwidth, 10 * MIB, 10 * MIB);
}

/* Rounds of ways reads of bytes at once on the delay backend (2 ms,
 * then 8 GB/s, no cap), each round starting as the last one ended, as
 * the workers read one stream's jobs under the limit, for ns.
 */
static void
parallel_rounds (struct backend *b, unsigned ways, uint64_t bytes,
                 uint64_t ns)
{
  uint64_t end = b->now + ns, at = 0, t0;
  unsigned i;

  while (b->now < end) {
    t0 = b->now;
    for (i = 0; i < ways; i++)
      (void) adaptra_model_start (&b->m, at + i * bytes, bytes);
    for (i = 0; i < ways; i++) {
      /* Each completes a little after the one before it. */
      b->now = t0 + read_ns (b->kind, at, bytes, at) + i * 10 * US;
      adaptra_model_end (&b->m, bytes);
      adaptra_model_sample (&b->m, bytes, t0, b->now, ADAPTRA_MODEL_NEAR);
    }
    at += ways * bytes;
  }
}

/* Startup: four reads of 1 MiB at a time over 2 ms, and no slot over
 * yet.  Each read alone moves 1 MiB in 2.13 ms, the four together four
 * times that; the delivery-rate samples see the four within a few
 * round trips, and the limit is twice the product and a read, so that
 * the next rounds may put more in flight.  Once a slot is over, the
 * slots' bytes measure the bandwidth and the gain is 5/4.
 */
static void
test_startup_sees_reads_in_parallel (void **state)
{
  struct backend b = { .kind = DELAY, .now = SEC };
  struct adaptra_model_estimate est;
  const uint64_t alone = MIB * SEC / read_ns (DELAY, 0, MIB, 0);

  (void) state;
  parallel_rounds (&b, 4, MIB, 10 * MS);
  est = estimate (&b);
  assert_true (est.startup);
  assert_true (est.latency_bound);
  assert_true (est.bandwidth > 3 * alone);
  assert_int_equal (est.limit, ADAPTRA_MODEL_STARTUP_GAIN * (est.bdp + MIB));
  parallel_rounds (&b, 4, MIB, 3 * ADAPTRA_MODEL_SLOT_NS);
  est = estimate (&b);
  assert_false (est.startup);
  assert_true (est.bandwidth > 3 * alone);
  assert_int_equal (est.limit, (est.bdp + MIB) * ADAPTRA_MODEL_GAIN_NUM /
                    ADAPTRA_MODEL_GAIN_DEN);
}

/* Startup when many streams start together: sixteen reads of
 * 512 KiB at a time on the remote backend, each alone in its 7.5 ms,
 * as a token bucket's burst lets them through, so that the rate
 * samples see five times the link's 200 MiB/s.  Until a slot has
 * measured the bandwidth, the chunk that bounds competing streams'
 * jobs is ADAPTRA_MODEL_CHUNK_MIN, not a sixteenth of that product:
 * megabytes of larger jobs going out at once starved the large reads
 * behind the small ones when the burst was over.  Past startup the
 * chunk is the product's again.
 */
static void
test_startup_chunks_stay_small (void **state)
{
  struct backend b = { .kind = REMOTE, .now = SEC };
  struct adaptra_model_estimate est;

  (void) state;
  parallel_rounds (&b, 16, 512 * KIB, 20 * MS);
  est = estimate (&b);
  assert_true (est.startup);
  assert_true (est.latency_bound);
  assert_true (est.bandwidth > 800 * MIB);
  assert_int_equal (est.chunk, ADAPTRA_MODEL_CHUNK_MIN);
  assert_int_equal (est.budget, ADAPTRA_MODEL_CHUNK_MIN);
  parallel_rounds (&b, 16, 512 * KIB, 3 * ADAPTRA_MODEL_SLOT_NS);
  est = estimate (&b);
  assert_false (est.startup);
  assert_true (est.chunk > ADAPTRA_MODEL_CHUNK_MIN);
}

/* While few streams compete, their reads at once fill the limit: the
 * chunk for n streams is at least the limit over n x
 * ADAPTRA_MODEL_STREAM_READS, a power of two up to
 * ADAPTRA_MODEL_CHUNK_MAX; many streams keep the product's sixteenth;
 * in startup, and without a limit, the chunk is est->chunk.  On the
 * remote backend, measured with four reads at once, two streams'
 * reads cover its limit.
 */
static void
test_chunk_fills_limit_for_few_streams (void **state)
{
  struct adaptra_model_estimate est = {
    .limit = 1280 * KIB, .chunk = 64 * KIB
  };
  struct backend b = { .kind = REMOTE, .now = SEC };
  uint64_t two;

  (void) state;
  assert_int_equal (adaptra_model_chunk (&est, 16), 64 * KIB);
  assert_int_equal (adaptra_model_chunk (&est, 2), 256 * KIB);
  assert_int_equal (adaptra_model_chunk (&est, 1), 512 * KIB);
  est.limit = 2 * MIB;
  assert_int_equal (adaptra_model_chunk (&est, 2), 256 * KIB);
  est.limit = 64 * MIB;
  assert_int_equal (adaptra_model_chunk (&est, 2), ADAPTRA_MODEL_CHUNK_MAX);
  est.startup = true;
  assert_int_equal (adaptra_model_chunk (&est, 2), 64 * KIB);
  est.startup = false;
  est.limit = UINT64_MAX;
  assert_int_equal (adaptra_model_chunk (&est, 2), 64 * KIB);

  parallel_rounds (&b, 4, 256 * KIB, 3 * ADAPTRA_MODEL_SLOT_NS);
  est = estimate (&b);
  assert_false (est.startup);
  assert_true (est.latency_bound);
  two = adaptra_model_chunk (&est, 2);
  assert_true (two > est.chunk);
  assert_true (2 * ADAPTRA_MODEL_STREAM_READS * two >= est.limit);
}

/* One round of a remote store's reads in startup through a token
 * bucket's burst: n of each size in sizes start together at b->now and
 * complete after 5 ms and the plugin's copy (50 us a MiB), in order.
 */
static void
startup_round (struct backend *b, const uint64_t *sizes, unsigned nsizes,
               unsigned n)
{
  uint64_t t0 = b->now, flow = t0 + 5 * MS;
  unsigned i, j;

  for (i = 0; i < nsizes * n; i++)
    (void) adaptra_model_start (&b->m, 0, sizes[i % nsizes]);
  for (i = 0; i < n; i++)
    for (j = 0; j < nsizes; j++) {
      flow += sizes[j] / MIB * 50 * US;
      adaptra_model_end (&b->m, sizes[j]);
      adaptra_model_sample (&b->m, sizes[j], t0, flow, ADAPTRA_MODEL_NEAR);
    }
  b->now = flow;
}

/* Startup through a token bucket: after a first read, one round of
 * 8 MiB goes through in the 5 ms latency (a burst: reads of 64 KiB and
 * 1 MiB take the same time, so the line's slope is next to nought).
 * The burst passes for a fast link, but at what its reads delivered
 * (at most the startup gain over it), not at the line's 9.5 GB/s:
 * where reads overlap, the line lifts the rate samples by the gain at
 * most.
 */
static void
test_startup_line_rides_no_burst (void **state)
{
  struct backend b = { .now = SEC };   /* its reads: startup_round's */
  const uint64_t sizes[] = { 64 * KIB, MIB };
  struct adaptra_model_estimate est;

  (void) state;
  startup_round (&b, sizes, 1, 1);      /* a first read */
  startup_round (&b, sizes, 2, 8);
  est = estimate (&b);
  assert_true (est.startup);
  assert_within (est.bandwidth, 0,
                 ADAPTRA_MODEL_STARTUP_GAIN * 8 * (MIB + 64 * KIB) *
                 (SEC / (5 * MS)));
}

/* A link of LINK_RATE behind LINK_LATENCY: a read's bytes flow once
 * its latency is over and the link has moved those of the reads
 * before it.  Jobs of LINK_JOB bytes, two latencies' transfer each (a
 * reader at queue depth 1 whose windows have grown, over 2 ms).
 */
#define LINK_LATENCY (2 * MS)
#define LINK_RATE (2 * 1000 * MIB)
#define LINK_JOB (8 * MIB)
#define LINK_READS 16

/* The workers start jobs on the link while the model's limit admits
 * them (workers.c: while the bytes in flight are under it, or none
 * are), for ns; returns the bytes the link delivered in the last
 * second.
 */
static uint64_t
link_closed_loop (struct backend *b, uint64_t ns)
{
  uint64_t end = b->now + ns, last = end - SEC, link_free = 0, at = 0;
  uint64_t t0[LINK_READS], t1[LINK_READS], delivered = 0, flow;
  unsigned head = 0, n = 0;
  struct adaptra_model_estimate est;

  while (b->now < end) {
    est = estimate (b);
    while (n < LINK_READS && (n == 0 ||
                              adaptra_model_running (&b->m) < est.limit)) {
      unsigned i = (head + n++) % LINK_READS;

      (void) adaptra_model_start (&b->m, at, LINK_JOB);
      at += LINK_JOB;
      t0[i] = b->now;
      flow = b->now + LINK_LATENCY > link_free ? b->now + LINK_LATENCY
        : link_free;
      t1[i] = link_free = flow + LINK_JOB * SEC / LINK_RATE;
    }
    /* The link serves in order: the oldest read completes first. */
    b->now = t1[head];
    adaptra_model_end (&b->m, LINK_JOB);
    adaptra_model_sample (&b->m, LINK_JOB, t0[head], t1[head],
                          ADAPTRA_MODEL_NEAR);
    if (b->now >= last)
      delivered += LINK_JOB;
    head = (head + 1) % LINK_READS;
    n--;
  }
  return delivered;
}

/* Where a read's own transfer is as long as the latency or longer,
 * the product alone does not keep the link busy: a read holds its
 * bytes in flight for its latency and its transfer (Little's law),
 * so one job at a time leaves the link idle a latency in every read,
 * and the slots measure no more than the limit let through.  The
 * limit covers the mean read as well (BBR's allowance for data that
 * arrives in aggregates), and the link stays busy past startup.
 */
static void
test_limit_covers_a_read_in_flight (void **state)
{
  struct backend b = { .now = SEC };   /* its reads: the link's */
  struct adaptra_model_estimate est;
  uint64_t delivered;

  (void) state;
  delivered = link_closed_loop (&b, 3 * SEC);
  est = estimate (&b);
  assert_false (est.startup);
  assert_true (est.latency_bound);
  /* Reads that straddle the second's start count whole. */
  assert_within (delivered, LINK_RATE * 95 / 100, LINK_RATE + LINK_JOB);
}

/* A remote store behind a token bucket (nbdkit's rate filter): a read
 * waits BUCKET_LATENCY, then its bytes flow as the bucket's tokens
 * allow, in the order the reads started; the bucket fills at
 * BUCKET_RATE up to BUCKET_BURST bytes, which go through free after
 * an idle moment (the benchmark's remote model: 200 MiB/s and
 * 0.05 s of burstiness).  Its product is BUCKET_RATE x BUCKET_LATENCY,
 * 1 MiB.
 */
#define BUCKET_LATENCY (5 * MS)
#define BUCKET_RATE (200 * MIB)
#define BUCKET_BURST (BUCKET_RATE / 20)
#define BUCKET_BDP (BUCKET_RATE * BUCKET_LATENCY / SEC)
#define BUCKET_READS 64
#define BUCKET_JOB_MAX (2 * MIB)

/* A job of n bytes, within [64 KiB, BUCKET_JOB_MAX]. */
static uint64_t
clamp_job (uint64_t n)
{
  return n < 64 * KIB ? 64 * KIB : n > BUCKET_JOB_MAX ? BUCKET_JOB_MAX : n;
}

struct bucket {
  uint64_t tokens;              /* bytes that may flow free at t */
  uint64_t t;
  uint64_t flow_end;            /* the last read's bytes are through */
};

/* When a read of bytes started at t0 ends. */
static uint64_t
bucket_read (struct bucket *k, uint64_t t0, uint64_t bytes)
{
  uint64_t flow = t0 + BUCKET_LATENCY > k->flow_end ? t0 + BUCKET_LATENCY
    : k->flow_end;

  k->tokens += (flow - k->t) * BUCKET_RATE / SEC;
  if (k->tokens > BUCKET_BURST)
    k->tokens = BUCKET_BURST;
  k->t = flow;
  if (k->tokens >= bytes)
    k->tokens -= bytes;
  else {
    k->t = flow + (bytes - k->tokens) * SEC / BUCKET_RATE;
    k->tokens = 0;
  }
  return k->flow_end = k->t;
}

/* A reader at queue depth 1 and its read-ahead for ns, as the engine
 * reads them over the bucket: the workers start jobs of the model's
 * chunk or product (at most 2 MiB, as in startup: workers.c) while
 * the bytes in flight are under its limit, and the reader's own
 * 64 KiB reads go between them, so that sizes spread; then the reads
 * in flight complete.  Returns the largest product the model estimated
 * meanwhile.
 */
static uint64_t
bucket_closed_loop (struct backend *b, struct bucket *k, uint64_t ns)
{
  uint64_t end = b->now + ns, at = 0, most = 0;
  uint64_t t0[BUCKET_READS], t1[BUCKET_READS], bytes[BUCKET_READS];
  unsigned head = 0, n = 0, i, j, first;
  struct adaptra_model_estimate est;

  while (b->now < end || n > 0) {
    est = estimate (b);
    if (est.bdp > most)
      most = est.bdp;
    while (b->now < end && n < BUCKET_READS && (n == 0 ||
                                adaptra_model_running (&b->m) < est.limit)) {
      i = (head + n++) % BUCKET_READS;
      bytes[i] = n % 2 ? 64 * KIB
        : clamp_job (est.chunk > est.bdp ? est.chunk : est.bdp);
      (void) adaptra_model_start (&b->m, at, bytes[i]);
      at += bytes[i];
      t0[i] = b->now;
      t1[i] = bucket_read (k, b->now, bytes[i]);
    }
    /* The next to complete (in order of start: the bucket's). */
    first = head;
    for (j = 1; j < n; j++)
      if (t1[(head + j) % BUCKET_READS] < t1[first])
        first = (head + j) % BUCKET_READS;
    b->now = t1[first];
    adaptra_model_end (&b->m, bytes[first]);
    adaptra_model_sample (&b->m, bytes[first], t0[first], t1[first],
                          ADAPTRA_MODEL_NEAR);
    /* Keep the ring in order: the completed read leaves its place to
     * the head's.
     */
    t0[first] = t0[head];
    t1[first] = t1[head];
    bytes[first] = bytes[head];
    head = (head + 1) % BUCKET_READS;
    n--;
  }
  return most;
}

/* Over the bucket the model's product stays within twice the link's
 * from the first reads on: the first ones go through free, as a fast
 * link's would, but the line, whose reads of any size took the
 * latency alone, lifts the rate samples by the gain at most while
 * reads overlap, and a product under the limit's floor still gets the
 * gain over it.  Within a second of startup the estimate is the
 * link's rate.  Before, the line made the product 6.6 MiB through
 * startup.
 */
static void
test_bucket_burst_does_not_inflate (void **state)
{
  struct backend b = { .now = SEC };   /* its reads: the bucket's */
  struct bucket k = { .tokens = BUCKET_BURST, .t = SEC };
  struct adaptra_model_estimate est;

  (void) state;
  assert_within (bucket_closed_loop (&b, &k, 3 * ADAPTRA_MODEL_SLOT_NS),
                 0, 2 * BUCKET_BDP);
  assert_within (bucket_closed_loop (&b, &k, SEC), 0, 2 * BUCKET_BDP);
  est = estimate (&b);
  assert_false (est.startup);
  assert_true (est.latency_bound);
  assert_within (est.bandwidth, BUCKET_RATE * 95 / 100,
                 BUCKET_RATE * 110 / 100);
}

/* Completions in bunches: reads of 64 KiB, 512 KiB and 1 MiB by turns
 * start over BUNCH_NS as fast as the link moves their bytes
 * (BUNCH_RATE), and all of them complete BUNCH_LATENCY after the
 * last one started, within 0.1 ms, in the order they started (a
 * loaded machine's threads report completions so: depthload's
 * section of the history); each read's size adds a transfer at
 * BUNCH_LINE as well.  So a read's time is its place in the bunch, 5
 * to 15 ms, whatever its size, and the line through the reads' sizes
 * and times is all but flat.  Bunches one after another for ns.
 */
#define BUNCH_RATE (200 * MIB)
#define BUNCH_LATENCY (5 * MS)
#define BUNCH_NS (10 * MS)
#define BUNCH_LINE (8 * UINT64_C (1000000000))

static void
bunched_link (struct backend *b, uint64_t ns)
{
  const uint64_t sizes[] = { 64 * KIB, 512 * KIB, MIB };
  uint64_t end = b->now + ns, t0[64], bytes[64], start, done;
  unsigned i = 0, n, j;

  while (b->now < end) {
    for (n = 0, start = b->now; start < b->now + BUNCH_NS && n < 64; n++) {
      bytes[n] = sizes[i++ % 3];
      t0[n] = start;
      (void) adaptra_model_start (&b->m, i * MIB, bytes[n]);
      start += bytes[n] * SEC / BUNCH_RATE;
    }
    done = start + BUNCH_LATENCY;
    for (j = 0; j < n; j++) {
      adaptra_model_end (&b->m, bytes[j]);
      adaptra_model_sample (&b->m, bytes[j], t0[j],
                            done + j * 100 * US / n +
                            bytes[j] * SEC / BUNCH_LINE,
                            ADAPTRA_MODEL_NEAR);
    }
    b->now = start;
  }
}

/* Past startup, a model whose reads queue: where the line's fixed cost
 * is more than the limit's gain over the least latency, the reads wait
 * for each other, the link is the bottleneck, and what it delivered is
 * its bandwidth (BBR's reading of a queue); the line lifts that by the
 * gain at most, past startup too.  rate: what the link delivered; a
 * slot may hold up to extra bytes more than that.
 */
static void
assert_queued_at (const struct backend *b, uint64_t rate, uint64_t extra)
{
  struct adaptra_model_estimate est = estimate (b);

  assert_false (est.startup);
  assert_true (est.latency_bound);
  assert_true (est.fixed_ns * ADAPTRA_MODEL_GAIN_DEN >
               est.latency_ns * ADAPTRA_MODEL_GAIN_NUM);
  assert_within (est.bandwidth, rate * 95 / 100,
                 (rate + extra * SEC / ADAPTRA_MODEL_SLOT_NS) *
                 ADAPTRA_MODEL_GAIN_NUM / ADAPTRA_MODEL_GAIN_DEN);
}

/* Bunched completions (bunched_link): the line through them read 555
 * MB/s, 2.6 times what the link moved, before the bound
 * (assert_queued_at); a slot may hold a bunch more.
 */
static void
test_bunched_completions_do_not_inflate (void **state)
{
  struct backend b = { .now = SEC };   /* its reads: bunched_link's */

  (void) state;
  bunched_link (&b, 2 * SEC);
  assert_queued_at (&b, BUNCH_RATE, BUNCH_RATE * BUNCH_NS / SEC);
}

/* A flat line: a link of BUNCH_RATE busy all the time, its reads
 * completing one after another as it moves their bytes, each after
 * BUNCH_LATENCY and a wait of 0-8 ms by turns in its queue (as the
 * benchmark's token bucket serves the read that lacks least: jobs of
 * 540 KiB took 7-13 ms by their place, the burst section of the
 * history), sizes by turns as bunched_link's, a transfer at
 * BUNCH_LINE.  Before the bound (assert_queued_at) the line read
 * 465 MB/s, 2.2 times the link's rate; a slot may hold one read more.
 */
static void
test_flat_line_does_not_inflate (void **state)
{
  struct backend b = { .now = SEC };   /* its reads below */
  const uint64_t sizes[] = { 64 * KIB, 512 * KIB, MIB };
  uint64_t bytes, t;
  unsigned i;

  (void) state;
  for (i = 0; b.now < 3 * SEC; i++) {
    bytes = sizes[i % 3];
    b.now += bytes * SEC / BUNCH_RATE;
    t = BUNCH_LATENCY + i * 7 % 9 * MS + bytes * SEC / BUNCH_LINE;
    (void) adaptra_model_start (&b.m, i * MIB, bytes);
    adaptra_model_end (&b.m, bytes);
    adaptra_model_sample (&b.m, bytes, b.now - t, b.now, ADAPTRA_MODEL_NEAR);
  }
  assert_queued_at (&b, BUNCH_RATE, MIB);
}

/* A reader one request at a time on a backend without a bandwidth cap
 * (2 ms a read, then 8 GB/s), its reads and read-ahead of 64 KiB and
 * 1 MiB by turns, past startup: the reads do not queue (the line's
 * fixed cost is the latency), and the line's bandwidth counts in
 * full, though the slots say only what one read at a time delivers:
 * there it is the one measure of the bandwidth (model.h).
 */
static void
test_unqueued_line_counts (void **state)
{
  struct backend b = { .kind = DELAY, .now = SEC };
  struct adaptra_model_estimate est;
  const uint64_t delivered = (MIB + 64 * KIB) * SEC /
    (read_ns (DELAY, 0, MIB, 0) + read_ns (DELAY, 0, 64 * KIB, 0));

  (void) state;
  scan (&b, 1);
  est = estimate (&b);
  assert_false (est.startup);
  assert_true (est.bandwidth > 10 * delivered);
}

static void
test_running (void **state)
{
  struct adaptra_model m = { 0 };

  (void) state;
  assert_int_equal (adaptra_model_start (&m, 0, 64 * KIB), ADAPTRA_MODEL_NEAR);
  assert_int_equal (adaptra_model_start (&m, 64 * KIB, 128 * KIB),
                    ADAPTRA_MODEL_NEAR);
  assert_int_equal (adaptra_model_start (&m, 0, 64 * KIB), ADAPTRA_MODEL_FAR);
  assert_int_equal (adaptra_model_running (&m), 256 * KIB);
  assert_int_equal (adaptra_model_reads (&m), 3);
  adaptra_model_end (&m, 192 * KIB);
  adaptra_model_end (&m, 0);
  assert_int_equal (adaptra_model_running (&m), 64 * KIB);
  assert_int_equal (adaptra_model_reads (&m), 1);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_nothing_known),
    cmocka_unit_test (test_fast),
    cmocka_unit_test (test_remote),
    cmocka_unit_test (test_remote_first_read),
    cmocka_unit_test (test_chunk_fills_limit_for_few_streams),
    cmocka_unit_test (test_remote_saturated),
    cmocka_unit_test (test_remote_streams_do_not_seek),
    cmocka_unit_test (test_remote_bursts_do_not_seek),
    cmocka_unit_test (test_remote_lone_far_reads_do_not_seek),
    cmocka_unit_test (test_remote_served_jitter_does_not_seek),
    cmocka_unit_test (test_remote_queued_near_reads_do_not_seek),
    cmocka_unit_test (test_remote_noise_does_not_seek),
    cmocka_unit_test (test_remote_stalls_do_not_seek),
    cmocka_unit_test (test_disk),
    cmocka_unit_test (test_disk_seeks_from_startup),
    cmocka_unit_test (test_disk_short_seeks),
    cmocka_unit_test (test_disk_queued_near_reads),
    cmocka_unit_test (test_disk_parallel_chunks_seek),
    cmocka_unit_test (test_disk_long_runs_still_seek),
    cmocka_unit_test (test_disk_bandwidth_is_the_heads),
    cmocka_unit_test (test_disk_swapped_completions_still_seek),
    cmocka_unit_test (test_disk_seeks_through_swapped_groups),
    cmocka_unit_test (test_seeks_end_under_a_seek),
    cmocka_unit_test (test_parallel_pieces_do_not_seek),
    cmocka_unit_test (test_sequential_disk_is_not_fast),
    cmocka_unit_test (test_large_reads_of_a_delay_are_not_fast),
    cmocka_unit_test (test_fast_needs_samples),
    cmocka_unit_test (test_turns_slow),
    cmocka_unit_test (test_fast_in_parallel),
    cmocka_unit_test (test_disk_in_parallel_is_not_fast),
    cmocka_unit_test (test_turns_slow_in_parallel),
    cmocka_unit_test (test_fast_on_a_loaded_machine),
    cmocka_unit_test (test_fast_with_lone_slow_reads),
    cmocka_unit_test (test_slots),
    cmocka_unit_test (test_startup_sees_reads_in_parallel),
    cmocka_unit_test (test_startup_chunks_stay_small),
    cmocka_unit_test (test_startup_line_rides_no_burst),
    cmocka_unit_test (test_limit_covers_a_read_in_flight),
    cmocka_unit_test (test_bucket_burst_does_not_inflate),
    cmocka_unit_test (test_bunched_completions_do_not_inflate),
    cmocka_unit_test (test_flat_line_does_not_inflate),
    cmocka_unit_test (test_unqueued_line_counts),
    cmocka_unit_test (test_running),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
