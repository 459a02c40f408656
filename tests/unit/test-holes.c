/* test-holes.c: the zero-extent map and read-ahead that skips holes.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The map of core/holes.c on its own (merging, splitting, page runs,
 * its bound), then the engine on the fixture's fake backend, which
 * counts the reads of each page: a reader that steps over the zero
 * extents, as nbdcopy and qemu-img convert do, makes read-ahead read
 * none of them once the plugin's block status has named them, and
 * reads them again after a write there.
 */

#include <config.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"
#include "adaptra/holes.h"
#include "../../core/holes.h"

#define KIB 1024

/* ---- The map alone. */

static void
expect_holes (const struct adaptra_holes *m, size_t n, const uint64_t *se)
{
  size_t i;

  assert_int_equal (m->n, n);
  for (i = 0; i < n; i++) {
    assert_int_equal (m->h[i].start, se[2 * i]);
    assert_int_equal (m->h[i].end, se[2 * i + 1]);
  }
}

static void
test_set_merges_and_splits (void **state)
{
  struct adaptra_holes m = { 0 };

  (void) state;
  adaptra_holes_set (&m, 100, 200, true);
  adaptra_holes_set (&m, 300, 400, true);
  expect_holes (&m, 2, (uint64_t []) { 100, 200, 300, 400 });
  /* Touching extents merge; an overlapping one swallows what it spans. */
  adaptra_holes_set (&m, 200, 250, true);
  expect_holes (&m, 2, (uint64_t []) { 100, 250, 300, 400 });
  adaptra_holes_set (&m, 240, 310, true);
  expect_holes (&m, 1, (uint64_t []) { 100, 400 });
  /* Data inside splits it; data at an edge trims it. */
  adaptra_holes_set (&m, 150, 160, false);
  expect_holes (&m, 2, (uint64_t []) { 100, 150, 160, 400 });
  adaptra_holes_set (&m, 390, 500, false);
  expect_holes (&m, 2, (uint64_t []) { 100, 150, 160, 390 });
  /* Data touching an extent leaves it whole. */
  adaptra_holes_set (&m, 390, 395, false);
  adaptra_holes_set (&m, 50, 100, false);
  expect_holes (&m, 2, (uint64_t []) { 100, 150, 160, 390 });
  /* Data over several forgets them all. */
  adaptra_holes_set (&m, 0, 1000, false);
  expect_holes (&m, 0, NULL);
  adaptra_holes_free (&m);
}

/* Pages of 4 KiB of a 10-page volume whose last page is 100 bytes. */
#define SIZE (9 * PAGE + 100)

static void
expect_run (const struct adaptra_holes *m, uint64_t from, uint64_t to,
            uint64_t first, uint64_t last)
{
  uint64_t f = 0, l = 0;

  assert_true (adaptra_holes_data_run (m, 12, SIZE, from, to, &f, &l));
  assert_int_equal (f, first);
  assert_int_equal (l, last);
}

static void
test_data_runs (void **state)
{
  struct adaptra_holes m = { 0 };
  uint64_t f, l;

  (void) state;
  /* Nothing known: one run, the whole range. */
  expect_run (&m, 0, 10, 0, 10);
  /* Pages 2-3 wholly zero, page 5 only in part, the short last page
   * zero to the volume's end.
   */
  adaptra_holes_set (&m, 2 * PAGE - 1, 4 * PAGE, true);
  adaptra_holes_set (&m, 5 * PAGE, 6 * PAGE - 1, true);
  adaptra_holes_set (&m, 9 * PAGE, SIZE, true);
  expect_run (&m, 0, 10, 0, 2);
  expect_run (&m, 2, 10, 4, 9);
  expect_run (&m, 3, 6, 4, 6);
  expect_run (&m, 5, 7, 5, 7);
  assert_false (adaptra_holes_data_run (&m, 12, SIZE, 2, 4, &f, &l));
  assert_false (adaptra_holes_data_run (&m, 12, SIZE, 9, 10, &f, &l));
  adaptra_holes_free (&m);
}

static void
test_bounded (void **state)
{
  struct adaptra_holes m = { 0 };
  uint64_t i;

  (void) state;
  for (i = 0; i < ADAPTRA_HOLES_MAX + 10; i++)
    adaptra_holes_set (&m, 4 * i, 4 * i + 3, true);
  /* Past the bound, new extents are not recorded. */
  assert_int_equal (m.n, ADAPTRA_HOLES_MAX);
  assert_int_equal (m.h[m.n - 1].start, 4 * (ADAPTRA_HOLES_MAX - 1));
  /* A split that would need one more forgets the extent instead of
   * keeping it whole: data is never left marked zero.
   */
  adaptra_holes_set (&m, 401, 402, false);
  assert_int_equal (m.n, ADAPTRA_HOLES_MAX - 1);
  assert_int_equal (m.h[99].end, 399);
  assert_int_equal (m.h[100].start, 404);
  assert_int_equal (m.h[100].end, 407);
  adaptra_holes_free (&m);
}

/* ---- The engine on a sparse fake disk. */

/* 8 MiB: 1 MiB of data, then alternately 512 KiB of zeros and 512 KiB
 * of data.
 */
#define DISK (8 * 1024 * KIB)
#define EXTENT (512 * KIB)
#define HEAD (1024 * KIB)

static bool
is_hole (uint64_t off)
{
  return off >= HEAD && (off - HEAD) / EXTENT % 2 == 0;
}

static void
tune (struct adaptra_config *cfg)
{
  cfg->pool_bytes = 16 * 1024 * KIB;
  cfg->max_bytes = 1024 * KIB;
}

/* The fixture's disk with zeros in the holes and no zero byte in the
 * data, on a backend that takes 100 us a read (read-ahead pays).
 */
static int
setup (void **state)
{
  uint64_t i;

  (void) state;
  if (fixture_open (DISK, tune) == -1)
    return -1;
  for (i = 0; i < DISK; i++)
    disk[i] = is_hole (i) ? 0 : disk[i] | 1;
  read_ns = 100000;
  return 0;
}

/* The plugin's block status of the whole disk, as the filter passes
 * it on: data and zero extents in turn.
 */
static void
learn_extents (void)
{
  uint64_t off;

  adaptra_volume_extent (e, volume, 0, HEAD, false);
  for (off = HEAD; off < DISK; off += EXTENT)
    adaptra_volume_extent (e, volume, off, EXTENT, is_hole (off));
}

/* Read 64 KiB at off, as a copy does, then run the queued read-ahead
 * (a reader without workers) and let 50 us pass.
 */
#define COPY_READ (64 * KIB)

static void
copy_read (uint64_t off)
{
  read_check (off, COPY_READ);
  drain ();
  now_ns += 50000;
}

/* Read the data extents, stepping over the holes. */
static void
copy_data (void)
{
  uint64_t off;

  for (off = 0; off < DISK; off += COPY_READ)
    if (!is_hole (off))
      copy_read (off);
}

/* Pages of the holes that the backend read, and of the data read
 * more than once.
 */
static void
count_reads (unsigned *hole_pages, unsigned *reread)
{
  uint64_t p;

  *hole_pages = *reread = 0;
  for (p = 0; p < DISK / PAGE; p++) {
    if (is_hole (p * PAGE))
      *hole_pages += page_reads[p] > 0;
    else
      *reread += page_reads[p] > 1;
  }
}

static uint64_t
readahead_hits (void)
{
  struct adaptra_client_row row;

  assert_int_equal (adaptra_clients_snapshot (e, &row, 1), 1);
  return row.readahead_hits;
}

static void
test_unknown_holes_are_read (void **state)
{
  unsigned holes, reread;

  (void) state;
  /* Without block status read-ahead reads across the holes, as it
   * always did: what the tests below save.
   */
  copy_data ();
  count_reads (&holes, &reread);
  assert_true (holes > 0);
}

static void
test_known_holes_are_skipped (void **state)
{
  unsigned holes, reread;

  (void) state;
  learn_extents ();
  copy_data ();
  count_reads (&holes, &reread);
  assert_int_equal (holes, 0);
  assert_int_equal (reread, 0);
  /* Read-ahead still works across the holes: most data pages came
   * from it, not from the reader's own misses.
   */
  assert_true (readahead_hits () > (DISK / 2) / PAGE / 2);
}

static void
test_write_forgets_holes (void **state)
{
  unsigned holes, reread;

  (void) state;
  learn_extents ();
  /* A write into the second hole: its range holds data now. */
  adaptra_invalidate (e, volume, HEAD + 2 * EXTENT + 5, 1);
  copy_data ();
  count_reads (&holes, &reread);
  assert_true (holes > 0);
  /* Only pages near the written one: the rest of the map stands. */
  for (uint64_t p = 0; p < DISK / PAGE; p++)
    if (is_hole (p * PAGE) && page_reads[p])
      assert_true (p * PAGE >= HEAD + 2 * EXTENT &&
                   p * PAGE < HEAD + 3 * EXTENT);
}

/* A client that asks block status a range at a time (nbdcopy asks
 * 128 MiB) and reads the range's data before it asks for the next:
 * the filter asks the plugin adaptra_holes_horizon past the range's
 * end, and read-ahead, however far its windows have grown while the
 * client read the range, reads nothing past what was asked.
 */
static void
test_horizon_covers_windows (void **state)
{
  const uint64_t range = HEAD + 2 * EXTENT;
  uint64_t horizon = adaptra_holes_horizon (e), known, off, p;

  (void) state;
  /* The configured maximum (1 MiB, within the pool's half): a window
   * and the next ahead of the reader.
   */
  assert_int_equal (horizon, ADAPTRA_HOLES_HORIZON_WINDOWS * 1024 * KIB);
  known = range + horizon;
  assert_true (known < DISK);
  adaptra_volume_extent (e, volume, 0, HEAD, false);
  for (off = HEAD; off < known; off += EXTENT)
    adaptra_volume_extent (e, volume, off, EXTENT, is_hole (off));
  for (off = 0; off < range; off += COPY_READ)
    if (!is_hole (off))
      copy_read (off);
  for (p = known / PAGE; p < DISK / PAGE; p++)
    assert_int_equal (page_reads[p], 0);
  for (p = 0; p < known / PAGE; p++)
    if (is_hole (p * PAGE))
      assert_int_equal (page_reads[p], 0);
  /* Read-ahead did run ahead of the reader, up to the horizon. */
  for (p = range / PAGE; p < known / PAGE && !page_reads[p]; p++)
    ;
  assert_true (p < known / PAGE);
}

/* adaptra-max may be set while a client asks block status (the
 * control socket's "set max"): the horizon follows the setting, and
 * reading it races with no write of it (under TSan).
 */
#define SETS 2000

static void *
set_max_often (void *arg)
{
  unsigned i;
  char why[ADAPTRA_WHY_LEN];

  (void) arg;
  for (i = 0; i < SETS; i++)
    assert_int_equal (adaptra_engine_set_max (e, i % 2 ? 512 * KIB
                                              : 1024 * KIB,
                                              why, sizeof why), 0);
  return NULL;
}

static void
test_horizon_follows_max (void **state)
{
  const uint64_t low = ADAPTRA_HOLES_HORIZON_WINDOWS * 512 * KIB;
  const uint64_t high = ADAPTRA_HOLES_HORIZON_WINDOWS * 1024 * KIB;
  pthread_t setter;
  unsigned i;
  uint64_t h;

  (void) state;
  assert_int_equal (pthread_create (&setter, NULL, set_max_often, NULL), 0);
  for (i = 0; i < SETS; i++) {
    h = adaptra_holes_horizon (e);
    assert_true (h == low || h == high);
  }
  assert_int_equal (pthread_join (setter, NULL), 0);
  /* The last setting (SETS is even: 512 KiB) is the one in force. */
  assert_int_equal (adaptra_holes_horizon (e), low);
}

/* ---- Block status through adaptra_volume_block_status, as the filter
 * asks it, of a fake plugin that names the disk's extents.
 */

/* Where the disk's extent that holds off ends. */
static uint64_t
extent_end (uint64_t off)
{
  return off < HEAD ? HEAD : HEAD + ((off - HEAD) / EXTENT + 1) * EXTENT;
}

/* One client query: what the client got, and what the plugin did. */
struct fake_query {
  uint64_t limit;               /* the client's range ends here */
  bool answered, open;          /* its first extent named; still growing */
  uint64_t start, end;          /* the first extent of its answer */
  unsigned asks;                /* plugin queries */
  uint64_t walked;              /* bytes of the queries for every extent */
};

/* adaptra_extents_fn of the fake plugin.  The client's answer merges
 * touching extents of one type, as nbdkit's extents lists do.
 */
static int
fake_extents (void *opaque, uint64_t start, uint64_t end, bool one,
              bool answer, uint64_t *first_end, uint64_t *named_end)
{
  struct fake_query *q = opaque;
  uint64_t off, x;

  assert_true (start < end && end <= DISK);
  q->asks++;
  if (!one)
    q->walked += end - start;
  *first_end = *named_end = start;
  for (off = start; off < end; off = x) {
    x = extent_end (off) < end ? extent_end (off) : end;
    adaptra_volume_extent (e, volume, off, x - off, is_hole (off));
    if (off == start)
      *first_end = x;
    *named_end = x;
    if (answer && off < q->limit) {
      if (!q->answered) {
        q->answered = q->open = true;
        q->start = off;
        q->end = x;
      }
      else if (q->open && q->end == off && is_hole (off) == is_hole (q->start))
        q->end = x;
      else
        q->open = false;
    }
    if (one)
      break;
  }
  return 0;
}

/* A client that steps through the disk one extent at a time (qemu asks
 * so, from where it is to the disk's end), reading each data extent
 * (copy_read) if read.  Every answer is the extent the plugin
 * would give it; returns the bytes the plugin was asked to walk for
 * every extent, and counts the plugin's queries in *asks.
 */
static uint64_t
step_one_extents (bool read, unsigned *asks)
{
  uint64_t off, walked = 0, p;

  *asks = 0;
  for (off = 0; off < DISK; off = extent_end (off)) {
    struct fake_query q = { .limit = DISK };

    assert_int_equal (adaptra_volume_block_status (e, volume, off,
                                                   DISK - off, true,
                                                   fake_extents, &q), 0);
    assert_true (q.answered);
    assert_int_equal (q.start, off);
    assert_int_equal (q.end, extent_end (off));
    walked += q.walked;
    *asks += q.asks;
    for (p = off; read && !is_hole (off) && p < extent_end (off);
         p += COPY_READ)
      copy_read (p);
  }
  return walked;
}

/* qemu asks for one extent at a time, to the disk's end.  The plugin
 * is not asked for every extent of that range at each step, which
 * walks the rest of the disk every time (the sum over the steps of
 * what lies ahead; here 15 extents, 60 MiB for an 8 MiB disk): each
 * stretch of the disk is walked about once, and the queries are the
 * client's, one more each horizon.
 */
static void
test_one_extent_walks_once (void **state)
{
  const uint64_t horizon = adaptra_holes_horizon (e);
  const unsigned extents = 1 + (DISK - HEAD) / EXTENT;
  unsigned asks;

  (void) state;
  assert_true (horizon < DISK / 2);
  assert_true (step_one_extents (false, &asks) <=
               DISK + ADAPTRA_HOLES_WALK_HORIZONS * horizon);
  assert_true (asks <= extents + DISK / horizon + 1);
  /* Again from the start: a step outside what the last walks named
   * begins a new walk.
   */
  assert_true (step_one_extents (false, &asks) <=
               DISK + ADAPTRA_HOLES_WALK_HORIZONS * horizon);
}

/* An extent longer than the stretch walked (a small horizon, a large
 * hole): the client still gets it whole, from a second query.
 */
static void
test_one_extent_longer_than_walk (void **state)
{
  char why[ADAPTRA_WHY_LEN];
  unsigned asks;

  (void) state;
  assert_int_equal (adaptra_engine_set_max (e, 64 * KIB, why, sizeof why), 0);
  assert_true (ADAPTRA_HOLES_WALK_HORIZONS * adaptra_holes_horizon (e) <
               EXTENT);
  step_one_extents (false, &asks);
}

/* A client that reads each data extent after it asked for it, one
 * request at a time (qemu-img convert -m 1): read-ahead runs ahead of
 * it, and still reads no page of a hole, since the map knew the
 * horizon past each extent before the client read in it.
 */
static void
test_one_extent_reader_skips_holes (void **state)
{
  unsigned holes, reread, asks;

  (void) state;
  step_one_extents (true, &asks);
  count_reads (&holes, &reread);
  assert_int_equal (holes, 0);
  assert_int_equal (reread, 0);
  assert_true (readahead_hits () > 0);
}

static void
test_closed_volume_ignored (void **state)
{
  (void) state;
  /* No such volume: nothing happens (and nothing crashes). */
  adaptra_volume_extent (e, volume + 1, 0, DISK, true);
  adaptra_volume_extent (e, -1, 0, DISK, true);
  /* Past the volume's end: clamped. */
  adaptra_volume_extent (e, volume, DISK - PAGE, 10 * PAGE, true);
}

int
main (void)
{
#define T(name) \
  cmocka_unit_test_setup_teardown (name, setup, fixture_close_test)
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_set_merges_and_splits),
    cmocka_unit_test (test_data_runs),
    cmocka_unit_test (test_bounded),
    T (test_unknown_holes_are_read),
    T (test_known_holes_are_skipped),
    T (test_write_forgets_holes),
    T (test_horizon_covers_windows),
    T (test_horizon_follows_max),
    T (test_one_extent_walks_once),
    T (test_one_extent_longer_than_walk),
    T (test_one_extent_reader_skips_holes),
    T (test_closed_volume_ignored),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
