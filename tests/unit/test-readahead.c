/* test-readahead.c: read-ahead on a cold boot's short runs (readahead.c).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A cold boot reads many short runs, each begun by a read no stream
 * foresaw.  These tests pin the trail (readahead.c: trail) on the
 * fixture's fake backend and clock: a client whose lone reads start
 * runs gets a window of two requests past each, so a run of two reads
 * waits once and reads less ahead for nothing than a stream started at
 * its second read; a random reader gets none; a long sequential reader
 * still grows its windows to the max.
 */

#include <config.h>

#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#define DISK (32 * 1024 * 1024)
#define MAX_PAGES 64                    /* adaptra-max below */
#define REQ 2                           /* pages a read asks for */
#define RUNS 24                         /* short runs of a boot */
#define RUN_GAP 256                     /* pages between runs */

static int
setup (void **state)
{
  struct adaptra_config cfg;

  (void) state;
  if (fixture_setup (DISK) == -1)
    return -1;
  fixture_config (&cfg);
  cfg.pool_bytes = 4 * 1024 * 1024;     /* 1024 pages */
  cfg.max_bytes = MAX_PAGES * PAGE;
  fixture_start (&cfg, "", "test");
  return 0;
}

static int
teardown (void **state)
{
  (void) state;
  fixture_stop ();
  fixture_teardown ();
  return 0;
}

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

int
main (void)
{
#define T(name) cmocka_unit_test_setup_teardown (name, setup, teardown)
  const struct CMUnitTest tests[] = {
    T (test_short_runs),
    T (test_random_reader),
    T (test_random_reader_next_cached),
    T (test_long_stream_grows),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
