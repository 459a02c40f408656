/* test-treap.c: the ordered index of unique key pairs (core/treap.h).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../core/treap.h"

#define N 20000

struct item {
  uint64_t payload;
  struct treap_node node;
  bool in;
};

static struct item items[N];

/* Keys of the items: (major, minor) spread and unique; minors repeat
 * across majors, and majors interleave with i.
 */
static uint64_t
major_of (size_t i)
{
  return i % 7;
}

static uint64_t
minor_of (size_t i)
{
  return (uint64_t) (i / 7) * 2654435761u + 1000;
}

/* Is (a, b) below (c, d)? */
static bool
lt (uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
  return a != c ? a < c : b < d;
}

/* Subtree n: its keys strictly between those of lo and hi (NULL: no
 * bound), its size and depth returned.
 */
static size_t
check_node (const struct treap_node *n, const struct treap_node *lo,
            const struct treap_node *hi, unsigned *depth)
{
  unsigned dl = 0, dr = 0;
  size_t count;

  if (!n) {
    *depth = 0;
    return 0;
  }
  assert_true (!lo || lt (lo->major, lo->minor, n->major, n->minor));
  assert_true (!hi || lt (n->major, n->minor, hi->major, hi->minor));
  count = 1 + check_node (n->left, lo, n, &dl) +
    check_node (n->right, n, hi, &dr);
  *depth = 1 + (dl > dr ? dl : dr);
  return count;
}

/* The brute force answers against the index's, at key (a, b). */
static void
check_queries (const struct treap *t, uint64_t a, uint64_t b)
{
  const struct treap_node *fl = NULL, *ce = NULL;
  const struct treap_node *f = treap_floor (t, a, b), *c = treap_ceil (t, a, b);
  size_t i;

  for (i = 0; i < N; i++) {
    const struct treap_node *n = &items[i].node;

    if (!items[i].in)
      continue;
    if (!lt (a, b, n->major, n->minor) &&
        (!fl || lt (fl->major, fl->minor, n->major, n->minor)))
      fl = n;
    if (!lt (n->major, n->minor, a, b) &&
        (!ce || lt (n->major, n->minor, ce->major, ce->minor)))
      ce = n;
  }
  assert_ptr_equal (f, fl);
  assert_ptr_equal (c, ce);
}

static void
test_empty (void **state)
{
  struct treap t = { 0 };

  (void) state;
  assert_null (treap_floor (&t, UINT64_MAX, UINT64_MAX));
  assert_null (treap_ceil (&t, 0, 0));
}

/* Insertions and removals in a scrambled order; floor and ceil agree
 * with a scan at every key, its neighbours and the ends.
 */
static void
test_floor_ceil (void **state)
{
  struct treap t = { 0 };
  unsigned depth;
  size_t i, j;

  (void) state;
  for (i = 0; i < 1000; i++) {
    j = (i * 7919) % 1000;
    treap_insert (&t, &items[j].node, major_of (j), minor_of (j));
    items[j].in = true;
  }
  assert_int_equal (check_node (t.root, NULL, NULL, &depth), 1000);
  assert_int_equal (t.n, 1000);
  for (i = 0; i < 1000; i += 2) {
    treap_remove (&t, &items[i].node);
    items[i].in = false;
  }
  assert_int_equal (check_node (t.root, NULL, NULL, &depth), 500);
  assert_int_equal (t.n, 500);
  for (i = 0; i < 1000; i += 37) {
    check_queries (&t, major_of (i), minor_of (i));
    check_queries (&t, major_of (i), minor_of (i) - 1);
    check_queries (&t, major_of (i), minor_of (i) + 1);
    check_queries (&t, major_of (i), 0);
    check_queries (&t, major_of (i), UINT64_MAX);
  }
  check_queries (&t, 0, 0);
  check_queries (&t, UINT64_MAX, UINT64_MAX);
  for (i = 1; i < 1000; i += 2) {
    treap_remove (&t, &items[i].node);
    items[i].in = false;
  }
  assert_null (t.root);
  assert_int_equal (t.n, 0);
}

/* Keys inserted in order, as a queue's pages mostly are, still make a
 * tree of logarithmic depth: a plain binary search tree would be a
 * list of N.  (2 log2 N is about 29 here; the expected depth of a
 * random treap is under 3 ln N, about 30.)
 */
static void
test_sorted_keys_stay_shallow (void **state)
{
  struct treap t = { 0 };
  unsigned depth;
  size_t i;

  (void) state;
  for (i = 0; i < N; i++)
    treap_insert (&t, &items[i].node, 0, i);
  assert_int_equal (check_node (t.root, NULL, NULL, &depth), N);
  assert_true (depth <= 60);
  for (i = 0; i < N; i++) {
    assert_ptr_equal (treap_floor (&t, 0, i), &items[i].node);
    treap_remove (&t, &items[i].node);
  }
  assert_null (t.root);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_empty),
    cmocka_unit_test (test_floor_ceil),
    cmocka_unit_test (test_sorted_keys_stay_shallow),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
