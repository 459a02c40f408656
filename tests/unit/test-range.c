/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../core/range.h"

static void
span_of_aligned_and_unaligned_requests (void **state)
{
  struct adaptra_span s;

  s = adaptra_span_of (0, 4096, 12);          /* exactly page 0 */
  assert_int_equal (s.first, 0);
  assert_int_equal (s.last, 1);

  s = adaptra_span_of (4095, 2, 12);          /* straddles pages 0 and 1 */
  assert_int_equal (s.first, 0);
  assert_int_equal (s.last, 2);

  s = adaptra_span_of (8192, 1, 12);          /* one byte of page 2 */
  assert_int_equal (s.first, 2);
  assert_int_equal (s.last, 3);

  s = adaptra_span_of (512, 65536, 12);       /* 64K at a 512-byte offset */
  assert_int_equal (s.first, 0);
  assert_int_equal (s.last, 17);
}

static void
span_of_empty_request_is_empty (void **state)
{
  struct adaptra_span s = adaptra_span_of (12345, 0, 12);

  assert_int_equal (s.first, s.last);
  assert_int_equal (s.first, 3);
}

static void
pages_in_counts_partial_last_page (void **state)
{
  assert_int_equal (adaptra_pages_in (0, 12), 0);
  assert_int_equal (adaptra_pages_in (1, 12), 1);
  assert_int_equal (adaptra_pages_in (4096, 12), 1);
  assert_int_equal (adaptra_pages_in (4097, 12), 2);
  assert_int_equal (adaptra_pages_in (UINT64_MAX, 12), UINT64_C (1) << 52);
}

static void
clamp_to_size_never_crosses_the_end (void **state)
{
  assert_int_equal (adaptra_clamp_to_size (0, 100, 1000), 100);
  assert_int_equal (adaptra_clamp_to_size (900, 100, 1000), 100);
  assert_int_equal (adaptra_clamp_to_size (950, 100, 1000), 50);
  assert_int_equal (adaptra_clamp_to_size (1000, 100, 1000), 0);
  assert_int_equal (adaptra_clamp_to_size (5000, 100, 1000), 0);
  assert_int_equal (adaptra_clamp_to_size (10, UINT64_MAX, 1000), 990);
}

static void
log2_exact_accepts_only_powers_of_two (void **state)
{
  assert_int_equal (adaptra_log2_exact (1), 0);
  assert_int_equal (adaptra_log2_exact (4096), 12);
  assert_int_equal (adaptra_log2_exact (UINT64_C (1) << 63), 63);
  assert_int_equal (adaptra_log2_exact (0), -1);
  assert_int_equal (adaptra_log2_exact (3), -1);
  assert_int_equal (adaptra_log2_exact (4097), -1);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (span_of_aligned_and_unaligned_requests),
    cmocka_unit_test (span_of_empty_request_is_empty),
    cmocka_unit_test (pages_in_counts_partial_last_page),
    cmocka_unit_test (clamp_to_size_never_crosses_the_end),
    cmocka_unit_test (log2_exact_accepts_only_powers_of_two),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
