/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of control/tracebuf.c: trace lines between the data path
 * and the statistics thread.
 */

#include <config.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "adaptra/tracebuf.h"

static unsigned
count_lines (const struct adaptra_strbuf *sb)
{
  unsigned n = 0;
  size_t i;

  for (i = 0; i < sb->len; i++)
    n += sb->data[i] == '\n';
  return n;
}

/* Lines come out whole, in order, once; the buffer is empty after. */
static void
test_lines_in_order (void **state)
{
  struct adaptra_tracebuf t;
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (4096);

  (void) state;
  adaptra_tracebuf_init (&t, 4096);
  adaptra_tracebuf_push (&t, "one");
  adaptra_tracebuf_push (&t, "two");
  assert_int_equal (adaptra_tracebuf_take (&t, &out), 0);
  assert_string_equal (out.data, "one\ntwo\n");
  adaptra_strbuf_clear (&out);
  assert_int_equal (adaptra_tracebuf_take (&t, &out), 0);
  assert_int_equal (out.len, 0);
  adaptra_tracebuf_push (&t, "three");
  adaptra_tracebuf_take (&t, &out);
  assert_string_equal (out.data, "three\n");
  adaptra_strbuf_free (&out);
  adaptra_tracebuf_fini (&t);
}

/* A full buffer drops whole lines and counts them; no partial line
 * ever comes out, and the count restarts after a take.
 */
static void
test_full_drops_and_counts (void **state)
{
  struct adaptra_tracebuf t;
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (64);
  unsigned i;

  (void) state;
  adaptra_tracebuf_init (&t, 20);
  for (i = 0; i < 5; i++)
    adaptra_tracebuf_push (&t, "123456");       /* 7 bytes a line */
  assert_int_equal (adaptra_tracebuf_take (&t, &out), 3);
  assert_string_equal (out.data, "123456\n123456\n");
  adaptra_strbuf_clear (&out);
  adaptra_tracebuf_push (&t, "x");
  assert_int_equal (adaptra_tracebuf_take (&t, &out), 0);
  assert_string_equal (out.data, "x\n");
  adaptra_strbuf_free (&out);
  adaptra_tracebuf_fini (&t);
}

struct producer {
  struct adaptra_tracebuf *t;
  unsigned lines;
};

static void *
produce (void *arg)
{
  struct producer *p = arg;
  char line[32];
  unsigned i;

  for (i = 0; i < p->lines; i++) {
    snprintf (line, sizeof line, "line %u", i);
    adaptra_tracebuf_push (p->t, line);
  }
  return NULL;
}

/* Four producers and a consumer that takes as it goes: every line
 * pushed is either taken or counted dropped, exactly once.
 */
static void
test_concurrent_nothing_lost_uncounted (void **state)
{
  struct adaptra_tracebuf t;
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1024);
  struct producer p = { .t = &t, .lines = 20000 };
  pthread_t threads[4];
  uint64_t taken = 0, dropped = 0;
  unsigned i, running = 4;

  (void) state;
  adaptra_tracebuf_init (&t, 1024);
  for (i = 0; i < 4; i++)
    assert_int_equal (pthread_create (&threads[i], NULL, produce, &p), 0);
  while (running > 0) {
    dropped += adaptra_tracebuf_take (&t, &out);
    taken += count_lines (&out);
    adaptra_strbuf_clear (&out);
    if (taken + dropped == 4 * p.lines)
      break;
  }
  for (i = 0; i < 4; i++)
    pthread_join (threads[i], NULL);
  dropped += adaptra_tracebuf_take (&t, &out);
  taken += count_lines (&out);
  assert_int_equal (taken + dropped, 4 * p.lines);
  assert_true (taken > 0);
  adaptra_strbuf_free (&out);
  adaptra_tracebuf_fini (&t);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_lines_in_order),
    cmocka_unit_test (test_full_drops_and_counts),
    cmocka_unit_test (test_concurrent_nothing_lost_uncounted),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
