/* bounce.h: a fixed number of transfer slots, own lock.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Transfer buffers: a fixed number of equal slots for backend reads
 * that cannot go straight into their destination.  Part of the pool's
 * budget (engine.c carves them out of adaptra-pool), so that adaptra's
 * data memory stays within adaptra-pool however many threads read.
 * Thread-safe: the slots have their own lock.
 */

#ifndef ADAPTRA_BOUNCE_H
#define ADAPTRA_BOUNCE_H

#include <pthread.h>
#include <stddef.h>

struct adaptra_bounce {
  pthread_mutex_t lock;
  pthread_cond_t freed;         /* a slot was put back */
  size_t slot_size;             /* bytes per slot */
  unsigned nslots;              /* at most this many ever exist */
  unsigned made;                /* allocated so far (lazily) */
  unsigned nidle;               /* idle slots in idle[] */
  void **idle;                  /* nslots entries */
};

/* Set up nslots slots of slot_size bytes each (both > 0), allocated on
 * first use and kept until adaptra_bounce_fini.  Returns 0, or -1 with
 * errno set.
 */
extern int adaptra_bounce_init (struct adaptra_bounce *b, unsigned nslots,
                                size_t slot_size);

/* Free every slot.  No slot may be in use. */
extern void adaptra_bounce_fini (struct adaptra_bounce *b);

/* A slot of b->slot_size bytes, waiting while all nslots are in use.
 * Returns NULL only if the first allocation of a slot fails.  A thread
 * must put its slot back before it asks for another (so that holders
 * never wait on each other).
 */
extern void *adaptra_bounce_get (struct adaptra_bounce *b);

/* Give back a slot from adaptra_bounce_get, waking one waiter. */
extern void adaptra_bounce_put (struct adaptra_bounce *b, void *slot);

#endif /* ADAPTRA_BOUNCE_H */
