/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of core/bdp.c: fitting latency and throughput. */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../core/bdp.h"

/* A backend with latency_ns per request and rate bytes per second. */
static uint64_t
cost (uint64_t latency_ns, uint64_t rate, uint64_t bytes)
{
  return latency_ns + bytes * UINT64_C (1000000000) / rate;
}

static void
assert_near (uint64_t got, uint64_t want, unsigned percent)
{
  uint64_t diff = got > want ? got - want : want - got;

  if (diff * 100 > want * percent)
    fail_msg ("%llu is not within %u%% of %llu", (unsigned long long) got,
              percent, (unsigned long long) want);
}

static void
test_empty (void **state)
{
  struct adaptra_bdp m = { 0 };

  (void) state;
  assert_int_equal (adaptra_bdp_latency_ns (&m), 0);
  assert_int_equal (adaptra_bdp_bytes_per_sec (&m), 0);
  assert_int_equal (adaptra_bdp_bytes (&m), 0);
  assert_int_equal (adaptra_bdp_fetch_ns (&m, 4096), 0);
}

static void
test_fits_latency_and_rate (void **state)
{
  static const uint64_t sizes[] = { 4096, 1048576, 65536, 4194304, 16384 };
  const uint64_t lat = 5000000, rate = 200000000;   /* 5 ms, 200 MB/s */
  struct adaptra_bdp m = { 0 };
  unsigned i;

  (void) state;
  for (i = 0; i < 100; i++) {
    uint64_t n = sizes[i % 5];

    adaptra_bdp_sample (&m, n, cost (lat, rate, n));
  }
  assert_near (adaptra_bdp_latency_ns (&m), lat, 2);
  assert_near (adaptra_bdp_bytes_per_sec (&m), rate, 2);
  /* 5 ms x 200 MB/s = 1 MB. */
  assert_near (adaptra_bdp_bytes (&m), 1000000, 3);
  assert_near (adaptra_bdp_fetch_ns (&m, 2000000), cost (lat, rate, 2000000),
               3);
}

static void
test_far_backend (void **state)
{
  const uint64_t lat = 50000000, rate = 1000000000; /* 50 ms, 1 GB/s */
  struct adaptra_bdp m = { 0 };
  unsigned i;

  (void) state;
  for (i = 0; i < 100; i++) {
    uint64_t n = i % 2 ? 65536 : 8388608;

    adaptra_bdp_sample (&m, n, cost (lat, rate, n));
  }
  assert_near (adaptra_bdp_bytes (&m), 50000000, 3);
}

static void
test_same_sizes (void **state)
{
  struct adaptra_bdp m = { 0 };
  unsigned i;

  (void) state;
  /* No spread: all of the time counts as latency. */
  for (i = 0; i < 20; i++)
    adaptra_bdp_sample (&m, 65536, 1000000);
  assert_int_equal (adaptra_bdp_latency_ns (&m), 1000000);
  assert_near (adaptra_bdp_bytes_per_sec (&m), 65536000, 1);
}

/* Fast: a file in the page cache; not: the remote model, a disk. */
static void
test_fast (void **state)
{
  struct adaptra_bdp m = { 0 };
  unsigned i;

  (void) state;
  /* 64 KiB in 30 us, 1 MiB in 250 us: fast, but only after 16 reads. */
  for (i = 0; i < ADAPTRA_FAST_SAMPLES - 1; i++)
    adaptra_bdp_sample (&m, i % 2 ? 65536 : 1048576, i % 2 ? 30000 : 250000);
  assert_false (adaptra_bdp_fast (&m, false));
  adaptra_bdp_sample (&m, 65536, 30000);
  assert_true (adaptra_bdp_fast (&m, false));
  /* Hysteresis: 64 KiB reads of 200 us are slow for a volume that
   * reads ahead (bound 115 us), still fast for one that stepped aside
   * (twice the bound).
   */
  m = (struct adaptra_bdp) { 0 };
  for (i = 0; i < 32; i++)
    adaptra_bdp_sample (&m, 65536, 200000);
  assert_false (adaptra_bdp_fast (&m, false));
  assert_true (adaptra_bdp_fast (&m, true));
  /* The remote model: 5 ms; back to read-ahead within 3 reads. */
  for (i = 0; i < 3; i++)
    adaptra_bdp_sample (&m, 65536, 5000000);
  assert_false (adaptra_bdp_fast (&m, true));
  /* A disk: 256 KiB in 4 ms. */
  m = (struct adaptra_bdp) { 0 };
  for (i = 0; i < 32; i++)
    adaptra_bdp_sample (&m, 262144, 4000000);
  assert_false (adaptra_bdp_fast (&m, false));
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_empty),
    cmocka_unit_test (test_fits_latency_and_rate),
    cmocka_unit_test (test_far_backend),
    cmocka_unit_test (test_same_sizes),
    cmocka_unit_test (test_fast),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
