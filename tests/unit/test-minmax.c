/* test-minmax.c: min_u64, max_u64 and sub_sat_u64 (core/minmax.h).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../core/minmax.h"

static void
min_and_max_of_two (void **state)
{
  assert_int_equal (min_u64 (3, 5), 3);
  assert_int_equal (min_u64 (5, 3), 3);
  assert_int_equal (max_u64 (3, 5), 5);
  assert_int_equal (max_u64 (5, 3), 5);
  assert_int_equal (min_u64 (7, 7), 7);
  assert_int_equal (max_u64 (7, 7), 7);
}

/* The whole range: no signed comparison, no truncation. */
static void
min_and_max_at_the_ends (void **state)
{
  assert_int_equal (min_u64 (0, UINT64_MAX), 0);
  assert_int_equal (max_u64 (0, UINT64_MAX), UINT64_MAX);
  assert_int_equal (max_u64 (UINT64_C (1) << 63, 1), UINT64_C (1) << 63);
  assert_int_equal (min_u64 (UINT64_C (1) << 32, UINT32_MAX), UINT32_MAX);
}

/* Each argument is evaluated once. */
static void
arguments_evaluated_once (void **state)
{
  uint64_t i = 0;

  assert_int_equal (min_u64 (i++, 10), 0);
  assert_int_equal (max_u64 (i++, 0), 1);
  assert_int_equal (i, 2);
}

/* The difference where it is positive, 0 where it would wrap. */
static void
saturated_difference (void **state)
{
  uint64_t i = 5;

  assert_int_equal (sub_sat_u64 (7, 3), 4);
  assert_int_equal (sub_sat_u64 (3, 3), 0);
  assert_int_equal (sub_sat_u64 (3, 7), 0);
  assert_int_equal (sub_sat_u64 (UINT64_MAX, 1), UINT64_MAX - 1);
  assert_int_equal (sub_sat_u64 (0, UINT64_MAX), 0);
  assert_int_equal (sub_sat_u64 (i++, 2), 3);
  assert_int_equal (i, 6);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (min_and_max_of_two),
    cmocka_unit_test (min_and_max_at_the_ends),
    cmocka_unit_test (arguments_evaluated_once),
    cmocka_unit_test (saturated_difference),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
