/* test-profile-recorder.c: unit tests of the profile library's recorder.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdbool.h>
#include <stdlib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "profile-fixture.h"

/* The pages r has recorded so far: its recording's, as a profile. */
static uint64_t
recorded_pages (const struct adaptra_recorder *r)
{
  struct adaptra_profile *p = adaptra_recorder_profile (r);
  uint64_t pages;

  assert_non_null (p);
  pages = p->pages;
  adaptra_profile_free (p);
  return pages;
}

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
  r = adaptra_recorder_new (&key, 9, 10 * SEC, 100 * SEC, NULL);
  assert_non_null (r);
  assert_true (adaptra_recorder_read (r, 5 * PAGE, 3 * PAGE, 100 * SEC));
  assert_true (adaptra_recorder_read (r, 1 * PAGE + 7, 10, 100 * SEC));
  assert_true (adaptra_recorder_read (r, 6 * PAGE, 4 * PAGE, 101 * SEC));
  assert_true (adaptra_recorder_read (r, 5 * PAGE, 1, 101 * SEC));
  assert_true (adaptra_recorder_read (r, 10 * PAGE, PAGE, 102 * SEC));
  assert_int_equal (recorded_pages (r), 7);
  assert_true (adaptra_recorder_read (r, 0, 2 * PAGE, 102 * SEC));
  /* The 9th page ends the recording inside this read. */
  assert_false (adaptra_recorder_read (r, 20 * PAGE, 5 * PAGE, 102 * SEC));
  assert_false (adaptra_recorder_read (r, 30 * PAGE, PAGE, 102 * SEC));
  assert_int_equal (recorded_pages (r), 9);
  p = adaptra_recorder_profile (r);
  assert_non_null (p);
  assert_extents (p, want, 5);
  adaptra_profile_free (p);
  adaptra_recorder_free (r);

  /* Time: a read at start + 10 s is not recorded. */
  r = adaptra_recorder_new (&key, 1000, 10 * SEC, 100 * SEC, NULL);
  assert_true (adaptra_recorder_read (r, 0, PAGE, 109 * SEC));
  assert_false (adaptra_recorder_read (r, PAGE, PAGE, 110 * SEC));
  assert_int_equal (recorded_pages (r), 1);
  /* Past the export: clamped, the ragged last page counts once. */
  adaptra_recorder_free (r);
  r = adaptra_recorder_new (&key, 1000, 10 * SEC, 0, NULL);
  assert_true (adaptra_recorder_read (r, EXPORT_SIZE - 10, 1 << 20, 0));
  assert_true (adaptra_recorder_read (r, EXPORT_SIZE + PAGE, PAGE, 0));
  assert_int_equal (recorded_pages (r), 1);
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

/* Recorders sharing a memory budget: each stops, keeping a valid
 * profile, when its next growth would pass the limit; the budget is
 * never passed and comes back whole when they are freed.  One that
 * cannot take its first tables is not created.
 */
static void
test_recorder_memory (void **state)
{
  struct adaptra_profile_memory mem = { .limit = 256 * 1024 };
  struct adaptra_recorder *a, *b;
  struct adaptra_profile *p;
  struct rd *t = boot_trace (3, 20000);
  bool a_on = true, b_on = true;
  char why[256];
  size_t i;

  (void) state;
  a = adaptra_recorder_new (&key, 1 << 20, 3600 * SEC, 0, &mem);
  b = adaptra_recorder_new (&key, 1 << 20, 3600 * SEC, 0, &mem);
  assert_non_null (a);
  assert_non_null (b);
  for (i = 0; i < 20000 && (a_on || b_on); i++) {
    if (a_on)
      a_on = adaptra_recorder_read (a, t[i].offset, t[i].count, i * MS);
    if (b_on)
      b_on = adaptra_recorder_read (b, t[i].offset, t[i].count, i * MS);
    assert_true (mem.used <= mem.limit);
  }
  /* Both stopped on the budget, long before the trace's end. */
  assert_false (a_on);
  assert_false (b_on);
  assert_true (i < 20000);
  assert_true (recorded_pages (a) > 1000);
  p = adaptra_recorder_profile (a);
  assert_int_equal (adaptra_profile_check (p, why, sizeof why), 0);
  adaptra_profile_free (p);
  adaptra_recorder_free (a);
  adaptra_recorder_free (b);
  assert_int_equal (mem.used, 0);
  mem.limit = 1024;
  assert_null (adaptra_recorder_new (&key, 1 << 20, 3600 * SEC, 0, &mem));
  assert_int_equal (mem.used, 0);
  free (t);
}

/* A budget's source (the filter's: the engine's pool) that has
 * SOURCE_BYTES to give, fewer than the limit: it holds what the
 * budget took from it.
 */
#define SOURCE_BYTES (96 * 1024)
static uint64_t source_used;

static bool
source_take (void *opaque, uint64_t bytes)
{
  assert_ptr_equal (opaque, &source_used);
  if (bytes > SOURCE_BYTES - source_used)
    return false;
  source_used += bytes;
  return true;
}

static void
source_give (void *opaque, uint64_t bytes)
{
  assert_ptr_equal (opaque, &source_used);
  assert_true (bytes <= source_used);
  source_used -= bytes;
}

/* A budget with a source takes every byte from it: a recorder stops
 * when the source has no more, though the limit has room, and the
 * source gets every byte back when the recorder is freed.
 */
static void
test_recorder_memory_source (void **state)
{
  struct adaptra_profile_memory mem = {
    .limit = 256 * 1024, .source_take = source_take,
    .source_give = source_give, .source = &source_used,
  };
  struct adaptra_recorder *r;
  struct rd *t = boot_trace (3, 20000);
  bool on = true;
  size_t i;

  (void) state;
  r = adaptra_recorder_new (&key, 1 << 20, 3600 * SEC, 0, &mem);
  assert_non_null (r);
  for (i = 0; i < 20000 && on; i++) {
    on = adaptra_recorder_read (r, t[i].offset, t[i].count, i * MS);
    assert_int_equal (source_used, mem.used);
  }
  assert_false (on);
  assert_true (mem.used <= SOURCE_BYTES);
  assert_true (recorded_pages (r) > 1000);
  adaptra_recorder_free (r);
  assert_int_equal (mem.used, 0);
  assert_int_equal (source_used, 0);
  free (t);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_recorder),
    cmocka_unit_test (test_recorder_many),
    cmocka_unit_test (test_recorder_memory),
    cmocka_unit_test (test_recorder_memory_source),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
