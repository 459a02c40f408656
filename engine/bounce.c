/* bounce.c: transfer slots for reads that miss their frames.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Transfer buffers for backend reads.
 *
 * A backend read fills one contiguous buffer, but the frames of a
 * window are wherever the pool found them.  Most reads need no extra
 * memory: frames that happen to be consecutive in the arena are read
 * into directly, and a client's miss that its own buffer covers is
 * read into that buffer (prefetch.c).  The rest go through a slot
 * from here and are copied into their frames.
 *
 * The slots are few and fixed, not one per thread: nbdkit runs 16
 * threads per connection, and a buffer kept by each of them would
 * make memory grow with the connections instead of staying inside the
 * pool.  Slots are allocated on first use (an idle server costs
 * nothing) and then kept, so a steady stream of reads does not map
 * and fault in a fresh buffer each time.  When every slot is busy a
 * reader waits: transfers are bounded, as the pool is.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>

#include "bounce.h"

int
adaptra_bounce_init (struct adaptra_bounce *b, unsigned nslots,
                     size_t slot_size)
{
  if (nslots == 0 || slot_size == 0) {
    errno = EINVAL;
    return -1;
  }
  b->idle = calloc (nslots, sizeof *b->idle);
  if (!b->idle)
    return -1;
  b->slot_size = slot_size;
  b->nslots = nslots;
  b->made = 0;
  b->nidle = 0;
  pthread_mutex_init (&b->lock, NULL);
  pthread_cond_init (&b->freed, NULL);
  return 0;
}

void
adaptra_bounce_fini (struct adaptra_bounce *b)
{
  while (b->nidle > 0)
    free (b->idle[--b->nidle]);
  free (b->idle);
  b->idle = NULL;
  pthread_cond_destroy (&b->freed);
  pthread_mutex_destroy (&b->lock);
}

void *
adaptra_bounce_get (struct adaptra_bounce *b)
{
  void *slot = NULL;

  pthread_mutex_lock (&b->lock);
  while (b->nidle == 0 && b->made == b->nslots)
    pthread_cond_wait (&b->freed, &b->lock);
  if (b->nidle > 0)
    slot = b->idle[--b->nidle];
  else {
    /* Count it made before allocating, so that nslots is a bound even
     * while the allocation runs without the lock.
     */
    b->made++;
    pthread_mutex_unlock (&b->lock);
    slot = malloc (b->slot_size);
    pthread_mutex_lock (&b->lock);
    if (!slot) {
      b->made--;
      pthread_cond_signal (&b->freed);
    }
  }
  pthread_mutex_unlock (&b->lock);
  return slot;
}

void
adaptra_bounce_put (struct adaptra_bounce *b, void *slot)
{
  pthread_mutex_lock (&b->lock);
  b->idle[b->nidle++] = slot;
  pthread_cond_signal (&b->freed);
  pthread_mutex_unlock (&b->lock);
}
