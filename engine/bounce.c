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
 * read into that buffer (prefetch.c).  The rest go through a buffer
 * from here and are copied into their frames.
 *
 * The buffers are bounded in bytes, not one per thread: nbdkit runs
 * 16 threads per connection, and a buffer kept by each of them would
 * make memory grow with the connections instead of staying inside the
 * pool.  When a buffer would take the bytes in use over the budget, a
 * reader waits: transfers are bounded, as the pool is.  A budget in
 * bytes, not a number of equal slots, lets 4 workers read 512 KiB
 * windows of a seeking disk and 16 read 128 KiB chunks of a remote
 * store (flight.h) within the same memory: 8 slots of 512 KiB held the
 * 16 workers of W2 to 122 MiB/s of its 200, 20 slots of 204 KiB cut
 * the disk's W3 from 96 to 80 MiB/s.  The buffers come from malloc,
 * whose free lists keep them for the next read of their size.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "bounce.h"

int
adaptra_bounce_init (struct adaptra_bounce *b, size_t budget, size_t largest)
{
  if (largest == 0 || largest > budget) {
    errno = EINVAL;
    return -1;
  }
  b->budget = budget;
  b->largest = largest;
  b->used = 0;
  pthread_mutex_init (&b->lock, NULL);
  pthread_cond_init (&b->freed, NULL);
  return 0;
}

void
adaptra_bounce_fini (struct adaptra_bounce *b)
{
  assert (b->used == 0);
  pthread_cond_destroy (&b->freed);
  pthread_mutex_destroy (&b->lock);
}

void *
adaptra_bounce_get (struct adaptra_bounce *b, size_t bytes)
{
  void *buf;

  assert (bytes > 0 && bytes <= b->largest);
  pthread_mutex_lock (&b->lock);
  while (b->used + bytes > b->budget)
    pthread_cond_wait (&b->freed, &b->lock);
  b->used += bytes;
  pthread_mutex_unlock (&b->lock);
  buf = malloc (bytes);
  if (!buf) {
    pthread_mutex_lock (&b->lock);
    b->used -= bytes;
    pthread_cond_broadcast (&b->freed);
    pthread_mutex_unlock (&b->lock);
  }
  return buf;
}

void
adaptra_bounce_put (struct adaptra_bounce *b, void *buf, size_t bytes)
{
  free (buf);
  pthread_mutex_lock (&b->lock);
  b->used -= bytes;
  /* Several waiters of smaller buffers may fit now. */
  pthread_cond_broadcast (&b->freed);
  pthread_mutex_unlock (&b->lock);
}
