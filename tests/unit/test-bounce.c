/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of core/bounce.c: transfer buffers within a byte budget. */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "../../core/bounce.h"

static void
test_rejects_bad_sizes (void **state)
{
  struct adaptra_bounce b;

  (void) state;
  errno = 0;
  assert_int_equal (adaptra_bounce_init (&b, 4096, 0), -1);
  assert_int_equal (errno, EINVAL);
  assert_int_equal (adaptra_bounce_init (&b, 4096, 8192), -1);
}

/* Buffers of two sizes, usable over their whole size, counted in
 * bytes (four of a quarter fit where one of the largest does), kept
 * and reused; a request that does not fit frees kept buffers of the
 * other size first.
 */
static void
test_counts_bytes (void **state)
{
  struct adaptra_bounce b;
  unsigned char *small[4], *big, *again, *second;
  unsigned i;

  (void) state;
  assert_int_equal (adaptra_bounce_init (&b, 1024 * 1024, 512 * 1024), 0);
  big = adaptra_bounce_get (&b, 300 * 1024);
  assert_non_null (big);
  memset (big, 0xaa, 512 * 1024);
  for (i = 0; i < 4; i++) {
    small[i] = adaptra_bounce_get (&b, 100 * 1024);
    assert_non_null (small[i]);
    memset (small[i], (int) i, 128 * 1024);
  }
  assert_int_equal (b.held, 1024 * 1024);
  for (i = 0; i < 4; i++)
    adaptra_bounce_put (&b, small[i], 100 * 1024);
  adaptra_bounce_put (&b, big, 300 * 1024);
  assert_int_equal (b.held, 1024 * 1024);        /* kept for reuse */
  again = adaptra_bounce_get (&b, 512 * 1024);
  assert_ptr_equal (again, big);
  second = adaptra_bounce_get (&b, 512 * 1024);  /* frees the four */
  assert_non_null (second);
  memset (second, 0x55, 512 * 1024);
  assert_int_equal (b.held, 1024 * 1024);
  assert_int_equal (b.class[0].nidle, 0);
  adaptra_bounce_put (&b, again, 512 * 1024);
  adaptra_bounce_put (&b, second, 512 * 1024);
  adaptra_bounce_fini (&b);
}

struct holder {
  struct adaptra_bounce *b;
  size_t bytes;                 /* each buffer */
  pthread_mutex_t *lock;
  size_t *holding, *most;       /* bytes held now, most held at once */
  unsigned rounds;
};

static void
sleep_us (long us)
{
  struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000 };

  nanosleep (&ts, NULL);
}

static void *
hold_buffers (void *arg)
{
  struct holder *h = arg;
  unsigned i;

  for (i = 0; i < h->rounds; i++) {
    void *buf = adaptra_bounce_get (h->b, h->bytes);

    assert_non_null (buf);
    pthread_mutex_lock (h->lock);
    *h->holding += h->bytes;
    if (*h->holding > *h->most)
      *h->most = *h->holding;
    pthread_mutex_unlock (h->lock);
    sleep_us (200);
    pthread_mutex_lock (h->lock);
    *h->holding -= h->bytes;
    pthread_mutex_unlock (h->lock);
    adaptra_bounce_put (h->b, buf, h->bytes);
  }
  return NULL;
}

/* Eight threads, four wanting 8 KiB and four 4 KiB at a time, in a
 * budget of 16 KiB: every thread gets its turns (no deadlock, no lost
 * wake-up), never more than the budget is held, and the budget is
 * held whole at some point.
 */
static void
test_bounded_under_contention (void **state)
{
  struct adaptra_bounce b;
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  size_t holding = 0, most = 0;
  struct holder h[8];
  pthread_t threads[8];
  unsigned i;

  (void) state;
  assert_int_equal (adaptra_bounce_init (&b, 16384, 8192), 0);
  for (i = 0; i < 8; i++) {
    h[i] = (struct holder) { .b = &b, .bytes = i % 2 ? 8192 : 4096,
                             .lock = &lock, .holding = &holding,
                             .most = &most, .rounds = 50 };
    assert_int_equal (pthread_create (&threads[i], NULL, hold_buffers,
                                      &h[i]), 0);
  }
  for (i = 0; i < 8; i++)
    pthread_join (threads[i], NULL);
  assert_int_equal (holding, 0);
  assert_true (most <= 16384);
  assert_true (most > 8192);
  assert_true (b.held <= 16384);
  adaptra_bounce_fini (&b);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_rejects_bad_sizes),
    cmocka_unit_test (test_counts_bytes),
    cmocka_unit_test (test_bounded_under_contention),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
