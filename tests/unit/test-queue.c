/* test-queue.c: unit tests of core/queue.c, the queue on its own.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The prefetch queue without an engine, a backend or a lock: jobs are
 * made here, queued, and taken off as a worker (in order) or a reader
 * (out of turn, after a split) would.  Fairness within a bound, long
 * runs under a seeking backend's budget, fine interleaving under a
 * latency-bound one's, split and steal.
 */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../core/queue.h"

#define SHIFT 12                        /* 4 KiB pages */
#define KIB UINT64_C (1024)
#define MIB (1024 * KIB)
#define STREAM_PAGES (UINT64_C (1) << 20) /* each stream's area */
#define NSTREAMS 4

/* A job of stream s (1..), pages [first, first + npages). */
static struct adaptra_job *
job_of (uint64_t s, uint64_t first, uint32_t npages)
{
  struct adaptra_job *job = calloc (1, sizeof *job +
                                    npages * sizeof job->frames[0]);
  uint32_t i;

  assert_non_null (job);
  job->stream = s;
  job->first = first;
  job->window = first + npages;         /* a window of its own */
  job->npages = npages;
  job->bytes = npages << SHIFT;
  for (i = 0; i < npages; i++)
    job->frames[i] = (uint32_t) (first + i);
  return job;
}

/* Each of NSTREAMS streams queues n chunks of chunk bytes, stream 1's
 * all first, then stream 2's, and so on (as windows issued one after
 * another), each stream reading its own area in order.
 */
static void
queue_streams (struct adaptra_queue *q, unsigned n, uint64_t chunk)
{
  uint32_t pages = (uint32_t) (chunk >> SHIFT);
  uint64_t s;
  unsigned i;

  for (s = 1; s <= NSTREAMS; s++)
    for (i = 0; i < n; i++)
      adaptra_queue_add (q, job_of (s, s * STREAM_PAGES + i * pages, pages));
}

/* Take job (after prev) in order, as a worker does, returning its
 * stream and, if first, its first page.
 */
static uint64_t
take_in_order (struct adaptra_queue *q, struct adaptra_job *prev,
               struct adaptra_job *job, uint64_t *first)
{
  uint64_t s;

  assert_non_null (job);
  assert_ptr_equal (prev, job->prev);
  adaptra_queue_take (q, prev, job, ADAPTRA_TAKE_IN_ORDER, 0);
  s = job->stream;
  if (first)
    *first = job->first;
  free (job);
  return s;
}

/* Take the queue's head in order (a worker), returning its stream. */
static uint64_t
take_head (struct adaptra_queue *q, uint64_t *first)
{
  return take_in_order (q, NULL, q->head, first);
}

/* Drain the queue in order; check that every stream's chunks come in
 * page order, that at every point the bytes taken of the streams
 * differ by at most bound, and return the longest and shortest run of
 * one stream's consecutive chunks (the last run of all not counted:
 * nothing is left to switch to).
 */
static void
drain (struct adaptra_queue *q, uint64_t chunk, uint64_t bound,
       unsigned *longest, unsigned *shortest)
{
  uint64_t taken[NSTREAMS + 1] = { 0 }, next[NSTREAMS + 1] = { 0 };
  uint64_t last = 0, s, first;
  unsigned run = 0, i;

  *longest = 0;
  *shortest = UINT32_MAX;
  while (q->head) {
    uint64_t most = 0, least = UINT64_MAX;

    s = take_head (q, &first);
    assert_true (s >= 1 && s <= NSTREAMS);
    assert_true (first >= next[s]);
    next[s] = first + (chunk >> SHIFT);
    taken[s] += chunk;
    for (i = 1; i <= NSTREAMS; i++) {
      most = taken[i] > most ? taken[i] : most;
      least = taken[i] < least ? taken[i] : least;
    }
    /* Fair while every stream has chunks left to take. */
    if (q->head && least < most)
      for (i = 1; i <= NSTREAMS; i++)
        if (taken[i] == least && next[i] != 0)
          assert_true (most - least <= bound);
    if (s != last && last != 0) {
      *longest = run > *longest ? run : *longest;
      *shortest = run < *shortest ? run : *shortest;
      run = 0;
    }
    run++;
    last = s;
  }
  assert_int_equal (q->queued_bytes, 0);
  assert_null (q->tail);
}

/* Latency-bound: the budget is one chunk, and the streams take turns
 * chunk by chunk, none more than a chunk ahead of another.
 */
static void
test_latency_bound_interleaves (void **state)
{
  struct adaptra_queue q;
  const uint64_t chunk = 64 * KIB;
  unsigned longest, shortest;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = chunk;
  queue_streams (&q, 32, chunk);
  assert_int_equal (q.queued_bytes, NSTREAMS * 32 * chunk);
  drain (&q, chunk, chunk, &longest, &shortest);
  assert_int_equal (longest, 1);
  assert_int_equal (shortest, 1);
  /* Taken in order, the last job's start tag is the virtual time. */
  assert_int_equal (q.vtime, 31 * chunk);
}

/* Distance costs: the budget is long (the model's, from its seek
 * cost), and a stream's consecutive chunks go out together up to it:
 * one seek per budget, not per chunk.  Fair within a budget (and a
 * chunk).
 */
static void
test_seeking_budget_runs (void **state)
{
  struct adaptra_queue q;
  const uint64_t chunk = MIB, budget = 8 * MIB;
  unsigned longest, shortest;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = budget;
  queue_streams (&q, 32, chunk);
  drain (&q, chunk, budget + chunk, &longest, &shortest);
  assert_int_equal (shortest, budget / chunk);
  assert_int_equal (longest, budget / chunk);
}

/* Stream 1's chunk is taken, then a reader steals the head of stream
 * 3's; stream 3's next window is queued in pieces behind it.  Where
 * distance costs (seeks), what continues the stolen part goes next,
 * ahead of stream 2's chunk, until a budget's bytes went out in one
 * run; then the sweep goes on up, and wraps.  Latency-bound, the fair
 * order alone: stream 2 next.
 */
static void
steal_then_batch (bool seeks)
{
  struct adaptra_queue q;
  const uint64_t chunk = MIB;
  const uint32_t pages = (uint32_t) (chunk >> SHIFT);
  struct adaptra_job *job, *prev, *rest;
  const uint64_t s3 = 3 * STREAM_PAGES;
  unsigned i;

  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = 4 * chunk;
  q.seeks = seeks;
  queue_streams (&q, 1, chunk);
  for (i = 1; i <= 4; i++)
    adaptra_queue_add (&q, job_of (3, s3 + i * pages, pages));
  assert_int_equal (take_head (&q, NULL), 1);

  job = adaptra_queue_find (&q, s3, &prev);
  assert_non_null (job);
  rest = adaptra_queue_split (&q, job, 16);
  assert_non_null (rest);
  adaptra_queue_take (&q, prev, job, ADAPTRA_TAKE_STOLEN, 0);
  free (job);

  job = adaptra_queue_batch (&q, 0, &prev);
  if (!seeks) {
    assert_null (job);
    assert_int_equal (take_head (&q, NULL), 2);
  }
  else {
    /* The rest and the next window up to the budget of 4 MiB: the
     * stolen 64 KiB and the rest, then three chunks.
     */
    for (i = 0; i < 4; i++) {
      assert_non_null (job);
      assert_int_equal (job->stream, 3);
      assert_int_equal (job->first, i == 0 ? s3 + 16 : s3 + i * pages);
      assert_ptr_equal (prev, job->prev);
      adaptra_queue_take (&q, prev, job, ADAPTRA_TAKE_IN_ORDER, 0);
      free (job);
      job = adaptra_queue_batch (&q, 0, &prev);
    }
    /* The run did its budget: the sweep goes on up in the round, to
     * stream 4's chunk, and then wraps to stream 2's.
     */
    assert_int_equal (q.batch, 4 * chunk);
    assert_non_null (job);
    assert_int_equal (job->stream, 4);
    adaptra_queue_take (&q, prev, job, ADAPTRA_TAKE_IN_ORDER, 0);
    free (job);
    assert_null (adaptra_queue_batch (&q, 0, &prev));
    assert_int_equal (take_head (&q, NULL), 2);
  }
  while (q.head)
    take_head (&q, NULL);
  assert_int_equal (q.queued_bytes, 0);
}

static void
test_seeking_steal_continues (void **state)
{
  (void) state;
  steal_then_batch (true);
}

static void
test_latency_bound_steal_waits_its_turn (void **state)
{
  (void) state;
  steal_then_batch (false);
}

/* Where distance costs and nothing continues the run, the sweep goes
 * on up from where it ended, within the round, and then wraps: a
 * reader stole stream 3's chunk, and stream 4's goes next, then
 * stream 1's and 2's.  One seek up, not down to stream 1 and up again.
 */
static void
test_seeking_sweeps_up (void **state)
{
  struct adaptra_queue q;
  struct adaptra_job *job, *prev;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = 4 * MIB;
  q.seeks = true;
  queue_streams (&q, 1, MIB);
  job = adaptra_queue_find (&q, 3 * STREAM_PAGES, &prev);
  assert_non_null (job);
  adaptra_queue_take (&q, prev, job, ADAPTRA_TAKE_STOLEN, 0);
  free (job);
  job = adaptra_queue_batch (&q, 0, &prev);
  assert_non_null (job);
  assert_int_equal (job->stream, 4);
  assert_ptr_equal (prev, job->prev);
  adaptra_queue_take (&q, prev, job, ADAPTRA_TAKE_IN_ORDER, 0);
  free (job);
  assert_null (adaptra_queue_batch (&q, 0, &prev));
  assert_int_equal (take_head (&q, NULL), 1);
  assert_int_equal (take_head (&q, NULL), 2);
  assert_null (q.head);
}

/* A window of n chunks of stream s from page first, its jobs sharing
 * the window (as adaptra_prefetch_dispatch queues one).
 */
static void
queue_window (struct adaptra_queue *q, uint64_t s, uint64_t first,
              unsigned n, uint64_t chunk)
{
  uint32_t pages = (uint32_t) (chunk >> SHIFT);
  unsigned i;

  for (i = 0; i < n; i++) {
    struct adaptra_job *job = job_of (s, first + i * pages, pages);

    job->window = first + n * pages;
    adaptra_queue_add (q, job);
  }
}

/* Take what the batch says goes next, and return its stream. */
static uint64_t
take_batch (struct adaptra_queue *q)
{
  struct adaptra_job *prev, *job = adaptra_queue_batch (q, 0, &prev);

  return take_in_order (q, prev, job, NULL);
}

/* Where distance costs, a run that passed its budget still reads the
 * rest of the window it is in (its rest would cost a seek of its own
 * later), and stops at the window's end: stream 1's window of four
 * chunks goes out whole under a budget of one, then stream 2's chunk,
 * not stream 1's next window.
 */
static void
test_seeking_run_ends_with_window (void **state)
{
  struct adaptra_queue q;
  unsigned i;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = MIB;
  q.seeks = true;
  queue_window (&q, 1, STREAM_PAGES, 4, MIB);
  queue_window (&q, 2, 2 * STREAM_PAGES, 1, MIB);
  queue_window (&q, 1, STREAM_PAGES + 4 * (MIB >> SHIFT), 4, MIB);
  assert_int_equal (take_head (&q, NULL), 1);
  for (i = 1; i < 4; i++)
    assert_int_equal (take_batch (&q), 1);
  assert_int_equal (q.batch, 4 * MIB);
  assert_int_equal (take_batch (&q), 2);
  while (q.head)
    take_head (&q, NULL);
}

/* A reader needs stream 3's chunk while the head is in stream 1's
 * window: it waits for the window's end (adaptra_queue_promote), and
 * its chunk then goes next, ahead of stream 2's, where the sweep would
 * go on.  Another reader meanwhile waits too, behind it; the first
 * reader asks again and still waits, even if the model stops seeing
 * seeks.  Latency-bound, or with no run going on elsewhere, a reader
 * steals.
 */
static void
test_seeking_reader_waits_for_run (void **state)
{
  const uint64_t whole = UINT64_MAX; /* a request past the job's end */
  struct adaptra_queue q;
  struct adaptra_job *job, *other, *prev;
  unsigned i;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = 4 * MIB;
  queue_window (&q, 1, STREAM_PAGES, 4, MIB);
  queue_window (&q, 2, 2 * STREAM_PAGES, 1, MIB);
  queue_window (&q, 3, 3 * STREAM_PAGES, 1, MIB);
  queue_window (&q, 4, 4 * STREAM_PAGES, 1, MIB);
  job = adaptra_queue_find (&q, 3 * STREAM_PAGES + 5, &prev);
  assert_non_null (job);
  assert_false (adaptra_queue_promote (&q, job, 3 * STREAM_PAGES + 5, whole,
                                       0));
  q.seeks = true;
  assert_false (adaptra_queue_promote (&q, job, 3 * STREAM_PAGES + 5, whole,
                                       0));
  assert_int_equal (take_head (&q, NULL), 1);
  assert_true (adaptra_queue_promote (&q, job, 3 * STREAM_PAGES + 5, whole, 0));
  other = adaptra_queue_find (&q, 4 * STREAM_PAGES, &prev);
  assert_true (adaptra_queue_promote (&q, other, 4 * STREAM_PAGES, whole, 0));
  assert_true (adaptra_queue_promote (&q, job, 3 * STREAM_PAGES + 5, whole, 0));
  /* Should the model stop seeing seeks meanwhile, the reader's job
   * goes next all the same, not behind the queue in fair order.
   */
  q.seeks = false;
  assert_ptr_equal (adaptra_queue_batch (&q, 0, &prev), job);
  q.seeks = true;
  for (i = 1; i < 4; i++)
    assert_int_equal (take_batch (&q), 1);
  assert_int_equal (take_batch (&q), 3);
  assert_int_equal (q.waits.n, 1);
  assert_int_equal (take_batch (&q), 4);
  assert_null (q.waits.root);
  assert_int_equal (take_head (&q, NULL), 2);
  assert_null (q.head);
}

/* Take what the batch says goes next at now, and return it (freed:
 * its stream and first page only).
 */
static void
take_batch_at (struct adaptra_queue *q, uint64_t now, uint64_t stream,
               uint64_t first)
{
  struct adaptra_job *prev, *job = adaptra_queue_batch (q, now, &prev);

  assert_non_null (job);
  assert_int_equal (job->stream, stream);
  assert_int_equal (job->first, first);
  assert_ptr_equal (prev, job->prev);
  adaptra_queue_take (q, prev, job, ADAPTRA_TAKE_IN_ORDER, now);
  free (job);
}

/* Readers wait for their turns in the order they began to wait, and a
 * turn is bounded in time (the model's turn_ns), not only by the run's
 * bytes.  Stream 1's window of eight chunks is at the head under a
 * budget of four; a reader waits for stream 3's chunk, then another
 * for stream 2's (it waits too: its steal would start a run ahead of
 * the first reader's).  Until stream 1's turn has lasted turn_ns its
 * run goes on, past its budget within its window: turns stay long
 * enough to amortise their seek.  Then the first reader's job goes,
 * whatever stream 1 has left, and its run goes on; then the second
 * reader's, and a turn's time later, a third waiting reader's.
 */
static void
test_seeking_readers_wait_a_turn_each (void **state)
{
  const uint64_t turn = 30 * UINT64_C (1000000), t0 = 5 * turn;
  const uint64_t s1 = STREAM_PAGES, s2 = 2 * STREAM_PAGES;
  const uint64_t s3 = 3 * STREAM_PAGES, s4 = 4 * STREAM_PAGES;
  const uint32_t pages = (uint32_t) (MIB >> SHIFT);
  struct adaptra_queue q;
  struct adaptra_job *job, *prev;
  unsigned i;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = 4 * MIB;
  q.seeks = true;
  q.turn_ns = turn;
  queue_window (&q, 1, s1, 8, MIB);
  queue_window (&q, 2, s2, 4, MIB);
  queue_window (&q, 3, s3, 2, MIB);
  queue_window (&q, 4, s4, 2, MIB);
  take_batch_at (&q, t0, 1, s1);
  job = adaptra_queue_find (&q, s3, &prev);
  assert_true (adaptra_queue_promote (&q, job, s3, s3 + 2 * pages,
                                      t0 + turn / 4));
  job = adaptra_queue_find (&q, s2, &prev);
  assert_true (adaptra_queue_promote (&q, job, s2, s2 + pages,
                                      t0 + turn / 2));
  /* Before a turn's time: stream 1's run, past its budget. */
  for (i = 1; i < 6; i++)
    take_batch_at (&q, t0 + turn - 1, 1, s1 + i * pages);
  assert_true (q.batch > q.budget);
  /* A turn's time: the readers' jobs in the order they waited, each
   * run going on from there.
   */
  take_batch_at (&q, t0 + turn, 3, s3);
  take_batch_at (&q, t0 + turn, 3, s3 + pages);
  take_batch_at (&q, t0 + turn + 1, 2, s2);
  assert_null (q.waits.root);
  job = adaptra_queue_find (&q, s4, &prev);
  assert_true (adaptra_queue_promote (&q, job, s4, s4 + pages,
                                      t0 + turn + 2));
  take_batch_at (&q, t0 + 2 * turn, 2, s2 + pages);
  take_batch_at (&q, t0 + 2 * turn + 1, 4, s4);
  while (q.head)
    take_head (&q, NULL);
}

/* A reader that waits, waits for its request's pages only: stream 2's
 * job of a budget is cut at the end of the reader's 64 KiB, its turn
 * begins with them, and the rest continues the run right behind.
 */
static void
test_seeking_reader_waits_for_its_request (void **state)
{
  const uint64_t s2 = 2 * STREAM_PAGES, request = (64 * KIB) >> SHIFT;
  struct adaptra_queue q;
  struct adaptra_job *job, *rest, *prev;
  unsigned i;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = 4 * MIB;
  q.seeks = true;
  queue_window (&q, 1, STREAM_PAGES, 4, MIB);
  queue_window (&q, 2, s2, 1, 4 * MIB);
  assert_int_equal (take_head (&q, NULL), 1);
  job = adaptra_queue_find (&q, s2, &prev);
  assert_true (adaptra_queue_promote (&q, job, s2, s2 + request, 0));
  assert_int_equal (job->npages, request);
  rest = adaptra_queue_find (&q, s2 + request, &prev);
  assert_non_null (rest);
  assert_ptr_equal (prev, job);
  assert_int_equal (rest->npages, ((4 * MIB) >> SHIFT) - request);
  assert_int_equal (rest->wait_page, ADAPTRA_QUEUE_NO_PAGE);
  for (i = 1; i < 4; i++)
    assert_int_equal (take_batch (&q), 1);
  assert_ptr_equal (adaptra_queue_batch (&q, 0, &prev), job);
  assert_int_equal (take_batch (&q), 2);
  assert_ptr_equal (adaptra_queue_batch (&q, 0, &prev), rest);
  assert_int_equal (take_batch (&q), 2);
  assert_null (q.head);
}

/* Take what goes next as a worker does (adaptra_queue_batch, else
 * the queue's head), returning its stream and first page.
 */
static uint64_t
take_next (struct adaptra_queue *q, uint64_t *first)
{
  struct adaptra_job *prev, *job = adaptra_queue_batch (q, 0, &prev);

  return job ? take_in_order (q, prev, job, first) : take_head (q, first);
}

/* Where distance costs, over many rounds, through the worker's path:
 * NSTREAMS streams take turns queueing windows of a chunk each, each
 * stream in its own area, ROUNDS budgets' worth of them.  A turn reads
 * per_turn windows of one stream in page order (a budget's worth:
 * consecutive windows continue the run until the budget is out); the
 * sweep then goes up to the next stream, past the windows that
 * continue the run, and wraps to the lowest stream at a round's start
 * (C-SCAN); and no stream is ever more than a turn ahead of another.
 */
static void
sweep_rounds (unsigned per_turn)
{
  enum { ROUNDS = 8 };
  struct adaptra_queue q;
  const uint64_t chunk = MIB;
  const uint32_t pages = (uint32_t) (chunk >> SHIFT);
  uint64_t taken[NSTREAMS + 1] = { 0 };
  uint64_t s, last = 0, first, turns = 0;
  unsigned i, run = 0;

  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = per_turn * chunk;
  q.seeks = true;
  for (i = 0; i < ROUNDS * per_turn; i++)
    for (s = 1; s <= NSTREAMS; s++)
      queue_window (&q, s, s * STREAM_PAGES + i * pages, 1, chunk);
  while (q.head) {
    uint64_t most = 0, least = UINT64_MAX;

    s = take_next (&q, &first);
    assert_int_equal (first, s * STREAM_PAGES + taken[s] / chunk * pages);
    taken[s] += chunk;
    if (s != last) {
      /* A turn ends after its budget, and the next one is the next
       * stream up, the lowest after the highest.
       */
      if (last != 0)
        assert_int_equal (run, per_turn);
      assert_int_equal (s, last % NSTREAMS + 1);
      run = 0;
      turns++;
    }
    run++;
    last = s;
    for (i = 1; i <= NSTREAMS; i++) {
      most = taken[i] > most ? taken[i] : most;
      least = taken[i] < least ? taken[i] : least;
    }
    assert_true (most - least <= q.budget);
  }
  assert_int_equal (turns, NSTREAMS * ROUNDS);
  assert_int_equal (q.queued_bytes, 0);
}

static void
test_seeking_sweep_wraps_fairly (void **state)
{
  (void) state;
  sweep_rounds (1);
  sweep_rounds (3);
}

/* A job dropped unread does not move the batch on. */
static void
test_drop_keeps_batch (void **state)
{
  struct adaptra_queue q;
  struct adaptra_job *a, *b, *job, *prev;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = 4 * MIB;
  q.seeks = true;
  a = job_of (1, 1000, 16);
  b = job_of (1, 1016, 16);
  adaptra_queue_add (&q, a);
  adaptra_queue_add (&q, b);
  adaptra_queue_take (&q, NULL, a, ADAPTRA_TAKE_IN_ORDER, 0);
  free (a);
  job = adaptra_queue_batch (&q, 0, &prev);
  assert_ptr_equal (job, b);
  adaptra_queue_take (&q, NULL, b, ADAPTRA_TAKE_DROPPED, 0);
  free (b);
  assert_int_equal (q.near, 1016);
  assert_int_equal (q.batch, 16 << SHIFT);
}

/* A stream that queues a huge window first still takes only its share:
 * another stream's chunk, queued after, goes ahead of the window's
 * rest once the first budget is out.
 */
static void
test_huge_window_takes_its_share (void **state)
{
  struct adaptra_queue q;
  const uint64_t chunk = 64 * KIB;
  uint32_t pages = (uint32_t) (chunk >> SHIFT);
  unsigned i, before = 0;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = 4 * chunk;
  for (i = 0; i < 256; i++)
    adaptra_queue_add (&q, job_of (1, STREAM_PAGES + i * pages, pages));
  adaptra_queue_add (&q, job_of (2, 2 * STREAM_PAGES, pages));
  while (take_head (&q, NULL) == 1)
    before++;
  assert_true (before <= 4);
  while (q.head)
    take_head (&q, NULL);
}

/* A reader steals the part of a queued job up to the end of its
 * request: the rest stays queued in the job's place with its tag, and
 * is read once.  A rest under ADAPTRA_JOB_MIN is not split off.
 */
static void
test_split_and_steal (void **state)
{
  struct adaptra_queue q;
  const uint32_t pages = (uint32_t) (MIB >> SHIFT);
  const uint32_t min_pages = (uint32_t) (ADAPTRA_JOB_MIN >> SHIFT);
  struct adaptra_job *a, *b, *job, *prev, *rest;
  uint64_t tag, vtime;

  (void) state;
  adaptra_queue_init (&q, SHIFT, NULL);
  q.budget = MIB;
  a = job_of (1, 1000, pages);
  b = job_of (2, 5000, pages);
  adaptra_queue_add (&q, a);
  adaptra_queue_add (&q, b);
  assert_int_equal (q.queued_bytes, 2 * MIB);

  /* The page, and the job before it. */
  job = adaptra_queue_find (&q, 5000 + 7, &prev);
  assert_ptr_equal (job, b);
  assert_ptr_equal (prev, a);
  assert_null (adaptra_queue_find (&q, 5000 + pages, &prev));

  /* A reader of pages [1000, 1010) of a: split after 10 pages. */
  job = adaptra_queue_find (&q, 1003, &prev);
  assert_ptr_equal (job, a);
  assert_null (prev);
  tag = a->tag;
  rest = adaptra_queue_split (&q, a, 10);
  assert_non_null (rest);
  assert_ptr_equal (a->next, rest);
  assert_int_equal (a->npages, 10);
  assert_int_equal (a->bytes, 10 << SHIFT);
  assert_int_equal (rest->first, 1010);
  assert_int_equal (rest->npages, pages - 10);
  assert_int_equal (rest->bytes, (pages - 10) << SHIFT);
  assert_int_equal (rest->frames[0], 1010);
  assert_int_equal (rest->tag, tag);
  assert_int_equal (q.queued_bytes, 2 * MIB);

  /* Stolen out of turn: the virtual time does not move. */
  vtime = q.vtime;
  adaptra_queue_take (&q, NULL, a, ADAPTRA_TAKE_STOLEN, 0);
  free (a);
  assert_int_equal (q.vtime, vtime);
  assert_ptr_equal (q.head, rest);
  assert_int_equal (q.queued_bytes, 2 * MIB - (10 << SHIFT));

  /* A rest under ADAPTRA_JOB_MIN stays with the job. */
  assert_null (adaptra_queue_split (&q, rest, rest->npages - min_pages + 1));
  assert_int_equal (rest->npages, pages - 10);
  assert_non_null (adaptra_queue_split (&q, rest, rest->npages - min_pages));

  /* Contended: another stream than the asker's has a job queued.
   * Left: stream 1's two parts, then stream 2's job.
   */
  assert_true (adaptra_queue_contended (&q, 1));
  assert_true (adaptra_queue_contended (&q, 2));
  assert_int_equal (take_head (&q, NULL), 1);
  assert_int_equal (take_head (&q, NULL), 1);
  assert_false (adaptra_queue_contended (&q, 2));
  assert_true (adaptra_queue_contended (&q, 1));
  assert_int_equal (take_head (&q, NULL), 2);
  assert_false (adaptra_queue_contended (&q, 1));
  assert_int_equal (q.queued_bytes, 0);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_latency_bound_interleaves),
    cmocka_unit_test (test_seeking_budget_runs),
    cmocka_unit_test (test_seeking_steal_continues),
    cmocka_unit_test (test_latency_bound_steal_waits_its_turn),
    cmocka_unit_test (test_seeking_sweeps_up),
    cmocka_unit_test (test_seeking_sweep_wraps_fairly),
    cmocka_unit_test (test_drop_keeps_batch),
    cmocka_unit_test (test_seeking_run_ends_with_window),
    cmocka_unit_test (test_seeking_reader_waits_for_run),
    cmocka_unit_test (test_seeking_readers_wait_a_turn_each),
    cmocka_unit_test (test_seeking_reader_waits_for_its_request),
    cmocka_unit_test (test_huge_window_takes_its_share),
    cmocka_unit_test (test_split_and_steal),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
