/* bounce.h: transfer buffers within a byte budget, own lock.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Transfer buffers: memory for backend reads that cannot go straight
 * into their destination, at most budget bytes in use at once.  Part
 * of the pool's budget (engine.c carves them out of adaptra-pool), so
 * that adaptra's data memory stays within adaptra-pool however many
 * threads read.  Thread-safe: the budget has its own lock.
 */

#ifndef ADAPTRA_BOUNCE_H
#define ADAPTRA_BOUNCE_H

#include <pthread.h>
#include <stddef.h>

struct adaptra_bounce {
  pthread_mutex_t lock;
  pthread_cond_t freed;         /* bytes were given back */
  size_t budget;                /* at most this many bytes in use */
  size_t largest;               /* the largest buffer one may ask for */
  size_t used;                  /* in use now */
};

/* Set up a budget of budget bytes for buffers of at most largest bytes
 * (0 < largest <= budget).  Returns 0, or -1 with errno set.
 */
extern int adaptra_bounce_init (struct adaptra_bounce *b, size_t budget,
                                size_t largest);

/* No buffer may be in use. */
extern void adaptra_bounce_fini (struct adaptra_bounce *b);

/* A buffer of bytes (0 < bytes <= b->largest), waiting while it would
 * take the bytes in use over the budget.  Returns NULL only if the
 * allocation fails.  A thread must give its buffer back before it asks
 * for another (so that holders never wait on each other).
 */
extern void *adaptra_bounce_get (struct adaptra_bounce *b, size_t bytes);

/* Give back a buffer of bytes from adaptra_bounce_get. */
extern void adaptra_bounce_put (struct adaptra_bounce *b, void *buf,
                                size_t bytes);

#endif /* ADAPTRA_BOUNCE_H */
