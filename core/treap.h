/* treap.h: an intrusive ordered index of unique key pairs (a treap).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* An ordered index over elements that embed a struct treap_node: the
 * element with the largest key at or below a key, the one with the
 * smallest at or above, each in O(log n) expected.  A key is a pair of
 * 64-bit numbers, in lexicographic order (major, then minor).  The
 * prefetch queue finds with it the job holding a page, a stream's last
 * job and where a job goes in fair order (queue.c), instead of
 * walking the queue, whose length grows with the streams.
 *
 * A treap (Seidel and Aragon, "Randomized search trees", 1996): a
 * binary search tree by key that is a heap by priority.  The priority
 * is a fixed mix of the key (treap.c: priority), not a random draw:
 * the shape, and so every run, is deterministic, and keys inserted in
 * order still give a tree of logarithmic depth.  The mix folds the
 * pair into 64 bits, so two keys may tie in priority: that costs
 * balance, never order.
 *
 * Keys are unique within an index.  No locking: the owner serialises
 * access.  No allocation: nodes live in the caller's elements.
 */

#ifndef ADAPTRA_TREAP_H
#define ADAPTRA_TREAP_H

#include <stddef.h>
#include <stdint.h>

struct treap_node {
  struct treap_node *left, *right;
  uint64_t major, minor;        /* the key */
};

/* The element of type holding node as its member. */
#define treap_entry(node, type, member) \
  ((type *) (void *) ((char *) (node) - offsetof (type, member)))

struct treap {
  struct treap_node *root;
  size_t n;
};

/* Add node with key (major, minor), which is not in t yet. */
extern void treap_insert (struct treap *t, struct treap_node *node,
                          uint64_t major, uint64_t minor);

/* Take node (in t) out. */
extern void treap_remove (struct treap *t, struct treap_node *node);

/* The node with the largest key <= (major, minor), or NULL. */
extern struct treap_node *treap_floor (const struct treap *t, uint64_t major,
                                       uint64_t minor);

/* The node with the smallest key >= (major, minor), or NULL. */
extern struct treap_node *treap_ceil (const struct treap *t, uint64_t major,
                                      uint64_t minor);

#endif /* ADAPTRA_TREAP_H */
