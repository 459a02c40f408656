/* test-storm.c: many clients of one volume read each page from the backend once.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A boot storm: many guests read one image at once, and what one of
 * them read from the backend the others find in the pool.  The case
 * here is a client that reads ahead itself (core/depth.h): its own
 * reads in flight cover what read-ahead would, so it gets no window,
 * but its misses must still be kept for the volume's other clients.
 * The fake backend makes client a deep: while a's read of 1 MiB is at
 * the backend, a's next read (64 KiB right after it) arrives, two
 * requests and over 1 MiB in flight.
 */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "adaptra/engine.h"

#define PAGE 4096
#define MIB (1024 * 1024)
#define SIZE (4 * MIB)
#define NEXT (64 * 1024)        /* a's read behind its first */

static struct adaptra_engine *e;
static int a, b;
static unsigned page_reads[SIZE / PAGE];
static bool reenter;
static unsigned char next_buf[NEXT];

/* The byte every byte of page offset / PAGE holds. */
static unsigned char
byte_of (uint64_t offset)
{
  return (unsigned char) (offset / PAGE % 251 + 1);
}

static int
fake_pread (void *ctx, void *buf, uint32_t count, uint64_t offset)
{
  uint64_t p;

  (void) ctx;
  for (p = offset / PAGE; p < (offset + count + PAGE - 1) / PAGE; p++)
    page_reads[p]++;
  memset (buf, byte_of (offset), count);
  if (reenter) {
    /* a's next read arrives while this one is in flight. */
    reenter = false;
    assert_int_equal (adaptra_read (e, a, NULL, next_buf, NEXT,
                                    offset + count), 0);
  }
  return 0;
}

static uint64_t
fake_now (void *opaque)
{
  (void) opaque;
  return 0;
}

static int
setup (void **state)
{
  static const struct adaptra_backend backend = { .pread = fake_pread };
  static const struct adaptra_clock clock = { .now_ns = fake_now };
  struct adaptra_config cfg;
  char why[ADAPTRA_WHY_LEN];
  int v;

  (void) state;
  adaptra_config_defaults (&cfg);
  cfg.pool_bytes = 16 * MIB;
  cfg.mode = ADAPTRA_MODE_OFF;          /* only the pages read */
  cfg.bypass = ADAPTRA_BYPASS_NEVER;
  cfg.workers = 0;
  cfg.profile_workers = 0;
  if (adaptra_engine_new (&cfg, &backend, &clock, &e, why, sizeof why) ||
      adaptra_volume_open (e, "golden", SIZE, 0, &v) ||
      adaptra_client_open (e, v, "a", &a) ||
      adaptra_client_open (e, v, "b", &b))
    return -1;
  return 0;
}

static int
teardown (void **state)
{
  (void) state;
  adaptra_engine_free (e);
  return 0;
}

static void
test_deep_client_misses_kept (void **state)
{
  static unsigned char buf[MIB + NEXT];
  struct adaptra_stats st;
  unsigned p;

  (void) state;
  reenter = true;
  assert_int_equal (adaptra_read (e, a, NULL, buf, MIB, 0), 0);
  assert_false (reenter);
  assert_int_equal (next_buf[0], byte_of (MIB));
  /* b reads what a read, its first read and the one it read as a
   * client that reads ahead itself: all from the pool.
   */
  assert_int_equal (adaptra_read (e, b, NULL, buf, MIB + NEXT, 0), 0);
  assert_int_equal (buf[MIB], byte_of (MIB));
  for (p = 0; p < (MIB + NEXT) / PAGE; p++)
    assert_int_equal (page_reads[p], 1);
  adaptra_stats_snapshot (e, &st);
  assert_int_equal (st.backend_bytes, MIB + NEXT);
  assert_int_equal (st.bypass_bytes, 0);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown (test_deep_client_misses_kept, setup,
                                     teardown),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
