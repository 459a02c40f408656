/* test-readahead.c: read-ahead when cold: a boot's short runs, streams.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A cold boot reads many short runs, each begun by a read no stream
 * foresaw.  These tests pin the trail (recognise.c: trail) on the
 * fixture's fake backend and clock: a client whose lone reads start
 * runs gets a window of two requests past each, so a run of two reads
 * waits once and reads less ahead for nothing than a stream started at
 * its second read; a random reader gets none, and at queue depth 16
 * sends each read to the backend at once, as one read of its own
 * size; a long sequential reader still grows its windows to the max;
 * streams interleaved on one client start at their second reads.  And
 * many streams starting at once on a backend not measured yet
 * (model.c): each reader reads only its own requests, and the workers
 * start no more than the model's limit.  At a disk's head (no latency
 * that reads in parallel hide), a lone reader's windows are one read
 * each, its look-ahead growing while the head runs dry, while streams
 * that take turns there keep growing their windows, and where each
 * turn costs a seek take a growing share of the thrashing threshold,
 * and a client's streams get windows alike, whose turns come round in
 * one order.
 */

#include <config.h>

#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "fixture.h"
#include "adaptra/holes.h"
#include "adaptra/sim.h"
#include "../../core/engine-impl.h"
#include "../../core/window.h"

#define DISK (32 * 1024 * 1024)
#define MAX_PAGES FIXTURE_SMALL_MAX_PAGES /* adaptra-max */
#define REQ 2                           /* pages a read asks for */
#define RUNS 24                         /* short runs of a boot */
#define RUN_GAP 256                     /* pages between runs */

/* Every test's engine: DISK, a small pool. */
static struct fixture_spec readahead_spec = { DISK, fixture_small_pool };

/* Read pages [p, p + n) and let the workers fetch what was queued. */
static void
read_pages (uint64_t p, uint64_t n)
{
  read_check (p * PAGE, (uint32_t) (n * PAGE));
  drain ();
}

/* Runs of two reads of REQ pages, far apart.  The first runs teach
 * the engine that this client's lone reads start runs; from then on
 * each run's first read is its only wait (the second is read ahead),
 * and the backend reads at most 3.5 times the run's pages (the trail
 * of two requests, then the state window its mark issues, twice that).
 * A stream started at each run's second read (four times both
 * requests: 16 pages, 14 past the run) read 4.5 times them and waited
 * twice a run.
 */
static void
test_short_runs (void **state)
{
  const unsigned learn = 2;             /* runs before the first trail */
  uint64_t demand = 0, backend = 0;
  unsigned i;

  (void) state;
  for (i = 0; i < RUNS; i++) {
    uint64_t p = 1000 + (uint64_t) i * RUN_GAP;
    uint64_t client0 = client_bytes, worker0 = worker_bytes;

    read_pages (p, REQ);
    read_pages (p + REQ, REQ);
    if (i >= learn) {
      demand += client_bytes - client0;
      backend += client_bytes - client0 + worker_bytes - worker0;
    }
  }
  assert_int_equal (demand, (uint64_t) (RUNS - learn) * REQ * PAGE);
  assert_true (backend * 2 <= (uint64_t) 7 * (RUNS - learn) * 2 * REQ * PAGE);
}

/* A random reader's next page is not read: its lone reads get no
 * trail, and nothing is read ahead.
 */
static void
test_random_reader (void **state)
{
  unsigned i;

  (void) state;
  for (i = 0; i < 200; i++)
    read_pages (1000 + (uint64_t) (i * 37 % 200) * 31, REQ);
  assert_int_equal (stats ().method[ADAPTRA_METHOD_NONE].pgreadahead, 0);
  assert_int_equal (ntraces, 0);
}

/* Reads one client has in flight at once (fio's queue depth 16), and
 * the page each of them reads (qd_reader).
 */
#define QD 16
static uint64_t qd_pages[QD];

static void *
qd_reader (void *arg)
{
  uint64_t p = qd_pages[(uintptr_t) arg];
  unsigned char buf[PAGE];

  if (adaptra_read (e, client, &client_ctx, buf, PAGE, p * PAGE) != 0 ||
      memcmp (buf, disk + p * PAGE, PAGE) != 0)
    return (void *) 1;
  return NULL;
}

/* A random reader at queue depth 16 (one connection, as fio's
 * W4-qd16), whose earlier random reads taught the engine nothing to
 * read ahead: each read goes to the backend at once, as one read of
 * its own page, while the other 15 are in flight there, and nothing
 * else is read.  The backend holds every read until all 16 are inside
 * it (the fixture's gate): a read that waited for another's (for the
 * engine lock across a backend read, a page in flight, a backend
 * handle, the congestion limit) or went through a prefetch job would
 * never enter, and the wait times out.
 */
static void
test_random_reads_at_depth (void **state)
{
  const uint64_t pages = DISK / PAGE;
  pthread_t t[QD];
  struct timespec deadline;
  struct adaptra_stats before, after;
  unsigned i, inside = 0, traces0;
  void *r;

  (void) state;
  for (i = 1; i <= 64; i++)
    read_pages ((uint64_t) i * 4099 % pages, 1);
  for (i = 0; i < QD; i++)
    qd_pages[i] = (1000 + (uint64_t) i * 2053 * 37) % pages;
  before = stats ();
  traces0 = ntraces;
  calls = 0;
  client_bytes = worker_bytes = 0;
  sem_init (&entered, 0, 0);
  sem_init (&release, 0, 0);
  gate = true;
  for (i = 0; i < QD; i++)
    assert_int_equal (pthread_create (&t[i], NULL, qd_reader,
                                      (void *) (uintptr_t) i), 0);
  clock_gettime (CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  while (inside < QD && sem_timedwait (&entered, &deadline) == 0)
    inside++;
  gate = false;
  for (i = 0; i < QD; i++)
    sem_post (&release);
  for (i = 0; i < QD; i++) {
    assert_int_equal (pthread_join (t[i], &r), 0);
    assert_null (r);
  }
  sem_destroy (&entered);
  sem_destroy (&release);
  assert_int_equal (inside, QD);
  assert_int_equal (calls, QD);
  assert_int_equal (client_bytes, (uint64_t) QD * PAGE);
  assert_int_equal (worker_bytes, 0);
  after = stats ();
  assert_int_equal (after.readrandom - before.readrandom, QD);
  assert_int_equal (after.io_block, before.io_block);
  assert_int_equal (after.backend_requests - before.backend_requests, QD);
  assert_int_equal (after.backend_bytes - before.backend_bytes,
                    (uint64_t) QD * PAGE);
  assert_int_equal (ntraces, traces0);
}

/* A random reader whose later reads land just before pages its earlier
 * ones left in the pool (as random reads over a small region do): a
 * page cached before the lone read says nothing of whether the client
 * goes on past it, so no trail, and nothing is read ahead.
 */
static void
test_random_reader_next_cached (void **state)
{
  const uint64_t n = 20, gap = 64;
  uint64_t i;

  (void) state;
  for (i = 0; i < n; i++)
    read_pages (4000 + i * gap, REQ);
  for (i = 0; i < n; i++)
    read_pages (4000 + (i * 7 % n) * gap - REQ, REQ);
  assert_int_equal (stats ().method[ADAPTRA_METHOD_NONE].pgreadahead, 0);
  assert_int_equal (ntraces, 0);
}

/* After the short runs, a long sequential reader: its windows still
 * double up to the max, and it reads every page read ahead but the
 * last window's.
 */
static void
test_long_stream_grows (void **state)
{
  const uint64_t start = 1000 + 4 * RUN_GAP, len = 16 * MAX_PAGES;
  struct adaptra_stats s;
  uint64_t p, widest = 0;
  unsigned i;

  (void) state;
  for (i = 0; i < 4; i++) {
    read_pages (1000 + (uint64_t) i * RUN_GAP, REQ);
    read_pages (1000 + (uint64_t) i * RUN_GAP + REQ, REQ);
  }
  ntraces = 0;
  for (p = start; p < start + len; p += REQ)
    read_pages (p, REQ);
  for (i = 0; i < ntraces; i++)
    if (traces[i].kind == ADAPTRA_TRACE_WINDOW &&
        trace_pages (&traces[i]) > widest)
      widest = trace_pages (&traces[i]);
  assert_int_equal (widest, MAX_PAGES);
  s = stats ();
  assert_true (s.method[ADAPTRA_METHOD_NONE].pgreadahead -
               s.method[ADAPTRA_METHOD_NONE].pgreadahead_hit <= 2 * MAX_PAGES);
}

/* Streams interleaved on one client (W3: a reader of several files
 * through one disk), each in a region of its own away from page 0,
 * read round-robin a request at a time: each stream's second read is
 * right after its own first, though not after the client's last read,
 * and starts it with a trail (adjacent_read), once the client's reads
 * continue its lone reads (the first stream's second read raises that
 * score): only the first two rounds wait for the backend, and the
 * first stream's third read.  With the client's last read alone each
 * stream started at its fourth read (the history rule), on a window
 * too short to reach its mark before the fifth missed again.
 */
#define INTERLEAVED 8
#define INTERLEAVED_ROUNDS 12

static void
test_interleaved_streams_start (void **state)
{
  const uint64_t region = DISK / PAGE / (INTERLEAVED + 1);
  uint64_t demand0 = client_bytes, started;
  unsigned round, i;

  (void) state;
  for (round = 0; round < INTERLEAVED_ROUNDS; round++)
    for (i = 0; i < INTERLEAVED; i++)
      read_pages ((i + 1) * region + round * REQ, REQ);
  assert_int_equal (client_bytes - demand0,
                    (uint64_t) (2 * INTERLEAVED + 1) * REQ * PAGE);
  adaptra_lock (e);
  started = adaptra_client_of (e, client)->streams_started;
  adaptra_unlock (e);
  assert_int_equal (started, INTERLEAVED);
}

/* A random reader that lands, now and then, right after one of its
 * latest lone reads, between reads that land after none: each such
 * read is chance, not a run, and starts no stream (a stats test's
 * 400 random 4 KiB reads over 16 MiB started three).
 */
static void
test_random_reader_lands_after_lone (void **state)
{
  const uint64_t region = DISK / PAGE / 2;
  uint64_t started;
  unsigned i;

  (void) state;
  for (i = 0; i < 8; i++) {
    read_pages (region + (uint64_t) i * RUN_GAP, REQ);
    read_pages (region + (uint64_t) i * RUN_GAP + RUN_GAP / 2, REQ);
    read_pages (region + (uint64_t) i * RUN_GAP + REQ, REQ);
  }
  adaptra_lock (e);
  started = adaptra_client_of (e, client)->streams_started;
  adaptra_unlock (e);
  assert_int_equal (started, 0);
}

/* A copy of a sparse image: a client that asked for block status
 * reads each data extent whole, its first read a lone one, after its
 * lone reads were known to start runs.  The extent (len pages at
 * EXTENT_AT, between known holes) is read first at page at of it
 * with a peak of peak (in 1/ADAPTRA_DEPTH_ONE) requests in flight;
 * returns the one window that read issued, checking that the workers
 * read exactly it.
 */
#define EXTENT (3 * MAX_PAGES / 4)
#define EXTENT_AT (1000 + 8 * RUN_GAP)

static struct adaptra_trace
trail_in_extent_at (uint64_t peak, uint64_t at, uint64_t len)
{
  uint64_t worker0;
  unsigned i;

  for (i = 0; i < 4; i++) {             /* lone reads that start runs */
    read_pages (1000 + (uint64_t) i * RUN_GAP, REQ);
    read_pages (1000 + (uint64_t) i * RUN_GAP + REQ, REQ);
  }
  adaptra_volume_extent (e, volume, (EXTENT_AT - RUN_GAP) * PAGE,
                         RUN_GAP * PAGE, true);
  adaptra_volume_extent (e, volume, EXTENT_AT * PAGE, len * PAGE, false);
  adaptra_volume_extent (e, volume, (EXTENT_AT + len) * PAGE,
                         RUN_GAP * PAGE, true);
  adaptra_lock (e);
  adaptra_client_of (e, client)->depth.peak_requests = peak;
  adaptra_unlock (e);
  ntraces = 0;
  worker0 = worker_bytes;
  read_pages (EXTENT_AT + at, REQ);
  assert_int_equal (ntraces, 1);
  assert_int_equal (traces[0].kind, ADAPTRA_TRACE_WINDOW);
  assert_int_equal (traces[0].placement.start, EXTENT_AT + at + REQ);
  assert_int_equal (worker_bytes - worker0,
                    trace_pages (&traces[0]) * PAGE);
  return traces[0];
}

static struct adaptra_trace
trail_in_extent (uint64_t peak)
{
  return trail_in_extent_at (peak, 0, EXTENT);
}

/* A lone read in the middle of a known extent does not start it: its
 * trail stays two requests, as anywhere the map says nothing.
 */
static void
test_mid_extent_trail_stays_short (void **state)
{
  (void) state;
  assert_true (trail_in_extent_at (ADAPTRA_DEPTH_ONE, EXTENT / 3, EXTENT)
               .placement.end < EXTENT_AT + EXTENT);
}

/* An extent longer than the max window: nothing says where the data
 * ends within the window (as on a volume whose map is empty), so the
 * trail stays two requests rather than a max window.
 */
static void
test_long_extent_trail_stays_short (void **state)
{
  struct adaptra_trace t =
    trail_in_extent_at (ADAPTRA_DEPTH_ONE, 0, 2 * MAX_PAGES);

  (void) state;
  assert_true (trace_pages (&t) < MAX_PAGES);
}

/* One request at a time (nbdcopy --requests=1): the trail runs to the
 * extent's end (one window, its data alone), not two requests that a
 * stream then ramps up from.
 */
static void
test_trail_to_the_extent_end (void **state)
{
  (void) state;
  assert_int_equal (trail_in_extent (ADAPTRA_DEPTH_ONE).placement.end,
                    EXTENT_AT + EXTENT);
}

/* A client with reads of its own in flight (qemu-img convert) reads
 * the extent ahead itself: its trail stays short.
 */
static void
test_deep_client_trail_stays_short (void **state)
{
  (void) state;
  assert_true (trail_in_extent (4 * ADAPTRA_DEPTH_ONE).placement.end <
               EXTENT_AT + EXTENT);
}

/* Streams starting together on a backend not measured yet: READERS
 * clients, each in a region of its own, read COLD_REQ bytes at its
 * start, then the next COLD_REQ (the second starts a stream), then the
 * next, on the fake clock of a remote backend (5 ms, then about
 * 200 MiB/s).  The model has seen only reads of one size, whose
 * bandwidth (64 KiB in 5 ms: 13 MB/s) says little.  No worker runs
 * meanwhile, as when all are busy: each reader reads its own requests
 * from the backend and no more, since every byte more is one that the
 * other readers' requests wait behind at the link (it read a chunk of
 * 256 KiB of its window with the request when there was no limit);
 * and the prefetch the workers may then start at once stays within
 * the model's limit, not all that is queued.
 */
#define READERS 16
#define COLD_REQ (64 * 1024)
#define COLD_READS 3
#define COLD_WORKERS 32                 /* the default adaptra-workers */
#define MS UINT64_C (1000000)
#define US UINT64_C (1000)

static void
test_cold_readers (void **state)
{
  const uint64_t region = DISK / (2 * READERS);
  unsigned char *buf = malloc (COLD_REQ);
  struct adaptra_model_estimate est;
  struct adaptra_config cfg;
  int c[READERS];
  const struct adaptra_job *job;
  uint64_t startable = 0, queued;
  unsigned i, k, busy = 0;

  (void) state;
  assert_non_null (buf);
  fixture_stop ();
  fixture_config (&cfg);
  cfg.pool_bytes = 64 * 1024 * 1024;
  fixture_start (&cfg, "", "test");
  assert_int_equal (adaptra_workers_simulate (e, COLD_WORKERS), 0);
  for (i = 0; i < READERS; i++)
    c[i] = i == 0 ? client : open_client (e, volume, "cold");
  read_ns = 5 * MS;
  read_ns_per_kib = 5 * US;
  for (k = 0; k < COLD_READS; k++)
    for (i = 0; i < READERS; i++) {
      uint64_t off = (i + 1) * region + k * COLD_REQ;
      uint64_t before = client_bytes;

      assert_int_equal (adaptra_read (e, c[i], &client_ctx, buf, COLD_REQ,
                                      off), 0);
      assert_memory_equal (buf, disk + off, COLD_REQ);
      assert_int_equal (client_bytes - before, COLD_REQ);
    }
  adaptra_lock (e);
  adaptra_model_estimate (&e->model, now_ns, &est);
  queued = e->queue.queued_bytes;
  adaptra_unlock (e);
  assert_true (est.latency_bound);
  assert_true (est.bdp < ADAPTRA_MODEL_LIMIT_MIN);
  /* The workers, all free, start queued jobs in order while the gate
   * (adaptra_prefetch_may_start, the threads' own) lets them.
   */
  for (job = e->queue.head; job; job = job->next) {
    if (!adaptra_prefetch_may_start (e, startable, busy))
      break;
    startable += job->bytes;
    busy++;
  }
  assert_true (queued > ADAPTRA_MODEL_LIMIT_MIN + COLD_REQ);
  assert_true (startable <= ADAPTRA_MODEL_LIMIT_MIN + COLD_REQ);
  read_ns = read_ns_per_kib = 0;
  drain ();
  for (i = 1; i < READERS; i++)
    adaptra_client_close (e, c[i]);
  free (buf);
}

/* A fresh engine with a 64 MiB pool and adaptra-max auto. */
static void
restart_auto_max (void)
{
  struct adaptra_config cfg;

  fixture_stop ();
  fixture_config (&cfg);
  cfg.pool_bytes = 64 * 1024 * 1024;
  cfg.max_bytes = 0;                    /* auto */
  fixture_start (&cfg, "", "test");
}

/* Readers that share a link wait for its bandwidth, not its latency:
 * SHARERS clients, each reading a region of its own in 64 KiB reads,
 * round-robin, on a backend measured at 5 ms a read and about 200 MB/s
 * in all, every read waiting for its read-ahead (no worker runs).  A
 * late reader's cap doubles up to LATE_CAP_BDPS times R x L shared
 * among the streams (readahead.c: raise_cap), here no more than the
 * auto max (the 1 MiB floor or R x L), so no window passes it; each
 * stream alone doubled its cap towards 8 x R x L (624 pages here), and
 * such windows, which arrive no sooner, are bytes read ahead of every
 * reader at any stop.
 */
#define SHARERS 8
#define SHARED_REQ (64 * 1024)
#define SHARED_READS 48
#define AUTO_FLOOR_PAGES (ADAPTRA_AUTO_MAX_FLOOR / PAGE)

static void
test_shared_link_cap (void **state)
{
  const uint64_t region = DISK / (SHARERS + 1) / SHARED_REQ * SHARED_REQ;
  unsigned char *buf = malloc (SHARED_REQ);
  struct adaptra_model_estimate est;
  int c[SHARERS];
  uint64_t widest = 0;
  unsigned i, k;

  (void) state;
  assert_non_null (buf);
  restart_auto_max ();
  for (i = 0; i < SHARERS; i++)
    c[i] = i == 0 ? client : open_client (e, volume, "sharer");
  read_ns = 5 * MS;
  read_ns_per_kib = 5 * US;
  /* Half a second of 4 MiB hints measures the bandwidth first. */
  for (i = 0; i < 24; i++) {
    adaptra_cache_hint (e, client, 0, 4 * 1024 * 1024);
    drain ();
    adaptra_invalidate (e, volume, 0, 4 * 1024 * 1024);
  }
  adaptra_lock (e);
  adaptra_model_estimate (&e->model, now_ns, &est);
  adaptra_unlock (e);
  assert_true (est.latency_bound);
  ntraces = 0;
  for (k = 0; k < SHARED_READS; k++)
    for (i = 0; i < SHARERS; i++) {
      uint64_t off = (i + 1) * region + k * SHARED_REQ;

      assert_int_equal (adaptra_read (e, c[i], &client_ctx, buf, SHARED_REQ,
                                      off), 0);
      assert_memory_equal (buf, disk + off, SHARED_REQ);
    }
  for (i = 0; i < ntraces; i++)
    if (traces[i].kind == ADAPTRA_TRACE_WINDOW &&
        trace_pages (&traces[i]) > widest)
      widest = trace_pages (&traces[i]);
  assert_true (stats ().io_block > 0);
  assert_true (widest > 0);
  /* The auto max, and on a miss the pages its reader reads itself. */
  assert_true (widest <= max_u64 (AUTO_FLOOR_PAGES, est.bdp / PAGE) +
               SHARED_REQ / PAGE);
  read_ns = read_ns_per_kib = 0;
  drain ();
  for (i = 1; i < SHARERS; i++)
    adaptra_client_close (e, c[i]);
  free (buf);
}

/* A backend like the bench's disk model, seen by the model: no
 * latency, 150 MiB/s of transfer (6.5 us a KiB).  Reads in parallel
 * hide nothing there (model.h: not latency-bound).
 */
#define HEAD_NS_PER_KIB (6500 * US / 1000)
#define HEAD_REQ (64 * 1024)
#define HEAD_POOL (64 * 1024 * 1024)
#define HEAD_WORKERS 32                 /* the default adaptra-workers */
#define HEAD_TEACH (2 * 1024 * 1024)    /* read at the disk's end first */

/* A fresh engine for the head tests: a pool of pool_bytes, adaptra-max
 * auto, HEAD_WORKERS simulated workers (jobs run by drain), the disk
 * backend, and the model taught by a reader of the disk's last
 * HEAD_TEACH bytes, which the tests leave alone.
 */
static void
restart_on_a_head (uint64_t pool_bytes)
{
  struct adaptra_config cfg;
  uint64_t off;

  fixture_stop ();
  fixture_config (&cfg);
  cfg.pool_bytes = pool_bytes;
  cfg.max_bytes = 0;                    /* auto */
  fixture_start (&cfg, "", "test");
  assert_int_equal (adaptra_workers_simulate (e, HEAD_WORKERS), 0);
  read_ns = 0;
  read_ns_per_kib = HEAD_NS_PER_KIB;
  for (off = DISK - HEAD_TEACH; off < DISK; off += HEAD_REQ)
    read_pages (off / PAGE, HEAD_REQ / PAGE);
}

/* The largest window traced since ntraces was reset, in pages. */
static uint64_t
widest_window (void)
{
  uint64_t widest = 0;
  unsigned i;

  for (i = 0; i < ntraces; i++)
    if (traces[i].kind == ADAPTRA_TRACE_WINDOW &&
        trace_pages (&traces[i]) > widest)
      widest = trace_pages (&traces[i]);
  return widest;
}

/* The window a lone stream gets where the backend is not
 * latency-bound (readahead.c: lone_window), in pages.
 */
static uint64_t
lone_bound (void)
{
  struct adaptra_model_estimate est;

  adaptra_lock (e);
  adaptra_model_estimate (&e->model, now_ns, &est);
  adaptra_unlock (e);
  assert_false (est.latency_bound);
  return min_u64 (est.chunk / PAGE, e->slot_pages);
}

/* One sequential reader at a disk's head (W1 of the bench's disk
 * model), first with its read-ahead done before each read, then late
 * for every window (no job runs: its reader reads what it needs).  Its
 * windows stay one read of the model's chunk, whatever the pool could
 * hold, each is one job, and each state window's mark is on its first
 * page (the next window queues behind it): windows grown to a quarter
 * of the pool, in four pieces read at once, reached the one head out
 * of order, and the reader waited for all of a 16 MiB window's pieces
 * (up to 100 ms at 150 MiB/s).  On a miss the window also holds the
 * reader's own request.
 */
static void
test_lone_stream_on_a_head (void **state)
{
  uint64_t off, bound, windows = 0, jobs = 0, states = 0;
  unsigned i, seen = 0;

  (void) state;
  restart_on_a_head (HEAD_POOL);
  bound = lone_bound ();
  ntraces = 0;
  for (off = 0; off < DISK / 4; off += HEAD_REQ) {
    read_check (off, HEAD_REQ);
    jobs += drain ();
    for (; seen < ntraces; seen++)
      windows += traces[seen].kind == ADAPTRA_TRACE_WINDOW;
  }
  assert_true (windows > 8);
  assert_int_equal (jobs, windows);
  assert_true (widest_window () <= bound + HEAD_REQ / PAGE);
  for (i = 0; i < ntraces; i++)
    if (traces[i].placement.method == ADAPTRA_METHOD_STATE) {
      assert_int_equal (traces[i].placement.mark, traces[i].placement.start);
      states++;
    }
  assert_true (states >= windows - 1);
  ntraces = 0;
  for (; off < DISK / 2; off += HEAD_REQ)
    read_check (off, HEAD_REQ);
  assert_true (stats ().io_block > 0);
  assert_true (ntraces > 0);
  assert_true (widest_window () <= bound + HEAD_REQ / PAGE);
  for (i = 0; i < ntraces; i++)
    assert_int_equal (traces[i].placement.stream, traces[0].placement.stream);
  drain ();
}

/* A lone reader at a disk's head whose host is slow to come back,
 * over the first bytes of the disk: it waits for the head (runs its
 * job) and, while it is away, the head serves everything queued
 * (drain after each read that waited), so that at its next mark the
 * head has run dry.  Returns how many of its state windows had their
 * mark before them (on a page of an earlier window), and sets *lead to
 * the last one's look-ahead (pages from its mark to its end).
 */
static unsigned
read_with_a_slow_host (uint64_t bytes, uint64_t *lead)
{
  uint64_t off;
  unsigned i, early = 0;

  ntraces = 0;
  for (off = 0; off < bytes; off += HEAD_REQ) {
    uint64_t blocked = stats ().io_block;

    read_check (off, HEAD_REQ);
    if (stats ().io_block > blocked)
      drain ();
  }
  assert_true (stats ().io_block >= 4);
  *lead = 0;
  for (i = 0; i < ntraces; i++)
    if (traces[i].kind == ADAPTRA_TRACE_WINDOW &&
        traces[i].placement.method == ADAPTRA_METHOD_STATE) {
      const struct adaptra_trace *t = &traces[i];

      assert_int_not_equal (t->placement.mark, ADAPTRA_NO_MARK);
      early += t->placement.mark < t->placement.start;
      *lead = t->placement.end - t->placement.mark;
    }
  drain ();
  return early;
}

/* At the head run dry, a lone reader's look-ahead grows a window at a
 * time (readahead.c: lone_window): the marks move onto pages of
 * earlier windows, more than a window ahead of the window issued, up
 * to the effective max, and each window is still one read.  Marks on
 * their windows' first pages, as in test_lone_stream_on_a_head, left
 * the disk model's head idle 2-3% of the time.
 */
#define DRY_HEAD_BYTES (DISK / 4)        /* read with a slow host */

/* A fresh engine on a head, its lone reader read with a slow host over
 * the disk's first DRY_HEAD_BYTES: its look-ahead grew past its window
 * (*window pages) to the effective max, which is returned.
 */
static uint64_t
grow_lone_lookahead (uint64_t *window)
{
  uint64_t cap, lead;

  restart_on_a_head (HEAD_POOL);
  *window = lone_bound ();
  adaptra_lock (e);
  cap = adaptra_readahead_max_pages (e);
  adaptra_unlock (e);
  assert_true (cap >= 2 * *window);
  assert_true (read_with_a_slow_host (DRY_HEAD_BYTES, &lead) > 8);
  assert_int_equal (lead, cap);
  return cap;
}

static void
test_lone_lookahead_grows_when_the_head_runs_dry (void **state)
{
  uint64_t window;

  (void) state;
  grow_lone_lookahead (&window);
  assert_true (widest_window () <= e->slot_pages + HEAD_REQ / PAGE);
}

/* Without workers (adaptra-workers=0) the reader runs every job
 * itself: nothing is ever left queued for the head when it comes back
 * to a mark, which says nothing of the host, and the look-ahead stays
 * a window (the marks on their windows' first pages).
 */
static void
test_lone_lookahead_stays_without_workers (void **state)
{
  uint64_t lead;

  (void) state;
  restart_on_a_head (HEAD_POOL);
  assert_int_equal (adaptra_workers_simulate (e, 0), 0);
  assert_int_equal (read_with_a_slow_host (DRY_HEAD_BYTES, &lead), 0);
  assert_int_equal (lead, lone_bound ());
}

/* A look-ahead longer than the window whose mark has no earlier page
 * to go on: a read of 1 MiB takes the mark of a lone reader whose
 * look-ahead has grown to the max (256 pages, four windows) and covers
 * the page a look-ahead that long would put the next mark on.  The
 * reader has looked at that page already, so the mark goes on the new
 * window's first page (readahead.c: early_mark), and the stream
 * records the look-ahead that mark carries, a window (its row, and
 * lone_window at its next mark, count from the mark's page), not the
 * max.
 */
static void
test_lone_lookahead_past_a_large_read (void **state)
{
  const uint64_t big = 1024 * 1024;
  struct adaptra_stream_row rows[8];
  const struct adaptra_placement *pl = &traces[0].placement;
  uint64_t window, cap = grow_lone_lookahead (&window);
  size_t i, n;

  (void) state;
  ntraces = 0;
  read_check (DRY_HEAD_BYTES, big);
  assert_int_equal (ntraces, 1);
  assert_int_equal (traces[0].kind, ADAPTRA_TRACE_WINDOW);
  assert_int_equal (traces[0].event.what, ADAPTRA_EVENT_MARK);
  assert_true (traces[0].event.last > pl->end - cap);
  assert_int_equal (pl->mark, pl->start);
  n = adaptra_streams_snapshot (e, rows, sizeof rows / sizeof *rows);
  for (i = 0; i < n && rows[i].id != pl->stream; i++)
    ;
  assert_true (i < n);
  assert_int_equal (rows[i].window_offset, pl->start * PAGE);
  assert_int_equal (rows[i].lookahead_bytes, (pl->end - pl->mark) * PAGE);
  assert_int_equal (rows[i].lookahead_bytes, window * PAGE);
  drain ();
}

/* An early mark whose page the window's own dispatch evicts: the mark
 * goes with the page, and lands on no other (readahead.c: issue).  A
 * lone reader's look-ahead grown to the max on a FULL_HEAD_POOL pool,
 * which its reading fills; then the pool's order is arranged so that
 * the page the next window's early mark goes on (a window past the
 * current mark: its look-ahead stays the max) is the first victim:
 * every page before it is moved to the inactive head (make_newest),
 * and the page the eviction would follow (pool.c: follow_victim) is
 * read a second time, which ends the victim's run.  The moves tick the
 * aging clock, which the stream would take for thrashing (it would
 * rescue its pages instead of issuing a window): its window's age is
 * set to the clock after them.  The mark was set on the frame looked
 * up before the dispatch, which by then held a page of the new window:
 * its reader took it as a mark a window too late.
 */
#define FULL_HEAD_POOL (20 * 1024 * 1024)

/* Move the pages of [first, end) in the pool to the inactive head. */
static void
make_newest (uint64_t first, uint64_t end)
{
  uint64_t p;

  adaptra_lock (e);
  for (p = first; p < end; p++)
    adaptra_pool_rescue (&e->pool, p, 1);
  adaptra_unlock (e);
}

/* Frames whose page stream id read and that carry a mark. */
static unsigned
marks_of (uint64_t id)
{
  unsigned n = 0;
  uint32_t f;

  adaptra_lock (e);
  for (f = 0; f < e->pool.nframes; f++)
    n += e->pool.pages[f].state != ADAPTRA_PAGE_FREE &&
      e->pool.pages[f].stream_id == id &&
      (e->pool.pages[f].flags & ADAPTRA_PG_MARK);
  adaptra_unlock (e);
  return n;
}

/* Whether page p is in the pool. */
static bool
in_pool (uint64_t p)
{
  bool in;

  adaptra_lock (e);
  in = adaptra_pool_lookup (&e->pool, p) != ADAPTRA_NO_FRAME;
  adaptra_unlock (e);
  return in;
}

static void
test_early_mark_evicted_by_its_window (void **state)
{
  const struct adaptra_placement *last, *next;
  struct adaptra_stream *s;
  uint64_t lead, early;
  unsigned i, before;

  (void) state;
  restart_on_a_head (FULL_HEAD_POOL);
  assert_true (read_with_a_slow_host (DISK * 3 / 4 - HEAD_TEACH, &lead) > 8);
  assert_int_equal (e->pool.nfree, 0);
  for (i = ntraces; traces[i - 1].kind != ADAPTRA_TRACE_WINDOW; i--)
    ;
  last = &traces[i - 1].placement;
  assert_true (lead > lone_bound ());
  early = last->end + lone_bound () - lead;
  assert_true (in_pool (early));
  assert_int_equal (marks_of (last->stream), 1);

  read_check (e->pool.follow_page * PAGE, PAGE);
  make_newest (DISK / PAGE - HEAD_TEACH / PAGE, DISK / PAGE);
  make_newest (0, early);
  adaptra_lock (e);
  for (s = adaptra_streams_first (&e->streams); s->id != last->stream;
       s = adaptra_streams_after (&e->streams, s))
    ;
  s->age = adaptra_pool_clock (&e->pool);
  adaptra_unlock (e);

  before = ntraces;
  read_check (last->mark * PAGE, HEAD_REQ);
  assert_int_equal (ntraces, before + 1);
  assert_int_equal (traces[before].kind, ADAPTRA_TRACE_WINDOW);
  next = &traces[before].placement;
  assert_int_equal (next->start, last->end);
  assert_false (in_pool (early));
  assert_int_equal (marks_of (last->stream), 0);
  assert_int_equal (next->mark, ADAPTRA_NO_MARK);
  drain ();
}

/* Streams that take turns at the head (W3: a reader of several files,
 * round-robin, each late for its windows) are no lone stream, even
 * where the others' jobs are done when one reaches its mark (here
 * every stream's after the first's read): each one's windows grow
 * past a lone stream's, to runs that a head switches between less
 * often.
 */
#define TURNS 8

static void
test_streams_taking_turns_grow (void **state)
{
  const uint64_t region = DISK / TURNS / HEAD_REQ * HEAD_REQ;
  uint64_t k, bound, widest[TURNS] = { 0 };
  unsigned i;

  (void) state;
  restart_on_a_head (HEAD_POOL);
  bound = lone_bound ();
  ntraces = 0;
  for (k = 0; k < region / 2; k += HEAD_REQ)
    for (i = 0; i < TURNS; i++) {
      read_check (i * region + k, HEAD_REQ);
      if (i == 0)
        drain ();
    }
  for (k = 0; k < ntraces; k++)
    if (traces[k].kind == ADAPTRA_TRACE_WINDOW) {
      i = (unsigned) (traces[k].placement.start * PAGE / region);
      widest[i] = max_u64 (widest[i], trace_pages (&traces[k]));
    }
  for (i = 0; i < TURNS; i++)
    assert_true (widest[i] > 2 * bound);
  drain ();
}

/* The head's seek: a read not where the last one ended costs the
 * disk model's mean turn between eight regions.
 */
#define HEAD_SEEK_NS (3300 * US)

static uint64_t head_at;                /* where the last read ended */

static void
seek_head (uint64_t offset, uint32_t count)
{
  if (offset != head_at)
    __atomic_fetch_add (&now_ns, HEAD_SEEK_NS, __ATOMIC_SEQ_CST);
  head_at = offset + count;
}

/* Teach the model the head's seeks, once restart_on_a_head's reads
 * (the last ended at the disk's end) have aged out of its windows:
 * reads of 64 KiB and 1 MiB (the line through them says what is
 * transfer), every fourth one far.
 */
static void
teach_seeks (void)
{
  uint64_t at = 0;
  unsigned i;

  now_ns += ADAPTRA_MODEL_LATENCY_NS;
  head_at = DISK;
  for (i = 0; i < 4 * ADAPTRA_MODEL_SEEK_HOLD; i++) {
    uint64_t bytes = i % 2 ? 1024 * 1024 : HEAD_REQ;
    uint64_t t0 = now_ns, off = i % 4 == 3 ? at + DISK / 2 : at;
    enum adaptra_model_distance where =
      adaptra_model_start (&e->model, off, bytes);

    seek_head (off, (uint32_t) bytes);
    now_ns += bytes / 1024 * HEAD_NS_PER_KIB;
    adaptra_model_end (&e->model, bytes);
    adaptra_model_sample (&e->model, bytes, t0, now_ns, where);
    at += bytes;
  }
}

/* Once the model is taught the head's seeks (teach_seeks), which
 * reads then pay (seek_head), TURNS streams read their regions of
 * region bytes round-robin, the workers running what is queued at
 * each first stream's read, as in test_streams_taking_turns_grow.
 */
static void
take_turns_seeking (uint64_t region)
{
  uint64_t k;
  unsigned i;

  teach_seeks ();
  during_read = seek_head;
  for (k = 0; k < region; k += HEAD_REQ)
    for (i = 0; i < TURNS; i++) {
      read_check (i * region + k, HEAD_REQ);
      if (i == 0)
        drain ();
    }
  drain ();
}

/* The streams taking turns at a head as in
 * test_streams_taking_turns_grow, where reads pay a seek
 * (seek_head) and the model sees it: each measures T over its last
 * two intervals and climbs its share of T from adaptra-ratio to
 * ADAPTRA_SHARE_MAX (readahead.c: state_share), losing no page.  A
 * long stream where the model sees no seeks keeps adaptra-ratio
 * (share 0), as does restart_on_a_head's reader (taught), whose
 * windows all came before the model saw seeks.
 */
static void
test_streams_taking_turns_take_more_of_t (void **state)
{
  const uint64_t region = DISK / TURNS / HEAD_REQ * HEAD_REQ;
  struct adaptra_stream *s;
  uint64_t p, taught, no_history = 0;
  unsigned share, seeks, states = 0, climbed = 0;

  (void) state;
  for (p = 1000; p < 1000 + 16 * MAX_PAGES; p += REQ)
    read_pages (p, REQ);
  adaptra_lock (e);
  share = adaptra_streams_first (&e->streams)->share;
  adaptra_unlock (e);
  assert_int_equal (share, 0);

  restart_on_a_head (HEAD_POOL);
  adaptra_lock (e);
  taught = adaptra_streams_first (&e->streams)->id;
  adaptra_unlock (e);
  take_turns_seeking (region);
  adaptra_lock (e);
  {
    struct adaptra_model_estimate est;

    adaptra_model_estimate (&e->model, now_ns, &est);
    seeks = est.seeks;
  }
  for (s = adaptra_streams_first (&e->streams); s != NULL;
       s = adaptra_streams_after (&e->streams, s))
    if (s->method == ADAPTRA_METHOD_STATE && s->id != taught) {
      states++;
      climbed += s->share == ADAPTRA_SHARE_MAX;
      no_history += s->prev_shift == 0;
    }
  adaptra_unlock (e);
  assert_true (seeks);
  assert_int_equal (stats ().evicted_unread, 0);
  assert_int_equal (states, TURNS);
  assert_int_equal (climbed, TURNS);
  assert_int_equal (no_history, 0);
}

/* The streams taking turns at a head where reads pay a seek, as in
 * test_streams_taking_turns_take_more_of_t, in a pool small enough
 * (ALIKE_POOL) that their windows are sized by T rather than by the
 * max.  T measured stream by stream differs by whether other windows
 * landed in its interval: each stream's own windows spread, and end
 * out of the order they began in.  With the client's mean
 * (readahead.c: state_window, adaptra_window_alike), past the ramp
 * (the first quarter of each region) and before the region's end,
 * each window is within a sixteenth of the one before it, whichever
 * stream's, and the streams' turns come round in the same order.
 * The regions leave the taught tail alone (HEAD_TEACH).
 */
#define ALIKE_POOL (8 * 1024 * 1024)

static void
test_streams_taking_turns_alike (void **state)
{
  const uint64_t region = (DISK - HEAD_TEACH) / TURNS / HEAD_REQ * HEAD_REQ;
  uint64_t k, prev = 0;
  unsigned i, turn[FIXTURE_TRACES], n = 0, unlike = 0, out_of_turn = 0;

  (void) state;
  restart_on_a_head (ALIKE_POOL);
  ntraces = 0;
  take_turns_seeking (region);
  for (k = 0; k < ntraces; k++) {
    const struct adaptra_placement *pl = &traces[k].placement;
    uint64_t pages = trace_pages (&traces[k]);

    i = (unsigned) (pl->start * PAGE / region);
    if (traces[k].kind != ADAPTRA_TRACE_WINDOW ||
        pl->method != ADAPTRA_METHOD_STATE ||
        pl->start * PAGE < i * region + region / 4 ||
        pl->end * PAGE > (i + 1) * region - region / 8)
      continue;
    unlike += prev > 0 &&
      16 * (pages > prev ? pages - prev : prev - pages) > prev;
    prev = pages;
    out_of_turn += n >= TURNS && i != turn[n - TURNS];
    turn[n++] = i;
  }
  assert_true (n > 2 * TURNS);
  assert_int_equal (unlike, 0);
  assert_int_equal (out_of_turn, 0);
  assert_int_equal (stats ().evicted_unread, 0);
}

/* A reader of requests larger than the auto max (the 1 MiB floor, the
 * backend's product being less: 2 ms a read, 250 MB/s) still gets
 * windows as large as its requests (readahead.c: bounds_of), so that
 * the next window is out before it reads there: with windows of half
 * a request (12 requests of 2 MiB) every request ran past its window
 * and missed.  The workers keep up (drain after each read): past its
 * first two requests, the stream misses nothing.
 */
#define LARGE_REQ (2 * 1024 * 1024)
#define LARGE_READS 12

static void
test_window_at_least_request (void **state)
{
  unsigned char *buf = malloc (LARGE_REQ);
  uint64_t misses = 0;
  unsigned i;

  (void) state;
  assert_non_null (buf);
  restart_auto_max ();
  read_ns = 2 * MS;
  read_ns_per_kib = 4 * US;
  for (i = 0; i < LARGE_READS; i++) {
    assert_int_equal (adaptra_read (e, client, &client_ctx, buf, LARGE_REQ,
                                    (uint64_t) i * LARGE_REQ), 0);
    assert_memory_equal (buf, disk + (uint64_t) i * LARGE_REQ, LARGE_REQ);
    if (i == 1)
      misses = stats ().cache_miss;
    drain ();
  }
  assert_int_equal (stats ().cache_miss, misses);
  read_ns = read_ns_per_kib = 0;
  free (buf);
}

/* Runs of RUN_READS reads of REQ pages each, at places far apart in
 * no order (a guest reading small files, fio's randread:N with
 * rw_sequencer=sequential), a request a millisecond.
 * Each run's windows doubled from its trail, and the last, issued at
 * its last mark, lay past the run's end: the backend read about twice
 * the runs' pages.  Once the volume's recent runs are over
 * (stream.h: ADAPTRA_RUN_LATER) and enough of them
 * (ADAPTRA_RUN_ENDED_MIN) ended at the same length, a run's windows
 * stop at that length (readahead.c: run_end): the backend reads the
 * runs' pages and no more, and every read after each run's first is
 * still read ahead.
 */
#define RUN_READS 16
#define RUNS_LEARN (ADAPTRA_RUN_LATER + ADAPTRA_RUN_ENDED_MIN + 1)
#define RUNS_MEASURED 16

static uint64_t
run_place (unsigned i)
{
  /* Apart by more than a run and a max window, in no order, above
   * the other tests' pages.
   */
  return DISK / PAGE / 2 +
    (uint64_t) (i * 7919 % 41) * (RUN_READS * REQ + MAX_PAGES);
}

/* Read runs [from, to) of run_place, a request a millisecond; count
 * in *demand and *backend what runs from measured on read, and in
 * *waits their reads after the first that waited for the backend.
 */
static void
read_runs (unsigned from, unsigned to, unsigned measured, uint64_t *demand,
           uint64_t *backend, uint64_t *waits)
{
  unsigned i, k;

  for (i = from; i < to; i++) {
    uint64_t client0 = client_bytes, worker0 = worker_bytes;

    for (k = 0; k < RUN_READS; k++) {
      uint64_t before = client_bytes;

      read_pages (run_place (i) + k * REQ, REQ);
      now_ns += 1000000;
      *waits += i >= measured && k > 0 && client_bytes > before;
    }
    if (i >= measured) {
      *demand += RUN_READS * REQ * PAGE;
      *backend += client_bytes - client0 + worker_bytes - worker0;
    }
  }
}

static void
test_runs_read_no_further_than_runs_end (void **state)
{
  uint64_t demand = 0, backend = 0, waits = 0;

  (void) state;
  read_runs (0, RUNS_LEARN + RUNS_MEASURED, RUNS_LEARN, &demand, &backend,
             &waits);
  assert_true (backend <= demand);
  assert_int_equal (waits, 0);
  /* Counted: a window cut in each run at least, a page off each cut. */
  assert_true (stats ().readahead_cut >= RUNS_MEASURED);
  assert_true (stats ().pgreadahead_cut >= stats ().readahead_cut);
}

/* A copy of a sparse image after such runs: the map's holes end its
 * runs, and a trail to a data extent's end longer than the recent runs
 * is not cut to their length (readahead.c: run_end).
 */
_Static_assert (RUN_READS * REQ < EXTENT,
                "the extent is longer than the runs before it");

static void
test_runs_leave_extents_whole (void **state)
{
  uint64_t demand = 0, backend = 0, waits = 0, cut;

  (void) state;
  read_runs (0, RUNS_LEARN + 1, RUNS_LEARN, &demand, &backend, &waits);
  assert_true (backend <= demand);      /* the runs were bounded */
  cut = stats ().readahead_cut;
  assert_int_equal (trail_in_extent (ADAPTRA_DEPTH_ONE).placement.end,
                    EXTENT_AT + EXTENT);
  assert_int_equal (stats ().readahead_cut, cut);
}

int
main (void)
{
#define T(name) cmocka_unit_test_prestate_setup_teardown (name, \
    fixture_open_test, fixture_close_test, &readahead_spec)
  const struct CMUnitTest tests[] = {
    T (test_short_runs),
    T (test_random_reader),
    T (test_random_reader_next_cached),
    T (test_random_reads_at_depth),
    T (test_long_stream_grows),
    T (test_interleaved_streams_start),
    T (test_random_reader_lands_after_lone),
    T (test_trail_to_the_extent_end),
    T (test_deep_client_trail_stays_short),
    T (test_mid_extent_trail_stays_short),
    T (test_long_extent_trail_stays_short),
    T (test_cold_readers),
    T (test_shared_link_cap),
    T (test_lone_stream_on_a_head),
    T (test_lone_lookahead_grows_when_the_head_runs_dry),
    T (test_lone_lookahead_stays_without_workers),
    T (test_lone_lookahead_past_a_large_read),
    T (test_early_mark_evicted_by_its_window),
    T (test_streams_taking_turns_grow),
    T (test_streams_taking_turns_take_more_of_t),
    T (test_streams_taking_turns_alike),
    T (test_window_at_least_request),
    T (test_runs_read_no_further_than_runs_end),
    T (test_runs_leave_extents_whole),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
