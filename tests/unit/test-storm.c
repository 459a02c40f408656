/* test-storm.c: a volume's many clients read each page from the backend once.
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

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "adaptra/engine.h"

#define PAGE 4096
#define MIB (1024 * 1024)
#define SIZE (4 * MIB)
#define NEXT (64 * 1024)        /* a's read behind its first */

static struct adaptra_engine *e;
static int a, b;
/* Backend reads that covered each page; atomic: the storm's readers
 * and workers read at once.
 */
static unsigned page_reads[SIZE / PAGE];
static bool reenter;
/* The storm's backend takes real time, so that the readers' misses
 * overlap the reads in flight.
 */
#define BACKEND_SLEEP_NS 200000
static bool backend_sleep;
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
    __atomic_fetch_add (&page_reads[p], 1, __ATOMIC_RELAXED);
  if (backend_sleep)
    nanosleep (&(struct timespec) { .tv_nsec = BACKEND_SLEEP_NS }, NULL);
  /* offset is page-aligned: the engine reads whole pages. */
  for (p = 0; p * PAGE < count; p++)
    memset ((unsigned char *) buf + p * PAGE, byte_of (offset + p * PAGE),
            count - p * PAGE < PAGE ? count - p * PAGE : PAGE);
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

/* The storm: READERS clients (guests) of one volume, each a thread,
 * read the same STORM_SPAN bytes in order at once, in requests of
 * STORM_REQUEST, with read-ahead on and prefetch workers reading the
 * windows.  Every page is read from the backend at most once: a miss
 * on a page another reader or a window is reading waits for that read
 * (its page is IN_FLIGHT in the pool, as a locked page in the page
 * cache) instead of reading it again; and they are one stream,
 * whose windows they share.
 */
#define READERS 16
#define STORM_SPAN (2 * MIB)
#define STORM_REQUEST (16 * 1024)
#define STORM_WORKERS 2

static int readers[READERS];
static pthread_barrier_t start_line;

static void *
storm_reader (void *arg)
{
  static __thread unsigned char buf[STORM_REQUEST];
  int client = *(const int *) arg;
  uint64_t off;
  int err = 0;

  pthread_barrier_wait (&start_line);
  for (off = 0; off < STORM_SPAN && !err; off += STORM_REQUEST) {
    err = adaptra_read (e, client, NULL, buf, STORM_REQUEST, off);
    if (!err && (buf[0] != byte_of (off) ||
                 buf[STORM_REQUEST - 1] != byte_of (off + STORM_REQUEST - 1)))
      err = -1;
  }
  return (void *) (intptr_t) err;
}

static int
setup_storm (void **state)
{
  static const struct adaptra_backend backend = { .pread = fake_pread };
  static const struct adaptra_clock clock = { .now_ns = fake_now };
  static void *ctxs[1] = { NULL };
  struct adaptra_config cfg;
  char why[ADAPTRA_WHY_LEN];
  char name[16];
  int v, i;

  (void) state;
  memset (page_reads, 0, sizeof page_reads);
  adaptra_config_defaults (&cfg);
  cfg.pool_bytes = 16 * MIB;          /* holds the whole span */
  cfg.bypass = ADAPTRA_BYPASS_NEVER;
  cfg.workers = STORM_WORKERS;
  cfg.profile_workers = 0;
  if (adaptra_engine_new (&cfg, &backend, &clock, &e, why, sizeof why) ||
      adaptra_volume_open (e, "golden", SIZE, 0, &v) ||
      adaptra_volume_set_contexts (e, v, 1, ctxs) ||
      adaptra_workers_start (e, STORM_WORKERS, 0))
    return -1;
  for (i = 0; i < READERS; i++) {
    snprintf (name, sizeof name, "guest%d", i);
    if (adaptra_client_open (e, v, name, &readers[i]))
      return -1;
  }
  backend_sleep = true;
  return 0;
}

static int
teardown_storm (void **state)
{
  backend_sleep = false;
  return teardown (state);
}

static void
test_storm_reads_each_page_once (void **state)
{
  pthread_t threads[READERS];
  struct adaptra_stats st;
  void *ret;
  unsigned p, i;

  (void) state;
  pthread_barrier_init (&start_line, NULL, READERS);
  for (i = 0; i < READERS; i++)
    assert_int_equal (pthread_create (&threads[i], NULL, storm_reader,
                                      &readers[i]), 0);
  for (i = 0; i < READERS; i++) {
    assert_int_equal (pthread_join (threads[i], &ret), 0);
    assert_int_equal ((intptr_t) ret, 0);
  }
  pthread_barrier_destroy (&start_line);
  adaptra_workers_stop (e);
  for (p = 0; p < STORM_SPAN / PAGE; p++) {
    if (page_reads[p] != 1)
      fail_msg ("page %u was read from the backend %u times", p,
                page_reads[p]);
  }
  /* Past the span, read-ahead's windows may have read pages nobody
   * wanted, but each once.
   */
  for (; p < SIZE / PAGE; p++)
    assert_in_range (page_reads[p], 0, 1);
  adaptra_stats_snapshot (e, &st);
  assert_int_equal (st.client_bytes, (uint64_t) READERS * STORM_SPAN);
  /* The readers' reads over one range are one stream: the pages they
   * missed carry its id.
   */
  assert_int_equal (st.streams_active, 1);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown (test_deep_client_misses_kept, setup,
                                     teardown),
    cmocka_unit_test_setup_teardown (test_storm_reads_each_page_once,
                                     setup_storm, teardown_storm),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
