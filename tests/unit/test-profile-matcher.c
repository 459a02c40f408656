/* test-profile-matcher.c: unit tests of the profile library's matcher.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdbool.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "profile-fixture.h"

/* A replay: the client's cache is what the matcher proposed (the
 * engine would fetch it) and what the client read; a read is served
 * when all its pages are there.  Checks the counters on every step
 * and notes the largest unread lead.
 */
struct replay {
  uint64_t per_call;            /* max_bytes of each matcher_next */
  unsigned reads, served, proposals_after;
  uint64_t max_outstanding;
  struct adaptra_matcher_counters c;
};

static void
replay (struct adaptra_matcher *m, const struct rd *t, size_t n,
        uint64_t step_ns, size_t count_after, struct replay *out)
{
  static unsigned char cache[EXPORT_PAGES], was_read[EXPORT_PAGES];
  struct adaptra_profile_range r[8];
  size_t i, k, got;
  uint64_t p, now = 0, ranged = 0;

  uint64_t per_call = out->per_call ? out->per_call : UINT64_MAX;

  memset (cache, 0, sizeof cache);
  memset (was_read, 0, sizeof was_read);
  memset (out, 0, sizeof *out);
  out->per_call = per_call;
  for (i = 0; i < n; i++, now += step_ns) {
    bool all = true;

    for (p = t[i].offset / PAGE;
         p < (t[i].offset + t[i].count + PAGE - 1) / PAGE; p++)
      all &= cache[p];
    out->served += all;
    out->reads++;
    adaptra_matcher_read (m, t[i].offset, t[i].count, now);
    for (p = t[i].offset / PAGE;
         p < (t[i].offset + t[i].count + PAGE - 1) / PAGE; p++)
      cache[p] = was_read[p] = 1;
    do {
      uint64_t bytes = 0;

      got = adaptra_matcher_next (m, now, per_call, r, 8);
      for (k = 0; k < got; k++) {
        bytes += r[k].count;
        assert_true (r[k].count > 0);
        assert_true (r[k].offset + r[k].count <= EXPORT_SIZE);
        if (i >= count_after)
          out->proposals_after++;
        for (p = r[k].offset / PAGE;
             p < (r[k].offset + r[k].count + PAGE - 1) / PAGE; p++) {
          /* Never a page read or proposed before. */
          assert_false (was_read[p]);
          assert_false (cache[p]);
          cache[p] = 1;
          ranged++;
        }
      }
      assert_true (bytes <= per_call);
    } while (got == 8);
    adaptra_matcher_counters (m, &out->c);
    /* The ranges hold the pages counted, and every proposed page is
     * exactly one of hit, wasted, pending.
     */
    assert_int_equal (ranged, out->c.proposed);
    assert_int_equal (out->c.proposed,
                      out->c.hit + out->c.wasted + out->c.pending);
    if (out->c.proposed - out->c.hit > out->max_outstanding)
      out->max_outstanding = out->c.proposed - out->c.hit;
  }
}

/* The same boot again, and again with neighbouring reads swapped:
 * nearly every read is served from proposals, nothing is wasted, and
 * the unread lead never passes 8 MiB.
 */
static void
test_matcher_follows (void **state)
{
  struct rd *t = boot_trace (11, 3000);
  struct adaptra_profile *p = record (t, 3000, 1 << 20);
  struct adaptra_matcher_config cfg;
  struct adaptra_matcher *m;
  struct replay r = { 0 };
  size_t i;

  (void) state;
  adaptra_matcher_defaults (&cfg);
  m = adaptra_matcher_new (p, &cfg);
  assert_non_null (m);
  replay (m, t, 3000, MS, 0, &r);
  /* Only the very first read cannot be foreseen. */
  assert_true (r.served >= 2990);
  assert_int_equal (r.c.wasted, 0);
  assert_int_equal (r.c.state, ADAPTRA_MATCHER_FOLLOWING);
  assert_int_equal (r.c.proposed, p->pages - t[0].count / PAGE);
  assert_int_equal (r.c.hit, r.c.proposed);
  assert_int_equal (r.c.reads_missed, 0);
  /* Re-reads counted neither way. */
  assert_true (r.c.reads_matched < 3000 * 9 / 10);
  assert_true (r.max_outstanding <= cfg.lead_bytes / PAGE);
  assert_true (r.max_outstanding > cfg.lead_min_bytes / PAGE);
  adaptra_matcher_free (m);

  /* 64 KiB (16 pages) a call, the engine's room: still ahead after
   * the first reads, as a read takes at most 8 new pages.
   */
  m = adaptra_matcher_new (p, &cfg);
  r.per_call = 64 * 1024;
  replay (m, t, 3000, MS, 0, &r);
  assert_true (r.served >= 2950);
  assert_int_equal (r.c.wasted, 0);
  assert_int_equal (r.c.proposed, p->pages - t[0].count / PAGE);
  adaptra_matcher_free (m);
  r.per_call = 0;

  for (i = 0; i + 1 < 3000; i += 2) {
    struct rd s = t[i];

    t[i] = t[i + 1];
    t[i + 1] = s;
  }
  m = adaptra_matcher_new (p, &cfg);
  replay (m, t, 3000, MS, 0, &r);
  assert_true (r.served >= 2990);
  assert_int_equal (r.c.wasted, 0);
  assert_int_equal (r.c.reads_missed, 0);
  adaptra_matcher_free (m);
  adaptra_profile_free (p);
  free (t);
}

/* Another guest: reads that fall nowhere near the position make it
 * back off; a profile that matches at first and then stops costs at
 * most the lead, and no proposal follows once half the window missed.
 */
static void
test_matcher_backs_off (void **state)
{
  struct rd *a = boot_trace (11, 3000);
  struct rd *b = boot_trace (99, 3000);
  struct rd *mixed = malloc (3000 * sizeof *mixed);
  struct adaptra_profile *p = record (a, 3000, 1 << 20);
  struct adaptra_matcher_config cfg;
  struct adaptra_matcher *m;
  struct replay r = { 0 };

  (void) state;
  adaptra_matcher_defaults (&cfg);
  m = adaptra_matcher_new (p, &cfg);
  replay (m, b, 3000, MS, 0, &r);
  assert_int_equal (r.c.state, ADAPTRA_MATCHER_BACKED_OFF);
  assert_true (r.c.proposed <= cfg.lead_min_bytes / PAGE);
  assert_true (r.c.reads_missed > 2000);
  adaptra_matcher_free (m);

  /* 500 reads of boot a, then boot b. */
  memcpy (mixed, a, 500 * sizeof *mixed);
  memcpy (mixed + 500, b, 2500 * sizeof *mixed);
  m = adaptra_matcher_new (p, &cfg);
  replay (m, mixed, 3000, MS, 500 + cfg.window / 2 + 1, &r);
  /* Backed off; or gave up, when the lead it had out settled as
   * waste over half of all it proposed.
   */
  assert_true (r.c.state == ADAPTRA_MATCHER_BACKED_OFF ||
               r.c.state == ADAPTRA_MATCHER_GAVE_UP);
  assert_int_equal (r.proposals_after, 0);
  assert_true ((r.c.wasted + r.c.pending) * PAGE <=
               cfg.lead_bytes + cfg.reorder_bytes);
  assert_true (r.c.wasted + r.c.pending > 0);
  adaptra_matcher_free (m);
  adaptra_profile_free (p);
  free (a);
  free (b);
  free (mixed);
}

/* A client that skips part of the profile (a boot that skips a
 * step): two reads that agree move the position there.
 */
static void
test_matcher_jump (void **state)
{
  struct rd *t = slot_trace (3000);
  struct adaptra_profile *p = record (t, 3000, 1 << 20);
  struct adaptra_matcher_config cfg;
  struct adaptra_matcher *m;
  struct adaptra_matcher_counters c;
  struct replay r = { 0 };

  (void) state;
  adaptra_matcher_defaults (&cfg);
  m = adaptra_matcher_new (p, &cfg);
  /* Reads 0..99, then from 2000 on. */
  replay (m, t, 100, MS, 0, &r);
  adaptra_matcher_counters (m, &c);
  assert_true (c.position < p->pages / 5);
  memmove (t + 100, t + 2000, 1000 * sizeof *t);
  adaptra_matcher_free (m);
  m = adaptra_matcher_new (p, &cfg);
  replay (m, t, 1100, MS, 0, &r);
  assert_int_equal (r.c.state, ADAPTRA_MATCHER_FOLLOWING);
  assert_true (r.c.position > p->pages / 2);
  /* One miss at the jump; not foreseen: the first read, that one and
   * the next; the rest served.
   */
  assert_int_equal (r.c.reads_missed, 1);
  assert_true (r.served >= 1100 - 3);
  assert_true (r.c.wasted > 0);
  adaptra_matcher_free (m);
  adaptra_profile_free (p);
  free (t);
}

/* A client that reads one page of every 64-page extent matches on
 * every read yet leaves 63 of 64 proposed pages unread: past 50% of
 * 4 MiB settled, or past the byte budget, it gives up for good, having
 * wasted at most waste_bytes + lead_bytes + reorder_bytes.
 */
static void
test_matcher_gives_up (void **state)
{
  const size_t n = 2048;
  struct adaptra_profile_extent *x = malloc (n * sizeof *x);
  struct rd *t = malloc (n * sizeof *t);
  struct adaptra_profile *p;
  struct adaptra_matcher_config cfg;
  struct adaptra_matcher *m;
  struct adaptra_profile_range one;
  struct replay r = { 0 };
  size_t i;

  (void) state;
  /* 1024 extents of 32 pages, each at its own 64-page slot of the
   * export, the slots in a shuffled order.
   */
  for (i = 0; i < n / 2; i++) {
    x[i] = (struct adaptra_profile_extent) {
      .start = ((i * 769) % (n / 2)) * 64, .pages = 32, .seen = 1,
    };
    t[i] = (struct rd) { .offset = x[i].start * PAGE, .count = PAGE };
  }
  p = make (x, n / 2, 1);
  adaptra_matcher_defaults (&cfg);
  m = adaptra_matcher_new (p, &cfg);
  replay (m, t, n / 2, MS, 0, &r);
  assert_int_equal (r.c.state, ADAPTRA_MATCHER_GAVE_UP);
  assert_true (r.c.reads_missed == 0);
  /* Gave up once 4 MiB (1024 pages) were settled, with the lead and
   * the reorder slack (2304 pages) beyond: far before the 32768.
   */
  assert_true (r.c.proposed < 1024 + (cfg.lead_bytes + cfg.reorder_bytes)
               / PAGE + 128);
  assert_true ((r.c.wasted + r.c.pending) * PAGE <=
               cfg.waste_bytes + cfg.lead_bytes + cfg.reorder_bytes);
  adaptra_matcher_free (m);

  /* The byte budget alone (no percentage): 2 MiB. */
  cfg.waste_pct = 100;
  cfg.waste_bytes = 2 << 20;
  m = adaptra_matcher_new (p, &cfg);
  replay (m, t, n / 2, MS, n / 4, &r);
  assert_int_equal (r.c.state, ADAPTRA_MATCHER_GAVE_UP);
  assert_int_equal (r.proposals_after, 0);
  assert_true (r.c.wasted * PAGE > cfg.waste_bytes);
  assert_true ((r.c.wasted + r.c.pending) * PAGE <=
               cfg.waste_bytes + cfg.lead_bytes + cfg.reorder_bytes);
  /* For good: matching reads do not bring it back. */
  adaptra_matcher_read (m, t[n / 2 - 1].offset + PAGE, PAGE, SEC);
  assert_int_equal (adaptra_matcher_next (m, SEC, UINT64_MAX, &one, 1), 0);
  adaptra_matcher_free (m);
  adaptra_profile_free (p);
  free (x);
  free (t);
}

/* The lead in time: a client going through the profile at 100 pages
 * a second gets about 2 s of it (200 pages) ahead, not 8 MiB.
 */
static void
test_matcher_time_lead (void **state)
{
  const size_t n = 4000;
  struct adaptra_profile_extent *x = malloc (n * sizeof *x);
  struct rd *t = malloc (n * sizeof *t);
  struct adaptra_profile *p;
  struct adaptra_matcher_config cfg;
  struct adaptra_matcher *m;
  struct replay r = { 0 };
  size_t i;

  (void) state;
  for (i = 0; i < n; i++) {
    x[i] = (struct adaptra_profile_extent) {
      .start = (i * 7919) % n * 16, .pages = 1, .seen = 1,
    };
    t[i] = (struct rd) { .offset = x[i].start * PAGE, .count = PAGE };
  }
  p = make (x, n, 1);
  adaptra_matcher_defaults (&cfg);
  cfg.lead_min_bytes = 16 * PAGE;
  m = adaptra_matcher_new (p, &cfg);
  replay (m, t, n, 10 * MS, 0, &r);
  assert_true (r.served >= n - 2);
  assert_true (r.max_outstanding >= 180);
  assert_true (r.max_outstanding <= 220);
  adaptra_matcher_free (m);
  adaptra_profile_free (p);
  free (x);
  free (t);
}

/* Stable parts win: after two boots, pages only one saw are not
 * proposed, though reading them still counts as following.
 */
static void
test_matcher_min_seen (void **state)
{
  struct rd *a = boot_trace (11, 2000);
  struct rd *b = boot_trace (11, 2000);
  struct adaptra_profile *pa, *pb, *m1, *m2;
  struct adaptra_matcher_config cfg;
  struct adaptra_matcher *m;
  struct adaptra_profile_range r[8];
  struct adaptra_matcher_counters c;
  static unsigned char proposed[EXPORT_PAGES];
  uint64_t seen1 = 0, pg;
  size_t i, k, got;

  (void) state;
  /* Boot b: every 10th read of a elsewhere. */
  for (i = 5; i < 2000; i += 10)
    b[i].offset = (uint64_t) ((i * 31) % 1000) * 8 * PAGE;
  pa = record (a, 2000, 1 << 20);
  pb = record (b, 2000, 1 << 20);
  m1 = adaptra_profile_merge (NULL, pa, 1 << 20);
  m2 = adaptra_profile_merge (m1, pb, 1 << 20);
  for (i = 0; i < m2->count; i++)
    if (m2->extents[i].seen == 1)
      seen1 += m2->extents[i].pages;
  assert_true (seen1 > 100);
  adaptra_matcher_defaults (&cfg);
  m = adaptra_matcher_new (m2, &cfg);
  memset (proposed, 0, sizeof proposed);
  for (i = 0; i < 2000; i++) {
    adaptra_matcher_read (m, b[i].offset, b[i].count, i * MS);
    while ((got = adaptra_matcher_next (m, i * MS, UINT64_MAX, r, 8)) > 0) {
      for (k = 0; k < got; k++)
        for (pg = r[k].offset / PAGE;
             pg < (r[k].offset + r[k].count + PAGE - 1) / PAGE; pg++)
          proposed[pg] = 1;
      if (got < 8)
        break;
    }
  }
  for (i = 0; i < m2->count; i++)
    if (m2->extents[i].seen == 1)
      for (pg = m2->extents[i].start;
           pg < m2->extents[i].start + m2->extents[i].pages; pg++)
        assert_int_equal (proposed[pg], 0);
  adaptra_matcher_counters (m, &c);
  assert_int_equal (c.state, ADAPTRA_MATCHER_FOLLOWING);
  assert_int_equal (c.proposed, m2->pages - seen1 - b[0].count / PAGE);
  adaptra_matcher_free (m);
  adaptra_profile_free (pa);
  adaptra_profile_free (pb);
  adaptra_profile_free (m1);
  adaptra_profile_free (m2);
  free (a);
  free (b);
}

/* The heap held by a matcher over p, by glibc's count. */
static uint64_t
held (const struct adaptra_profile *p)
{
  struct adaptra_matcher_config cfg;
  struct adaptra_matcher *m;
  struct mallinfo2 before, after;

  adaptra_matcher_defaults (&cfg);
  before = mallinfo2 ();
  m = adaptra_matcher_new (p, &cfg);
  after = mallinfo2 ();
  assert_non_null (m);
  adaptra_matcher_free (m);
  return after.uordblks + after.hblkhd - before.uordblks - before.hblkhd;
}

/* adaptra_matcher_bytes is what a matcher holds, within malloc's
 * headers and caches (16 bytes for each of its 7 blocks, either way:
 * blocks glibc caches for reuse count as held): over a profile of many
 * short extents (its copies of them dominate) and over one of a single
 * long extent (its bitmaps do).
 */
static void
test_matcher_bytes (void **state)
{
  struct adaptra_profile_extent one = { 0, EXPORT_PAGES, 1, 0 };
  struct rd *t = boot_trace (11, 20000);
  struct adaptra_profile *p[2];
  unsigned i;

  (void) state;
  p[0] = record (t, 20000, 1 << 20);
  p[1] = make (&one, 1, 1);
  if (held (p[1]) == 0) {
    /* A sanitizer's allocator: glibc does not see the heap. */
    adaptra_profile_free (p[0]);
    adaptra_profile_free (p[1]);
    free (t);
    skip ();
  }
  for (i = 0; i < 2; i++) {
    uint64_t bytes = adaptra_matcher_bytes (p[i]), h = held (p[i]);

    assert_true (h <= bytes + 16 * 7);
    assert_true (bytes <= h + 16 * 7);
    adaptra_profile_free (p[i]);
  }
  free (t);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_matcher_follows),
    cmocka_unit_test (test_matcher_backs_off),
    cmocka_unit_test (test_matcher_jump),
    cmocka_unit_test (test_matcher_gives_up),
    cmocka_unit_test (test_matcher_time_lead),
    cmocka_unit_test (test_matcher_min_seen),
    cmocka_unit_test (test_matcher_bytes),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
