/* test-depth.c: clients that read ahead themselves get no read-ahead.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The decision of core/depth.c on its own (a client's peak of reads in
 * flight of one run against the bandwidth-delay product; independent
 * streams' reads do not add up), then in the engine on the fixture: a
 * client with reads held in flight in other threads, as nbdcopy's
 * queue keeps them, reads sequentially and gets no window; once the
 * held reads are done and it reads one at a time, read-ahead comes
 * back.
 */

#include <config.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"
#include "../../core/depth.h"

#define KIB 1024
#define MIB (1024 * KIB)

/* ---- The decision alone. */

static void
test_no_window_never_covered (void **state)
{
  struct adaptra_depth d = { 0 };
  unsigned i;

  (void) state;
  for (i = 0; i < 16; i++)
    adaptra_depth_enter (&d, i * 256 * KIB, 256 * KIB);
  assert_false (adaptra_depth_reads_ahead (&d, 0));
  assert_true (adaptra_depth_reads_ahead (&d, 1));
}

static void
test_one_at_a_time_never_covers (void **state)
{
  struct adaptra_depth d = { 0 };
  unsigned i;

  (void) state;
  for (i = 0; i < 100; i++) {
    adaptra_depth_enter (&d, (uint64_t) i * 32 * MIB, 32 * MIB);
    assert_false (adaptra_depth_reads_ahead (&d, 64 * KIB));
    adaptra_depth_leave (&d, 32 * MIB);
  }
}

static void
test_deep_queue_covers (void **state)
{
  struct adaptra_depth d = { 0 };
  unsigned i;

  (void) state;
  for (i = 0; i < 16; i++)
    adaptra_depth_enter (&d, i * 256 * KIB, 256 * KIB);
  /* 4 MiB in flight: not 8 MiB, but 2. */
  assert_false (adaptra_depth_reads_ahead (&d, 8 * MIB));
  assert_true (adaptra_depth_reads_ahead (&d, 2 * MIB));
  /* Served from the pool, the same queue shows two at a time: it
   * still reads ahead itself, even against a larger window.
   */
  for (i = 0; i < 16; i++)
    adaptra_depth_leave (&d, 256 * KIB);
  for (i = 16; i < 48; i += 2) {
    adaptra_depth_enter (&d, i * 256 * KIB, 256 * KIB);
    adaptra_depth_enter (&d, (i + 1) * 256 * KIB, 256 * KIB);
    adaptra_depth_leave (&d, 256 * KIB);
    adaptra_depth_leave (&d, 256 * KIB);
    assert_true (adaptra_depth_reads_ahead (&d, 8 * MIB));
  }
  /* One at a time from then on: read-ahead back within 40 reads. */
  for (i = 48; i < 88; i++) {
    adaptra_depth_enter (&d, i * 256 * KIB, 256 * KIB);
    adaptra_depth_leave (&d, 256 * KIB);
  }
  assert_false (adaptra_depth_reads_ahead (&d, 1));
  assert_int_equal (d.requests, 0);
  assert_int_equal (d.bytes, 0);
}

static void
test_scattered_streams_never_cover (void **state)
{
  struct adaptra_depth d = { 0 };
  unsigned round, i;

  (void) state;
  /* 50 streams 16 MiB apart on one connection, a 16 KiB read of each
   * in flight at once: 800 KiB, but each stream waits for its read.
   */
  for (round = 0; round < 10; round++) {
    for (i = 0; i < 50; i++)
      adaptra_depth_enter (&d, (uint64_t) i * 16 * MIB + round * 16 * KIB,
                           16 * KIB);
    assert_false (adaptra_depth_reads_ahead (&d, 1));
    for (i = 0; i < 50; i++)
      adaptra_depth_leave (&d, 16 * KIB);
  }
}

/* The volume's running total of bytes read again, for the policy. */
static uint64_t
total_of (void *opaque)
{
  return *(const uint64_t *) opaque;
}

static void
test_keep_misses_while_read_again (void **state)
{
  struct adaptra_keep k = { 0 };
  uint64_t total = 0;
  unsigned i, kept;

  (void) state;
  /* The trial: every miss run kept. */
  while (k.kept < ADAPTRA_KEEP_TRIAL) {
    assert_true (adaptra_keep_miss (&k, total_of, &total));
    adaptra_keep_kept (&k, 64 * KIB);
  }
  /* Nothing read again: one run in ADAPTRA_KEEP_SAMPLE. */
  for (i = kept = 0; i < 4 * ADAPTRA_KEEP_SAMPLE; i++)
    if (adaptra_keep_miss (&k, total_of, &total)) {
      kept++;
      adaptra_keep_kept (&k, 64 * KIB);
    }
  assert_int_equal (kept, 4);
  /* Another client reads what was kept again, and every run kept
   * from then on (a boot storm): from the next sampled run on (the
   * next run), every run is kept.
   */
  total += k.kept;
  for (i = 0; i < 4 * ADAPTRA_KEEP_SAMPLE; i++) {
    assert_true (adaptra_keep_miss (&k, total_of, &total));
    adaptra_keep_kept (&k, 64 * KIB);
    total += 64 * KIB;
  }
  /* Reads again stop: the older ones weigh less as the kept bytes
   * grow (the counts halve within ADAPTRA_KEEP_WINDOW), and one run in
   * ADAPTRA_KEEP_SAMPLE is kept again.
   */
  for (i = 0; i < 64 * ADAPTRA_KEEP_SAMPLE; i++)
    if (adaptra_keep_miss (&k, total_of, &total))
      adaptra_keep_kept (&k, 64 * KIB);
  assert_false (k.keep);
  assert_true (k.kept < ADAPTRA_KEEP_WINDOW);
}

/* ---- In the engine, on the fixture's fake backend and clock. */

#define DISK (64 * MIB)
#define HELD 8                  /* reads held in flight */
#define HELD_AT (32 * MIB)      /* where they read, 1 MiB each */
#define READ (64 * KIB)

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static unsigned holding;
static bool released;
static uint64_t held_at;        /* where the held reads read */
static __thread bool in_held_read; /* this thread's reads are held */

/* The fixture's backend calls this at the end of every read: one in a
 * held read's thread then waits until released, its bytes copied and
 * the clock charged, but still in flight for the engine.
 */
static void
hold_read (uint64_t offset, uint32_t count)
{
  (void) offset;
  (void) count;
  if (!in_held_read)
    return;
  pthread_mutex_lock (&hold_lock);
  holding++;
  pthread_cond_broadcast (&hold_cond);
  while (!released)
    pthread_cond_wait (&hold_cond, &hold_lock);
  pthread_mutex_unlock (&hold_lock);
}

static void
tune (struct adaptra_config *cfg)
{
  cfg->pool_bytes = 32 * MIB;
  cfg->max_bytes = 1 * MIB;
}

/* 1 ms a read and 1 us a KiB on the fake clock. */
static int
setup (void **state)
{
  (void) state;
  if (fixture_open (DISK, tune) == -1)
    return -1;
  read_ns = 1000000;
  read_ns_per_kib = 1000;
  during_read = hold_read;
  return 0;
}

/* Read [from, to) in READ requests, running queued read-ahead after
 * each.  Returns true if read-ahead read past to.
 */
static bool
scan (uint64_t from, uint64_t to)
{
  uint64_t off;

  for (off = from; off < to; off += READ) {
    read_check (off, READ);
    drain ();
  }
  return page_reads[to / PAGE] != 0;
}

static void *
held_read (void *arg)
{
  uint64_t off = held_at + (uintptr_t) arg * MIB;

  in_held_read = true;
  read_check (off, MIB);
  return NULL;
}

/* Start HELD reads of the client at at, 1 MiB each, in threads and
 * wait until they are all at the backend.
 */
static void
hold (pthread_t *threads, uint64_t at)
{
  uintptr_t i;

  holding = 0;
  released = false;
  held_at = at;
  for (i = 0; i < HELD; i++)
    assert_int_equal (pthread_create (&threads[i], NULL, held_read,
                                      (void *) i), 0);
  pthread_mutex_lock (&hold_lock);
  while (holding < HELD)
    pthread_cond_wait (&hold_cond, &hold_lock);
  pthread_mutex_unlock (&hold_lock);
}

/* Let the held reads finish. */
static void
release_held (pthread_t *threads)
{
  uintptr_t i;

  pthread_mutex_lock (&hold_lock);
  released = true;
  pthread_cond_broadcast (&hold_cond);
  pthread_mutex_unlock (&hold_lock);
  for (i = 0; i < HELD; i++)
    pthread_join (threads[i], NULL);
}

/* READY pages in the pool. */
static uint64_t
pool_pages (void)
{
  struct adaptra_stats s = stats ();

  return s.pages_inactive + s.pages_active;
}

static void
test_deep_client_gets_no_window (void **state)
{
  pthread_t threads[HELD];

  (void) state;
  /* One request at a time: windows past what it reads. */
  assert_true (scan (0, 2 * MIB));
  /* The same client with 8 MiB held in flight meanwhile. */
  hold (threads, HELD_AT);
  assert_false (scan (8 * MIB, 10 * MIB));
  release_held (threads);
  /* One at a time again: read-ahead comes back within 40 reads. */
  scan (16 * MIB, 16 * MIB + 40 * READ);
  assert_true (scan (20 * MIB, 22 * MIB));
}

/* A client that reads ahead itself and reads every byte once, as a
 * copy does: past the trial (its held reads), its misses go straight
 * to its buffer, one run in ADAPTRA_KEEP_SAMPLE kept.
 */
static void
test_copy_misses_not_kept (void **state)
{
  pthread_t threads[HELD];
  uint64_t before;

  (void) state;
  hold (threads, HELD_AT);
  release_held (threads);
  assert_true ((uint64_t) HELD * MIB >= ADAPTRA_KEEP_TRIAL);
  hold (threads, HELD_AT + HELD * MIB);
  before = pool_pages ();
  assert_false (scan (8 * MIB, 12 * MIB));
  assert_true (pool_pages () - before <=
               2 * (4 * MIB / READ / ADAPTRA_KEEP_SAMPLE + 1) * READ / 4096);
  release_held (threads);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_no_window_never_covered),
    cmocka_unit_test (test_one_at_a_time_never_covers),
    cmocka_unit_test (test_deep_queue_covers),
    cmocka_unit_test (test_scattered_streams_never_cover),
    cmocka_unit_test (test_keep_misses_while_read_again),
    cmocka_unit_test_setup_teardown (test_copy_misses_not_kept, setup,
                                     fixture_close_test),
    cmocka_unit_test_setup_teardown (test_deep_client_gets_no_window,
                                     setup, fixture_close_test),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
