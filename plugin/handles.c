/* handles.c: the workers' backend handles, opened lazily, bounded.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The sets of handles.h.  One lock guards every set, the count and the
 * reaper; it is never held while a context is opened, read or closed
 * (an HTTP request each, for curl).  The reaper is a thread that wakes
 * every HANDLES_IDLE_NS / 2 and closes the handles that were free that
 * long; it starts with the first set.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adaptra/engine.h"
#include "handles.h"

struct handle {
  nbdkit_next *next;
  uint64_t used_ns;             /* when it was last given back */
  struct handle *link;          /* the next free one, used earlier */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reaper_wake = PTHREAD_COND_INITIALIZER;
static struct handles *sets;    /* every set, newest first */
static uint64_t nopen;          /* contexts the sets hold open */
static bool reaper_running, reaper_stop;
static pthread_t reaper;

static void
close_context (nbdkit_next *next)
{
  next->finalize (next);
  nbdkit_next_context_close (next);
}

/* Open a shared context on export name; NULL when it cannot be used:
 * it must see the size that the connections see.
 */
static nbdkit_next *
open_context (nbdkit_backend *backend, const char *name, uint64_t size)
{
  nbdkit_next *next = nbdkit_next_context_open (backend, 1, name, 1);
  int64_t r;

  if (next == NULL)
    return NULL;
  if (next->prepare (next) == -1 || (r = next->get_size (next)) == -1 ||
      (uint64_t) r != size) {
    close_context (next);
    return NULL;
  }
  return next;
}

static int
pread_on (nbdkit_next *next, void *buf, uint32_t count, uint64_t offset)
{
  int err = 0;

  if (next->pread (next, buf, count, offset, 0, &err) == -1)
    return err ? err : EIO;
  return 0;
}

/* Close the handles of list. */
static void
close_list (struct handle *list)
{
  while (list) {
    struct handle *next = list->link;

    close_context (list->next);
    free (list);
    list = next;
  }
}

/* Detach from h the free handles given back before cutoff.  Lock held. */
static struct handle *
detach_idle (struct handles *h, uint64_t cutoff)
{
  struct handle **at = &h->free, *idle;

  while (*at && (*at)->used_ns >= cutoff)
    at = &(*at)->link;
  idle = *at;
  *at = NULL;
  for (struct handle *d = idle; d; d = d->link) {
    h->open--;
    nopen--;
  }
  return idle;
}

static void *
reaper_main (void *arg)
{
  (void) arg;
  pthread_mutex_lock (&lock);
  while (!reaper_stop) {
    struct timespec until;
    struct handle *idle = NULL;
    struct handles *h;

    /* pthread_cond_timedwait waits on CLOCK_REALTIME: the wait is only
     * the period; the cutoff is on the monotonic clock.
     */
    clock_gettime (CLOCK_REALTIME, &until);
    until.tv_sec += (time_t) (HANDLES_IDLE_NS / 2 / 1000000000);
    until.tv_nsec += (long) (HANDLES_IDLE_NS / 2 % 1000000000);
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait (&reaper_wake, &lock, &until);
    for (h = sets; h && !reaper_stop; h = h->older) {
      struct handle *more = detach_idle (h, adaptra_monotonic_ns () -
                                         HANDLES_IDLE_NS), *end;

      if (more) {
        for (end = more; end->link; end = end->link)
          ;
        end->link = idle;
        idle = more;
      }
    }
    pthread_mutex_unlock (&lock);
    close_list (idle);
    pthread_mutex_lock (&lock);
  }
  pthread_mutex_unlock (&lock);
  return NULL;
}

struct handles *
handles_new_set (nbdkit_backend *backend, const char *name, uint64_t size,
                 unsigned max)
{
  struct handles *h = calloc (1, sizeof *h);

  if (h == NULL || (h->name = strdup (name)) == NULL) {
    free (h);
    return NULL;
  }
  h->backend = backend;
  h->size = size;
  h->max = max;
  pthread_cond_init (&h->freed, NULL);
  pthread_mutex_lock (&lock);
  if (!reaper_running &&
      pthread_create (&reaper, NULL, reaper_main, NULL) == 0)
    reaper_running = true;
  h->older = sets;
  sets = h;
  pthread_mutex_unlock (&lock);
  return h;
}

void
handles_free_set (struct handles *h)
{
  struct handles **at;
  struct handle *all;

  pthread_mutex_lock (&lock);
  for (at = &sets; *at != h; at = &(*at)->older)
    ;
  *at = h->older;
  all = detach_idle (h, UINT64_MAX);
  pthread_mutex_unlock (&lock);
  close_list (all);
  pthread_cond_destroy (&h->freed);
  free (h->name);
  free (h);
}

int
handles_pread (void *ctx, void *buf, uint32_t count, uint64_t offset)
{
  struct handles *h = ctx;
  struct handle *d = NULL;
  nbdkit_next *next;
  int err;

  if (h->next)
    return pread_on (h->next, buf, count, offset);
  pthread_mutex_lock (&lock);
  while (d == NULL) {
    if (h->free) {
      d = h->free;
      h->free = d->link;
    }
    else if (h->open < h->max) {
      h->open++;
      nopen++;
      pthread_mutex_unlock (&lock);
      next = open_context (h->backend, h->name, h->size);
      d = next ? malloc (sizeof *d) : NULL;
      if (d)
        d->next = next;
      else if (next)
        close_context (next);
      pthread_mutex_lock (&lock);
      if (d == NULL) {
        h->open--;
        nopen--;
        /* None to wait for: this read fails (a prefetch: harmless);
         * else it waits for one of the others.
         */
        if (h->open == 0) {
          pthread_mutex_unlock (&lock);
          return EIO;
        }
        pthread_cond_wait (&h->freed, &lock);
      }
    }
    else
      pthread_cond_wait (&h->freed, &lock);
  }
  pthread_mutex_unlock (&lock);

  err = pread_on (d->next, buf, count, offset);

  pthread_mutex_lock (&lock);
  d->used_ns = adaptra_monotonic_ns ();
  d->link = h->free;
  h->free = d;
  pthread_cond_signal (&h->freed);
  pthread_mutex_unlock (&lock);
  return err;
}

uint64_t
handles_open (void)
{
  uint64_t n;

  pthread_mutex_lock (&lock);
  n = nopen;
  pthread_mutex_unlock (&lock);
  return n;
}

void
handles_fini (void)
{
  pthread_mutex_lock (&lock);
  reaper_stop = true;
  pthread_cond_signal (&reaper_wake);
  pthread_mutex_unlock (&lock);
  if (reaper_running)
    pthread_join (reaper, NULL);
  reaper_running = reaper_stop = false;
}
