/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of engine/bounce.c: a bounded number of transfer slots. */

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

#include "../../engine/bounce.h"

static void
test_rejects_empty (void **state)
{
  struct adaptra_bounce b;

  (void) state;
  errno = 0;
  assert_int_equal (adaptra_bounce_init (&b, 0, 4096), -1);
  assert_int_equal (errno, EINVAL);
  assert_int_equal (adaptra_bounce_init (&b, 4, 0), -1);
}

/* Slots are made on demand, usable over their whole size, and reused:
 * after a put, the next get returns the same buffer and makes none.
 */
static void
test_lazy_and_reused (void **state)
{
  struct adaptra_bounce b;
  unsigned char *s1, *s2, *again;

  (void) state;
  assert_int_equal (adaptra_bounce_init (&b, 3, 8192), 0);
  assert_int_equal (b.made, 0);
  s1 = adaptra_bounce_get (&b);
  s2 = adaptra_bounce_get (&b);
  assert_non_null (s1);
  assert_non_null (s2);
  assert_ptr_not_equal (s1, s2);
  assert_int_equal (b.made, 2);
  memset (s1, 0xaa, 8192);
  memset (s2, 0x55, 8192);
  adaptra_bounce_put (&b, s1);
  again = adaptra_bounce_get (&b);
  assert_ptr_equal (again, s1);
  assert_int_equal (b.made, 2);
  adaptra_bounce_put (&b, again);
  adaptra_bounce_put (&b, s2);
  adaptra_bounce_fini (&b);
}

struct holder {
  struct adaptra_bounce *b;
  pthread_mutex_t lock;
  unsigned holding, most;       /* slots held now, most held at once */
  unsigned rounds;
};

static void
sleep_us (long us)
{
  struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000 };

  nanosleep (&ts, NULL);
}

static void *
hold_slots (void *arg)
{
  struct holder *h = arg;
  unsigned i;

  for (i = 0; i < h->rounds; i++) {
    void *slot = adaptra_bounce_get (h->b);

    assert_non_null (slot);
    pthread_mutex_lock (&h->lock);
    if (++h->holding > h->most)
      h->most = h->holding;
    pthread_mutex_unlock (&h->lock);
    sleep_us (200);
    pthread_mutex_lock (&h->lock);
    h->holding--;
    pthread_mutex_unlock (&h->lock);
    adaptra_bounce_put (h->b, slot);
  }
  return NULL;
}

/* Eight threads want a slot at once; only two exist.  Every thread
 * gets its turns (no deadlock, no lost wake-up), no more than two
 * slots are ever held or made, and the two are held at once.
 */
static void
test_bounded_under_contention (void **state)
{
  struct adaptra_bounce b;
  struct holder h = { .b = &b, .rounds = 50 };
  pthread_t threads[8];
  unsigned i;

  (void) state;
  assert_int_equal (adaptra_bounce_init (&b, 2, 4096), 0);
  pthread_mutex_init (&h.lock, NULL);
  for (i = 0; i < 8; i++)
    assert_int_equal (pthread_create (&threads[i], NULL, hold_slots, &h), 0);
  for (i = 0; i < 8; i++)
    pthread_join (threads[i], NULL);
  assert_int_equal (h.holding, 0);
  assert_int_equal (h.most, 2);
  assert_int_equal (b.made, 2);
  assert_int_equal (b.nidle, 2);
  pthread_mutex_destroy (&h.lock);
  adaptra_bounce_fini (&b);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_rejects_empty),
    cmocka_unit_test (test_lazy_and_reused),
    cmocka_unit_test (test_bounded_under_contention),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
