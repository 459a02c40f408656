/* test-ilist.c: index-linked lists (core/ilist.h).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../core/ilist.h"

/* Two lists through one array, links at different offsets. */
struct item {
  uint64_t payload;
  struct ilist_link a;
  uint16_t pad;
  struct ilist_link b;
};

#define N 6

/* l holds exactly want[0..n) from head to tail, both ways. */
static void
check_list (const struct ilist *l, struct item *items, size_t off,
            const uint32_t *want, uint32_t n)
{
  struct ilist_array arr = { (unsigned char *) items + off, sizeof items[0] };
  uint32_t i, k;

  assert_int_equal (l->len, n);
  for (i = l->head, k = 0; i != ILIST_NONE; i = ilist_link_of (arr, i)->next)
    assert_int_equal (i, want[k++]);
  assert_int_equal (k, n);
  for (i = l->tail; i != ILIST_NONE; i = ilist_link_of (arr, i)->prev)
    assert_int_equal (i, want[--k]);
  assert_int_equal (k, 0);
}

static void
empty_list (void **state)
{
  struct ilist l;

  ilist_init (&l);
  assert_int_equal (l.head, ILIST_NONE);
  assert_int_equal (l.tail, ILIST_NONE);
  assert_int_equal (l.len, 0);
}

static void
push_head_orders_most_recent_first (void **state)
{
  struct item items[N] = { { 0 } };
  struct ilist l;
  static const uint32_t want[] = { 4, 2, 0 };

  ilist_init (&l);
  ilist_push_head (&l, ILIST_ARRAY (items, a), 0);
  ilist_push_head (&l, ILIST_ARRAY (items, a), 2);
  ilist_push_head (&l, ILIST_ARRAY (items, a), 4);
  check_list (&l, items, offsetof (struct item, a), want, 3);
}

/* Unlinking the head, the tail, a middle element and the last one. */
static void
unlink_anywhere (void **state)
{
  struct item items[N] = { { 0 } };
  struct ilist l;
  uint32_t i;
  static const uint32_t all[] = { 5, 4, 3, 2, 1, 0 };
  static const uint32_t no_ends[] = { 4, 3, 2, 1 };
  static const uint32_t no_middle[] = { 4, 2, 1 };
  static const uint32_t one[] = { 2 };

  ilist_init (&l);
  for (i = 0; i < N; i++)
    ilist_push_head (&l, ILIST_ARRAY (items, a), i);
  check_list (&l, items, offsetof (struct item, a), all, 6);
  ilist_unlink (&l, ILIST_ARRAY (items, a), 5);
  ilist_unlink (&l, ILIST_ARRAY (items, a), 0);
  assert_int_equal (items[0].a.prev, ILIST_NONE);
  assert_int_equal (items[0].a.next, ILIST_NONE);
  check_list (&l, items, offsetof (struct item, a), no_ends, 4);
  ilist_unlink (&l, ILIST_ARRAY (items, a), 3);
  check_list (&l, items, offsetof (struct item, a), no_middle, 3);
  ilist_unlink (&l, ILIST_ARRAY (items, a), 4);
  ilist_unlink (&l, ILIST_ARRAY (items, a), 1);
  check_list (&l, items, offsetof (struct item, a), one, 1);
  ilist_unlink (&l, ILIST_ARRAY (items, a), 2);
  assert_int_equal (l.head, ILIST_NONE);
  assert_int_equal (l.tail, ILIST_NONE);
  assert_int_equal (l.len, 0);
}

/* An element may be on one list per link member; the lists do not
 * disturb each other, and an element moves between lists by unlink
 * and push.
 */
static void
two_members_two_lists (void **state)
{
  struct item items[N] = { { 0 } };
  struct ilist even, odd, all;
  uint32_t i;
  static const uint32_t want_even[] = { 4, 2, 0 };
  static const uint32_t want_odd[] = { 0, 5, 3, 1 };
  static const uint32_t want_odd_before[] = { 5, 3, 1 };
  static const uint32_t want_all[] = { 5, 4, 3, 2, 1, 0 };

  ilist_init (&even);
  ilist_init (&odd);
  ilist_init (&all);
  for (i = 0; i < N; i++) {
    items[i].payload = i;
    ilist_push_head (i % 2 ? &odd : &even, ILIST_ARRAY (items, a), i);
    ilist_push_head (&all, ILIST_ARRAY (items, b), i);
  }
  check_list (&even, items, offsetof (struct item, a), want_even, 3);
  check_list (&odd, items, offsetof (struct item, a), want_odd_before, 3);
  ilist_unlink (&even, ILIST_ARRAY (items, a), 0);
  ilist_push_head (&odd, ILIST_ARRAY (items, a), 0);
  check_list (&odd, items, offsetof (struct item, a), want_odd, 4);
  check_list (&all, items, offsetof (struct item, b), want_all, 6);
  for (i = 0; i < N; i++)
    assert_int_equal (items[i].payload, i);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (empty_list),
    cmocka_unit_test (push_head_orders_most_recent_first),
    cmocka_unit_test (unlink_anywhere),
    cmocka_unit_test (two_members_two_lists),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
