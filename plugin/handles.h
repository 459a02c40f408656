/* handles.h: the workers' backend handles, opened lazily, bounded.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* What the engine reads through (its ctx): a struct handles.
 *
 *   - one context used as is: a connection's own (its reads, and the
 *     workers' over a plugin that takes parallel requests on one
 *     handle);
 *   - a set of shared contexts on one export, for a plugin that
 *     serialises requests per handle (curl, ssh): a read takes a free
 *     one, or opens one more while fewer than the set's ceiling
 *     (adaptra-workers) are open, or waits for one.  None is opened
 *     until a worker reads (nothing in a client's handshake: a
 *     read-only curl export's first client costs one HTTP connection,
 *     not one per worker), and as many are open as reads ran at once,
 *     which the engine's gate sizes by its model of the backend
 *     (core/model.h).  A handle left unused for HANDLES_IDLE_NS is
 *     closed, down to none.
 */

#ifndef ADAPTRA_HANDLES_H
#define ADAPTRA_HANDLES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <nbdkit-filter.h>

/* A handle of a set unused this long is closed (checked every half of
 * it): long enough to keep the handles of a scan through its client's
 * pauses, short enough that an idle server holds none.
 */
#define HANDLES_IDLE_NS UINT64_C (2000000000)

struct handle;

struct handles {
  nbdkit_next *next;            /* the context used as is, or NULL: */
  /* a set of shared contexts on export name, of size bytes */
  nbdkit_backend *backend;
  char *name;
  uint64_t size;
  unsigned max;                 /* most open at once */
  unsigned open;                /* open now, or being opened */
  struct handle *free;          /* open and not reading, last used first */
  pthread_cond_t freed;         /* a handle went back to free */
  struct handles *older;        /* the sets, for the reaper */
};

/* A context used as is (no allocation, nothing to free). */
static inline void
handles_single (struct handles *h, nbdkit_next *next)
{
  *h = (struct handles) { .next = next };
}

/* A set of at most max shared contexts on export name of size bytes;
 * NULL without memory.  Opens nothing yet.
 */
extern struct handles *handles_new_set (nbdkit_backend *backend,
                                        const char *name, uint64_t size,
                                        unsigned max);

/* Close a set's contexts and free it; no read may use it any more. */
extern void handles_free_set (struct handles *h);

/* A pread through h, for the engine (struct adaptra_backend). */
extern int handles_pread (void *h, void *buf, uint32_t count,
                          uint64_t offset);

/* Contexts the sets hold open now, in all. */
extern uint64_t handles_open (void);

/* Stop the reaper (after the last set is freed). */
extern void handles_fini (void);

#endif /* ADAPTRA_HANDLES_H */
