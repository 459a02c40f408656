/* test-profile-merge.c: unit tests of the profile library's merge.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "profile-fixture.h"

#define X(s, n, seen, missed) { (s), (n), (seen), (missed) }

static const struct adaptra_profile_extent boot_a[] = {
  X (0, 4, 1, 0), X (100, 2, 1, 0), X (50, 3, 1, 0),
};
static const struct adaptra_profile_extent boot_b[] = {
  X (0, 4, 1, 0), X (50, 1, 1, 0), X (200, 2, 1, 0),
};

/* The merge of fresh into old within budget pages, which must hold
 * boots boots and the n extents want, and their pages.
 */
static struct adaptra_profile *
merge_expect (const struct adaptra_profile *old,
              const struct adaptra_profile *fresh, uint64_t budget,
              uint32_t boots, const struct adaptra_profile_extent *want,
              size_t n)
{
  struct adaptra_profile *m = adaptra_profile_merge (old, fresh, budget);
  uint64_t pages = 0;
  size_t i;

  assert_non_null (m);
  assert_int_equal (m->boots, boots);
  assert_extents (m, want, n);
  for (i = 0; i < n; i++)
    pages += want[i].pages;
  assert_int_equal (m->pages, pages);
  return m;
}

/* The rule of profile.h with numbers: B's order first; pages of A
 * alone leave after one boot without them when one boot saw them, and
 * survive as many boots without them as boots saw them.
 */
static void
test_merge (void **state)
{
  static const struct adaptra_profile_extent ab[] = {
    X (0, 4, 2, 0), X (50, 1, 2, 0), X (200, 2, 1, 0),
  };
  static const struct adaptra_profile_extent aab[] = {
    X (0, 4, 3, 0), X (50, 1, 3, 0), X (200, 2, 1, 0),
    X (100, 2, 2, 1), X (51, 2, 2, 1),
  };
  static const struct adaptra_profile_extent aab_8[] = {
    X (0, 4, 3, 0), X (50, 1, 3, 0), X (200, 2, 1, 0), X (100, 1, 2, 1),
  };
  static const struct adaptra_profile_extent aab_3[] = { X (0, 3, 3, 0) };
  static const struct adaptra_profile_extent aabb[] = {
    X (0, 4, 4, 0), X (50, 1, 4, 0), X (200, 2, 2, 0),
  };
  struct adaptra_profile *a = make (boot_a, 3, 1), *b = make (boot_b, 3, 1);
  struct adaptra_profile *m1, *m2, *m3, *m4;
  char why[256];

  (void) state;
  m1 = adaptra_profile_merge (NULL, a, 1000);
  assert_same (m1, a);
  adaptra_profile_free (merge_expect (m1, b, 1000, 2, ab, 3));

  m2 = adaptra_profile_merge (m1, a, 1000);
  m3 = merge_expect (m2, b, 1000, 3, aab, 5);
  assert_int_equal (adaptra_profile_check (m3, why, sizeof why), 0);
  m4 = merge_expect (m3, b, 1000, 4, aabb, 3);
  adaptra_profile_free (m1);
  adaptra_profile_free (m2);
  adaptra_profile_free (m3);
  adaptra_profile_free (m4);

  /* The budget cuts from the end: old-only pages first. */
  m1 = adaptra_profile_merge (NULL, a, 1000);
  m2 = adaptra_profile_merge (m1, a, 1000);
  adaptra_profile_free (merge_expect (m2, b, 8, 3, aab_8, 4));
  m3 = merge_expect (m2, b, 3, 3, aab_3, 1);
  adaptra_profile_free (m1);
  adaptra_profile_free (m2);
  adaptra_profile_free (m3);
  adaptra_profile_free (a);
  adaptra_profile_free (b);
}

/* A page seen in 5 boots survives 3 boots without it, not 4; pieces
 * with equal weights join again; a profile of another export is no
 * history.
 */
static void
test_merge_limits (void **state)
{
  static const struct adaptra_profile_extent old_x[] = {
    X (2, 2, 5, 0), X (0, 2, 5, 0),
  };
  static const struct adaptra_profile_extent fresh_x[] = { X (0, 4, 1, 0) };
  static const struct adaptra_profile_extent joined[] = { X (0, 4, 6, 0) };
  static const struct adaptra_profile_extent other_x[] = { X (9, 1, 1, 0) };
  struct adaptra_profile *old = make (old_x, 2, 5);
  struct adaptra_profile *fresh = make (fresh_x, 1, 1);
  struct adaptra_profile *none = make (NULL, 0, 1);
  struct adaptra_profile *m, *next;
  struct adaptra_profile_key k2 = key;
  unsigned i;

  (void) state;
  adaptra_profile_free (merge_expect (old, fresh, 1000, 6, joined, 1));

  m = make (old_x, 2, 5);
  for (i = 1; i <= 3; i++) {
    next = adaptra_profile_merge (m, none, 1000);
    adaptra_profile_free (m);
    m = next;
    assert_int_equal (m->pages, 4);
    assert_int_equal (m->extents[0].missed, i);
  }
  next = adaptra_profile_merge (m, none, 1000);
  adaptra_profile_free (m);
  assert_int_equal (next->pages, 0);
  assert_int_equal (next->boots, 9);
  adaptra_profile_free (next);

  k2.identity = "vm2.img";
  m = adaptra_profile_new (&k2);
  m->extents = malloc (sizeof other_x);
  memcpy (m->extents, other_x, sizeof other_x);
  m->count = 1;
  m->pages = 1;
  adaptra_profile_free (merge_expect (m, fresh, 1000, 1, fresh_x, 1));
  adaptra_profile_free (m);
  adaptra_profile_free (old);
  adaptra_profile_free (fresh);
  adaptra_profile_free (none);
}

/* Two profiles of 2^18 one-page extents, interleaved: the merge would
 * need 2^19 extents; it keeps the first 2^18 (all of the new boot's)
 * rather than fail.
 */
static void
test_merge_extent_limit (void **state)
{
  const size_t n = ADAPTRA_PROFILE_EXTENTS_MAX;
  struct adaptra_profile_key k = {
    .identity = "big", .page_size = 512, .export_size = (uint64_t) 2 * n * 512,
  };
  struct adaptra_profile *old = adaptra_profile_new (&k);
  struct adaptra_profile *fresh = adaptra_profile_new (&k), *m;
  char why[256];
  size_t i;

  (void) state;
  old->extents = malloc (n * sizeof *old->extents);
  fresh->extents = malloc (n * sizeof *fresh->extents);
  assert_non_null (old->extents);
  assert_non_null (fresh->extents);
  for (i = 0; i < n; i++) {
    old->extents[i] = (struct adaptra_profile_extent) { 2 * i, 1, 2, 0 };
    fresh->extents[i] = (struct adaptra_profile_extent) { 2 * i + 1, 1, 1, 0 };
  }
  old->count = fresh->count = n;
  old->pages = fresh->pages = n;
  old->boots = 2;
  assert_int_equal (adaptra_profile_check (old, why, sizeof why), 0);
  m = adaptra_profile_merge (old, fresh, UINT64_MAX);
  assert_non_null (m);
  assert_int_equal (m->count, n);
  assert_int_equal (m->extents[n - 1].start, 2 * n - 1);
  assert_int_equal (adaptra_profile_check (m, why, sizeof why), 0);
  adaptra_profile_free (m);
  adaptra_profile_free (old);
  adaptra_profile_free (fresh);
}

/* A probe's few pages are not a boot; a boot's are. */
static void
test_is_boot (void **state)
{
  uint64_t boot_pages = ADAPTRA_PROFILE_BOOT_MIN_BYTES / PAGE;
  struct adaptra_profile_extent x = { 0, 1, 1, 0 };
  struct adaptra_profile *p;

  (void) state;
  x.pages = (uint32_t) boot_pages - 1;
  p = make (&x, 1, 1);
  assert_false (adaptra_profile_is_boot (p));
  adaptra_profile_free (p);
  x.pages = (uint32_t) boot_pages;
  p = make (&x, 1, 1);
  assert_true (adaptra_profile_is_boot (p));
  adaptra_profile_free (p);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_merge),
    cmocka_unit_test (test_merge_limits),
    cmocka_unit_test (test_merge_extent_limit),
    cmocka_unit_test (test_is_boot),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
