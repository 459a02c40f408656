/* volume.c: volumes and clients.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Volumes and clients.
 *
 * Terms: docs/DESIGN.md §2 and §5.
 *
 * Every volume has a slot of ADAPTRA_VOLUME_SHIFT bits in the engine's
 * one byte space (its base is its id shifted so), so pages of
 * different volumes never share a page number and one pool, one stream
 * table and one queue serve them all.  The volume table grows by
 * doubling up to ADAPTRA_VOLUMES_MAX; a closed volume's slot is reused
 * by the next open.
 *
 * A volume's contexts are what the workers read it through.  Changing
 * them waits for the volume's running jobs only if a context is taken
 * away (a running job may be reading through it and the caller closes
 * it next); lending one more never waits.  Closing a volume drops its
 * queued jobs, waits for its running ones, and frees its pages and its
 * streams.
 *
 * The client table grows by chunks that never move
 * (ADAPTRA_CLIENT_CHUNK0 << k clients in chunk k), published with a
 * release store of nclients, so the hit path finds a client by id
 * without the engine lock (read.c's note says why that is safe).  A
 * closed client's bytes and read-ahead hits are added to its volume's,
 * so a volume's totals are its closed clients' plus its open ones'
 * (snapshot.c sums them).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "range.h"
#include "engine-impl.h"

int
adaptra_volume_open (struct adaptra_engine *e, const char *name,
                     uint64_t size, unsigned flags, int *id)
{
  struct adaptra_volume *v;
  size_t i;

  if (size > ADAPTRA_VOLUME_SIZE_MAX)
    return EFBIG;
  v = calloc (1, sizeof *v);
  if (!v)
    return ENOMEM;
  adaptra_lock (e);
  for (i = 0; i < e->nvolumes && e->volumes[i]; i++)
    ;
  if (i == e->nvolumes && i < ADAPTRA_VOLUMES_MAX) {
    size_t n = e->nvolumes ? 2 * e->nvolumes : 8;
    struct adaptra_volume **table;

    if (n > ADAPTRA_VOLUMES_MAX)
      n = ADAPTRA_VOLUMES_MAX;
    table = realloc (e->volumes, n * sizeof *table);
    if (table) {
      memset (table + e->nvolumes, 0, (n - e->nvolumes) * sizeof *table);
      e->volumes = table;
      e->nvolumes = n;
    }
  }
  if (i == e->nvolumes) {
    adaptra_unlock (e);
    free (v);
    return i == ADAPTRA_VOLUMES_MAX ? ENOSPC : ENOMEM;
  }
  v->id = (int) i;
  v->flags = flags;
  snprintf (v->name, sizeof v->name, "%s", name ? name : "");
  v->size = size;
  v->base = (uint64_t) i << ADAPTRA_VOLUME_SHIFT;
  v->first_page = v->base >> e->page_shift;
  v->end_page = v->first_page + adaptra_pages_in (size, e->page_shift);
  e->volumes[i] = v;
  adaptra_unlock (e);
  *id = v->id;
  return 0;
}

/* Wait until no job of v runs.  Lock held on entry and exit, dropped
 * while waiting.
 */
static void
wait_jobs (struct adaptra_engine *e, const struct adaptra_volume *v)
{
  assert_locked (e);
  while (v->running > 0)
    adaptra_wait (e, &e->job_done, UINT64_MAX);
}

/* True if one of v's contexts is not among the n of ctxs.  Lock held. */
static bool
drops_a_context (const struct adaptra_volume *v, unsigned n, void **ctxs)
{
  unsigned i, j;

  for (i = 0; i < v->nctx; i++) {
    for (j = 0; j < n && ctxs[j] != v->ctxs[i]; j++)
      ;
    if (j == n)
      return true;
  }
  return false;
}

int
adaptra_volume_set_contexts (struct adaptra_engine *e, int volume, unsigned n,
                             void **ctxs)
{
  struct adaptra_volume *v;
  void **copy = NULL;

  if (n > 0) {
    copy = malloc (n * sizeof *copy);
    if (!copy)
      return ENOMEM;
    memcpy (copy, ctxs, n * sizeof *copy);
  }
  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (v) {
    /* Only a context taken away may still be in use by a running job
     * that the caller would close under it.  A connection that only
     * lends one more (a guest joining a boot storm) must not wait:
     * while the queue is busy, no moment comes when none of the
     * volume's jobs runs, and it waited in its handshake until the
     * whole queue drained (seconds, with a profile being followed).
     */
    bool dropping = drops_a_context (v, n, copy);

    free (v->ctxs);
    v->ctxs = copy;
    v->nctx = n;
    if (n == 0)
      adaptra_prefetch_drop_queue (e, v);
    else {
      pthread_cond_broadcast (&e->job_queued);
      pthread_cond_broadcast (&e->hint_queued);
    }
    if (dropping)
      wait_jobs (e, v);
  }
  else
    free (copy);
  adaptra_unlock (e);
  return 0;
}

void
adaptra_volume_close (struct adaptra_engine *e, int volume)
{
  struct adaptra_volume *v;
  struct adaptra_stream *s, *next;

  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (v) {
    adaptra_prefetch_drop_queue (e, v);
    wait_jobs (e, v);
    adaptra_pool_invalidate (&e->pool, v->first_page, v->end_page);
    for (s = adaptra_streams_first (&e->streams); s; s = next) {
      next = adaptra_streams_after (&e->streams, s);
      if (s->volume == v->id)
        adaptra_streams_free (&e->streams, s);
    }
    e->volumes[volume] = NULL;
    adaptra_holes_free (&v->holes);
    free (v->ctxs);
    free (v);
  }
  adaptra_unlock (e);
}

int
adaptra_client_open (struct adaptra_engine *e, int volume, const char *name,
                     int *id)
{
  struct adaptra_volume *v;
  struct adaptra_client *c;
  unsigned k;
  size_t i;
  int err = ENOMEM;

  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (!v) {
    adaptra_unlock (e);
    return EINVAL;
  }
  for (i = e->client_free;
       i < e->nclients && adaptra_client_at (e, i)->used; i++)
    ;
  e->client_free = i;
  /* The chunk that would come next: nclients is CHUNK0 * (2^k - 1). */
  k = (unsigned) __builtin_popcountll (e->nclients / ADAPTRA_CLIENT_CHUNK0);
  if (i == e->nclients && k < ADAPTRA_CLIENT_CHUNKS &&
      (e->client_chunks[k] = calloc (ADAPTRA_CLIENT_CHUNK0 << k,
                                     sizeof (struct adaptra_client)))) {
    /* A new chunk, never moved: the hit path may be reading the others. */
    __atomic_store_n (&e->nclients, e->nclients + (ADAPTRA_CLIENT_CHUNK0 << k),
                      __ATOMIC_RELEASE);
  }
  if (i < e->nclients) {
    c = adaptra_client_at (e, i);
    memset (c, 0, sizeof *c);
    c->volume = v;
    v->clients++;
    snprintf (c->name, sizeof c->name, "%s", name ? name : "");
    __atomic_store_n (&c->used, true, __ATOMIC_RELAXED);
    *id = (int) i;
    e->client_free = i + 1;
    err = 0;
  }
  adaptra_unlock (e);
  return err;
}

void
adaptra_client_close (struct adaptra_engine *e, int client)
{
  struct adaptra_client *c;

  adaptra_lock (e);
  if ((c = adaptra_client_of (e, client)) != NULL) {
    __atomic_store_n (&c->used, false, __ATOMIC_RELAXED);
    if ((size_t) client < e->client_free)
      e->client_free = (size_t) client;
    c->volume->clients--;
    c->volume->client_bytes += __atomic_load_n (&c->bytes, __ATOMIC_RELAXED);
    c->volume->readahead_hits += __atomic_load_n (&c->readahead_hits,
                                                  __ATOMIC_RELAXED);
    c->volume->rereads += __atomic_load_n (&c->rereads, __ATOMIC_RELAXED);
    __atomic_fetch_add (&c->volume->backend_bytes,
                        __atomic_load_n (&c->direct_bytes, __ATOMIC_RELAXED),
                        __ATOMIC_RELAXED);
  }
  adaptra_unlock (e);
}

void
adaptra_volumes_free (struct adaptra_engine *e)
{
  size_t i;

  for (i = 0; i < e->nvolumes; i++)
    if (e->volumes[i]) {
      /* Freed after the workers stopped: no job is being read. */
      assert (e->volumes[i]->running == 0);
      adaptra_holes_free (&e->volumes[i]->holes);
      free (e->volumes[i]->ctxs);
      free (e->volumes[i]);
    }
  free (e->volumes);
  for (i = 0; i < ADAPTRA_CLIENT_CHUNKS; i++)
    free (e->client_chunks[i]);
}
