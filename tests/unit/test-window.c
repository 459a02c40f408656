/* test-window.c: the window policy (core/window.c).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of core/window.c, the pure window policy. */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../core/window.h"

/* 4 KiB pages: min 16K, max 1M, ratio 50, no latency lead. */
static const struct adaptra_window_bounds bounds = {
  .min = 4, .max = 256, .ratio = 50, .lead = 0,
};

static void
test_initial (void **state)
{
  struct adaptra_window w;

  (void) state;
  w = adaptra_window_initial (1, &bounds);
  assert_int_equal (w.ra, 4);           /* the 16K floor */
  assert_int_equal (w.la, 2);
  w = adaptra_window_initial (16, &bounds);
  assert_int_equal (w.ra, 64);
  assert_int_equal (w.la, 32);
  w = adaptra_window_initial (1000, &bounds);
  assert_int_equal (w.ra, 256);         /* the max */
}

static void
test_state_grows_at_most_2x (void **state)
{
  struct adaptra_state_input in = {
    .stream_shift = 64, .global_size = 100000, .global_shift = 10,
    .ra_old = 4, .la_old = 0,
    .share = 50,
  };
  struct adaptra_state_decision d;
  unsigned steps = 0;

  (void) state;
  /* A light load: T is huge, so only the growth limit applies. */
  while (in.ra_old < bounds.max) {
    d = adaptra_window_state (&in, &bounds);
    assert_int_equal (d.action, ADAPTRA_STATE_WINDOW);
    assert_true (d.window.ra <= 2 * in.ra_old);
    assert_true (d.window.ra > in.ra_old);
    assert_true (d.window.la >= 1 && d.window.la < d.window.ra);
    in.ra_old = d.window.ra;
    steps++;
  }
  assert_int_equal (in.ra_old, bounds.max);
  assert_int_equal (steps, 6);          /* 4 -> 8 -> ... -> 256 */
}

static void
test_state_shrinks_when_pool_ages_fast (void **state)
{
  struct adaptra_state_input in = {
    .stream_shift = 64, .global_size = 1000, .global_shift = 2000,
    .ra_old = 64, .la_old = 1,
    .share = 50,
  };
  struct adaptra_state_decision d;

  (void) state;
  d = adaptra_window_state (&in, &bounds);
  /* T = 64 * 1000 / 2001 = 31; 50% is 15; less the page ahead: 14. */
  assert_int_equal (d.threshold, 31);
  assert_int_equal (d.action, ADAPTRA_STATE_WINDOW);
  assert_int_equal (d.window.ra, 14);
  /* Below the 16K floor: the state method is not floored. */
  in.global_shift = 30000;
  d = adaptra_window_state (&in, &bounds);
  assert_int_equal (d.action, ADAPTRA_STATE_NONE);
}

/* T over two intervals (window.c): an interval in which no other
 * stream's window landed (g small) reads T several times too large;
 * summed with the interval before, s and g give the mean rate, and the
 * window with it.  Without the interval before, T is the last one's.
 */
static void
test_state_threshold_over_two_intervals (void **state)
{
  struct adaptra_state_input in = {
    .stream_shift = 64, .global_size = 1000, .global_shift = 100,
    .prev_shift = 64, .prev_global_shift = 1000,
    .ra_old = 64, .la_old = 1, .share = 50,
  };
  struct adaptra_state_decision d;

  (void) state;
  d = adaptra_window_state (&in, &bounds);
  /* T = 128 * 1000 / 1101 = 116 (633 over the last interval alone);
   * 50% is 58, less the page ahead: 57.
   */
  assert_int_equal (d.threshold, 116);
  assert_int_equal (d.action, ADAPTRA_STATE_WINDOW);
  assert_int_equal (d.window.ra, 57);
  in.prev_shift = in.prev_global_shift = 0;
  d = adaptra_window_state (&in, &bounds);
  assert_int_equal (d.threshold, 633);
  assert_int_equal (d.window.ra, 128);  /* 2 x ra_old */
}

/* The window takes the input's share of T, not adaptra-ratio's; the
 * share climbs ADAPTRA_SHARE_STEP a window to ADAPTRA_SHARE_MAX while
 * no page is lost, falls back to adaptra-ratio at a loss, and is never
 * below adaptra-ratio.
 */
static void
test_share_follows_losses (void **state)
{
  struct adaptra_state_input in = {
    .stream_shift = 64, .global_size = 1000, .global_shift = 2000,
    .ra_old = 64, .la_old = 1, .share = ADAPTRA_SHARE_MAX,
  };
  struct adaptra_state_decision d;
  unsigned share = bounds.ratio, steps = 0;

  (void) state;
  d = adaptra_window_state (&in, &bounds);
  /* T = 64 * 1000 / 2001 = 31; 70% is 21, less the page ahead. */
  assert_int_equal (d.window.ra, 31 * ADAPTRA_SHARE_MAX / 100 - 1);
  while (share < ADAPTRA_SHARE_MAX) {
    share = adaptra_window_share (share, bounds.ratio, 0);
    steps++;
  }
  assert_int_equal (share, ADAPTRA_SHARE_MAX);
  assert_int_equal (steps, (ADAPTRA_SHARE_MAX - bounds.ratio) /
                    ADAPTRA_SHARE_STEP);
  assert_int_equal (adaptra_window_share (share, bounds.ratio, 0),
                    ADAPTRA_SHARE_MAX);
  assert_int_equal (adaptra_window_share (share, bounds.ratio, 1),
                    bounds.ratio);
  assert_int_equal (adaptra_window_share (80, 80, 0), 80);
}

static void
test_state_rescue (void **state)
{
  struct adaptra_state_input in = {
    .stream_shift = 10, .global_size = 1000, .global_shift = 900,
    .ra_old = 16, .la_old = 8,
    .share = 50,
  };
  struct adaptra_state_decision d;

  (void) state;
  d = adaptra_window_state (&in, &bounds);
  assert_int_equal (d.remain, 1);
  assert_int_equal (d.action, ADAPTRA_STATE_RESCUE);
  /* With one page ahead there is nothing worth rescuing. */
  in.la_old = 1;
  d = adaptra_window_state (&in, &bounds);
  assert_int_not_equal (d.action, ADAPTRA_STATE_RESCUE);
}

static void
test_state_lost_pages_halve (void **state)
{
  struct adaptra_state_input in = {
    .stream_shift = 64, .global_size = 100000, .global_shift = 10,
    .ra_old = 64, .la_old = 0, .lost = 3,
    .share = 50,
  };
  struct adaptra_state_decision d;

  (void) state;
  d = adaptra_window_state (&in, &bounds);
  assert_int_equal (d.action, ADAPTRA_STATE_WINDOW);
  assert_int_equal (d.window.ra, 32);
}

static void
test_state_zero_aging (void **state)
{
  struct adaptra_state_input in = {
    .stream_shift = 8, .global_size = 64, .global_shift = 0,
    .ra_old = 8, .la_old = 0,
    .share = 50,
  };
  struct adaptra_state_decision d;

  (void) state;
  /* g == 0 must not divide by zero (g |= 1). */
  d = adaptra_window_state (&in, &bounds);
  assert_int_equal (d.threshold, 8 * 64);
  assert_int_equal (d.window.ra, 16);
}

static void
test_lead_covers_latency (void **state)
{
  struct adaptra_window_bounds b = bounds;
  struct adaptra_state_input in = {
    .stream_shift = 64, .global_size = 100000, .global_shift = 10,
    .ra_old = 32, .la_old = 0,
    .share = 50,
  };
  struct adaptra_state_decision d;

  (void) state;
  b.lead = 40;
  d = adaptra_window_state (&in, &b);
  assert_int_equal (d.window.ra, 64);
  assert_int_equal (d.window.la, 40);
  /* The lead never exceeds the window. */
  b.lead = 1000;
  d = adaptra_window_state (&in, &b);
  assert_int_equal (d.window.la, d.window.ra);
}

static void
test_context (void **state)
{
  struct adaptra_window w;
  unsigned method;

  (void) state;
  w = adaptra_window_context (1000, 100, &bounds, &method);
  assert_int_equal (method, ADAPTRA_METHOD_CONTEXT);
  assert_int_equal (w.ra, 50);
  assert_int_equal (w.la, 7);
  /* Short history: floored at min. */
  w = adaptra_window_context (1000, 3, &bounds, &method);
  assert_int_equal (w.ra, 4);
}

static void
test_context_accelerated (void **state)
{
  struct adaptra_window w;
  unsigned method;

  (void) state;
  w = adaptra_window_context (64, 64, &bounds, &method);
  assert_int_equal (method, ADAPTRA_METHOD_CONTEXTA);
  assert_int_equal (w.ra, 64);
  assert_int_equal (w.la, 32);
  w = adaptra_window_context (4096, 4096, &bounds, &method);
  assert_int_equal (w.ra, 256);
}

static void
test_fixed_is_constant (void **state)
{
  struct adaptra_window w;

  (void) state;
  w = adaptra_window_fixed (32, &bounds);
  assert_int_equal (w.ra, 32);
  assert_int_equal (w.la, 32);
}

/* The mode is decided in one place: fixed mode answers for every
 * forward case, adaptive mode leaves it to the case's method.
 */
static void
test_fixed_mode (void **state)
{
  struct adaptra_window_bounds b = bounds;
  struct adaptra_window w = { 0, 0 };
  unsigned method = ADAPTRA_METHOD_STATE;

  (void) state;
  assert_false (adaptra_window_fixed_mode (&b, &w, &method));
  assert_int_equal (method, ADAPTRA_METHOD_STATE);
  assert_int_equal (w.ra, 0);
  b.fixed = 32;
  assert_true (adaptra_window_fixed_mode (&b, &w, &method));
  assert_int_equal (method, ADAPTRA_METHOD_FIXED);
  assert_int_equal (w.ra, 32);
  assert_int_equal (w.la, 32);
  /* Within the max, as every window. */
  b.fixed = 1000;
  assert_true (adaptra_window_fixed_mode (&b, &w, &method));
  assert_int_equal (w.ra, bounds.max);
}

static void
test_backward (void **state)
{
  struct adaptra_window w;

  (void) state;
  w = adaptra_window_backward (4, 0, &bounds);
  assert_int_equal (w.ra, 8);
  w = adaptra_window_backward (4, 8, &bounds);
  assert_int_equal (w.ra, 16);
  assert_int_equal (w.la, 4);
}

static void
test_fit_eof (void **state)
{
  struct adaptra_window w = { .ra = 8, .la = 2 };
  bool at_eof;

  (void) state;
  assert_true (adaptra_window_fit_eof (90, 100, false, &w, &at_eof));
  assert_false (at_eof);
  assert_int_equal (w.ra, 8);
  w.ra = 9;
  assert_true (adaptra_window_fit_eof (90, 100, false, &w, &at_eof));
  assert_true (at_eof);
  assert_int_equal (w.ra, 10);
  assert_int_equal (w.la, 0);
  w.ra = 64;
  w.la = 16;
  assert_true (adaptra_window_fit_eof (90, 100, true, &w, &at_eof));
  assert_int_equal (w.ra, 10);
  assert_int_equal (w.la, 10);
  assert_false (adaptra_window_fit_eof (100, 100, false, &w, &at_eof));
}

static void
test_max (void **state)
{
  (void) state;
  assert_int_equal (adaptra_window_max (0, 256, 1000, 5000), 1000);
  assert_int_equal (adaptra_window_max (0, 256, 10, 5000), 256);
  assert_int_equal (adaptra_window_max (0, 256, 1000, 500), 500);
  assert_int_equal (adaptra_window_max (32, 256, 1000, 500), 32);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_initial),
    cmocka_unit_test (test_state_grows_at_most_2x),
    cmocka_unit_test (test_state_shrinks_when_pool_ages_fast),
    cmocka_unit_test (test_state_threshold_over_two_intervals),
    cmocka_unit_test (test_share_follows_losses),
    cmocka_unit_test (test_state_rescue),
    cmocka_unit_test (test_state_lost_pages_halve),
    cmocka_unit_test (test_state_zero_aging),
    cmocka_unit_test (test_lead_covers_latency),
    cmocka_unit_test (test_context),
    cmocka_unit_test (test_context_accelerated),
    cmocka_unit_test (test_fixed_is_constant),
    cmocka_unit_test (test_fixed_mode),
    cmocka_unit_test (test_backward),
    cmocka_unit_test (test_fit_eof),
    cmocka_unit_test (test_max),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
