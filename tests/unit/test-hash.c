/* test-hash.c: Fibonacci hashing (core/hash.h).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../core/hash.h"

/* The values themselves: a changed multiplier or shift would move
 * every page to another bucket (and the unit tests' timings with it).
 */
static void
known_buckets (void **state)
{
  static const uint32_t want[8] = { 0, 9, 3, 13, 7, 1, 11, 5 };
  uint64_t k;

  for (k = 0; k < 8; k++)
    assert_int_equal (adaptra_hash_fib (k, 4), want[k]);
  assert_int_equal (adaptra_hash_fib (1, 1), 1);
  assert_int_equal (adaptra_hash_fib (UINT64_MAX, 32),
                    (uint32_t) ((UINT64_MAX * UINT64_C (0x9E3779B97F4A7C15))
                                >> 32));
}

/* 2^bits consecutive keys, from 0 or far up, land at most two to a
 * bucket, and every bucket is in range.
 */
static void
consecutive_keys_spread (void **state)
{
  static const unsigned sizes[] = { 1, 4, 10, 16 };
  static const uint64_t starts[] = {
    0, UINT64_C (1) << 40, UINT64_MAX - 70000
  };
  size_t i, j;

  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (j = 0; j < sizeof starts / sizeof starts[0]; j++) {
      const uint32_t n = UINT32_C (1) << sizes[i];
      unsigned char *count = calloc (n, 1);
      uint64_t k;

      assert_non_null (count);
      for (k = starts[j]; k - starts[j] < n; k++) {
        uint32_t b = adaptra_hash_fib (k, sizes[i]);

        assert_true (b < n);
        assert_true (++count[b] <= 2);
      }
      free (count);
    }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (known_buckets),
    cmocka_unit_test (consecutive_keys_spread),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
