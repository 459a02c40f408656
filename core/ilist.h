/* ilist.h: doubly linked lists threaded through an array by index.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The pool's LRU lists (pages) and the stream table's recency list and
 * position-hash chains (streams) link the elements of one fixed array
 * by their 32-bit index rather than by pointer: half the size on LP64
 * (the 40-byte page descriptor depends on it, pool.c), and an index
 * names the element in the arrays beside it.
 *
 * An element carries a struct ilist_link per list it can be on; a list
 * is its head, tail and length.  ILIST_ARRAY (array, member) tells the
 * functions where the links of element i are, so one set of functions
 * serves every array and every member:
 *
 *   struct page { ...; struct ilist_link lru; ... } pages[N];
 *   struct ilist inactive;
 *
 *   ilist_init (&inactive);
 *   ilist_push_head (&inactive, ILIST_ARRAY (pages, lru), f);
 *   ilist_unlink (&inactive, ILIST_ARRAY (pages, lru), inactive.tail);
 *
 * No locking: the owner of the array serialises access.
 */

#ifndef ADAPTRA_ILIST_H
#define ADAPTRA_ILIST_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* "No element": the end of a list, or an empty one's head and tail. */
#define ILIST_NONE UINT32_MAX

struct ilist_link {
  uint32_t prev, next;          /* neighbours towards head and tail */
};

struct ilist {
  uint32_t head, tail;          /* head = most recently pushed */
  uint32_t len;
};

/* Where the links of every element of an array are: those of element
 * 0, and the distance between two elements.
 */
struct ilist_array {
  unsigned char *links0;
  size_t stride;
};

#define ILIST_ARRAY(array, member)                                      \
  ((struct ilist_array) { (unsigned char *) &(array)[0].member,         \
                          sizeof (array)[0] })

/* The links of element i. */
static inline struct ilist_link *
ilist_link_of (struct ilist_array a, uint32_t i)
{
  return (struct ilist_link *) (a.links0 + (size_t) i * a.stride);
}

static inline void
ilist_init (struct ilist *l)
{
  l->head = l->tail = ILIST_NONE;
  l->len = 0;
}

/* Put element i, on no list, at the head of l. */
static inline void
ilist_push_head (struct ilist *l, struct ilist_array a, uint32_t i)
{
  struct ilist_link *n = ilist_link_of (a, i);

  n->prev = ILIST_NONE;
  n->next = l->head;
  if (l->head != ILIST_NONE)
    ilist_link_of (a, l->head)->prev = i;
  else
    l->tail = i;
  l->head = i;
  l->len++;
}

/* Take element i off l (it must be on l); its links become ILIST_NONE. */
static inline void
ilist_unlink (struct ilist *l, struct ilist_array a, uint32_t i)
{
  struct ilist_link *n = ilist_link_of (a, i);

  assert (l->len > 0);
  if (n->prev != ILIST_NONE)
    ilist_link_of (a, n->prev)->next = n->next;
  else
    l->head = n->next;
  if (n->next != ILIST_NONE)
    ilist_link_of (a, n->next)->prev = n->prev;
  else
    l->tail = n->prev;
  n->prev = n->next = ILIST_NONE;
  l->len--;
}

#endif /* ADAPTRA_ILIST_H */
