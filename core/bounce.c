/* bounce.c: transfer buffers for reads that miss their frames.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Transfer buffers for backend reads.
 *
 * A backend read fills one contiguous buffer, but the frames of a
 * window are wherever the pool found them.  Most reads need no extra
 * memory: frames that happen to be consecutive in the arena are read
 * into directly, and a client's miss that its own buffer covers is
 * read into that buffer (fetch.c).  The rest go through a buffer
 * from here and are copied into their frames.
 *
 * The buffers are bounded in bytes, not one per thread: nbdkit runs
 * 16 threads per connection, and a buffer kept by each of them would
 * make memory grow with the connections instead of staying inside the
 * pool.  A budget in bytes, not a number of equal slots, lets a few
 * workers read large windows of a seeking disk and many read small
 * chunks of a remote store (model.h) within the same memory: equal
 * slots sized for one case starve the other, too few for the many
 * workers of a remote store, too small for the windows of a disk.
 *
 * Two sizes, the largest and a quarter of it (bounce.h:
 * ADAPTRA_BOUNCE_SMALL_DIV), each with buffers kept for reuse once
 * made (an idle server costs nothing; a steady stream of reads does
 * not map and fault in fresh buffers, nor leave a sanitizer's
 * allocator a buffer of every size).  Kept buffers count
 * in the budget: a request that does not fit frees kept buffers of the
 * other size first, and waits only if what is in use leaves no room.
 *
 *      get (n) --> class: n <= largest / ADAPTRA_BOUNCE_SMALL_DIV
 *                         ? small : largest
 *                  reuse a kept one, or make one within the budget
 *      put     --> keep it (held stays), wake the waiters
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "bounce.h"

int
adaptra_bounce_init (struct adaptra_bounce *b, size_t budget, size_t largest)
{
  size_t i;

  if (largest == 0 || largest > budget) {
    errno = EINVAL;
    return -1;
  }
  b->budget = budget;
  b->held = 0;
  b->class[0].size = largest / ADAPTRA_BOUNCE_SMALL_DIV > 0
    ? largest / ADAPTRA_BOUNCE_SMALL_DIV : largest;
  b->class[1].size = largest;
  for (i = 0; i < ADAPTRA_BOUNCE_CLASSES; i++) {
    b->class[i].nidle = 0;
    b->class[i].idle = calloc (budget / b->class[i].size + 1,
                               sizeof b->class[i].idle[0]);
    if (!b->class[i].idle) {
      while (i > 0)
        free (b->class[--i].idle);
      return -1;
    }
  }
  pthread_mutex_init (&b->lock, NULL);
  pthread_cond_init (&b->freed, NULL);
  return 0;
}

void
adaptra_bounce_fini (struct adaptra_bounce *b)
{
  size_t i;

  for (i = 0; i < ADAPTRA_BOUNCE_CLASSES; i++) {
    while (b->class[i].nidle > 0)
      free (b->class[i].idle[--b->class[i].nidle]);
    free (b->class[i].idle);
    b->class[i].idle = NULL;
  }
  pthread_cond_destroy (&b->freed);
  pthread_mutex_destroy (&b->lock);
}

static struct adaptra_bounce_class *
class_of (struct adaptra_bounce *b, size_t bytes)
{
  return bytes <= b->class[0].size ? &b->class[0] : &b->class[1];
}

void *
adaptra_bounce_get (struct adaptra_bounce *b, size_t bytes)
{
  struct adaptra_bounce_class *c = class_of (b, bytes);
  struct adaptra_bounce_class *other = c == &b->class[0] ? &b->class[1]
                                                         : &b->class[0];
  void *buf = NULL;

  assert (bytes > 0 && bytes <= b->class[1].size);
  pthread_mutex_lock (&b->lock);
  for (;;) {
    if (c->nidle > 0) {
      buf = c->idle[--c->nidle];
      break;
    }
    /* Room for a new one, after freeing kept ones of the other size. */
    while (b->held + c->size > b->budget && other->nidle > 0) {
      free (other->idle[--other->nidle]);
      b->held -= other->size;
    }
    if (b->held + c->size <= b->budget) {
      b->held += c->size;
      pthread_mutex_unlock (&b->lock);
      buf = malloc (c->size);
      pthread_mutex_lock (&b->lock);
      if (!buf) {
        b->held -= c->size;
        pthread_cond_broadcast (&b->freed);
      }
      break;
    }
    pthread_cond_wait (&b->freed, &b->lock);
  }
  pthread_mutex_unlock (&b->lock);
  return buf;
}

void
adaptra_bounce_put (struct adaptra_bounce *b, void *buf, size_t bytes)
{
  struct adaptra_bounce_class *c = class_of (b, bytes);

  pthread_mutex_lock (&b->lock);
  c->idle[c->nidle++] = buf;
  /* A waiter of either size may use or free it now. */
  pthread_cond_broadcast (&b->freed);
  pthread_mutex_unlock (&b->lock);
}
