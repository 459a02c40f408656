/* treap.c: an intrusive ordered index of unique key pairs (a treap).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* See treap.h.  Every operation is a loop down one path of the tree:
 * no recursion, no allocation.
 */

#include <config.h>

#include <assert.h>
#include <stdbool.h>

#include "treap.h"

/* Is node n's key below (major, minor)? */
static bool
below (const struct treap_node *n, uint64_t major, uint64_t minor)
{
  return n->major != major ? n->major < major : n->minor < minor;
}

/* A node's heap priority: splitmix64's finaliser of its key, which
 * scatters consecutive keys.  Ties cost nothing but balance.
 */
static uint64_t
priority (const struct treap_node *n)
{
  uint64_t z = n->minor + n->major * UINT64_C (0xd1b54a32d192ed03) +
    UINT64_C (0x9e3779b97f4a7c15);

  z = (z ^ (z >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Split the subtree t into the keys below (major, minor) (*l) and the
 * rest (*r).
 */
static void
split (struct treap_node *t, uint64_t major, uint64_t minor,
       struct treap_node **l, struct treap_node **r)
{
  while (t) {
    if (below (t, major, minor)) {
      *l = t;
      l = &t->right;
      t = t->right;
    }
    else {
      *r = t;
      r = &t->left;
      t = t->left;
    }
  }
  *l = *r = NULL;
}

/* Join subtrees a and b, every key of a below every key of b. */
static struct treap_node *
merge (struct treap_node *a, struct treap_node *b)
{
  struct treap_node *root, **at = &root;

  while (a && b) {
    if (priority (a) > priority (b)) {
      *at = a;
      at = &a->right;
      a = a->right;
    }
    else {
      *at = b;
      at = &b->left;
      b = b->left;
    }
  }
  *at = a ? a : b;
  return root;
}

void
treap_insert (struct treap *t, struct treap_node *node, uint64_t major,
              uint64_t minor)
{
  struct treap_node **at = &t->root;
  uint64_t p;

  node->major = major;
  node->minor = minor;
  p = priority (node);
  /* Down to where node's priority puts it, which then takes the
   * subtree there, split by its key.
   */
  while (*at && priority (*at) > p) {
    assert ((*at)->major != major || (*at)->minor != minor);
    at = below (node, (*at)->major, (*at)->minor) ? &(*at)->left
      : &(*at)->right;
  }
  split (*at, major, minor, &node->left, &node->right);
  *at = node;
  t->n++;
}

void
treap_remove (struct treap *t, struct treap_node *node)
{
  struct treap_node **at = &t->root;

  while (*at != node) {
    assert (*at);
    at = below (node, (*at)->major, (*at)->minor) ? &(*at)->left
      : &(*at)->right;
  }
  *at = merge (node->left, node->right);
  node->left = node->right = NULL;
  t->n--;
}

struct treap_node *
treap_floor (const struct treap *t, uint64_t major, uint64_t minor)
{
  struct treap_node *n = t->root, *best = NULL;

  while (n) {
    if (below (n, major, minor)) {
      best = n;
      n = n->right;
    }
    else if (n->major == major && n->minor == minor)
      return n;
    else
      n = n->left;
  }
  return best;
}

struct treap_node *
treap_ceil (const struct treap *t, uint64_t major, uint64_t minor)
{
  struct treap_node *n = t->root, *best = NULL;

  while (n) {
    if (below (n, major, minor))
      n = n->right;
    else if (n->major == major && n->minor == minor)
      return n;
    else {
      best = n;
      n = n->left;
    }
  }
  return best;
}
