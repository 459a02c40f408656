/* engine.c: the read path, coherency and the facade of engine.h.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine: the read path, coherency, and the facade of engine.h.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §3.1, §5, §7 and §9 (locking).
 *
 * One client read:
 *
 *   0. Without the lock (read_unlocked): if every page is READY and
 *      without a look-ahead mark, and is either a plain hit (read by
 *      a client before, of no stream) or a stream hit (of one live
 *      stream, the read within ADAPTRA_STREAM_LAG of its expected
 *      page), or, on a volume that stepped aside, absent: pin each
 *      present page under its stripe lock (pool.c), count in this
 *      thread's counter shard, touch (atomically), note the stream's
 *      read time and hits in its atomic fields, copy, read the absent
 *      runs straight from the backend into the client's buffer, unpin;
 *      done.  Such a read would make no decision and would move its
 *      stream less than the lag, so the lock would add nothing but a
 *      serial section; it also skips the stream table's reaping, which
 *      the next locked read does.  Else nothing was done, and:
 *   1. Under the lock, walk the request's pages once: the first page
 *      that is absent is a miss; the first mark taken (test and clear)
 *      is a look-ahead hit.  Make the request's single read-ahead
 *      decision (readahead.c): on the miss if there is one, else on
 *      the mark.  A request that hit neither only refreshes its
 *      stream's position.
 *   2. Serve the pages in order:
 *        READY      pin a batch, copy it out without the lock, unpin;
 *                   the first client touch of a read-ahead page counts
 *                   as pgreadahead_hit, a second access (not the same
 *                   reader touching the same page again: new_access)
 *                   flags it for (delayed) activation;
 *        IN_FLIGHT  count io_block once; run the queued job holding
 *                   the page in this thread if it has not started,
 *                   else wait for it (a queue per group of pages);
 *        absent     insert the run of absent pages IN_FLIGHT (so that
 *                   nobody else reads them meanwhile) and read it from
 *                   the backend with the client's own context.
 *
 * The lock is never held across backend I/O or page copies.  Reads
 * that return an error leave no pages behind.  Lock order and why the
 * lockless hit is safe: docs/DESIGN.md §9 and pool.c.
 *
 * Coherency: adaptra_invalidate runs after a write, zero or trim
 * reached the backend.  It drops the overlapping READY pages and flags
 * IN_FLIGHT ones STALE, so their completion discards what they read
 * (which may predate the write).  A page pinned by a copy in progress
 * (from the locked path or the hit path alike) is freed when the copy
 * ends; that copy races with the write anyway.  Dropping unindexes a
 * page under its stripe lock, so a hit that starts after the
 * invalidation returned misses it.
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "range.h"
#include "engine-impl.h"

#ifndef NDEBUG
_Thread_local char adaptra_lock_token;
#endif
_Thread_local unsigned adaptra_shard_token;
unsigned adaptra_shard_next;

/* Pages pinned and copied per lock round trip. */
#define PIN_BATCH 64

/* Frames of a demand run kept on the stack rather than malloc'd. */
#define RUN_ON_STACK 64

static void
on_lost (void *opaque, uint64_t stream_id, unsigned method)
{
  struct adaptra_engine *e = opaque;
  struct adaptra_stream *s = adaptra_streams_get (&e->streams, stream_id);

  (void) method;
  if (s)
    s->lost++;
}

/* Split adaptra-pool between the pool's frames and the transfer
 * buffers (a 1/ADAPTRA_BOUNCE_SHARE of it, whole pages), so that
 * everything adaptra holds of the data fits in adaptra-pool.  A
 * transfer is at most the budget's share of one of the readers that
 * read in bulk at once (engine-impl.h).  Returns the bytes left for
 * frames.
 */
static uint64_t
init_bounce (struct adaptra_engine *e, const struct adaptra_config *cfg)
{
  uint64_t pool_pages = cfg->pool_bytes >> e->page_shift;
  uint64_t budget = pool_pages / ADAPTRA_BOUNCE_SHARE;
  uint64_t shares = min_u64 (cfg->workers, ADAPTRA_UNLIMITED_WORKERS) +
    cfg->profile_workers + ADAPTRA_BOUNCE_READER_SLOTS;

  if (budget == 0)
    budget = 1;
  shares = min_u64 (shares, budget);
  e->slot_pages = (uint32_t) (budget / shares);
  if (adaptra_bounce_init (&e->bounce, (size_t) budget << e->page_shift,
                           (size_t) e->slot_pages << e->page_shift) == -1)
    return 0;
  return (pool_pages - budget) << e->page_shift;
}

struct adaptra_engine *
adaptra_engine_new (const struct adaptra_config *cfg,
                    const struct adaptra_backend *backend,
                    const struct adaptra_clock *clock)
{
  struct adaptra_engine *e;
  char why[160];
  uint64_t frame_bytes;
  unsigned i;

  if (adaptra_config_check (cfg, why, sizeof why) == -1 ||
      !backend->pread || !clock->now_ns) {
    errno = EINVAL;
    return NULL;
  }
  e = calloc (1, sizeof *e);
  if (!e)
    return NULL;
  e->cfg = *cfg;
  e->backend = *backend;
  e->clock = *clock;
  e->page_shift = (unsigned) adaptra_log2_exact (cfg->page_size);
  e->shards = aligned_alloc (ADAPTRA_CACHE_LINE,
                             ADAPTRA_STAT_SHARDS * sizeof *e->shards);
  frame_bytes = e->shards ? init_bounce (e, cfg) : 0;
  if (frame_bytes == 0) {
    free (e->shards);
    free (e);
    return NULL;
  }
  memset (e->shards, 0, ADAPTRA_STAT_SHARDS * sizeof *e->shards);
  if (adaptra_pool_init (&e->pool, frame_bytes, e->page_shift,
                         cfg->no_data) == -1) {
    adaptra_bounce_fini (&e->bounce);
    free (e->shards);
    free (e);
    return NULL;
  }
  if (adaptra_streams_init (&e->streams, cfg->streams) == -1) {
    adaptra_pool_fini (&e->pool);
    adaptra_bounce_fini (&e->bounce);
    free (e->shards);
    free (e);
    return NULL;
  }
  adaptra_pool_on_lost (&e->pool, on_lost, e);
  pthread_mutex_init (&e->lock, NULL);
  for (i = 0; i < ADAPTRA_WAIT_QUEUES; i++)
    pthread_cond_init (&e->page_done[i], NULL);
  pthread_cond_init (&e->job_queued, NULL);
  pthread_cond_init (&e->hint_queued, NULL);
  pthread_cond_init (&e->job_done, NULL);
  pthread_cond_init (&e->flight_on, NULL);
  return e;
}

void
adaptra_engine_free (struct adaptra_engine *e)
{
  size_t i;

  if (!e)
    return;
  adaptra_workers_stop (e);
  adaptra_lock (e);
  adaptra_prefetch_drop_queue (e, NULL);
  adaptra_unlock (e);
  adaptra_bounce_fini (&e->bounce);
  for (i = 0; i < e->nvolumes; i++)
    if (e->volumes[i]) {
      free (e->volumes[i]->ctxs);
      free (e->volumes[i]);
    }
  free (e->volumes);
  pthread_cond_destroy (&e->job_done);
  pthread_cond_destroy (&e->flight_on);
  pthread_cond_destroy (&e->hint_queued);
  pthread_cond_destroy (&e->job_queued);
  for (i = 0; i < ADAPTRA_WAIT_QUEUES; i++)
    pthread_cond_destroy (&e->page_done[i]);
  pthread_mutex_destroy (&e->lock);
  adaptra_streams_fini (&e->streams);
  adaptra_pool_fini (&e->pool);
  for (i = 0; i < ADAPTRA_CLIENT_CHUNKS; i++)
    free (e->client_chunks[i]);
  free (e->shards);
  free (e);
}

int
adaptra_volume_open (struct adaptra_engine *e, const char *name,
                     uint64_t size, unsigned flags)
{
  struct adaptra_volume *v;
  size_t i;

  if (size > ADAPTRA_VOLUME_SIZE_MAX) {
    errno = EFBIG;
    return -1;
  }
  v = calloc (1, sizeof *v);
  if (!v)
    return -1;
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
    errno = i == ADAPTRA_VOLUMES_MAX ? ENOSPC : ENOMEM;
    return -1;
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
  return v->id;
}

/* Wait until no job of v runs.  Lock held on entry and exit, dropped
 * while waiting.
 */
static void
wait_jobs (struct adaptra_engine *e, const struct adaptra_volume *v)
{
  assert_locked (e);
  while (v->running > 0)
    adaptra_wait (e, &e->job_done);
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
    free (v->ctxs);
    free (v);
  }
  adaptra_unlock (e);
}

int
adaptra_client_open (struct adaptra_engine *e, int volume, const char *name)
{
  struct adaptra_volume *v;
  struct adaptra_client *c;
  unsigned k;
  size_t i;
  int id = -1;

  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (!v) {
    adaptra_unlock (e);
    errno = EINVAL;
    return -1;
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
    id = (int) i;
    e->client_free = i + 1;
  }
  adaptra_unlock (e);
  if (id == -1)
    errno = ENOMEM;
  return id;
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
  }
  adaptra_unlock (e);
}

/* No frame can be had (all pinned or in flight): read page p through
 * without caching it, into the client's buffer if it wants the whole
 * page, else through a transfer slot.  Lock held on entry and exit,
 * dropped for the read.
 */
static int
read_uncached (struct adaptra_engine *e, struct adaptra_volume *v, void *ctx,
               const struct adaptra_request *r, uint64_t p)
{
  uint64_t start = p << e->page_shift;
  uint64_t bytes = adaptra_clamp_to_size (start,
                                          UINT64_C (1) << e->page_shift,
                                          v->base + v->size);
  bool in_client = adaptra_request_covers (r, start, bytes);
  unsigned char *slot = NULL;
  struct adaptra_stats *st;
  int err;

  assert_locked (e);
  adaptra_unlock (e);
  if (!in_client)
    slot = adaptra_bounce_get (&e->bounce, (size_t) 1 << e->page_shift);
  if (in_client || slot) {
    err = e->backend.pread (ctx, in_client ? r->buf + (start - r->offset)
                                           : slot,
                            (uint32_t) bytes, start - v->base);
    if (!err && slot) {
      memset (slot + bytes, 0, ((size_t) 1 << e->page_shift) - bytes);
      adaptra_copy_out (r, p, e->page_shift, slot);
    }
  }
  else
    err = ENOMEM;
  if (slot)
    adaptra_bounce_put (&e->bounce, slot, (size_t) 1 << e->page_shift);
  adaptra_lock (e);
  st = adaptra_stats_here (e);
  adaptra_stat_add (&st->backend_requests, 1);
  adaptra_stat_add (err ? &st->backend_errors : &st->backend_bytes,
                    err ? 1 : bytes);
  if (!err)
    __atomic_fetch_add (&v->backend_bytes, bytes, __ATOMIC_RELAXED);
  return err;
}

/* The most pages a client's read of pages [p, last) may fetch in one
 * backend read.  A run that the client's buffer covers is read into it
 * (up to ADAPTRA_REQUEST_MAX); one that begins or ends in a page the
 * client wants only part of may need a transfer slot (prefetch.c), so
 * it is held to a slot, or stops before a partial last page so that
 * the whole pages go straight to the client.
 */
static uint64_t
demand_run_cap (const struct adaptra_engine *e, const struct adaptra_volume *v,
                const struct adaptra_request *r, uint64_t p, uint64_t last)
{
  const uint64_t request_max = ADAPTRA_REQUEST_MAX >> e->page_shift;
  uint64_t start = p << e->page_shift;
  uint64_t want = last - p;

  if (!adaptra_request_covers (r, start,
                               adaptra_clamp_to_size (start,
                                                      want << e->page_shift,
                                                      v->base + v->size))
      && want > e->slot_pages)
    want = start >= r->offset ? want - 1 : e->slot_pages;
  return min_u64 (want, request_max);
}

/* Read the run of absent pages from *pp (up to last) from the backend
 * into the pool and the client's buffer; advance *pp past it.  Lock
 * held on entry and exit, dropped for the read.
 */
static int
read_run (struct adaptra_engine *e, struct adaptra_client *c, void *ctx,
          uint64_t stream_id, const struct adaptra_request *r, uint64_t *pp,
          uint64_t last)
{
  struct adaptra_volume *v = c->volume;
  uint64_t p = *pp;
  uint64_t cap = demand_run_cap (e, v, r, p, last);
  /* Most misses are a few pages: spare them a malloc. */
  uint32_t small[RUN_ON_STACK];
  uint32_t *heap = cap > RUN_ON_STACK ? malloc (cap * sizeof *heap) : NULL;
  uint32_t *frames = heap ? heap : small;
  uint32_t n = 0;
  uint64_t bytes;
  int err;

  assert_locked (e);
  if (cap > RUN_ON_STACK && !heap)
    return ENOMEM;
  while (n < cap && adaptra_pool_lookup (&e->pool, p + n) == ADAPTRA_NO_FRAME) {
    uint32_t f = adaptra_pool_insert (&e->pool, p + n, stream_id,
                                      ADAPTRA_METHOD_NONE, 0);

    if (f == ADAPTRA_NO_FRAME)
      break;
    frames[n++] = f;
  }
  if (n == 0) {
    free (heap);
    *pp = p + 1;
    return read_uncached (e, v, ctx, r, p);
  }
  bytes = adaptra_clamp_to_size (p << e->page_shift,
                                 (uint64_t) n << e->page_shift,
                                 v->base + v->size);
  adaptra_unlock (e);
  err = adaptra_fetch_then_lock (e, v, ctx, p, frames, n, (uint32_t) bytes, r,
                                 ADAPTRA_NOT_STARTED);
  free (heap);
  if (!err)
    __atomic_fetch_add (&c->backend_bytes, bytes, __ATOMIC_RELAXED);
  *pp = p + n;
  return err;
}

/* Does volume v step aside now (adaptra-bypass, else its backend's
 * speed: adaptra_bdp_fast)?  A switch is counted and traced.  Lock
 * held.
 */
static bool
steps_aside (struct adaptra_engine *e, struct adaptra_volume *v)
{
  bool fast;
  char line[128];

  assert_locked (e);
  switch (e->cfg.bypass) {
  case ADAPTRA_BYPASS_ALWAYS: fast = true; break;
  case ADAPTRA_BYPASS_NEVER: fast = false; break;
  case ADAPTRA_BYPASS_AUTO: default:
    fast = adaptra_bdp_fast (&v->bdp, v->bypass);
    break;
  }
  if (fast != v->bypass) {
    __atomic_store_n (&v->bypass, fast, __ATOMIC_RELAXED);
    adaptra_stat_add (&e->stats.bypass_switches, 1);
    if (e->cfg.trace) {
      snprintf (line, sizeof line,
                "bypass(volume=%d, read_ns=%.0f, bytes=%.0f) = %s", v->id,
                v->bdp.t, v->bdp.n, fast ? "on" : "off");
      e->cfg.trace (e->cfg.trace_opaque, line);
    }
  }
  return fast;
}

/* Account a read of bytes straight from the backend for client c (or
 * its error err).  Counters are atomic or per-thread: no lock needed.
 */
static void
count_direct (struct adaptra_engine *e, struct adaptra_client *c,
              uint64_t bytes, int err)
{
  struct adaptra_stats *st = adaptra_stats_here (e);

  adaptra_stat_add (&st->backend_requests, 1);
  if (err) {
    adaptra_stat_add (&st->backend_errors, 1);
    return;
  }
  adaptra_stat_add (&st->backend_bytes, bytes);
  adaptra_stat_add (&st->bypass_bytes, bytes);
  __atomic_fetch_add (&c->volume->backend_bytes, bytes, __ATOMIC_RELAXED);
  __atomic_fetch_add (&c->backend_bytes, bytes, __ATOMIC_RELAXED);
}

/* How often the reads of a volume that stepped aside feed the
 * throughput estimates (read_aside): at most once a millisecond.
 * Sampling every read took the engine lock for 67 ns of each 4 KiB
 * read from a backend that takes no time (engine-scale --hold, bypass
 * case: 11% of one thread's time, a serial fraction that would cap 64
 * cores at 8x); once a millisecond is 0.01%.  A slow backend (a read
 * of 1 ms or more) is still sampled at every read of a client at queue
 * depth 1, so read-ahead comes back as fast as before (bdp.h: 2-3
 * reads for a 10x slowdown), and at queue depth 16 within 16 times as
 * many reads.  Time-based, the samples are an unbiased pick of the
 * reads, where sampling every slow read and some of the fast ones
 * would weigh a few slow reads of a fast backend up.
 */
#define ASIDE_SAMPLE_NS UINT64_C (1000000)

/* Client c's read of the absent pages [p, p + n) of request r, when
 * its volume stepped aside: straight from the backend into the
 * client's buffer, without the engine lock (from the lockless path,
 * or from read_direct, which drops it).  The throughput sample that
 * keeps the step-aside decision current is taken once every
 * ASIDE_SAMPLE_NS and only if the engine lock is free: losing some
 * samples under contention costs the estimate nothing (it is a moving
 * average over many reads), waiting for the lock would serialise the
 * reads this path exists to spread.
 */
static int
read_aside (struct adaptra_engine *e, struct adaptra_client *c, void *ctx,
            const struct adaptra_request *r, uint64_t p, uint64_t n)
{
  uint64_t start = max_u64 (p << e->page_shift, r->offset);
  uint64_t end = min_u64 ((p + n) << e->page_shift, r->offset + r->count);
  uint64_t t0, t1;
  int err;

  assert_unlocked (e);
  t0 = adaptra_now (e);
  err = e->backend.pread (ctx, r->buf + (start - r->offset),
                          (uint32_t) (end - start), start - c->volume->base);
  t1 = adaptra_now (e);
  count_direct (e, c, end - start, err);
  if (!err &&
      t1 - __atomic_load_n (&c->volume->aside_sampled_ns, __ATOMIC_RELAXED)
      >= ASIDE_SAMPLE_NS && adaptra_trylock (e)) {
    __atomic_store_n (&c->volume->aside_sampled_ns, t1, __ATOMIC_RELAXED);
    adaptra_bdp_sample (&e->bdp, end - start, t1 - t0);
    adaptra_bdp_sample (&c->volume->bdp, end - start, t1 - t0);
    steps_aside (e, c->volume);
    adaptra_unlock (e);
  }
  return err;
}

/* A volume that stepped aside: read the bytes the request wants of
 * the run of absent pages from *pp (up to last) straight from the
 * backend into the client's buffer, caching nothing; advance *pp past
 * the run.  Lock held on entry and exit, dropped for the read.
 */
static int
read_direct (struct adaptra_engine *e, struct adaptra_client *c, void *ctx,
             const struct adaptra_request *r, uint64_t *pp, uint64_t last)
{
  const uint64_t request_max = ADAPTRA_REQUEST_MAX >> e->page_shift;
  uint64_t p = *pp, n = 1;
  int err;

  assert_locked (e);
  while (p + n < last && n < request_max &&
         adaptra_pool_lookup (&e->pool, p + n) == ADAPTRA_NO_FRAME)
    n++;
  adaptra_unlock (e);
  err = read_aside (e, c, ctx, r, p, n);
  adaptra_lock (e);
  *pp = p + n;
  return err;
}

/* new_access (below) for a page of no stream: client c's own last
 * page.  An atomic exchange: the hit path calls it without the lock.
 */
static bool
client_new_access (struct adaptra_client *c, uint64_t p)
{
  return __atomic_exchange_n (&c->touched, p + 1, __ATOMIC_RELAXED) != p + 1;
}

/* new_access (below) for a page of stream s: the stream's last page
 * and reader.  An atomic exchange, for the hit path too.
 */
static bool
stream_new_access (struct adaptra_stream *s, int client, uint64_t p)
{
  uint64_t key = adaptra_stream_touch_key (client, p);

  return atomic_exchange_explicit (&s->touched, key, memory_order_relaxed)
    != key;
}

/* Count the first client touch of a read-ahead page (adaptra_pool_touch
 * said so) of the given method for client c and stream s (NULL: none
 * lives).  Lock held or not: the counters are atomic.
 */
static void
count_readahead_hit (struct adaptra_engine *e, struct adaptra_client *c,
                     struct adaptra_stream *s, unsigned method)
{
  adaptra_stats_count_hits (adaptra_stats_here (e), method, 1);
  __atomic_fetch_add (&c->readahead_hits, 1, __ATOMIC_RELAXED);
  if (s)
    atomic_fetch_add_explicit (&s->hits, 1, memory_order_relaxed);
}

/* Successive touches of one page by one reader are one access, as the
 * seed counts a page accessed only when prev_index != index.  A scan
 * in 512-byte reads touches each 4 KiB page 8 times; counted as 8
 * accesses, the second would flag the page for activation, and the
 * scan would fill the active list (half the pool) and push the hot
 * pages out.  The reader is the page's stream, while it lives, with
 * the client that read it (so scans interleaved on one connection each
 * keep their own last page, and two clients reading one page make two
 * accesses); else the client.  A page read, another page, then the
 * first again is a second access: that is reuse.
 *
 * Returns true if this touch of page p (of stream id) by client is not
 * the same access as the one before, and remembers it either way.
 */
static bool
new_access (struct adaptra_engine *e, int client, uint64_t id, uint64_t p)
{
  struct adaptra_stream *s = adaptra_streams_get (&e->streams, id);
  struct adaptra_client *c;

  assert_locked (e);
  if (s)
    return stream_new_access (s, client, p);
  if ((c = adaptra_client_of (e, client)) == NULL)
    return true;
  return client_new_access (c, p);
}

/* Pin and account the READY pages from *pp on (at most PIN_BATCH), copy
 * them out without the lock, unpin them.  Lock held on entry and exit,
 * dropped for the copy.
 */
static void
copy_ready (struct adaptra_engine *e, int client,
            const struct adaptra_request *r, uint64_t *pp, uint64_t last)
{
  struct adaptra_client *c = adaptra_client_of (e, client);
  const struct adaptra_page *page;
  uint32_t batch[PIN_BATCH];
  uint64_t p = *pp;
  uint32_t n = 0, i, f;

  assert_locked (e);
  while (p + n < last && n < PIN_BATCH &&
         (f = adaptra_pool_lookup (&e->pool, p + n)) != ADAPTRA_NO_FRAME &&
         (page = adaptra_pool_page (&e->pool, f))->state ==
         ADAPTRA_PAGE_READY) {
    adaptra_pool_pin (&e->pool, f);
    if (new_access (e, client, page->stream_id, p + n) &&
        adaptra_pool_touch (&e->pool, f))
      count_readahead_hit (e, c,
                           adaptra_streams_get (&e->streams, page->stream_id),
                           page->method);
    batch[n++] = f;
  }
  adaptra_unlock (e);
  for (i = 0; adaptra_pool_has_data (&e->pool) && i < n; i++)
    adaptra_copy_out (r, p + i, e->page_shift,
                      adaptra_pool_data (&e->pool, batch[i]));
  adaptra_lock (e);
  for (i = 0; i < n; i++)
    if (adaptra_pool_unpin (&e->pool, batch[i]))
      adaptra_pool_release (&e->pool, batch[i]);
  *pp = p + n;
}

/* Release the hit pins of frames[0..n) (ADAPTRA_NO_FRAME: none)
 * without the engine lock, taking it only to free a frame whose last
 * pin this was after a write dropped it.
 */
static void
unpin_hits (struct adaptra_engine *e, const uint32_t *frames, uint32_t n)
{
  uint32_t i;

  assert_unlocked (e);
  for (i = 0; i < n; i++)
    if (frames[i] != ADAPTRA_NO_FRAME &&
        adaptra_pool_unpin (&e->pool, frames[i])) {
      adaptra_lock (e);
      adaptra_pool_release (&e->pool, frames[i]);
      adaptra_unlock (e);
    }
}

/* Count a read of count bytes by client c.  Lock held or not. */
static void
count_request (struct adaptra_client *c, uint32_t count)
{
  __atomic_fetch_add (&c->requests, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add (&c->bytes, count, __ATOMIC_RELAXED);
}

/* May the hit path serve this page it pinned alone?  One without a
 * look-ahead mark (so no decision), of no stream or of the request's
 * stream *stream (set here from the first page that has one): a
 * request of pages of two streams takes the lock, which advances one.
 */
static bool
hit_alone (const struct adaptra_page *page, uint64_t *stream)
{
  if (page->flags & ADAPTRA_PG_MARK)
    return false;
  if (page->stream_id == 0)
    return true;
  if (*stream == 0)
    *stream = page->stream_id;
  return page->stream_id == *stream;
}

/* *x = max (*x, v) if up, else min (*x, v), atomically. */
static void
extend_to (_Atomic uint64_t *x, uint64_t v, bool up)
{
  uint64_t old = atomic_load_explicit (x, memory_order_relaxed);

  while ((up ? v > old : v < old) &&
         !atomic_compare_exchange_weak_explicit (x, &old, v,
                                                 memory_order_relaxed,
                                                 memory_order_relaxed))
    ;
}

/* Would a read of pages span of live stream s leave its expected page
 * where it is (within ADAPTRA_STREAM_LAG)?  Lock not needed.
 */
static bool
within_lag (const struct adaptra_stream *s, struct adaptra_span span)
{
  uint64_t next = atomic_load_explicit (&s->next, memory_order_relaxed);

  return span.first + ADAPTRA_STREAM_LAG >= next &&
    span.last <= next + ADAPTRA_STREAM_LAG;
}

/* The read path without the engine lock (docs/DESIGN.md §9), for the
 * requests that need no read-ahead decision: every page the request
 * wants is either READY and without a look-ahead mark (hit_alone), or,
 * if its volume stepped aside, absent (read straight from the backend,
 * caching nothing); and if its pages are a live stream's, the read is
 * within ADAPTRA_STREAM_LAG of the stream's expected page, which the
 * locked path would move by less than that.  Such a request needs
 * only pins, the client's counters, the touch (REFERENCED or ACTIVATE,
 * atomic), a first touch's read-ahead hit (atomic counters), the
 * stream's read time and last touch (atomic fields), the copies and
 * the direct reads.  Each page is found and pinned under its stripe
 * lock (pool.c), so a page is either pinned before an eviction or
 * invalidation takes it out of the index (and is then kept, or freed
 * by the last unpin), or missed; a page missed here and inserted
 * meanwhile is read from the backend, which holds the same bytes.
 * The stream is found by id without the lock: if the table frees it
 * and gives its slot to a new stream meanwhile (it was the least
 * recently used one, or idle for ADAPTRA_STREAM_REAP_NS), this
 * request's read time, last touch and hits land on the new stream,
 * which read-ahead then takes for slightly more used than it is.
 * A look-ahead mark set on a page while such a read copies it (a mark
 * re-armed under congestion, readahead.c) is left for the next
 * reader, as if it had been set just after.  Anything else, or a
 * request of more than PIN_BATCH pages, returns false with nothing
 * counted or pinned, for the locked path.  Lock not held.
 */
static bool
read_unlocked (struct adaptra_engine *e, int client, void *ctx, void *buf,
               uint32_t count, uint64_t offset, int *err)
{
  struct adaptra_client *c = adaptra_client_of (e, client);
  struct adaptra_request r = { .buf = buf, .count = count };
  struct adaptra_stream *s = NULL, *ps;  /* the request's, the page's */
  const struct adaptra_page *page;
  const struct adaptra_volume *v;
  struct adaptra_span span;
  struct adaptra_stats *st;
  uint32_t batch[PIN_BATCH];
  uint64_t stream = 0;
  uint32_t n, i, run;
  bool aside;

  assert_unlocked (e);
  if (!c)
    return false;
  v = c->volume;
  if (offset > v->size || count > v->size - offset)
    return false;
  aside = __atomic_load_n (&v->bypass, __ATOMIC_RELAXED);
  r.offset = v->base + offset;
  span = adaptra_span_of (r.offset, count, e->page_shift);
  if (span.last - span.first > PIN_BATCH)
    return false;
  for (n = 0; span.first + n < span.last; n++) {
    uint32_t f = adaptra_pool_pin_hit (&e->pool, span.first + n);

    batch[n] = f;
    if (f == ADAPTRA_NO_FRAME ? !aside
        : !hit_alone (adaptra_pool_page (&e->pool, f), &stream)) {
      unpin_hits (e, batch, n + 1);
      return false;
    }
  }
  if (stream && (s = adaptra_streams_get (&e->streams, stream)) != NULL &&
      !within_lag (s, span)) {
    unpin_hits (e, batch, n);
    return false;
  }
  st = adaptra_stats_here (e);
  adaptra_stat_add (&st->client_requests, 1);
  adaptra_stat_add (&st->client_bytes, count);
  if (aside)
    adaptra_stat_add (&st->bypass_requests, 1);
  count_request (c, count);
  *err = 0;
  for (i = 0; i < n; i += run) {
    run = 1;
    if (batch[i] == ADAPTRA_NO_FRAME) {
      while (i + run < n && batch[i + run] == ADAPTRA_NO_FRAME)
        run++;
      if (!*err)
        *err = read_aside (e, c, ctx, &r, span.first + i, run);
      continue;
    }
    page = adaptra_pool_page (&e->pool, batch[i]);
    ps = page->stream_id == stream ? s : NULL;
    if ((ps ? stream_new_access (ps, client, span.first + i)
         : client_new_access (c, span.first + i)) &&
        adaptra_pool_touch (&e->pool, batch[i]))
      count_readahead_hit (e, c, ps, page->method);
    if (adaptra_pool_has_data (&e->pool))
      adaptra_copy_out (&r, span.first + i, e->page_shift,
                        adaptra_pool_data (&e->pool, batch[i]));
  }
  if (s) {
    atomic_store_explicit (&s->atime_ns, adaptra_now (e),
                           memory_order_relaxed);
    extend_to (&s->lockless_low, span.first, false);
    extend_to (&s->lockless_high, span.last, true);
  }
  unpin_hits (e, batch, n);
  return true;
}

/* Step 1 of the read path: the request's one read-ahead decision.
 * Returns the stream id that pages read on demand should carry.  Lock
 * held.
 */
static uint64_t
decide (struct adaptra_engine *e, int client, const struct adaptra_volume *v,
        struct adaptra_span span)
{
  uint32_t mark = ADAPTRA_NO_FRAME;
  uint64_t seen_stream = 0;
  struct adaptra_stream *s;
  uint64_t p;

  assert_locked (e);
  for (p = span.first; p < span.last; p++) {
    uint32_t f = adaptra_pool_lookup (&e->pool, p);

    if (f == ADAPTRA_NO_FRAME)
      return adaptra_readahead_miss (e, v, client, span.first, span.last, p);
    if (!seen_stream)
      seen_stream = adaptra_pool_page (&e->pool, f)->stream_id;
    if (mark == ADAPTRA_NO_FRAME && adaptra_pool_take_mark (&e->pool, f))
      mark = f;
  }
  if (mark != ADAPTRA_NO_FRAME) {
    adaptra_readahead_mark (e, v, client, span.first, span.last, mark);
    return 0;
  }
  s = adaptra_streams_get (&e->streams, seen_stream);
  if (s)
    adaptra_streams_advance (&e->streams, s, span.first, span.last,
                             adaptra_now (e));
  return 0;
}

int
adaptra_read (struct adaptra_engine *e, int client, void *ctx, void *buf,
              uint32_t count, uint64_t offset)
{
  struct adaptra_request r = { .buf = buf, .count = count };
  struct adaptra_span span;
  struct adaptra_client *c;
  struct adaptra_volume *v;
  struct adaptra_stats *st;
  uint64_t stream_id = 0;
  bool blocked = false, bypass;
  uint64_t p;
  int err = 0;

  if (count == 0 || read_unlocked (e, client, ctx, buf, count, offset, &err))
    return err;
  adaptra_lock (e);
  c = adaptra_client_of (e, client);
  if (!c || offset > c->volume->size || count > c->volume->size - offset) {
    adaptra_unlock (e);
    return EINVAL;
  }
  v = c->volume;
  r.offset = v->base + offset;
  st = adaptra_stats_here (e);
  adaptra_stat_add (&st->client_requests, 1);
  adaptra_stat_add (&st->client_bytes, count);
  count_request (c, count);
  adaptra_streams_reap_one (&e->streams, adaptra_now (e));

  span = adaptra_span_of (r.offset, count, e->page_shift);
  /* A volume that stepped aside makes no decision and caches no miss;
   * what the pool holds of it is still served.
   */
  bypass = steps_aside (e, v);
  if (bypass)
    adaptra_stat_add (&st->bypass_requests, 1);
  else
    stream_id = decide (e, client, v, span);

  p = span.first;
  while (p < span.last && !err) {
    uint32_t f = adaptra_pool_lookup (&e->pool, p);

    if (f == ADAPTRA_NO_FRAME && bypass)
      err = read_direct (e, c, ctx, &r, &p, span.last);
    else if (f == ADAPTRA_NO_FRAME) {
      err = read_run (e, c, ctx, stream_id, &r, &p, span.last);
      /* adaptra_fetch_then_lock touched the pages it read for the client. */
      if (!err)
        new_access (e, client, stream_id, p - 1);
    }
    else if (adaptra_pool_page (&e->pool, f)->state == ADAPTRA_PAGE_READY)
      copy_ready (e, client, &r, &p, span.last);
    else {
      if (!blocked) {
        struct adaptra_stream *s =
          adaptra_streams_get (&e->streams,
                               adaptra_pool_page (&e->pool, f)->stream_id);

        adaptra_stat_add (&st->io_block, 1);
        if (s)
          s->late++;
        blocked = true;
      }
      if (!adaptra_prefetch_steal (e, p, span.last, ctx))
        adaptra_wait (e, adaptra_wait_queue (e, p));
    }
  }
  adaptra_unlock (e);
  return err;
}

void
adaptra_invalidate (struct adaptra_engine *e, int volume, uint64_t offset,
                    uint64_t count)
{
  const struct adaptra_volume *v, *other;
  struct adaptra_span span;
  uint64_t n = 0;
  size_t i;

  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (v) {
    count = adaptra_clamp_to_size (offset, count, v->size);
    for (i = 0; i < e->nvolumes; i++) {
      other = e->volumes[i];
      if (other == v ||
          (other && (other->flags & ADAPTRA_VOLUME_MAY_ALIAS) &&
           other->size == v->size)) {
        span = adaptra_span_of (other->base + offset, count, e->page_shift);
        n += adaptra_pool_invalidate (&e->pool, span.first, span.last);
      }
    }
  }
  adaptra_unlock (e);
  adaptra_stat_add (&e->stats.invalidated, n);
}

void
adaptra_cache_hint (struct adaptra_engine *e, int client, uint64_t offset,
                    uint64_t count)
{
  struct adaptra_client *c;
  struct adaptra_span span;
  uint64_t spare;

  adaptra_stat_add (&e->stats.cache_hints, 1);
  adaptra_lock (e);
  c = adaptra_client_of (e, client);
  /* A volume that stepped aside has nothing to gain from a prefetch. */
  count = c && !c->volume->bypass
    ? adaptra_clamp_to_size (offset, count, c->volume->size) : 0;
  if (count > 0 && !adaptra_prefetch_congested (e, c->volume)) {
    span = adaptra_span_of (c->volume->base + offset, count, e->page_shift);
    spare = adaptra_pool_spare (&e->pool);
    if (span.last - span.first > spare)
      span.last = span.first + spare;
    adaptra_prefetch_dispatch (e, c->volume, span.first, span.last,
                               UINT64_MAX, 0, ADAPTRA_METHOD_NONE, 0);
  }
  else if (count > 0)
    adaptra_stat_add (&e->stats.io_congestion, 1);
  adaptra_unlock (e);
}

uint64_t
adaptra_cache_room (struct adaptra_engine *e, int client)
{
  struct adaptra_client *c;
  uint64_t room = 0;

  adaptra_lock (e);
  c = adaptra_client_of (e, client);
  if (c && !c->volume->bypass && !adaptra_prefetch_congested (e, c->volume))
    room = adaptra_pool_spare (&e->pool) << e->page_shift;
  adaptra_unlock (e);
  return room;
}

void
adaptra_stats_add_profile (struct adaptra_engine *e, uint64_t proposed,
                           uint64_t hit, uint64_t wasted)
{
  adaptra_stat_add (&e->stats.profile_pages_proposed, proposed);
  adaptra_stat_add (&e->stats.profile_pages_hit, hit);
  adaptra_stat_add (&e->stats.profile_pages_wasted, wasted);
}

void
adaptra_stats_snapshot (struct adaptra_engine *e, struct adaptra_stats *out)
{
  struct adaptra_pool_counts pool;
  struct adaptra_flight_estimate flight;
  size_t i;

  memset (out, 0, sizeof *out);
  adaptra_lock (e);
  adaptra_stats_add_counters (out, &e->stats);
  for (i = 0; i < ADAPTRA_STAT_SHARDS; i++)
    adaptra_stats_add_counters (out, &e->shards[i].s);
  pool = adaptra_pool_counts (&e->pool);
  out->evicted = pool.evicted - e->evicted_base;
  out->evicted_unread = pool.evicted_unread - e->evicted_unread_base;
  out->pages_free = pool.free;
  out->pages_inactive = pool.inactive;
  out->pages_active = pool.active;
  out->pages_in_flight = pool.in_flight;
  out->streams_active = adaptra_streams_count (&e->streams);
  for (i = 0; i < e->nclients; i++)
    out->clients_active += adaptra_client_at (e, i)->used;
  out->prefetch_queued_bytes = e->queued_bytes;
  out->prefetch_flight_bytes = e->flight_bytes;
  out->backend_latency_ns = adaptra_bdp_latency_ns (&e->bdp);
  out->backend_bytes_per_sec = adaptra_bdp_bytes_per_sec (&e->bdp);
  out->backend_flight_bytes = adaptra_flight_running (&e->flight);
  adaptra_flight_estimate (&e->flight, adaptra_now (e), &flight);
  out->backend_flight_limit = flight.limit == UINT64_MAX ? 0 : flight.limit;
  out->window_max_bytes = adaptra_readahead_cap_pages (e) << e->page_shift;
  for (i = 0; i < e->nvolumes; i++)
    out->volumes_bypassed += e->volumes[i] && e->volumes[i]->bypass;
  adaptra_unlock (e);
}

void
adaptra_stats_reset (struct adaptra_engine *e)
{
  struct adaptra_pool_counts pool;
  size_t i;

  adaptra_lock (e);
  adaptra_stats_clear_counters (&e->stats);
  for (i = 0; i < ADAPTRA_STAT_SHARDS; i++)
    adaptra_stats_clear_counters (&e->shards[i].s);
  pool = adaptra_pool_counts (&e->pool);
  e->evicted_base = pool.evicted;
  e->evicted_unread_base = pool.evicted_unread;
  adaptra_unlock (e);
}

size_t
adaptra_streams_snapshot (struct adaptra_engine *e,
                          struct adaptra_stream_row *rows, size_t max)
{
  const unsigned shift = e->page_shift;
  struct adaptra_stream *s;
  size_t n = 0;
  uint64_t now;

  adaptra_lock (e);
  now = adaptra_now (e);
  for (s = adaptra_streams_first (&e->streams); s && n < max;
       s = adaptra_streams_after (&e->streams, s), n++) {
    struct adaptra_stream_row *r = &rows[n];

    const struct adaptra_volume *v = adaptra_volume_of (e, s->volume);
    const uint64_t base = v ? v->base : 0;

    r->id = s->id;
    r->client = s->client;
    r->volume = s->volume;
    snprintf (r->volume_name, sizeof r->volume_name, "%s", v ? v->name : "");
    r->method = s->method;
    r->backward = s->backward;
    r->position = (adaptra_stream_position (s) << shift) - base;
    r->window_offset = (s->ra_index << shift) - base;
    r->window_bytes = (s->readahead_index - s->ra_index) << shift;
    r->lookahead_bytes = s->backward
      ? (s->mark_index - s->ra_index) << shift
      : (s->readahead_index - s->mark_index) << shift;
    /* A stream hit without the lock may have read it since now. */
    r->idle_ns = now - min_u64 (now, s->atime_ns);
  }
  adaptra_unlock (e);
  return n;
}

size_t
adaptra_clients_snapshot (struct adaptra_engine *e,
                          struct adaptra_client_row *rows, size_t max)
{
  struct adaptra_stream *s;
  size_t i, n = 0;

  adaptra_lock (e);
  for (i = 0; i < e->nclients && n < max; i++) {
    const struct adaptra_client *c = adaptra_client_at (e, i);
    struct adaptra_client_row *r = &rows[n];

    if (!c->used)
      continue;
    r->id = (int) i;
    memcpy (r->name, c->name, sizeof r->name);
    r->volume = c->volume->id;
    memcpy (r->volume_name, c->volume->name, sizeof r->volume_name);
    r->requests = __atomic_load_n (&c->requests, __ATOMIC_RELAXED);
    r->bytes = __atomic_load_n (&c->bytes, __ATOMIC_RELAXED);
    r->readahead_hits = __atomic_load_n (&c->readahead_hits,
                                         __ATOMIC_RELAXED);
    r->backend_bytes = __atomic_load_n (&c->backend_bytes, __ATOMIC_RELAXED);
    r->streams_started = c->streams_started;
    r->streams_active = 0;
    for (s = adaptra_streams_first (&e->streams); s;
         s = adaptra_streams_after (&e->streams, s))
      r->streams_active += s->client == (int) i;
    n++;
  }
  adaptra_unlock (e);
  return n;
}

size_t
adaptra_volumes_snapshot (struct adaptra_engine *e,
                          struct adaptra_volume_row *rows, size_t max)
{
  uint64_t *pages;
  size_t i, j, n = 0;
  uint32_t f;

  adaptra_lock (e);
  /* Each indexed page lies in the byte range of one volume. */
  pages = calloc (e->nvolumes ? e->nvolumes : 1, sizeof *pages);
  for (f = 0; pages && f < adaptra_pool_frames (&e->pool); f++) {
    const struct adaptra_page *pg = adaptra_pool_page (&e->pool, f);
    uint64_t id = (pg->page_no << e->page_shift) >> ADAPTRA_VOLUME_SHIFT;

    if (pg->state != ADAPTRA_PAGE_FREE && !(pg->flags & ADAPTRA_PG_STALE) &&
        id < e->nvolumes)
      pages[id]++;
  }
  for (i = 0; i < e->nvolumes && n < max; i++) {
    const struct adaptra_volume *v = e->volumes[i];
    struct adaptra_volume_row *r = &rows[n];

    if (!v)
      continue;
    r->id = v->id;
    memcpy (r->name, v->name, sizeof r->name);
    r->flags = v->flags;
    r->size = v->size;
    r->clients = v->clients;
    r->contexts = v->nctx;
    r->bypass = v->bypass;
    r->backend_read_ns = (uint64_t) v->bdp.t;
    r->pages = pages ? pages[i] : 0;
    r->client_bytes = v->client_bytes;
    r->readahead_hits = v->readahead_hits;
    for (j = 0; j < e->nclients; j++) {
      const struct adaptra_client *c = adaptra_client_at (e, j);

      if (c->used && c->volume == v) {
        r->client_bytes += __atomic_load_n (&c->bytes, __ATOMIC_RELAXED);
        r->readahead_hits += __atomic_load_n (&c->readahead_hits,
                                              __ATOMIC_RELAXED);
      }
    }
    r->backend_bytes = __atomic_load_n (&v->backend_bytes, __ATOMIC_RELAXED);
    n++;
  }
  adaptra_unlock (e);
  free (pages);
  return n;
}

enum tunable { TUNE_RATIO, TUNE_MIN, TUNE_MAX, TUNE_MODE, TUNE_BYPASS };

/* Change one tunable if the configuration stays valid. */
static int
tune (struct adaptra_engine *e, enum tunable which, uint64_t value,
      char *why, size_t len)
{
  struct adaptra_config next;
  size_t i;
  int r;

  adaptra_lock (e);
  next = e->cfg;
  switch (which) {
  case TUNE_RATIO: next.ratio = (unsigned) value; break;
  case TUNE_MIN: next.min_bytes = value; break;
  case TUNE_MAX: next.max_bytes = value; break;
  case TUNE_MODE: next.mode = (enum adaptra_mode) value; break;
  case TUNE_BYPASS: next.bypass = (enum adaptra_bypass) value; break;
  }
  r = adaptra_config_check (&next, why, len);
  if (r == 0)
    e->cfg = next;
  /* The lockless read path goes by each volume's flag: apply a new
   * step-aside setting to it now, not at the volume's next locked read.
   */
  for (i = 0; r == 0 && which == TUNE_BYPASS && i < e->nvolumes; i++)
    if (e->volumes[i])
      steps_aside (e, e->volumes[i]);
  adaptra_unlock (e);
  return r;
}

int
adaptra_engine_set_ratio (struct adaptra_engine *e, unsigned ratio,
                          char *why, size_t len)
{
  return tune (e, TUNE_RATIO, ratio, why, len);
}

int
adaptra_engine_set_min (struct adaptra_engine *e, uint64_t bytes,
                        char *why, size_t len)
{
  return tune (e, TUNE_MIN, bytes, why, len);
}

int
adaptra_engine_set_max (struct adaptra_engine *e, uint64_t bytes,
                        char *why, size_t len)
{
  return tune (e, TUNE_MAX, bytes, why, len);
}

int
adaptra_engine_set_mode (struct adaptra_engine *e, enum adaptra_mode mode,
                         char *why, size_t len)
{
  return tune (e, TUNE_MODE, mode, why, len);
}

int
adaptra_engine_set_bypass (struct adaptra_engine *e,
                           enum adaptra_bypass bypass, char *why, size_t len)
{
  return tune (e, TUNE_BYPASS, bypass, why, len);
}

void
adaptra_engine_get_config (struct adaptra_engine *e,
                           struct adaptra_config *cfg)
{
  adaptra_lock (e);
  *cfg = e->cfg;
  adaptra_unlock (e);
}
