/* test-profile-recorder.c: unit tests of the profile library's recorder.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdlib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "profile-fixture.h"

/* First touches in order, runs joined, re-reads and overlaps ignored,
 * the page budget cuts inside a read, the time budget stops it.
 */
static void
test_recorder (void **state)
{
  static const struct adaptra_profile_extent want[] = {
    { 5, 3, 1, 0 }, { 1, 1, 1, 0 }, { 8, 3, 1, 0 }, { 0, 1, 1, 0 },
    { 20, 1, 1, 0 },
  };
  struct adaptra_recorder *r;
  struct adaptra_profile *p;

  (void) state;
  r = adaptra_recorder_new (&key, 9, 10 * SEC, 100 * SEC);
  assert_non_null (r);
  assert_true (adaptra_recorder_read (r, 5 * PAGE, 3 * PAGE, 100 * SEC));
  assert_true (adaptra_recorder_read (r, 1 * PAGE + 7, 10, 100 * SEC));
  assert_true (adaptra_recorder_read (r, 6 * PAGE, 4 * PAGE, 101 * SEC));
  assert_true (adaptra_recorder_read (r, 5 * PAGE, 1, 101 * SEC));
  assert_true (adaptra_recorder_read (r, 10 * PAGE, PAGE, 102 * SEC));
  assert_int_equal (adaptra_recorder_pages (r), 7);
  assert_true (adaptra_recorder_read (r, 0, 2 * PAGE, 102 * SEC));
  /* The 9th page ends the recording inside this read. */
  assert_false (adaptra_recorder_read (r, 20 * PAGE, 5 * PAGE, 102 * SEC));
  assert_false (adaptra_recorder_read (r, 30 * PAGE, PAGE, 102 * SEC));
  assert_int_equal (adaptra_recorder_pages (r), 9);
  p = adaptra_recorder_profile (r);
  assert_non_null (p);
  assert_extents (p, want, 5);
  adaptra_profile_free (p);
  adaptra_recorder_free (r);

  /* Time: a read at start + 10 s is not recorded. */
  r = adaptra_recorder_new (&key, 1000, 10 * SEC, 100 * SEC);
  assert_true (adaptra_recorder_read (r, 0, PAGE, 109 * SEC));
  assert_false (adaptra_recorder_read (r, PAGE, PAGE, 110 * SEC));
  assert_int_equal (adaptra_recorder_pages (r), 1);
  /* Past the export: clamped, the ragged last page counts once. */
  adaptra_recorder_free (r);
  r = adaptra_recorder_new (&key, 1000, 10 * SEC, 0);
  assert_true (adaptra_recorder_read (r, EXPORT_SIZE - 10, 1 << 20, 0));
  assert_true (adaptra_recorder_read (r, EXPORT_SIZE + PAGE, PAGE, 0));
  assert_int_equal (adaptra_recorder_pages (r), 1);
  adaptra_recorder_free (r);
}

/* 20000 distinct random pages through the hash set: each recorded
 * once, in order, whatever the growth.
 */
static void
test_recorder_many (void **state)
{
  struct rd *t = boot_trace (7, 20000);
  struct adaptra_profile *p = record (t, 20000, 1 << 20);
  char why[256];

  (void) state;
  assert_int_equal (adaptra_profile_check (p, why, sizeof why), 0);
  assert_true (p->pages > 20000);
  assert_int_equal (p->extents[0].start, t[0].offset / PAGE);
  adaptra_profile_free (p);
  free (t);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_recorder),
    cmocka_unit_test (test_recorder_many),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
