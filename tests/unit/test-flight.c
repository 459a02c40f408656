/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of core/flight.c: delivery rate, latency, the limit. */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../core/flight.h"

#define MS UINT64_C (1000000)
#define SLOT ADAPTRA_FLIGHT_SLOT_NS
#define KIB UINT64_C (1024)
#define MIB (1024 * KIB)

/* The backend of the benchmark's remote model: 5 ms a read, then
 * 200 MiB/s.
 */
#define LATENCY (5 * MS)
#define RATE (200 * MIB)

/* f's estimate at now. */
static struct adaptra_flight_estimate
estimate (const struct adaptra_flight *f, uint64_t now)
{
  struct adaptra_flight_estimate est;

  adaptra_flight_estimate (f, now, &est);
  return est;
}

static uint64_t
transfer_ns (uint64_t bytes, uint64_t rate)
{
  return bytes * UINT64_C (1000000000) / rate;
}

/* Reads of bytes back to back on a saturated link from t to end, each
 * taking the latency and the time the link needs for all in flight
 * (inflight of them): completions every bytes / RATE.  Returns the
 * time of the last completion.
 */
static uint64_t
saturate (struct adaptra_flight *f, uint64_t t, uint64_t end, uint64_t bytes,
          unsigned inflight)
{
  uint64_t gap = transfer_ns (bytes, RATE);

  for (; t < end; t += gap)
    adaptra_flight_sample (f, bytes, t - LATENCY - inflight * gap, t);
  return t - gap;
}

static void
test_nothing_known (void **state)
{
  struct adaptra_flight f = { 0 };

  (void) state;
  assert_int_equal (adaptra_flight_rate (&f, 10 * SLOT), 0);
  assert_int_equal (estimate (&f, 10 * SLOT).latency_ns, 0);
  assert_int_equal (estimate (&f, 10 * SLOT).bdp, 0);
  assert_true (estimate (&f, 10 * SLOT).limit == UINT64_MAX);
  assert_false (estimate (&f, 10 * SLOT).slow);
}

/* R is the busiest slot that is over: 20 MiB in a 100 ms slot is
 * 200 MiB/s.  A slot counts only once reads complete two slots later.
 */
static void
test_rate_of_busiest_slot (void **state)
{
  struct adaptra_flight f = { 0 };
  uint64_t t0 = 50 * SLOT;

  (void) state;
  adaptra_flight_sample (&f, 20 * MIB, t0, t0 + SLOT / 2);
  assert_int_equal (adaptra_flight_rate (&f, t0 + SLOT / 2), 0);
  adaptra_flight_sample (&f, 1 * MIB, t0, t0 + SLOT + 1);
  assert_int_equal (adaptra_flight_rate (&f, t0 + SLOT + 1), 0);
  adaptra_flight_sample (&f, 1 * MIB, t0, t0 + 2 * SLOT + 1);
  assert_int_equal (adaptra_flight_rate (&f, t0 + 2 * SLOT + 1), RATE);
  /* A quieter slot does not lower it; a busier one raises it. */
  adaptra_flight_sample (&f, 30 * MIB, t0, t0 + 3 * SLOT);
  adaptra_flight_sample (&f, 1 * MIB, t0, t0 + 5 * SLOT);
  assert_int_equal (adaptra_flight_rate (&f, t0 + 5 * SLOT), 300 * MIB);
}

/* A second after its slot, a peak is forgotten; with nothing delivered
 * in the last second, there is no limit.
 */
static void
test_rate_forgets_after_a_second (void **state)
{
  struct adaptra_flight f = { 0 };
  uint64_t t0 = 50 * SLOT, last;

  (void) state;
  last = saturate (&f, t0, t0 + 5 * SLOT, 256 * KIB, 4);
  assert_true (adaptra_flight_rate (&f, last) >= RATE * 98 / 100);
  assert_true (adaptra_flight_rate (&f, last) <= RATE * 102 / 100);
  assert_true (estimate (&f, last).limit != UINT64_MAX);
  assert_true (adaptra_flight_rate (&f, t0 + 13 * SLOT) > 0);
  assert_int_equal (adaptra_flight_rate (&f, t0 + 16 * SLOT), 0);
  assert_true (estimate (&f, t0 + 16 * SLOT).limit == UINT64_MAX);
}

/* A read reported after its place in the ring was reused is too late
 * to count, and does not disturb the newer slot.
 */
static void
test_late_read_not_counted (void **state)
{
  struct adaptra_flight f = { 0 };
  uint64_t t0 = 50 * SLOT, t = t0 + ADAPTRA_FLIGHT_SLOTS * SLOT;

  (void) state;
  adaptra_flight_sample (&f, 1 * MIB, t, t);
  adaptra_flight_sample (&f, 50 * MIB, t0, t0);      /* the same place */
  adaptra_flight_sample (&f, 1 * MIB, t, t + 2 * SLOT);
  assert_int_equal (adaptra_flight_rate (&f, t + 2 * SLOT), 10 * MIB);
}

/* L is the fastest read less its transfer at R, however many reads
 * queued behind the link since: a 5 ms backend stays 5 ms through a
 * busy spell in which every read takes 4 times as long.
 */
static void
test_latency_from_fastest_read (void **state)
{
  struct adaptra_flight f = { 0 };
  uint64_t t0 = 50 * SLOT, last, l;

  (void) state;
  adaptra_flight_sample (&f, 64 * KIB, t0,
                         t0 + LATENCY + transfer_ns (64 * KIB, RATE));
  last = saturate (&f, t0 + SLOT, t0 + 30 * SLOT, 128 * KIB, 120);
  l = estimate (&f, last).latency_ns;
  assert_true (l >= LATENCY - 50000 && l <= LATENCY + 50000);
  /* limit = 5/4 x R x L: 5/4 x 1 MiB. */
  assert_true (estimate (&f, last).bdp >= MIB * 97 / 100);
  assert_true (estimate (&f, last).bdp <= MIB * 103 / 100);
  assert_true (estimate (&f, last).limit >= MIB * 5 / 4 * 97 / 100);
  assert_true (estimate (&f, last).limit <= MIB * 5 / 4 * 103 / 100);
}

/* After ADAPTRA_FLIGHT_LATENCY_NS the fast read is forgotten: a
 * backend that slows down raises L (and the limit) within 10 s.
 */
static void
test_latency_follows_slower_backend (void **state)
{
  struct adaptra_flight f = { 0 };
  uint64_t t0 = 50 * SLOT, t, l;

  (void) state;
  adaptra_flight_sample (&f, 4 * KIB, t0, t0 + LATENCY);
  for (t = t0; t < t0 + ADAPTRA_FLIGHT_LATENCY_NS + 2 * SLOT; t += MS)
    adaptra_flight_sample (&f, 4 * KIB, t, t + 4 * LATENCY);
  l = estimate (&f, t).latency_ns;
  assert_true (l > 3 * LATENCY && l <= 4 * LATENCY);
}

/* A backend whose L is under ADAPTRA_FLIGHT_LATENCY_MIN (here a fast
 * one: 64 KiB in 15 us) gets no limit; one of 2 ms does, 5/4 of
 * R x L; one whose R x L is under ADAPTRA_FLIGHT_MIN gets none.
 */
static void
test_no_limit_under_a_millisecond (void **state)
{
  struct adaptra_flight f = { 0 }, g = { 0 }, h = { 0 };
  uint64_t t, t0 = 50 * SLOT;

  (void) state;
  for (t = t0; t < t0 + 4 * SLOT; t += 20000)
    adaptra_flight_sample (&f, 64 * KIB, t, t + 15000);
  assert_true (estimate (&f, t).latency_ns < MS);
  assert_false (estimate (&f, t).slow);
  assert_true (estimate (&f, t).limit == UINT64_MAX);
  /* 1 MiB every 1 ms (1000 MiB/s), each read 2 ms + its transfer
   * (1 ms): R x L = 2 MiB.
   */
  for (t = t0; t < t0 + 4 * SLOT; t += MS)
    adaptra_flight_sample (&g, MIB, t - 3 * MS, t);
  assert_true (estimate (&g, t).bdp >= 2 * MIB * 95 / 100);
  assert_true (estimate (&g, t).bdp <= 2 * MIB * 105 / 100);
  assert_true (estimate (&g, t).limit >= 2 * MIB * 5 / 4 * 95 / 100);
  assert_true (estimate (&g, t).limit <= 2 * MIB * 5 / 4 * 105 / 100);
  /* 16 KiB every 1 ms, in 5 ms: R x L = 16 MiB/s x 4 ms, 64 KiB. */
  for (t = t0; t < t0 + 4 * SLOT; t += MS)
    adaptra_flight_sample (&h, 16 * KIB, t - LATENCY, t);
  assert_true (estimate (&h, t).bdp < 80 * KIB);
  assert_true (estimate (&h, t).latency_ns > MS);
  assert_true (estimate (&h, t).slow);
  assert_true (estimate (&h, t).limit == UINT64_MAX);
}

static void
test_running (void **state)
{
  struct adaptra_flight f = { 0 };

  (void) state;
  adaptra_flight_start (&f, 128 * KIB);
  adaptra_flight_start (&f, 64 * KIB);
  assert_int_equal (adaptra_flight_running (&f), 192 * KIB);
  adaptra_flight_end (&f, 128 * KIB);
  assert_int_equal (adaptra_flight_running (&f), 64 * KIB);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_nothing_known),
    cmocka_unit_test (test_rate_of_busiest_slot),
    cmocka_unit_test (test_rate_forgets_after_a_second),
    cmocka_unit_test (test_late_read_not_counted),
    cmocka_unit_test (test_latency_from_fastest_read),
    cmocka_unit_test (test_latency_follows_slower_backend),
    cmocka_unit_test (test_no_limit_under_a_millisecond),
    cmocka_unit_test (test_running),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
