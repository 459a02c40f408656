/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of core/stats.c: the field table and the counting helpers. */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "adaptra/stats.h"

static const struct adaptra_stat_field *
field (const char *name)
{
  size_t i;

  for (i = 0; i < adaptra_stat_field_count; i++)
    if (strcmp (adaptra_stat_fields[i].name, name) == 0)
      return &adaptra_stat_fields[i];
  fail_msg ("no stat field %s", name);
  return NULL;
}

static void
test_table_covers_struct (void **state)
{
  unsigned char seen[sizeof (struct adaptra_stats) / 8] = { 0 };
  size_t i, j;

  (void) state;
  /* Every uint64_t of the struct appears exactly once. */
  assert_int_equal (adaptra_stat_field_count, sizeof seen);
  for (i = 0; i < adaptra_stat_field_count; i++) {
    size_t off = adaptra_stat_fields[i].offset;

    assert_int_equal (off % 8, 0);
    assert_true (off / 8 < sizeof seen);
    assert_int_equal (seen[off / 8], 0);
    seen[off / 8] = 1;
    for (j = 0; j < i; j++)
      assert_string_not_equal (adaptra_stat_fields[i].name,
                               adaptra_stat_fields[j].name);
  }
  /* The seed's names are there. */
  assert_int_equal (field ("ra_contexta_return")->offset,
                    offsetof (struct adaptra_stats,
                              method[ADAPTRA_METHOD_CONTEXTA]
                              .readahead_return));
  assert_int_equal (field ("pgreadahead_hit")->kind, ADAPTRA_STAT_COUNTER);
  assert_int_equal (field ("pages_free")->kind, ADAPTRA_STAT_GAUGE);
  field ("pgra_initial_eof");
  field ("readrandom");
}

static void
test_counting (void **state)
{
  struct adaptra_stats live, snap;

  (void) state;
  memset (&live, 0, sizeof live);
  adaptra_stats_count_window (&live, ADAPTRA_METHOD_STATE, 16, 0);
  adaptra_stats_count_window (&live, ADAPTRA_METHOD_CONTEXT, 8, 1);
  adaptra_stats_count_return (&live, ADAPTRA_METHOD_STATE);
  adaptra_stats_count_hits (&live, ADAPTRA_METHOD_CONTEXT, 5);
  adaptra_stats_count_cut (&live, 3);
  adaptra_stats_count_cut (&live, 4);
  live.pages_free = 77;

  memset (&snap, 0, sizeof snap);
  adaptra_stats_add_counters (&snap, &live);
  assert_int_equal (adaptra_stat_value (&snap, field ("readahead")), 2);
  assert_int_equal (adaptra_stat_value (&snap, field ("pgreadahead")), 24);
  assert_int_equal (adaptra_stat_value (&snap, field ("readahead_eof")), 1);
  assert_int_equal (adaptra_stat_value (&snap, field ("pgra_context_eof")), 8);
  assert_int_equal (adaptra_stat_value (&snap, field ("ra_state")), 1);
  assert_int_equal (adaptra_stat_value (&snap, field ("ra_state_return")), 1);
  assert_int_equal (adaptra_stat_value (&snap, field ("pgra_context_hit")), 5);
  assert_int_equal (adaptra_stat_value (&snap, field ("pgreadahead_hit")), 5);
  assert_int_equal (adaptra_stat_value (&snap, field ("ra_initial")), 0);
  assert_int_equal (adaptra_stat_value (&snap, field ("readahead_cut")), 2);
  assert_int_equal (adaptra_stat_value (&snap, field ("pgreadahead_cut")), 7);
  /* Gauges are not copied. */
  assert_int_equal (snap.pages_free, 0);

  adaptra_stats_clear_counters (&live);
  assert_int_equal (live.method[ADAPTRA_METHOD_NONE].pgreadahead, 0);
  assert_int_equal (live.method[ADAPTRA_METHOD_STATE].readahead, 0);
  assert_int_equal (live.pages_free, 77);
}

/* Counters kept in shards: a snapshot is their sum, every counter of
 * the field table and only counters, whichever shard counted.
 */
static void
test_shards_sum (void **state)
{
  struct adaptra_stats shard[3], snap;
  size_t i, k;

  (void) state;
  memset (shard, 0, sizeof shard);
  for (k = 0; k < 3; k++)
    for (i = 0; i < adaptra_stat_field_count; i++)
      adaptra_stat_add ((uint64_t *) ((char *) &shard[k] +
                                      adaptra_stat_fields[i].offset),
                        (k + 1) * 1000 + i);
  adaptra_stats_count_hits (&shard[2], ADAPTRA_METHOD_STATE, 7);
  memset (&snap, 0, sizeof snap);
  for (k = 0; k < 3; k++)
    adaptra_stats_add_counters (&snap, &shard[k]);
  for (i = 0; i < adaptra_stat_field_count; i++) {
    const struct adaptra_stat_field *f = &adaptra_stat_fields[i];
    uint64_t want = f->kind == ADAPTRA_STAT_COUNTER ? 6000 + 3 * i : 0;

    if (strcmp (f->name, "pgreadahead_hit") == 0 ||
        strcmp (f->name, "pgra_state_hit") == 0)
      want += 7;
    assert_int_equal (adaptra_stat_value (&snap, f), want);
  }
}

/* Every method has its own name, used as-is in counters and traces;
 * an out-of-range number reads "?".
 */
static void
test_method_names (void **state)
{
  (void) state;
  assert_string_equal (adaptra_method_name (ADAPTRA_METHOD_NONE), "none");
  assert_string_equal (adaptra_method_name (ADAPTRA_METHOD_CONTEXTA),
                       "contexta");
  assert_string_equal (adaptra_method_name (ADAPTRA_METHOD_BACKWARD),
                       "backward");
  assert_string_equal (adaptra_method_name (ADAPTRA_METHOD_COUNT), "?");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_table_covers_struct),
    cmocka_unit_test (test_counting),
    cmocka_unit_test (test_shards_sum),
    cmocka_unit_test (test_method_names),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
