/* test-workers.c: unit tests of core/workers.c: threads sized by the model.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The sizing decision (adaptra_workers_wanted, a pure function of the
 * model's estimate) on estimates of each kind of backend, and the
 * threads themselves over the fixture's fake backend: few at the
 * start, as many as pay while jobs wait, few again once idle.
 */

#include <config.h>

#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include "adaptra/sim.h"
#include "fixture.h"
#include "../../core/engine-impl.h"

#define DISK (32 * 1024 * 1024)
#define CEILING 32
#define MS UINT64_C (1000000)

static int
setup (void **state)
{
  (void) state;
  return fixture_open (DISK, NULL);
}

/* Let every read held in the backend, and those still to come, go on
 * until no page is in flight (up to 10 s); then no read is held.
 */
static void
release_all (void)
{
  unsigned i;

  for (i = 0; i < 10000 && stats ().pages_in_flight > 0; i++) {
    sem_post (&release);
    usleep (1000);
  }
  gate = false;
  while (sem_trywait (&entered) == 0)
    ;
  while (sem_trywait (&release) == 0)
    ;
}

/* Let go of the reads a failed test left held in the backend, so that
 * the workers stop.
 */
static int
teardown (void **state)
{
  (void) state;
  gate = false;
  release_all ();
  fixture_close ();
  return 0;
}

/* A model not measured yet, a disk or the page cache: their depth. */
static void
test_wanted_by_depth (void **state)
{
  struct adaptra_model m = { 0 };
  struct adaptra_model_estimate est;

  (void) state;
  adaptra_model_estimate (&m, SEC, &est);
  assert_int_equal (adaptra_workers_wanted (&est, CEILING),
                    ADAPTRA_MODEL_DEPTH);
  assert_int_equal (adaptra_workers_wanted (&est, 2), 2);
  est = (struct adaptra_model_estimate) { .depth = 1, .limit = UINT64_MAX };
  assert_int_equal (adaptra_workers_wanted (&est, CEILING),
                    ADAPTRA_WORKERS_MIN);
}

/* Latency-bound: the ceiling, and the gate (the model's limit on the
 * bytes in flight) decides which start.
 */
static void
test_wanted_latency_bound (void **state)
{
  const uint64_t bdp = 1024 * 1024;     /* 5 ms at 200 MiB/s */
  struct adaptra_model_estimate est = {
    .latency_bound = true, .depth = 0, .bdp = bdp,
    .limit = bdp * ADAPTRA_MODEL_GAIN_NUM / ADAPTRA_MODEL_GAIN_DEN,
    .chunk = bdp / ADAPTRA_MODEL_CHUNK_DIVISOR,
  };

  (void) state;
  assert_int_equal (adaptra_workers_wanted (&est, CEILING), CEILING);
  assert_int_equal (adaptra_workers_wanted (&est, 8), 8);
  est.limit = UINT64_MAX;
  assert_int_equal (adaptra_workers_wanted (&est, CEILING), CEILING);
  assert_int_equal (adaptra_workers_wanted (&est, 0), 0);
}

/* Never fewer than ADAPTRA_WORKERS_MIN while the ceiling allows. */
static void
test_wanted_at_least_min (void **state)
{
  struct adaptra_model_estimate est = { .depth = 0 };

  (void) state;
  assert_int_equal (adaptra_workers_wanted (&est, ADAPTRA_WORKERS_MIN),
                    ADAPTRA_WORKERS_MIN);
}

static uint64_t
running (void)
{
  return stats ().workers_running;
}

/* Poll (up to 10 s) until workers_running is n. */
static void
wait_running (uint64_t n)
{
  unsigned i;

  for (i = 0; i < 10000 && running () != n; i++)
    usleep (1000);
  assert_int_equal (running (), n);
}

/* ADAPTRA_WORKERS_MIN threads at the start; while jobs wait behind a
 * backend that holds every read, the model's depth (not measured yet:
 * ADAPTRA_MODEL_DEPTH) read, and no thread more starts.
 */
static void
test_threads_follow_the_model (void **state)
{
  void *ctx = &worker_ctx;
  unsigned i, jobs = 2 * ADAPTRA_MODEL_DEPTH;

  (void) state;
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, &ctx), 0);
  assert_int_equal (adaptra_workers_start (e, CEILING, 0), 0);
  assert_int_equal (running (), ADAPTRA_WORKERS_MIN);
  gate = true;
  for (i = 0; i < jobs; i++)            /* separate jobs, one page each */
    adaptra_cache_hint (e, client, (uint64_t) i * 64 * PAGE, PAGE);
  for (i = 0; i < ADAPTRA_MODEL_DEPTH; i++)
    sem_wait (&entered);
  usleep (100 * 1000);                  /* a thread too many would show */
  assert_int_equal (running (), ADAPTRA_MODEL_DEPTH);
  for (i = 0; i < ADAPTRA_MODEL_DEPTH; i++)
    sem_post (&release);
  release_all ();
  assert_int_equal (stats ().pages_in_flight, 0);
  assert_int_equal (running (), ADAPTRA_MODEL_DEPTH);
  adaptra_workers_stop (e);
  assert_int_equal (running (), 0);
}

/* Teach the model a remote backend (5 ms, then 125 MiB/s on the fake
 * clock) with scattered reads of 4-64 KiB (and the read-ahead they
 * queued, so that none is left), and return its estimate:
 * latency-bound, with a limit.  The threads that read next do so
 * without the clock, which the fixture moves without a lock.
 */
static struct adaptra_model_estimate
learn_remote (void)
{
  struct adaptra_model_estimate est;
  unsigned i;

  read_ns = 5 * MS;
  read_ns_per_kib = 8000;
  for (i = 0; i < 64; i++)
    read_check ((uint64_t) (i * 37 % 61) * 256 * 1024,
                (uint32_t) (1 + i % 16) * PAGE);
  drain ();                             /* their read-ahead, if any */
  adaptra_lock (e);
  adaptra_model_estimate (&e->model, now_ns, &est);
  adaptra_unlock (e);
  assert_true (est.latency_bound);
  assert_int_not_equal (est.limit, UINT64_MAX);
  read_ns = read_ns_per_kib = 0;
  return est;
}

/* Over the remote backend, once the model knows it, jobs waiting
 * behind reads held in the backend get as many threads as the model's
 * limit on the bytes in flight admits reads, not the ceiling: the
 * reads in the backend are the limit's worth, not one more (a job
 * counts in flight from its take), and only a few threads more run (a
 * thread that takes a job starts or wakes those for the jobs behind it
 * that may start too).  Idle again, they end down to
 * ADAPTRA_WORKERS_MIN.
 */
#define JOB (64 * 1024)

static void
test_threads_as_many_as_the_limit_admits (void **state)
{
  void *ctx = &worker_ctx;
  struct adaptra_model_estimate est;
  unsigned i, admitted, extra, jobs = CEILING;
  size_t queued;
  uint64_t offset, bytes;
  uint32_t count;

  (void) state;
  est = learn_remote ();
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, &ctx), 0);
  for (i = 0; i < jobs; i++)
    adaptra_cache_hint (e, client, (uint64_t) i * 256 * 1024 + 128 * 1024,
                        JOB);
  /* The jobs (a hint's, or a transfer slot's where its frames are not
   * consecutive) that the gate admits in queue order: while the bytes
   * before them are under the limit.
   */
  for (queued = admitted = 0, bytes = 0;
       adaptra_prefetch_peek (e, queued, &offset, &count); queued++)
    if (bytes < est.limit) {
      admitted++;
      bytes += count;
    }
  assert_true (queued >= jobs);
  assert_true (admitted > ADAPTRA_WORKERS_MIN &&
               admitted + 2 + ADAPTRA_WORKERS_MIN < CEILING);
  assert_true (admitted < queued);
  gate = true;
  assert_int_equal (adaptra_workers_start (e, CEILING, 0), 0);
  for (i = 0; i < admitted; i++)
    sem_wait (&entered);
  usleep (100 * 1000);                  /* a read too many would show */
  /* Not one more: a job's bytes count in flight from its take, under
   * the lock (workers.c: take), so no worker passes the gate while the
   * one ahead of it has taken its job but not begun the read.  Counted
   * from the read's start, one or two more went through on a loaded
   * machine (three under ASan).
   */
  for (extra = 0; sem_trywait (&entered) == 0; extra++)
    ;
  assert_int_equal (extra, 0);
  assert_true (running () >= admitted);
  assert_true (running () <= admitted + extra + ADAPTRA_WORKERS_MIN);
  for (i = 0; i < admitted + extra; i++)
    sem_post (&release);
  release_all ();
  assert_int_equal (stats ().pages_in_flight, 0);
  /* Idle for ADAPTRA_WORKERS_IDLE_NS: back to the few. */
  usleep (ADAPTRA_WORKERS_IDLE_NS / 1000);
  wait_running (ADAPTRA_WORKERS_MIN);
  adaptra_workers_stop (e);
  assert_int_equal (running (), 0);
}

/* The idle wake-ups so far, once a tenth of a second went by without
 * one.  The hints that hold_the_limit queues each wake as many threads
 * as there are jobs that could start (grow), the same jobs counted
 * again at each hint, so some of those threads find no job: idle
 * wake-ups of the setup, not of the test.  On a loaded machine such a
 * thread may run only after the setup's sleep, and counted in the test
 * it failed it (test_job_behind_the_gate_wakes_none, at a load average
 * of 10 on two CPUs).
 */
static uint64_t
settled_wakeups (void)
{
  uint64_t before, after = 0;
  unsigned tries;

  adaptra_lock (e);
  before = e->idle_wakeups;
  adaptra_unlock (e);
  for (tries = 0; tries < 50; tries++) {
    usleep (100 * 1000);
    adaptra_lock (e);
    after = e->idle_wakeups;
    adaptra_unlock (e);
    if (after == before)
      break;
    before = after;
  }
  return after;
}

/* Start the workers over the remote backend and hold the limit's worth
 * of reads in the backend, jobs waiting behind them and threads idle
 * besides (started for the many small jobs of a first round, which
 * fit the limit many times).  Returns the idle wake-ups so far.
 */
static uint64_t
hold_the_limit (void)
{
  void *ctx = &worker_ctx;
  struct adaptra_model_estimate est;
  unsigned i, held;
  uint64_t size;

  est = learn_remote ();
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, &ctx), 0);
  assert_int_equal (adaptra_workers_start (e, CEILING, 0), 0);
  gate = true;
  for (i = 0; i < CEILING; i++)
    adaptra_cache_hint (e, client, (uint64_t) i * 256 * 1024 + 128 * 1024,
                        JOB);
  sem_wait (&entered);
  usleep (100 * 1000);
  release_all ();
  /* Jobs of half the limit each: a few fill it. */
  size = (est.limit / 2 + PAGE - 1) / PAGE * PAGE;
  gate = true;
  for (i = 0; i < 8; i++)
    adaptra_cache_hint (e, client, DISK / 4 + (uint64_t) i * 2 * size,
                        (uint32_t) size);
  sem_wait (&entered);
  usleep (100 * 1000);                  /* the limit's worth start */
  for (held = 1; sem_trywait (&entered) == 0; held++)
    ;
  assert_true (running () > held);      /* threads wait besides */
  adaptra_lock (e);
  assert_non_null (e->queue.head);      /* jobs wait behind the limit */
  adaptra_unlock (e);
  return settled_wakeups ();
}

/* The idle wake-ups since hold_the_limit returned wakeups, once any
 * thread woken would have shown; then let every read go and stop.
 */
static uint64_t
wakeups_since (uint64_t wakeups)
{
  usleep (100 * 1000);
  adaptra_lock (e);
  wakeups = e->idle_wakeups - wakeups;
  adaptra_unlock (e);
  release_all ();
  assert_int_equal (stats ().pages_in_flight, 0);
  adaptra_workers_stop (e);
  return wakeups;
}

/* A worker that ends its job takes the next itself: the room the job
 * leaves in flight wakes no other thread, which would only find the
 * job gone and sleep again (a wake-up and a thread switch per job).
 * Each read let go lets one job more start, and no idle thread wakes.
 */
static void
test_worker_takes_its_next_job (void **state)
{
  uint64_t wakeups;
  unsigned i;

  (void) state;
  wakeups = hold_the_limit ();
  for (i = 0; i < 4; i++) {
    sem_post (&release);
    sem_wait (&entered);                /* the next job's read */
  }
  assert_int_equal (wakeups_since (wakeups), 0);
}

/* A job queued behind the gate wakes no thread: none may take it. */
static void
test_job_behind_the_gate_wakes_none (void **state)
{
  uint64_t wakeups;

  (void) state;
  wakeups = hold_the_limit ();
  adaptra_cache_hint (e, client, DISK / 2, JOB);
  assert_int_equal (wakeups_since (wakeups), 0);
}

/* One event starts threads for every queued job that may start, at
 * once: jobs queued while the bytes in flight (a client's reads, here)
 * filled the model's limit started no thread; when they are read and
 * a job is queued, the waiting threads and one new thread for each job
 * more run, not one more thread that starts the next once it has
 * taken its job (a thread's start each, in line).
 */
static void
test_threads_start_at_once (void **state)
{
  void *ctx = &worker_ctx;
  struct adaptra_model_estimate est;
  struct adaptra_volume *v;
  const struct adaptra_job *job;
  unsigned i, admitted = 0, threads, jobs = CEILING;
  uint64_t page, bytes = 0;

  (void) state;
  est = learn_remote ();
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, &ctx), 0);
  assert_int_equal (adaptra_workers_start (e, CEILING, 0), 0);
  assert_int_equal (running (), ADAPTRA_WORKERS_MIN);
  gate = true;
  /* Under the lock, so that no thread takes a job meanwhile. */
  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  adaptra_model_start (&e->model, 0, est.limit);
  for (i = 0; i < jobs; i++) {          /* separate jobs of JOB bytes */
    page = (v->base >> e->page_shift) + (uint64_t) i * 64;
    adaptra_prefetch_dispatch (e, v, page, page + JOB / PAGE, UINT64_MAX, 0,
                               ADAPTRA_METHOD_NONE, 0);
  }
  assert_int_equal (e->threads, ADAPTRA_WORKERS_MIN);
  /* The jobs (a transfer slot's where frames are not consecutive) that
   * the gate admits in queue order: while the bytes before them are
   * under the limit.
   */
  for (job = e->queue.head; job && bytes < est.limit; job = job->next) {
    admitted++;
    bytes += job->bytes;
  }
  assert_true (admitted > ADAPTRA_WORKERS_MIN + 1 && job != NULL);
  adaptra_model_end (&e->model, est.limit);
  adaptra_workers_job_queued (e, false);
  threads = e->threads;
  adaptra_unlock (e);
  assert_int_equal (threads, admitted);
  for (i = 0; i < admitted; i++)
    sem_wait (&entered);
  release_all ();
  assert_int_equal (stats ().pages_in_flight, 0);
  adaptra_workers_stop (e);
}

/* The reader that reaches a window that just doubled waits for the
 * job holding its next page, which a worker may have started and no
 * reader can split any more: that job is one of the model's chunks,
 * or its bandwidth-delay product where that is larger, so the wait is
 * one such chunk's fetch (about two latencies), not a share of the
 * window.  A 64 KiB reader over a remote backend (5 ms, then
 * 200 MiB/s on the fake clock: a product of 1 MiB) whose windows are
 * split for ADAPTRA_MODEL_DEPTH workers, until a window of WINDOW_MIN
 * or more is issued, whose share a worker would read is larger.
 */
#define REQ (64 * 1024)
#define WINDOW_MIN (8 * 1024 * 1024)

static uint64_t ran_offset, ran_count;

static void
record_read (uint64_t offset, uint32_t count)
{
  ran_offset = offset;
  ran_count = count;
}

static void
test_reader_waits_one_chunk (void **state)
{
  struct adaptra_config cfg;
  struct adaptra_model_estimate est;
  const struct adaptra_trace *t = NULL;
  uint64_t off, t0, waited, chunk, chunk_ns;

  (void) state;
  fixture_stop ();
  fixture_config (&cfg);
  cfg.max_bytes = 2 * WINDOW_MIN;
  cfg.pool_bytes = 128 * 1024 * 1024;
  fixture_start (&cfg, "", "test");
  assert_int_equal (adaptra_workers_simulate (e, ADAPTRA_MODEL_DEPTH), 0);
  read_ns = 5 * MS;
  read_ns_per_kib = 5000;
  for (off = 0; off + REQ <= DISK && t == NULL; off += REQ) {
    unsigned before = ntraces;

    read_check (off, REQ);
    if (ntraces > before &&
        trace_pages (&traces[ntraces - 1]) * PAGE >= WINDOW_MIN)
      t = &traces[ntraces - 1];
    else
      drain ();
    now_ns += MS;
  }
  assert_non_null (t);
  adaptra_lock (e);
  adaptra_model_estimate (&e->model, now_ns, &est);
  adaptra_unlock (e);
  chunk = est.chunk > est.bdp ? est.chunk : est.bdp;
  assert_true (chunk > 0);
  assert_true (trace_pages (t) * PAGE / ADAPTRA_MODEL_DEPTH > chunk);
  chunk_ns = read_ns + chunk / 1024 * read_ns_per_kib;
  /* A worker takes the queue's next job: the one holding the window's
   * first page, where the reader reads next.
   */
  during_read = record_read;
  t0 = now_ns;
  assert_true (adaptra_prefetch_run_one (e, volume, &worker_ctx));
  waited = now_ns - t0;
  during_read = NULL;
  assert_int_equal (ran_offset, t->placement.start * PAGE);
  assert_true (ran_count <= chunk);
  assert_true (waited <= chunk_ns);
  drain ();
  read_ns = read_ns_per_kib = 0;
}

/* Queue a window of n pages of stream 1 in the middle of the disk, as
 * the state method would; returns its first page.  Lock held.
 */
static uint64_t
dispatch_mid_disk (uint64_t n)
{
  struct adaptra_volume *v = adaptra_volume_of (e, volume);
  uint64_t start = (v->base >> e->page_shift) + DISK / PAGE / 2;

  assert_int_equal (adaptra_prefetch_dispatch (e, v, start, start + n,
                                               UINT64_MAX, 1,
                                               ADAPTRA_METHOD_STATE, 0), n);
  return start;
}

/* A window alone goes out in no more jobs than a stream may have read
 * at once (ADAPTRA_MODEL_STREAM_READS), so that none waits a round
 * trip for the first to end; its first is still at most the model's
 * chunk or product (the ramp: test_reader_waits_one_chunk), and each
 * next one at most the pages before it but the last, which takes the
 * rest.  Over the remote backend, a window of six such firsts: split
 * in four shares of a first and a half, it ramped up in five jobs.
 */
static void
test_window_in_ways_jobs (void **state)
{
  struct adaptra_model_estimate est;
  const struct adaptra_job *job;
  uint64_t first, start, n, pages = 0;
  unsigned jobs = 0;

  (void) state;
  assert_int_equal (adaptra_workers_simulate (e, CEILING), 0);
  est = learn_remote ();
  first = (est.chunk > est.bdp ? est.chunk : est.bdp) / PAGE;
  n = 6 * first;
  assert_true (n / ADAPTRA_MODEL_STREAM_READS > first);
  assert_true (n * PAGE / ADAPTRA_MODEL_STREAM_READS <= est.job_max);
  adaptra_lock (e);
  start = dispatch_mid_disk (n);
  for (job = e->queue.head; job; job = job->next) {
    if (job->first < start || job->first >= start + n)
      continue;
    assert_int_equal (job->first, start + pages);
    if (jobs == 0)
      assert_true (job->npages <= first);
    else if (pages + job->npages < n)
      assert_true (job->npages <= pages);
    jobs++;
    pages += job->npages;
  }
  adaptra_unlock (e);
  assert_int_equal (pages, n);
  assert_true (jobs <= ADAPTRA_MODEL_STREAM_READS);
  drain ();
}

/* The most bytes of a stream's job that a worker starts, by the
 * model's estimate now: its chunk or product, at most
 * ADAPTRA_WORKERS_STARTUP_LEAD in startup (workers.c).
 */
static uint64_t
lead_now (void)
{
  struct adaptra_model_estimate est;
  uint64_t lead;

  adaptra_lock (e);
  adaptra_model_estimate (&e->model, now_ns, &est);
  adaptra_unlock (e);
  if (est.limit == UINT64_MAX)
    return UINT64_MAX;
  lead = est.chunk > est.bdp ? est.chunk : est.bdp;
  if (est.startup && lead > ADAPTRA_WORKERS_STARTUP_LEAD)
    lead = ADAPTRA_WORKERS_STARTUP_LEAD;
  return lead;
}

/* Queue a window of n pages of stream 1 in the middle of the disk,
 * then let simulated workers take and complete its jobs one at a
 * time, each read taking 5 ms and 5 us a KiB (the remote backend):
 * each starts at most lead_now () of it (the reader that catches up
 * waits for no more), and all of it is read.
 */
static void
workers_start_at_most_lead (uint64_t n)
{
  uint64_t offset, pages = 0;
  uint32_t count;
  void *ctxs[] = { &worker_ctx };
  struct adaptra_job *job;
  unsigned jobs = 0, over = 0;

  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, ctxs), 0);
  adaptra_lock (e);
  dispatch_mid_disk (n);
  adaptra_unlock (e);
  read_ns = 5 * MS;
  read_ns_per_kib = 5000;
  for (;;) {
    uint64_t lead = lead_now ();

    job = adaptra_worker_take (e, &offset, &count);
    if (job == NULL)
      break;
    if (lead == UINT64_MAX || count > lead)
      over++;
    pages += count / PAGE;
    jobs++;
    adaptra_worker_complete (e, job, 0);
  }
  read_ns = read_ns_per_kib = 0;
  assert_int_equal (over, 0);
  assert_int_equal (pages, n);
  assert_true (jobs > 1);
}

/* Over the remote backend, a window alone whose last job takes the
 * rest of it (test_window_in_ways_jobs: two and a half firsts) is
 * started a chunk or product at a time: a started job cannot be
 * stolen, and its reader waited for all of it.
 */
static void
test_workers_start_at_most_lead (void **state)
{
  struct adaptra_model_estimate est;
  uint64_t first;

  (void) state;
  assert_int_equal (adaptra_workers_simulate (e, CEILING), 0);
  est = learn_remote ();
  assert_false (est.startup);
  first = (est.chunk > est.bdp ? est.chunk : est.bdp) / PAGE;
  assert_true (6 * first * PAGE / ADAPTRA_MODEL_STREAM_READS <= est.job_max);
  workers_start_at_most_lead (6 * first);
}

/* In startup the product is the delivery-rate samples', which a
 * burst inflates: two reads of 6 MiB (apart: no stream) that take
 * only the latency (5 ms) say 1.26 GB/s, a product of 3 MiB (half
 * of a read's time taken for its transfer, model.c).  A worker starts
 * at most ADAPTRA_WORKERS_STARTUP_LEAD of a window of two products.
 */
static void
test_workers_start_little_in_startup (void **state)
{
  struct adaptra_model_estimate est;
  unsigned i;

  (void) state;
  assert_int_equal (adaptra_workers_simulate (e, CEILING), 0);
  read_ns = 5 * MS;
  read_ns_per_kib = 0;
  for (i = 0; i < 2; i++)
    read_check ((uint64_t) i * 9 * 1024 * 1024, 6 * 1024 * 1024);
  drain ();
  read_ns = 0;
  adaptra_lock (e);
  adaptra_model_estimate (&e->model, now_ns, &est);
  adaptra_unlock (e);
  assert_true (est.startup);
  assert_true (est.latency_bound);
  assert_true (est.bdp > ADAPTRA_WORKERS_STARTUP_LEAD);
  workers_start_at_most_lead (2 * est.bdp / PAGE);
}

/* A stream's job starts product-sized (test_workers_start_at_most_lead)
 * only while none of the stream's jobs is being read; behind one, a
 * worker starts at most the model's job_min (or chunk) of it: a
 * backend that shares its rate among the reads in flight (a token
 * bucket serving whichever read lacks least) ended a stream's later,
 * smaller reads before the earlier product-sized one its reader
 * needed first (workers.c: start_pages).  Over the remote backend, a
 * window of six products of a stream in the table (jobs of one, one,
 * one and a half products and the rest: test_window_in_ways_jobs): its
 * first job, with nothing of the stream in flight, starts a product;
 * the second, started while the first is read, job_min, its rest
 * staying queued in its place, where the next worker starts it.
 */
static void
test_workers_start_alike_behind_own_read (void **state)
{
  struct adaptra_model_estimate est;
  struct adaptra_stream *s;
  struct adaptra_volume *v;
  struct adaptra_job *first_job, *next_job, *job;
  void *ctxs[] = { &worker_ctx };
  uint64_t offset, product, behind, n;
  uint32_t count[3];

  (void) state;
  assert_int_equal (adaptra_workers_simulate (e, CEILING), 0);
  est = learn_remote ();
  assert_false (est.startup);
  product = (est.chunk > est.bdp ? est.chunk : est.bdp) / PAGE;
  behind = (est.chunk > est.job_min ? est.chunk : est.job_min) / PAGE;
  assert_true (behind < product);
  n = 6 * product;
  assert_true (n * PAGE / ADAPTRA_MODEL_STREAM_READS <= est.job_max);
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, ctxs), 0);
  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  s = adaptra_streams_new (&e->streams, client,
                           (v->base >> e->page_shift) + DISK / PAGE / 2,
                           now_ns);
  assert_int_equal (adaptra_prefetch_dispatch (e, v, s->next, s->next + n,
                                               UINT64_MAX, s->id,
                                               ADAPTRA_METHOD_STATE, 0), n);
  adaptra_unlock (e);
  first_job = adaptra_worker_take (e, &offset, &count[0]);
  assert_non_null (first_job);
  next_job = adaptra_worker_take (e, &offset, &count[1]);
  assert_non_null (next_job);
  adaptra_worker_complete (e, first_job, 0);
  adaptra_worker_complete (e, next_job, 0);
  job = adaptra_worker_take (e, &offset, &count[2]);
  assert_non_null (job);
  adaptra_worker_complete (e, job, 0);
  assert_int_equal (count[0], product * PAGE);
  assert_int_equal (count[1], behind * PAGE);
  assert_int_equal (count[2], (product - behind) * PAGE);
  drain ();
}

/* The streams of the table with prefetch queued or being read, by a
 * walk of the table: what the table's count (with_jobs) must say.
 * Lock held.
 */
static uint32_t
walk_with_jobs (void)
{
  struct adaptra_streams *t = &e->streams;
  struct adaptra_stream *s;
  uint32_t n = 0;

  for (s = adaptra_streams_first (t); s; s = adaptra_streams_after (t, s))
    n += adaptra_stream_has_jobs (s);
  return n;
}

/* The table's count, checked against the walk. */
static uint32_t
with_jobs (void)
{
  uint32_t counted, walked;

  adaptra_lock (e);
  counted = e->streams.with_jobs;
  walked = walk_with_jobs ();
  adaptra_unlock (e);
  assert_int_equal (counted, walked);
  return counted;
}

/* The table counts its streams with prefetch queued or being read as
 * their jobs are queued, split by a reader's steal, taken and completed
 * by workers (adaptra-sim's, through the threads' take and completion),
 * run by a reader, and as a stream with jobs leaves the table: the
 * count equals the walk of the table at every step.  Three streams, a
 * window of two jobs each (of PAGES pages).
 */
static void
test_streams_with_jobs_counted (void **state)
{
  enum { STREAMS = 3, PAGES = 8 };
  struct adaptra_stream *s[STREAMS];
  struct adaptra_job *taken[2 * STREAMS * PAGES]; /* a job a page at most */
  struct adaptra_volume *v;
  struct adaptra_stream *left;
  uint64_t offset, base, gone, queued[STREAMS];
  uint32_t count, counted[STREAMS], walked[STREAMS];
  void *ctxs[] = { &worker_ctx };
  unsigned i, ntaken = 0;

  (void) state;
  assert_int_equal (adaptra_workers_simulate (e, 2 * STREAMS), 0);
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, ctxs), 0);
  assert_int_equal (with_jobs (), 0);
  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  base = v->base >> e->page_shift;
  for (i = 0; i < STREAMS; i++)
    s[i] = adaptra_streams_new (&e->streams, client,
                                base + (i + 1) * DISK / PAGE / 4, now_ns);
  for (i = 0; i < STREAMS; i++) {
    uint64_t first = s[i]->next;

    queued[i] = adaptra_prefetch_dispatch (e, v, first, first + PAGES,
                                           UINT64_MAX, s[i]->id,
                                           ADAPTRA_METHOD_STATE, 0) +
      adaptra_prefetch_dispatch (e, v, first + PAGES, first + 2 * PAGES,
                                 UINT64_MAX, s[i]->id,
                                 ADAPTRA_METHOD_STATE, 0);
    counted[i] = e->streams.with_jobs;
    walked[i] = walk_with_jobs ();
  }
  adaptra_unlock (e);
  for (i = 0; i < STREAMS; i++) {
    assert_int_equal (queued[i], 2 * PAGES);
    assert_int_equal (counted[i], walked[i]);
    assert_int_equal (counted[i], i + 1);
  }

  /* Taken by simulated workers: queued, then running, still counted. */
  while (ntaken < 2 * STREAMS * PAGES &&
         (taken[ntaken] = adaptra_worker_take (e, &offset, &count)) != NULL) {
    ntaken++;
    assert_int_equal (with_jobs (), STREAMS);
  }
  assert_true (ntaken > 0);
  /* Completed one by one: a stream stops counting with its last job. */
  for (i = 0; i < ntaken; i++) {
    adaptra_worker_complete (e, taken[i], i);
    with_jobs ();
  }
  /* What the gate left queued, a reader runs. */
  while (adaptra_prefetch_run_one (e, volume, &worker_ctx))
    with_jobs ();
  assert_int_equal (with_jobs (), 0);

  /* A stream that leaves the table with jobs queued stops counting,
   * and its jobs, which find no stream, count nowhere when they leave.
   */
  adaptra_lock (e);
  for (i = 0; i < STREAMS; i++)
    queued[i] = adaptra_prefetch_dispatch (e, v, s[i]->next + 2 * PAGES,
                                           s[i]->next + 3 * PAGES, UINT64_MAX,
                                           s[i]->id, ADAPTRA_METHOD_STATE, 0);
  gone = s[0]->id;
  adaptra_streams_free (&e->streams, s[0]);
  left = adaptra_streams_get (&e->streams, gone);
  adaptra_unlock (e);
  for (i = 0; i < STREAMS; i++)
    assert_int_equal (queued[i], PAGES);
  assert_null (left);
  assert_int_equal (with_jobs (), STREAMS - 1);
  drain ();
  assert_int_equal (with_jobs (), 0);
}

int
main (void)
{
#define T(name) cmocka_unit_test_setup_teardown (name, setup, teardown)
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_wanted_by_depth),
    cmocka_unit_test (test_wanted_latency_bound),
    cmocka_unit_test (test_wanted_at_least_min),
    T (test_threads_follow_the_model),
    T (test_threads_as_many_as_the_limit_admits),
    T (test_worker_takes_its_next_job),
    T (test_job_behind_the_gate_wakes_none),
    T (test_threads_start_at_once),
    T (test_reader_waits_one_chunk),
    T (test_window_in_ways_jobs),
    T (test_workers_start_at_most_lead),
    T (test_workers_start_little_in_startup),
    T (test_workers_start_alike_behind_own_read),
    T (test_streams_with_jobs_counted),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
