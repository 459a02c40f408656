/* fetch.c: the one backend read path, for prefetch jobs and misses.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The read of fetch.h.  A failed prefetch drops its pages; readers
 * waiting for them wake, find them absent and read them themselves, so
 * the error reaches no client.  A write that lands while a job is
 * reading flags the job's pages STALE (pool.c), and the completion
 * discards them.  Terms: docs/DESIGN.md §6.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine-impl.h"

/* Where a read of n pages from first lands.  Frames consecutive in the
 * arena take it directly (likely: the free list hands frames out in
 * address order, and eviction takes a victim's run of frames with it,
 * pool.c: follow_victim); so does the client's buffer when the client
 * wants every byte read (*in_client).  Anything else goes through a
 * transfer slot (*slot, which the caller puts back).
 */
static unsigned char *
fetch_target (struct adaptra_engine *e, uint64_t first,
              const uint32_t *frames, uint32_t n, uint32_t bytes,
              const struct adaptra_request *demand, void **slot,
              bool *in_client)
{
  uint64_t start = first << e->page_shift;
  uint32_t i;

  *slot = NULL;
  *in_client = false;
  if (!adaptra_pool_has_data (&e->pool))
    return NULL;                /* no data: the backend models the read */
  for (i = 1; i < n && frames[i] == frames[0] + i; i++)
    ;
  if (i == n)
    return adaptra_pool_data (&e->pool, frames[0]);
  if (demand && adaptra_request_covers (demand, start, bytes)) {
    *in_client = true;
    return demand->buf + (start - demand->offset);
  }
  assert (n <= e->slot_pages);
  *slot = adaptra_bounce_get (&e->bounce, (size_t) n << e->page_shift);
  return *slot;
}

/* Fill the frames from buf, where a read of bytes (fewer than n pages
 * at the end of the export) landed; the rest of the last page is
 * zero.  buf may be the frames' own data.
 */
static void
fill_frames (struct adaptra_engine *e, const uint32_t *frames, uint32_t n,
             uint32_t bytes, const unsigned char *buf)
{
  const size_t page = (size_t) 1 << e->page_shift;
  uint32_t i;

  for (i = 0; i < n; i++) {
    unsigned char *data = adaptra_pool_data (&e->pool, frames[i]);
    size_t at = (size_t) i * page;
    size_t have = (size_t) sub_sat_u64 (bytes, at);

    if (have > page)
      have = page;
    if (data != buf + at)
      memcpy (data, buf + at, have);
    memset (data + have, 0, page - have);
  }
}

void
adaptra_fetch_job_begin (struct adaptra_engine *e, struct adaptra_job *job)
{
  job->where = adaptra_model_start (&e->model, job->first << e->page_shift,
                                    job->bytes);
  job->t0 = adaptra_now (e);
}

/* adaptra_fetch_then_lock, for a job whose read began already (begun:
 * adaptra_fetch_job_begin) or not (NULL).
 */
static int
fetch_then_lock (struct adaptra_engine *e, struct adaptra_volume *v,
                 void *ctx, uint64_t first, const uint32_t *frames, uint32_t n,
                 uint32_t bytes, const struct adaptra_request *demand,
                 const struct adaptra_job *begun, bool worker)
{
  const uint64_t offset = (first << e->page_shift) - v->base;
  void *slot;
  bool in_client;
  unsigned char *buf = fetch_target (e, first, frames, n, bytes, demand,
                                     &slot, &in_client);
  enum adaptra_model_distance where = ADAPTRA_MODEL_UNKNOWN;
  uint64_t t0 = 0, t1 = 0;
  uint32_t i;
  int err;

  assert_unlocked (e);
  if (!buf && adaptra_pool_has_data (&e->pool)) {
    err = ENOMEM;
    if (begun)
      adaptra_model_end (&e->model, bytes);
  }
  else {
    if (begun) {
      where = begun->where;
      t0 = begun->t0;
    }
    else {
      where = adaptra_model_start (&e->model, first << e->page_shift, bytes);
      t0 = adaptra_now (e);
    }
    err = e->backend.pread (ctx, buf, bytes, offset);
    t1 = adaptra_now (e);
    adaptra_model_end (&e->model, bytes);
  }
  if (!err && buf) {
    /* The frames are ours while IN_FLIGHT: fill them without the lock. */
    fill_frames (e, frames, n, bytes, buf);
    if (demand && !in_client)
      for (i = 0; i < n; i++)
        adaptra_copy_out (demand, first + i, e->page_shift,
                          adaptra_pool_data (&e->pool, frames[i]));
  }
  if (slot)
    adaptra_bounce_put (&e->bounce, slot, (size_t) n << e->page_shift);

  adaptra_lock (e);
  adaptra_stat_add (&e->stats.backend_requests, 1);
  if (!err) {
    adaptra_stat_add (&e->stats.backend_bytes, bytes);
    __atomic_fetch_add (&v->backend_bytes, bytes, __ATOMIC_RELAXED);
    adaptra_model_sample (&e->model, bytes, t0, t1, where);
    adaptra_model_sample (&v->model, bytes, t0, t1, where);
    for (i = 0; i < n; i++) {
      if (!adaptra_pool_complete (&e->pool, frames[i])) {
        if (!demand)
          adaptra_stat_add (&e->stats.prefetch_stale, 1);
      }
      else if (demand)
        adaptra_pool_touch (&e->pool, frames[i]);
    }
  }
  else {
    adaptra_stat_add (&e->stats.backend_errors, 1);
    if (!demand)
      adaptra_stat_add (&e->stats.prefetch_failed, 1);
    for (i = 0; i < n; i++)
      adaptra_pool_drop (&e->pool, frames[i]);
  }
  if (!demand)
    adaptra_prefetch_account (e, v, -(int64_t) ((uint64_t) n << e->page_shift));
  adaptra_wake (e, first, n);
  /* Room in flight again: queued jobs held back by the gate may start,
   * and a worker that ends its job takes the next itself (waking
   * another for it only made that one find nothing and sleep again).
   */
  if (e->queue.head && !worker)
    adaptra_workers_room (e);
  return err;
}

int
adaptra_fetch_then_lock (struct adaptra_engine *e, struct adaptra_volume *v,
                         void *ctx, uint64_t first, const uint32_t *frames,
                         uint32_t n, uint32_t bytes,
                         const struct adaptra_request *demand)
{
  return fetch_then_lock (e, v, ctx, first, frames, n, bytes, demand, NULL,
                          false);
}

void
adaptra_fetch_job_then_lock (struct adaptra_engine *e, void *ctx,
                             struct adaptra_job *job, bool begun, bool worker)
{
  struct adaptra_volume *v = job->volume;

  assert_unlocked (e);
  fetch_then_lock (e, v, ctx, job->first, job->frames, job->npages,
                   job->bytes, NULL, begun ? job : NULL, worker);
  free (job);
  if (--v->running == 0)
    pthread_cond_broadcast (&e->job_done);
}

