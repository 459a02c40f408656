/* bounce.h: transfer buffers within a byte budget, own lock.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Transfer buffers: memory for backend reads that cannot go straight
 * into their destination, at most budget bytes held at once (in use
 * or kept for reuse).  Part of the pool's budget (engine.c carves them
 * out of adaptra-pool), so that adaptra's data memory stays within
 * adaptra-pool however many threads read.  Thread-safe: the budget
 * has its own lock.
 */

#ifndef ADAPTRA_BOUNCE_H
#define ADAPTRA_BOUNCE_H

#include <pthread.h>
#include <stddef.h>

/* Buffers come in two sizes: largest, and 1/ADAPTRA_BOUNCE_SMALL_DIV
 * of it (at least a byte), so that four small ones fit in the budget
 * where one large one does.  The quarter came with the two sizes
 * (ede2269, against a sanitizer's allocator keeping a buffer of every
 * size a job came in); no run has varied it.
 */
#define ADAPTRA_BOUNCE_CLASSES 2
#define ADAPTRA_BOUNCE_SMALL_DIV 4

struct adaptra_bounce_class {
  size_t size;                  /* bytes of each buffer */
  size_t nidle;                 /* buffers kept for reuse */
  void **idle;                  /* budget / size entries */
};

struct adaptra_bounce {
  pthread_mutex_t lock;
  pthread_cond_t freed;         /* bytes were given back */
  size_t budget;                /* at most this many bytes held */
  size_t held;                  /* in use or kept, now */
  struct adaptra_bounce_class class[ADAPTRA_BOUNCE_CLASSES];
};

/* Set up a budget of budget bytes for buffers of at most largest bytes
 * (0 < largest <= budget).  Returns 0, or -1 with errno set.
 */
extern int adaptra_bounce_init (struct adaptra_bounce *b, size_t budget,
                                size_t largest);

/* Free every kept buffer.  No buffer may be in use. */
extern void adaptra_bounce_fini (struct adaptra_bounce *b);

/* A buffer of at least bytes (0 < bytes <= largest), waiting while it
 * would take the bytes held over the budget.  Returns NULL only if an
 * allocation fails.  A thread must give its buffer back before it asks
 * for another (so that holders never wait on each other).
 */
extern void *adaptra_bounce_get (struct adaptra_bounce *b, size_t bytes);

/* Give back a buffer that adaptra_bounce_get gave for bytes. */
extern void adaptra_bounce_put (struct adaptra_bounce *b, void *buf,
                                size_t bytes);

#endif /* ADAPTRA_BOUNCE_H */
