/* test-pool.c: the page pool and its LRU (core/pool.c, lru.c).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of core/pool.c and its eviction policy core/lru.c:
 * budget, LRU order, delayed activation, eviction accounting, rescue,
 * history, invalidation and frames lent.
 */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "../../core/pool.h"

#define SHIFT 12                /* 4 KiB pages */
/* The largest method number the 6-bit field must hold. */
#define ADAPTRA_METHOD_LAST 63
#define FRAMES 64

static struct adaptra_pool pool;

static int
setup (void **state)
{
  (void) state;
  return adaptra_pool_init (&pool, (uint64_t) FRAMES << SHIFT, SHIFT, false);
}

static int
teardown (void **state)
{
  (void) state;
  adaptra_pool_fini (&pool);
  return 0;
}

/* Insert and complete one page, as a finished read would. */
static uint32_t
add_ready (uint64_t page_no, unsigned flags)
{
  uint32_t f = adaptra_pool_insert (&pool, page_no, 7, 1, flags);

  assert_int_not_equal (f, ADAPTRA_NO_FRAME);
  assert_true (adaptra_pool_complete (&pool, f));
  return f;
}

/* Release one pin: true if it was the last of a STALE frame. */
static bool
unpin1 (uint32_t f)
{
  return adaptra_pool_unpin (&pool, &f, 1) == 1;
}

/* Pin page_no as a hit does: its frame, or ADAPTRA_NO_FRAME. */
static uint32_t
pin_hit1 (uint64_t page_no)
{
  uint32_t f;

  assert_int_equal (adaptra_pool_pin_hits (&pool, page_no, 1, &f, false), 1);
  return f;
}

static void
assert_accounted (void)
{
  struct adaptra_pool_counts c = adaptra_pool_counts (&pool);

  assert_int_equal ((uint64_t) c.free + c.inactive + c.active + c.in_flight +
                    c.lent, FRAMES);
}

static void
test_budget_never_exceeded (void **state)
{
  uint64_t i;

  (void) state;
  for (i = 0; i < 10 * FRAMES; i++) {
    add_ready (i * 3, ADAPTRA_PG_READAHEAD);
    assert_accounted ();
  }
  assert_int_equal (pool.nframes, FRAMES);
  assert_int_equal (pool.nfree, 0);
  assert_int_equal (pool.evicted, 9 * FRAMES);
  /* Only the newest FRAMES pages survive. */
  assert_int_equal (adaptra_pool_lookup (&pool, 0), ADAPTRA_NO_FRAME);
  assert_int_not_equal (adaptra_pool_lookup (&pool, (10 * FRAMES - 1) * 3),
                        ADAPTRA_NO_FRAME);
}

static void
test_eviction_order_and_unread (void **state)
{
  uint64_t i;

  (void) state;
  for (i = 0; i < FRAMES; i++)
    add_ready (i, ADAPTRA_PG_READAHEAD);
  /* Read pages 0 and 1: they are no longer "unread". */
  adaptra_pool_touch (&pool, adaptra_pool_lookup (&pool, 0));
  adaptra_pool_touch (&pool, adaptra_pool_lookup (&pool, 1));
  add_ready (1000, 0);
  add_ready (1001, 0);
  add_ready (1002, 0);
  /* The oldest three went, oldest first. */
  assert_int_equal (adaptra_pool_lookup (&pool, 0), ADAPTRA_NO_FRAME);
  assert_int_equal (adaptra_pool_lookup (&pool, 1), ADAPTRA_NO_FRAME);
  assert_int_equal (adaptra_pool_lookup (&pool, 2), ADAPTRA_NO_FRAME);
  assert_int_not_equal (adaptra_pool_lookup (&pool, 3), ADAPTRA_NO_FRAME);
  assert_int_equal (pool.evicted, 3);
  assert_int_equal (pool.evicted_unread, 1);
}

/* Fill the pool with pages 0..FRAMES-1 in frames 0..FRAMES-1, the
 * even pages completed first: the eviction order (even pages, then
 * odd ones) is not the frames' order.  Touch the pages for which
 * touched says so (ADAPTRA_PG_READAHEAD pages read once), then insert
 * a run of n new pages from page 1000 and return their frames.
 */
static void
insert_after_scrambled (bool (*touched) (uint64_t), uint32_t *frames,
                        uint32_t n)
{
  uint32_t f[FRAMES], i;

  for (i = 0; i < FRAMES; i++) {
    f[i] = adaptra_pool_insert (&pool, i, 7, 1, ADAPTRA_PG_READAHEAD);
    assert_int_equal (f[i], i);
  }
  for (i = 0; i < FRAMES; i += 2)
    assert_true (adaptra_pool_complete (&pool, f[i]));
  for (i = 1; i < FRAMES; i += 2)
    assert_true (adaptra_pool_complete (&pool, f[i]));
  for (i = 0; i < FRAMES; i++)
    if (touched (i))
      adaptra_pool_touch (&pool, f[i]);
  for (i = 0; i < n; i++)
    frames[i] = adaptra_pool_insert (&pool, 1000 + i, 8, 1, 0);
  assert_accounted ();
}

static bool
every_page (uint64_t page_no)
{
  (void) page_no;
  return true;
}

static bool
even_pages (uint64_t page_no)
{
  return page_no % 2 == 0;
}

/* insert_after_scrambled a run of n pages, which must land in frames
 * 0, stride, 2 * stride...; no page unread is evicted for them.
 */
static void
expect_run_in_frames (bool (*touched) (uint64_t), uint32_t n,
                      uint32_t stride)
{
  uint32_t frames[FRAMES], i;

  insert_after_scrambled (touched, frames, n);
  for (i = 0; i < n; i++)
    assert_int_equal (frames[i], stride * i);
  assert_int_equal (pool.evicted_unread, 0);
}

/* A run of pages inserted into a full pool lands in consecutive
 * frames, so that its read needs no transfer buffer (fetch.c), when
 * the victim's neighbours were read already: the victim's run goes
 * with it.
 */
static void
test_eviction_follows_victims_run (void **state)
{
  (void) state;
  expect_run_in_frames (every_page, 8, 1);
  assert_int_equal (pool.evicted, 8);
  assert_int_equal (adaptra_pool_lookup (&pool, 7), ADAPTRA_NO_FRAME);
  assert_int_not_equal (adaptra_pool_lookup (&pool, 8), ADAPTRA_NO_FRAME);
}

/* But a neighbour not read yet stays, and so does one read twice:
 * eviction then takes the policy's victims in their order.
 */
static void
test_eviction_keeps_unread_neighbours (void **state)
{
  uint32_t i;

  (void) state;
  expect_run_in_frames (even_pages, 4, 2);
  for (i = 1; i < 8; i += 2)
    assert_int_not_equal (adaptra_pool_lookup (&pool, i), ADAPTRA_NO_FRAME);
}

static void
test_eviction_keeps_pages_read_twice (void **state)
{
  uint32_t frames[2];

  (void) state;
  insert_after_scrambled (every_page, frames, 0);
  adaptra_pool_touch (&pool, 1);     /* page 1, in frame 1: read twice */
  frames[0] = adaptra_pool_insert (&pool, 1000, 8, 1, 0);
  frames[1] = adaptra_pool_insert (&pool, 1001, 8, 1, 0);
  assert_int_equal (frames[0], 0);
  assert_int_equal (frames[1], 2);
  assert_int_not_equal (adaptra_pool_lookup (&pool, 1), ADAPTRA_NO_FRAME);
}

static void
test_delayed_activation (void **state)
{
  uint32_t f0, f1;
  uint64_t i;

  (void) state;
  f0 = add_ready (0, 0);
  f1 = add_ready (1, 0);
  /* First touch only references; second only flags ACTIVATE. */
  adaptra_pool_touch (&pool, f0);
  assert_int_equal (pool.lru.active.len, 0);
  adaptra_pool_touch (&pool, f0);
  assert_true (pool.pages[f0].flags & ADAPTRA_PG_ACTIVATE);
  assert_int_equal (pool.lru.active.len, 0);
  assert_int_equal (pool.lru.inactive.tail, f0);
  /* Fill the pool: eviction reaches page 0, promotes it, evicts 1. */
  for (i = 2; i <= FRAMES; i++)
    add_ready (i, 0);
  assert_int_equal (pool.lru.active.len, 1);
  assert_true (pool.pages[f0].flags & ADAPTRA_PG_ACTIVE);
  assert_int_equal (adaptra_pool_lookup (&pool, 0), f0);
  assert_int_equal (adaptra_pool_lookup (&pool, 1), ADAPTRA_NO_FRAME);
  (void) f1;
  assert_accounted ();
}

static void
test_aging_clock (void **state)
{
  (void) state;
  add_ready (10, 0);
  assert_int_equal (adaptra_pool_clock (&pool), 1);
  add_ready (11, 0);
  assert_int_equal (adaptra_pool_clock (&pool), 2);
  /* In-flight pages do not age the pool until they complete. */
  assert_int_not_equal (adaptra_pool_insert (&pool, 12, 0, 0, 0),
                        ADAPTRA_NO_FRAME);
  assert_int_equal (adaptra_pool_clock (&pool), 2);
}

/* What a page read ahead now survives, the ground of the thrashing
 * threshold (docs/DESIGN.md §3.3): with ready pages, reads in flight
 * (other windows, issued first) and free frames, and the pool's reads
 * coming and going at a steady rate (each step completes the oldest
 * read in flight and issues one more), the page stays for G
 * (adaptra_pool_reclaimable: free and inactive pages) plus the pages
 * in flight clock ticks.  G leaves those out: they are part of the
 * threshold's margin.
 */
#define RING (FRAMES + 1)

static void
test_lifetime_is_survival (void **state)
{
  static const struct { uint32_t ready, in_flight; } cases[] = {
    { FRAMES, 0 },
    { FRAMES - 16, 16 },
    { FRAMES - 24, 16 },        /* and 8 frames free */
    { 8, FRAMES / 2 },
  };
  size_t c;

  (void) state;
  for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint32_t flight[RING];      /* reads in flight, oldest at head */
    uint32_t head = 0, tail = 0, i;
    uint64_t next = 1000, page = 999, expect, clock0;

    assert_int_equal (adaptra_pool_init (&pool, (uint64_t) FRAMES << SHIFT,
                                         SHIFT, false), 0);
    for (i = 0; i < cases[c].ready; i++)
      add_ready (i, 0);
    for (i = 0; i < cases[c].in_flight; i++)
      flight[tail++ % RING] = adaptra_pool_insert (&pool, next++, 7, 1,
                                                   ADAPTRA_PG_READAHEAD);
    expect = adaptra_pool_reclaimable (&pool) + cases[c].in_flight;
    clock0 = adaptra_pool_clock (&pool);
    /* The page read ahead now, then one more a step. */
    flight[tail++ % RING] = adaptra_pool_insert (&pool, page, 7, 1,
                                                 ADAPTRA_PG_READAHEAD);
    do {
      assert_true (adaptra_pool_complete (&pool, flight[head++ % RING]));
      flight[tail++ % RING] = adaptra_pool_insert (&pool, next++, 7, 1,
                                                   ADAPTRA_PG_READAHEAD);
      assert_int_not_equal (flight[(tail - 1) % RING], ADAPTRA_NO_FRAME);
    } while (adaptra_pool_lookup (&pool, page) != ADAPTRA_NO_FRAME);
    assert_int_equal (adaptra_pool_clock (&pool) - clock0, expect);
    adaptra_pool_fini (&pool);
  }
}

/* As the seed's mark_page_accessed: the touch that flags a page
 * ACTIVATE ticks the clock, once; a first touch, a third, and the
 * promotion at the tail do not.
 */
static void
test_aging_clock_on_activation (void **state)
{
  uint32_t f;
  uint64_t i;

  (void) state;
  f = add_ready (10, 0);
  assert_int_equal (adaptra_pool_clock (&pool), 1);
  adaptra_pool_touch (&pool, f);
  assert_int_equal (adaptra_pool_clock (&pool), 1);
  adaptra_pool_touch (&pool, f);
  assert_true (pool.pages[f].flags & ADAPTRA_PG_ACTIVATE);
  assert_int_equal (adaptra_pool_clock (&pool), 2);
  adaptra_pool_touch (&pool, f);
  assert_int_equal (adaptra_pool_clock (&pool), 2);
  /* Fill the pool: page 10 is promoted at the tail, and one page
   * evicted; only the FRAMES pages added tick.
   */
  for (i = 0; i < FRAMES; i++)
    add_ready (100 + i, 0);
  assert_true (pool.pages[f].flags & ADAPTRA_PG_ACTIVE);
  assert_int_equal (adaptra_pool_clock (&pool), 2 + FRAMES);
  /* An active page read again is not activated again. */
  adaptra_pool_touch (&pool, f);
  assert_int_equal (adaptra_pool_clock (&pool), 2 + FRAMES);
}

/* Pages counted by group of page numbers, without the engine lock:
 * READY and in-flight pages count, a STALE one and groups past n do
 * not.
 */
static void
test_count_by (void **state)
{
  uint64_t counts[3] = { 0, 0, 0 };
  uint64_t i;

  (void) state;
  for (i = 0; i < 5; i++)
    add_ready (i, 0);                   /* group 0 */
  for (i = 0; i < 3; i++)
    add_ready (16 + i, 0);              /* group 1 */
  add_ready (48, 0);                    /* group 3: past n */
  assert_int_not_equal (adaptra_pool_insert (&pool, 20, 0, 0, 0),
                        ADAPTRA_NO_FRAME);
  assert_int_not_equal (adaptra_pool_insert (&pool, 21, 0, 0, 0),
                        ADAPTRA_NO_FRAME);
  adaptra_pool_invalidate (&pool, 21, 22); /* in flight: STALE */
  adaptra_pool_count_by (&pool, 4, counts, 3);
  assert_int_equal (counts[0], 5);
  assert_int_equal (counts[1], 3 + 1);
  assert_int_equal (counts[2], 0);
}

/* The bucket that indexes frame f (a walk of every chain). */
static uint64_t
bucket_holding (const struct adaptra_pool *pl, uint32_t f)
{
  uint64_t b;
  uint32_t g;

  for (b = 0; b < UINT64_C (1) << pl->bucket_bits; b++)
    for (g = pl->buckets[b]; g != ADAPTRA_NO_FRAME; g = pl->pages[g].hash_next)
      if (g == f)
        return b;
  fail_msg ("frame %u is in no bucket", f);
  return 0;
}

/* A run's pages are one block of consecutive buckets, one page each,
 * so they share a stripe (pool.h: ADAPTRA_POOL_RUN_SHIFT); pages one
 * run apart still spread over the buckets within blocks.
 */
static void
test_run_shares_block (void **state)
{
  const uint64_t run = UINT64_C (1) << ADAPTRA_POOL_RUN_SHIFT;
  struct adaptra_pool big;
  uint64_t i, b, block = UINT64_MAX, seen = 0, offsets = 0;

  (void) state;
  for (i = 2 * run; i < 3 * run; i++) {
    b = bucket_holding (&pool, add_ready (i, 0));
    if (block == UINT64_MAX)
      block = b / run;
    assert_int_equal (b / run, block);
    assert_false (seen & (UINT64_C (1) << (b % run)));
    seen |= UINT64_C (1) << (b % run);
  }
  assert_int_equal (adaptra_pool_init (&big, UINT64_C (4096) << SHIFT, SHIFT,
                                       true), 0);
  for (i = 0; i < 256; i++) {
    uint32_t f = adaptra_pool_insert (&big, i * run, 0, 0, 0);

    assert_int_not_equal (f, ADAPTRA_NO_FRAME);
    offsets |= UINT64_C (1) << (bucket_holding (&big, f) % run);
  }
  assert_true (__builtin_popcountll (offsets) >= run / 2);
  adaptra_pool_fini (&big);
}

/* adaptra_pool_count_by over a pool of many stripes' worth of blocks,
 * more than ADAPTRA_POOL_SCAN_BATCH buckets per stripe.
 */
static void
test_count_by_many_blocks (void **state)
{
  const uint64_t frames = UINT64_C (1) << 15, groups = 24;
  struct adaptra_pool big;
  uint64_t counts[24] = { 0 }, i, total = 0;

  (void) state;
  assert_int_equal (adaptra_pool_init (&big, frames << SHIFT, SHIFT, true), 0);
  assert_true ((frames >> ADAPTRA_POOL_RUN_SHIFT) / ADAPTRA_POOL_STRIPES >
               ADAPTRA_POOL_SCAN_BATCH >> ADAPTRA_POOL_RUN_SHIFT);
  /* Three pages of every four: 3072 of each group of 4096. */
  for (i = 0; i < frames; i++)
    assert_int_not_equal (adaptra_pool_insert (&big, i + i / 3, 0, 0, 0),
                          ADAPTRA_NO_FRAME);
  adaptra_pool_count_by (&big, 12, counts, groups);
  for (i = 0; i < groups; i++) {
    total += counts[i];
    if (i < 10)
      assert_int_equal (counts[i], 3072);
  }
  assert_int_equal (total, frames);
  adaptra_pool_fini (&big);
}

/* A request's pins: every READY page of a range pinned at once (absent
 * and in-flight pages skipped, or the first of them stopping the
 * pins), released at once, and the frames dropped meanwhile handed
 * back for adaptra_pool_release.
 */
static void
test_pin_hits (void **state)
{
  uint32_t frames[10], more[10], f[10], flying = ADAPTRA_NO_FRAME, n, i;

  (void) state;
  for (i = 0; i < 10; i++)
    f[i] = i == 4 ? ADAPTRA_NO_FRAME
      : i == 6 ? (flying = adaptra_pool_insert (&pool, i, 0, 0, 0))
      : add_ready (i, 0);
  assert_int_equal (adaptra_pool_pin_hits (&pool, 0, 10, frames, false), 10);
  for (i = 0; i < 10; i++) {
    assert_int_equal (frames[i], i == 6 ? ADAPTRA_NO_FRAME : f[i]);
    if (frames[i] != ADAPTRA_NO_FRAME)
      assert_int_equal (pool.pages[frames[i]].pins, 1);
  }
  assert_int_equal (adaptra_pool_pin_hits (&pool, 0, 10, more, true), 4);
  assert_int_equal (pool.pages[f[3]].pins, 2);
  assert_int_equal (adaptra_pool_unpin (&pool, more, 4), 0);
  assert_int_equal (pool.pages[f[3]].pins, 1);
  /* Pages 1 and 7, pinned, are dropped by a write: the unpin that
   * releases their last pins returns them, for the caller to free.
   */
  adaptra_pool_invalidate (&pool, 1, 2);
  adaptra_pool_invalidate (&pool, 7, 8);
  n = adaptra_pool_unpin (&pool, frames, 10);
  assert_int_equal (n, 2);
  assert_int_equal (frames[0], f[1]);
  assert_int_equal (frames[1], f[7]);
  for (i = 0; i < 10; i++)
    if (i != 4 && i != 6)
      assert_int_equal (pool.pages[f[i]].pins, 0);
  for (i = 0; i < n; i++)
    adaptra_pool_release (&pool, frames[i]);
  assert_true (adaptra_pool_claim (&pool, f[0]));
  adaptra_pool_drop (&pool, flying);
  assert_int_equal (adaptra_pool_counts (&pool).free, FRAMES - 10 + 3 + 1);
}

/* Page i of area a (ADAPTRA_POOL_AREA_SHIFT). */
static uint64_t
area_page (uint64_t a, uint64_t i)
{
  return (a << ADAPTRA_POOL_AREA_SHIFT) + i;
}

static void
test_may_hold_by_area (void **state)
{
  const uint64_t area = UINT64_C (1) << ADAPTRA_POOL_AREA_SHIFT;
  uint32_t f, g, frames[16];

  (void) state;
  assert_false (adaptra_pool_may_hold (&pool, 0, UINT64_C (1) << 40));
  assert_false (adaptra_pool_may_hold (&pool, area_page (5, 10), 0));
  f = adaptra_pool_insert (&pool, area_page (5, 10), 0, 0, 0);
  /* Held from its insert, in flight: its area only. */
  assert_true (adaptra_pool_may_hold (&pool, area_page (5, 10), 1));
  assert_true (adaptra_pool_may_hold (&pool, area_page (5, area - 1), 1));
  assert_false (adaptra_pool_may_hold (&pool, area_page (4, 0), area));
  assert_true (adaptra_pool_may_hold (&pool, area_page (4, 0), area + 1));
  assert_false (adaptra_pool_may_hold (&pool, area_page (6, 0), 16));
  /* Areas ADAPTRA_POOL_AREAS apart share a counter. */
  assert_true (adaptra_pool_may_hold (&pool,
                                      area_page (5 + ADAPTRA_POOL_AREAS, 0),
                                      1));
  assert_true (adaptra_pool_may_hold (&pool, area_page (6, 0),
                                      ADAPTRA_POOL_AREAS * area));
  assert_false (adaptra_pool_may_hold (&pool, area_page (6, 0),
                                       (ADAPTRA_POOL_AREAS - 1) * area));
  /* Two pages of the area: it is held until both leave. */
  g = add_ready (area_page (5, 11), 0);
  adaptra_pool_drop (&pool, f);
  assert_true (adaptra_pool_may_hold (&pool, area_page (5, 0), 1));
  assert_true (adaptra_pool_claim (&pool, g));
  adaptra_pool_drop (&pool, adaptra_pool_insert (&pool, area_page (6, 0),
                                                 0, 0, 0));
  assert_false (adaptra_pool_may_hold (&pool, 0, UINT64_C (1) << 40));
  /* A pinned page invalidated leaves the index, and its area, before
   * its last unpin frees it.
   */
  f = add_ready (area_page (7, 0), 0);
  assert_int_equal (adaptra_pool_pin_hits (&pool, area_page (7, 0), 1,
                                           frames, true), 1);
  adaptra_pool_invalidate (&pool, area_page (7, 0), area_page (8, 0));
  assert_false (adaptra_pool_may_hold (&pool, area_page (7, 0), area));
  assert_true (unpin1 (f));
  adaptra_pool_release (&pool, f);
  assert_accounted ();
}

/* Pin the 16 pages of area 9 from a thread of their own (the stripe
 * locks are the test's).
 */
static void *
pin_area_9 (void *arg)
{
  uint32_t *got = arg;
  uint32_t frames[16];

  got[0] = adaptra_pool_pin_hits (&pool, area_page (9, 0), 16, frames, false);
  got[1] = frames[15];
  got[2] = adaptra_pool_pin_hits (&pool, area_page (9, 0), 16, frames, true);
  return NULL;
}

/* A hit of pages whose areas the pool holds none of, as a stepped-aside
 * volume reads, finds them absent without a stripe lock: with every
 * stripe locked, it still returns.
 */
static void
test_pin_hits_absent_area_takes_no_lock (void **state)
{
  uint32_t got[3] = { 0, 0, 1 };
  struct timespec deadline;
  pthread_t t;
  unsigned s;
  int err;

  (void) state;
  /* A page in the area before, on the stripe of its last run. */
  add_ready (area_page (9, 0) - 1, 0);
  for (s = 0; s < ADAPTRA_POOL_STRIPES; s++)
    pthread_mutex_lock (&pool.stripes[s].lock);
  assert_int_equal (pthread_create (&t, NULL, pin_area_9, got), 0);
  clock_gettime (CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 2;
  err = pthread_timedjoin_np (t, NULL, &deadline);
  for (s = 0; s < ADAPTRA_POOL_STRIPES; s++)
    pthread_mutex_unlock (&pool.stripes[s].lock);
  if (err == ETIMEDOUT)
    pthread_join (t, NULL);
  assert_int_equal (err, 0);
  assert_int_equal (got[0], 16);
  assert_int_equal (got[1], ADAPTRA_NO_FRAME);
  assert_int_equal (got[2], 0);
}

static void
test_rescue (void **state)
{
  uint64_t i, moved;
  uint32_t f;

  (void) state;
  for (i = 0; i < 8; i++)
    add_ready (100 + i, ADAPTRA_PG_READAHEAD);
  for (i = 0; i < 8; i++)
    add_ready (200 + i, 0);
  /* Page 103 is being copied out: rescue must leave it alone. */
  adaptra_pool_pin (&pool, adaptra_pool_lookup (&pool, 103));
  moved = adaptra_pool_rescue (&pool, 102, 4);
  assert_int_equal (moved, 3);
  assert_int_equal (adaptra_pool_clock (&pool), 16 + 3);
  /* The rescued pages are now the newest; 100 is the tail. */
  f = adaptra_pool_lookup (&pool, 105);
  assert_int_equal (pool.lru.inactive.head, f);
  assert_int_equal (pool.lru.inactive.tail, adaptra_pool_lookup (&pool, 100));
  /* A hole stops the walk. */
  assert_int_equal (adaptra_pool_rescue (&pool, 106, 10), 2);
  assert_false (unpin1 (adaptra_pool_lookup (&pool, 103)));
}

static void
test_history_and_run (void **state)
{
  uint64_t i;

  (void) state;
  for (i = 10; i < 20; i++)
    add_ready (i, 0);
  assert_int_equal (adaptra_pool_history (&pool, 20, 100, false), 10);
  assert_int_equal (adaptra_pool_history (&pool, 20, 4, false), 4);
  assert_int_equal (adaptra_pool_history (&pool, 10, 100, false), 0);
  assert_int_equal (adaptra_pool_run_from (&pool, 15, 100, false), 5);
  /* In-flight pages count as present. */
  adaptra_pool_insert (&pool, 9, 0, 0, 0);
  assert_int_equal (adaptra_pool_history (&pool, 20, 100, false), 11);
  /* History never runs below page 0. */
  add_ready (0, 0);
  assert_int_equal (adaptra_pool_history (&pool, 1, 100, false), 1);
}

static void
test_history_of_reads (void **state)
{
  uint64_t i;

  (void) state;
  /* Pages 10..19 read ahead; 16..19 then read by a client. */
  for (i = 10; i < 20; i++)
    add_ready (i, ADAPTRA_PG_READAHEAD);
  for (i = 16; i < 20; i++)
    adaptra_pool_touch (&pool, adaptra_pool_lookup (&pool, i));
  assert_int_equal (adaptra_pool_history (&pool, 20, 100, true), 4);
  assert_int_equal (adaptra_pool_run_from (&pool, 16, 100, true), 4);
  assert_int_equal (adaptra_pool_run_from (&pool, 10, 100, true), 0);
  /* A demand read in flight counts, read-ahead in flight does not. */
  adaptra_pool_insert (&pool, 20, 0, 0, 0);
  adaptra_pool_insert (&pool, 21, 0, 0, ADAPTRA_PG_READAHEAD);
  assert_int_equal (adaptra_pool_history (&pool, 21, 100, true), 5);
  assert_int_equal (adaptra_pool_history (&pool, 22, 100, true), 0);
  assert_int_equal (adaptra_pool_history (&pool, 22, 100, false), 12);
}

static void
test_invalidate (void **state)
{
  uint32_t ready, pinned, flying;

  (void) state;
  ready = add_ready (1, 0);
  pinned = add_ready (2, 0);
  flying = adaptra_pool_insert (&pool, 3, 0, 0, 0);
  adaptra_pool_pin (&pool, pinned);
  adaptra_pool_invalidate (&pool, 0, 10);
  assert_int_equal (adaptra_pool_lookup (&pool, 1), ADAPTRA_NO_FRAME);
  assert_int_equal (adaptra_pool_lookup (&pool, 2), ADAPTRA_NO_FRAME);
  assert_int_equal (adaptra_pool_lookup (&pool, 3), ADAPTRA_NO_FRAME);
  assert_int_equal (pool.pages[ready].state, ADAPTRA_PAGE_FREE);
  /* The pinned page is freed only after its last unpin, which says
   * so; a hit can no longer pin it.
   */
  assert_int_equal (pool.pages[pinned].state, ADAPTRA_PAGE_READY);
  assert_int_equal (pin_hit1 (2), ADAPTRA_NO_FRAME);
  adaptra_pool_pin (&pool, pinned);
  assert_false (unpin1 (pinned));
  assert_true (unpin1 (pinned));
  assert_int_equal (pool.pages[pinned].state, ADAPTRA_PAGE_READY);
  adaptra_pool_release (&pool, pinned);
  assert_int_equal (pool.pages[pinned].state, ADAPTRA_PAGE_FREE);
  /* The in-flight page's completion discards it. */
  assert_false (adaptra_pool_complete (&pool, flying));
  assert_int_equal (pool.nfree, FRAMES);
  /* A new page 3 can be inserted while the stale one flies. */
  flying = adaptra_pool_insert (&pool, 3, 0, 0, 0);
  adaptra_pool_invalidate (&pool, 0, UINT64_C (1) << 40);
  assert_int_equal (adaptra_pool_lookup (&pool, 3), ADAPTRA_NO_FRAME);
  adaptra_pool_drop (&pool, flying);
  assert_int_equal (pool.nfree, FRAMES);
}

static void
test_pinned_never_evicted (void **state)
{
  uint64_t i;
  uint32_t f;

  (void) state;
  for (i = 0; i < FRAMES; i++)
    adaptra_pool_pin (&pool, add_ready (i, 0));
  assert_int_equal (adaptra_pool_insert (&pool, 999, 0, 0, 0),
                    ADAPTRA_NO_FRAME);
  f = adaptra_pool_lookup (&pool, 5);
  assert_false (unpin1 (f));
  assert_int_equal (adaptra_pool_insert (&pool, 999, 0, 0, 0), f);
  for (i = 0; i < FRAMES; i++)
    if (i != 5)
      assert_false (unpin1 (adaptra_pool_lookup (&pool, i)));
  /* A hit's pin (without the engine lock) protects the same way: the
   * policy's victim is claimed from the index only while unpinned.
   */
  f = pin_hit1 (6);
  assert_int_equal (f, adaptra_pool_lookup (&pool, 6));
  assert_int_equal (pin_hit1 (999), ADAPTRA_NO_FRAME);
  assert_false (adaptra_pool_claim (&pool, f));
  for (i = 0; i < 2 * FRAMES; i++)
    assert_int_not_equal (adaptra_pool_insert (&pool, 2000 + i, 0, 0, 0), f);
  assert_int_equal (adaptra_pool_lookup (&pool, 6), f);
  assert_false (unpin1 (f));
}

static void
test_take_mark (void **state)
{
  uint32_t f;

  (void) state;
  f = add_ready (4, ADAPTRA_PG_MARK | ADAPTRA_PG_READAHEAD);
  assert_true (adaptra_pool_take_mark (&pool, f));
  assert_false (adaptra_pool_take_mark (&pool, f));
  assert_true (adaptra_pool_touch (&pool, f));
  assert_false (adaptra_pool_touch (&pool, f));
  assert_int_equal (adaptra_pool_spare (&pool), FRAMES / 2);
}

/* A page holds a 64-bit stream id and the mark state whole, and a
 * reused frame starts with neither.
 */
static void
test_page_fields (void **state)
{
  const uint64_t id = (UINT64_C (0xABCDEF012345) << 16) | 3;
  uint32_t f;

  (void) state;
  f = adaptra_pool_insert (&pool, 5, id, 2, ADAPTRA_PG_MARK);
  pool.pages[f].window = 123456;
  pool.pages[f].age = UINT32_MAX;
  assert_true (adaptra_pool_complete (&pool, f));
  assert_int_equal (pool.pages[f].stream_id, id);
  assert_int_equal (pool.pages[f].method, 2);
  assert_int_equal (pool.pages[f].state, ADAPTRA_PAGE_READY);
  adaptra_pool_drop (&pool, f);
  f = adaptra_pool_insert (&pool, 6, 1, ADAPTRA_METHOD_LAST, 0);
  assert_int_equal (pool.pages[f].method, ADAPTRA_METHOD_LAST);
  assert_int_equal (pool.pages[f].state, ADAPTRA_PAGE_IN_FLIGHT);
  assert_int_equal (pool.pages[f].window, 0);
  assert_int_equal (pool.pages[f].age, 0);
}

/* Without data a pool of 2^20 frames (4 GiB of 4 KiB pages) costs its
 * metadata only and works as any other.
 */
static void
test_no_data (void **state)
{
  struct adaptra_pool big;
  uint32_t f;

  (void) state;
  assert_int_equal (adaptra_pool_init (&big, UINT64_C (1) << 32, SHIFT, true),
                    0);
  assert_int_equal (big.nframes, 1u << 20);
  assert_null (big.arena);
  f = adaptra_pool_insert (&big, 99, 0, 0, 0);
  assert_null (adaptra_pool_data (&big, f));
  assert_true (adaptra_pool_complete (&big, f));
  assert_int_equal (adaptra_pool_lookup (&big, 99), f);
  adaptra_pool_fini (&big);
}

/* Bytes lent take the frames that cover them out of use: free ones
 * first, then the eviction policy's victims; all or nothing; a big
 * invalidation leaves them alone; taken back, they are free again.
 */
static void
test_lend (void **state)
{
  const uint64_t page = UINT64_C (1) << SHIFT;
  uint64_t i;

  (void) state;
  for (i = 0; i < FRAMES - 4; i++)
    add_ready (i, 0);
  /* 6.5 pages: 7 frames, the 4 free ones and the 3 oldest pages'. */
  assert_true (adaptra_pool_lend (&pool, 6 * page + page / 2));
  assert_int_equal (adaptra_pool_counts (&pool).lent, 7);
  assert_int_equal (pool.nfree, 0);
  assert_int_equal (adaptra_pool_lookup (&pool, 2), ADAPTRA_NO_FRAME);
  assert_int_not_equal (adaptra_pool_lookup (&pool, 3), ADAPTRA_NO_FRAME);
  assert_accounted ();
  /* Half a page more fits in the 7 frames; a byte more takes page 3's. */
  assert_true (adaptra_pool_lend (&pool, page / 2));
  assert_int_equal (adaptra_pool_counts (&pool).lent, 7);
  assert_true (adaptra_pool_lend (&pool, 1));
  assert_int_equal (adaptra_pool_counts (&pool).lent, 8);
  assert_int_equal (adaptra_pool_lookup (&pool, 3), ADAPTRA_NO_FRAME);
  /* A lent frame holds no page: the pool's pages are the other 56. */
  for (i = 100; i < 100 + FRAMES - 8; i++)
    assert_int_not_equal (adaptra_pool_insert (&pool, i, 0, 0, 0),
                          ADAPTRA_NO_FRAME);
  assert_int_equal (adaptra_pool_insert (&pool, i, 0, 0, 0),
                    ADAPTRA_NO_FRAME);
  assert_accounted ();
  /* Every other frame in flight: nothing more can be lent. */
  assert_false (adaptra_pool_lend (&pool, page));
  assert_int_equal (adaptra_pool_counts (&pool).lent, 8);
  assert_int_equal (pool.lent_bytes, 7 * page + 1);
  assert_int_equal (adaptra_pool_invalidate (&pool, 0, UINT64_MAX),
                    FRAMES - 8);
  assert_int_equal (adaptra_pool_counts (&pool).lent, 8);
  for (i = 0; i < FRAMES; i++)
    if (pool.pages[i].state == ADAPTRA_PAGE_IN_FLIGHT)
      assert_false (adaptra_pool_complete (&pool, (uint32_t) i));
  assert_int_equal (pool.nfree, FRAMES - 8);
  /* More than the pool can never be lent. */
  assert_false (adaptra_pool_lend (&pool, (FRAMES + 1) * page));
  assert_int_equal (adaptra_pool_counts (&pool).lent, 8);
  /* Taken back: the frames the rest no longer needs are free. */
  adaptra_pool_take_back (&pool, 1);
  assert_int_equal (adaptra_pool_counts (&pool).lent, 7);
  adaptra_pool_take_back (&pool, 7 * page);
  assert_int_equal (adaptra_pool_counts (&pool).lent, 0);
  assert_int_equal (pool.nfree, FRAMES);
  assert_accounted ();
}

/* A lend that cannot be whole evicts nothing: with 3 pages ready and
 * every other frame in flight, 5 frames cannot be lent, and the 3
 * pages stay.
 */
static void
test_lend_fails_whole (void **state)
{
  const uint64_t page = UINT64_C (1) << SHIFT;
  uint64_t i;

  (void) state;
  for (i = 0; i < 3; i++)
    add_ready (i, 0);
  for (i = 3; i < FRAMES; i++)
    assert_int_not_equal (adaptra_pool_insert (&pool, i, 0, 0, 0),
                          ADAPTRA_NO_FRAME);
  assert_false (adaptra_pool_lend (&pool, 5 * page));
  assert_int_equal (adaptra_pool_counts (&pool).lent, 0);
  for (i = 0; i < 3; i++)
    assert_int_not_equal (adaptra_pool_lookup (&pool, i), ADAPTRA_NO_FRAME);
  assert_int_equal (pool.evicted, 0);
  assert_accounted ();
  /* Three fit. */
  assert_true (adaptra_pool_lend (&pool, 3 * page));
  assert_int_equal (adaptra_pool_counts (&pool).lent, 3);
  assert_accounted ();
}

int
main (void)
{
#define T(name) cmocka_unit_test_setup_teardown (name, setup, teardown)
  const struct CMUnitTest tests[] = {
    T (test_budget_never_exceeded),
    T (test_eviction_order_and_unread),
    T (test_eviction_follows_victims_run),
    T (test_eviction_keeps_unread_neighbours),
    T (test_eviction_keeps_pages_read_twice),
    T (test_delayed_activation),
    T (test_aging_clock),
    cmocka_unit_test (test_lifetime_is_survival),
    T (test_aging_clock_on_activation),
    T (test_count_by),
    T (test_count_by_many_blocks),
    T (test_run_shares_block),
    T (test_pin_hits),
    T (test_may_hold_by_area),
    T (test_pin_hits_absent_area_takes_no_lock),
    T (test_rescue),
    T (test_history_and_run),
    T (test_history_of_reads),
    T (test_invalidate),
    T (test_pinned_never_evicted),
    T (test_take_mark),
    T (test_page_fields),
    T (test_lend),
    T (test_lend_fails_whole),
    cmocka_unit_test (test_no_data),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
