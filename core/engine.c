/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine: the read path, coherency, and the facade of engine.h.
 *
 * One client read, as in DESIGN.md "The read path":
 *
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
 * that return an error leave no pages behind.
 *
 * Coherency: adaptra_invalidate runs after a write, zero or trim
 * reached the backend.  It drops the overlapping READY pages and flags
 * IN_FLIGHT ones STALE, so their completion discards what they read
 * (which may predate the write).  A page pinned by a copy in progress
 * is freed when the copy ends; that copy races with the write anyway.
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/range.h"
#include "engine-impl.h"

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

/* Split adaptra-pool between the pool's frames and the transfer slots
 * (a 1/ADAPTRA_BOUNCE_SHARE of it, whole pages, at least a page each),
 * so that everything adaptra holds of the data fits in adaptra-pool.
 * Returns the bytes left for frames.
 */
static uint64_t
init_bounce (struct adaptra_engine *e, const struct adaptra_config *cfg)
{
  uint64_t pool_pages = cfg->pool_bytes >> e->page_shift;
  uint64_t budget = pool_pages / ADAPTRA_BOUNCE_SHARE;
  uint64_t nslots = cfg->workers + ADAPTRA_BOUNCE_READER_SLOTS;

  if (budget == 0)
    budget = 1;
  if (nslots > budget)
    nslots = budget;
  e->slot_pages = (uint32_t) (budget / nslots);
  if (adaptra_bounce_init (&e->bounce, (unsigned) nslots,
                           (size_t) e->slot_pages << e->page_shift) == -1)
    return 0;
  return (pool_pages - nslots * e->slot_pages) << e->page_shift;
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
  e->eof_page = adaptra_pages_in (cfg->export_size, e->page_shift);
  frame_bytes = init_bounce (e, cfg);
  if (frame_bytes == 0) {
    free (e);
    return NULL;
  }
  if (adaptra_pool_init (&e->pool, frame_bytes, e->page_shift,
                         cfg->no_data) == -1) {
    adaptra_bounce_fini (&e->bounce);
    free (e);
    return NULL;
  }
  if (adaptra_streams_init (&e->streams, cfg->streams) == -1) {
    adaptra_pool_fini (&e->pool);
    adaptra_bounce_fini (&e->bounce);
    free (e);
    return NULL;
  }
  e->pool.lost = on_lost;
  e->pool.lost_opaque = e;
  pthread_mutex_init (&e->lock, NULL);
  for (i = 0; i < ADAPTRA_WAIT_QUEUES; i++)
    pthread_cond_init (&e->page_done[i], NULL);
  pthread_cond_init (&e->job_queued, NULL);
  return e;
}

void
adaptra_engine_free (struct adaptra_engine *e)
{
  unsigned i;

  if (!e)
    return;
  adaptra_workers_stop (e);
  pthread_mutex_lock (&e->lock);
  adaptra_prefetch_drop_queue (e);
  pthread_mutex_unlock (&e->lock);
  adaptra_bounce_fini (&e->bounce);
  pthread_cond_destroy (&e->job_queued);
  for (i = 0; i < ADAPTRA_WAIT_QUEUES; i++)
    pthread_cond_destroy (&e->page_done[i]);
  pthread_mutex_destroy (&e->lock);
  adaptra_streams_fini (&e->streams);
  adaptra_pool_fini (&e->pool);
  free (e->clients);
  free (e);
}

void
adaptra_engine_set_size (struct adaptra_engine *e, uint64_t export_size)
{
  pthread_mutex_lock (&e->lock);
  e->cfg.export_size = export_size;
  e->eof_page = adaptra_pages_in (export_size, e->page_shift);
  adaptra_prefetch_drop_queue (e);
  adaptra_pool_invalidate (&e->pool, 0, UINT64_MAX);
  pthread_mutex_unlock (&e->lock);
}

int
adaptra_client_open (struct adaptra_engine *e, const char *name)
{
  size_t i;
  int id = -1;

  pthread_mutex_lock (&e->lock);
  for (i = 0; i < e->nclients && e->clients[i].used; i++)
    ;
  if (i == e->nclients) {
    size_t n = e->nclients ? 2 * e->nclients : 8;
    struct adaptra_client *c = realloc (e->clients, n * sizeof *c);

    if (c) {
      memset (c + e->nclients, 0, (n - e->nclients) * sizeof *c);
      e->clients = c;
      e->nclients = n;
    }
  }
  if (i < e->nclients) {
    memset (&e->clients[i], 0, sizeof e->clients[i]);
    e->clients[i].used = true;
    snprintf (e->clients[i].name, sizeof e->clients[i].name, "%s",
              name ? name : "");
    id = (int) i;
  }
  pthread_mutex_unlock (&e->lock);
  if (id == -1)
    errno = ENOMEM;
  return id;
}

void
adaptra_client_close (struct adaptra_engine *e, int client)
{
  pthread_mutex_lock (&e->lock);
  if (client >= 0 && (size_t) client < e->nclients)
    e->clients[client].used = false;
  pthread_mutex_unlock (&e->lock);
}

/* No frame can be had (all pinned or in flight): read page p through
 * without caching it, into the client's buffer if it wants the whole
 * page, else through a transfer slot.  Lock held on entry and exit.
 */
static int
read_uncached (struct adaptra_engine *e, void *ctx,
               const struct adaptra_request *r, uint64_t p)
{
  uint64_t start = p << e->page_shift;
  uint64_t bytes = adaptra_clamp_to_size (start,
                                          UINT64_C (1) << e->page_shift,
                                          e->cfg.export_size);
  bool in_client = adaptra_request_covers (r, start, bytes);
  unsigned char *slot = NULL;
  int err;

  pthread_mutex_unlock (&e->lock);
  if (!in_client)
    slot = adaptra_bounce_get (&e->bounce);
  if (in_client || slot) {
    err = e->backend.pread (ctx, in_client ? r->buf + (start - r->offset)
                                           : slot,
                            (uint32_t) bytes, start);
    if (!err && slot) {
      memset (slot + bytes, 0, ((size_t) 1 << e->page_shift) - bytes);
      adaptra_copy_out (r, p, e->page_shift, slot);
    }
  }
  else
    err = ENOMEM;
  if (slot)
    adaptra_bounce_put (&e->bounce, slot);
  pthread_mutex_lock (&e->lock);
  adaptra_stat_add (&e->stats.backend_requests, 1);
  adaptra_stat_add (err ? &e->stats.backend_errors : &e->stats.backend_bytes,
                    err ? 1 : bytes);
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
demand_run_cap (const struct adaptra_engine *e,
                const struct adaptra_request *r, uint64_t p, uint64_t last)
{
  const uint64_t request_max = ADAPTRA_REQUEST_MAX >> e->page_shift;
  uint64_t start = p << e->page_shift;
  uint64_t want = last - p;

  if (!adaptra_request_covers (r, start,
                               adaptra_clamp_to_size (start,
                                                      want << e->page_shift,
                                                      e->cfg.export_size))
      && want > e->slot_pages)
    want = start >= r->offset ? want - 1 : e->slot_pages;
  return want < request_max ? want : request_max;
}

/* Read the run of absent pages from *pp (up to last) from the backend
 * into the pool and the client's buffer; advance *pp past it.  Lock
 * held on entry and exit.
 */
static int
read_run (struct adaptra_engine *e, int client, void *ctx, uint64_t stream_id,
          const struct adaptra_request *r, uint64_t *pp, uint64_t last)
{
  struct adaptra_client *c;
  uint64_t p = *pp;
  uint64_t cap = demand_run_cap (e, r, p, last);
  /* Most misses are a few pages: spare them a malloc. */
  uint32_t small[RUN_ON_STACK];
  uint32_t *heap = cap > RUN_ON_STACK ? malloc (cap * sizeof *heap) : NULL;
  uint32_t *frames = heap ? heap : small;
  uint32_t n = 0;
  uint64_t bytes;
  int err;

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
    return read_uncached (e, ctx, r, p);
  }
  bytes = adaptra_clamp_to_size (p << e->page_shift,
                                 (uint64_t) n << e->page_shift,
                                 e->cfg.export_size);
  pthread_mutex_unlock (&e->lock);
  err = adaptra_fetch (e, ctx, p, frames, n, (uint32_t) bytes, r);
  free (heap);
  c = adaptra_client_of (e, client);
  if (c && !err)
    c->backend_bytes += bytes;
  *pp = p + n;
  return err;
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
  bool fresh;

  if (s) {
    fresh = s->touched != p + 1 || s->touched_by != client;
    s->touched = p + 1;
    s->touched_by = client;
    return fresh;
  }
  if ((c = adaptra_client_of (e, client)) == NULL)
    return true;
  fresh = c->touched != p + 1;
  c->touched = p + 1;
  return fresh;
}

/* Pin and account the READY pages from *pp on (at most PIN_BATCH), copy
 * them out without the lock, unpin them.  Lock held on entry and exit.
 */
static void
copy_ready (struct adaptra_engine *e, int client,
            const struct adaptra_request *r, uint64_t *pp, uint64_t last)
{
  struct adaptra_client *c = adaptra_client_of (e, client);
  uint32_t batch[PIN_BATCH];
  uint64_t p = *pp;
  uint32_t n = 0, i, f;

  while (p + n < last && n < PIN_BATCH &&
         (f = adaptra_pool_lookup (&e->pool, p + n)) != ADAPTRA_NO_FRAME &&
         e->pool.pages[f].state == ADAPTRA_PAGE_READY) {
    adaptra_pool_pin (&e->pool, f);
    if (new_access (e, client, e->pool.pages[f].stream_id, p + n) &&
        adaptra_pool_touch (&e->pool, f)) {
      struct adaptra_stream *s =
        adaptra_streams_get (&e->streams, e->pool.pages[f].stream_id);

      adaptra_stats_count_hits (&e->stats, e->pool.pages[f].method, 1);
      if (c)
        c->readahead_hits++;
      if (s)
        s->hits++;
    }
    batch[n++] = f;
  }
  pthread_mutex_unlock (&e->lock);
  for (i = 0; e->pool.arena && i < n; i++)
    adaptra_copy_out (r, p + i, e->page_shift,
                      adaptra_pool_data (&e->pool, batch[i]));
  pthread_mutex_lock (&e->lock);
  for (i = 0; i < n; i++)
    adaptra_pool_unpin (&e->pool, batch[i]);
  *pp = p + n;
}

/* Step 1 of the read path: the request's one read-ahead decision.
 * Returns the stream id that pages read on demand should carry.
 */
static uint64_t
decide (struct adaptra_engine *e, int client, struct adaptra_span span)
{
  uint32_t mark = ADAPTRA_NO_FRAME;
  uint64_t seen_stream = 0;
  struct adaptra_stream *s;
  uint64_t p;

  for (p = span.first; p < span.last; p++) {
    uint32_t f = adaptra_pool_lookup (&e->pool, p);

    if (f == ADAPTRA_NO_FRAME)
      return adaptra_readahead_miss (e, client, span.first, span.last, p);
    if (!seen_stream)
      seen_stream = e->pool.pages[f].stream_id;
    if (mark == ADAPTRA_NO_FRAME && adaptra_pool_take_mark (&e->pool, f))
      mark = f;
  }
  if (mark != ADAPTRA_NO_FRAME) {
    adaptra_readahead_mark (e, client, span.first, span.last, mark);
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
  const struct adaptra_request r = {
    .buf = buf, .offset = offset, .count = count,
  };
  struct adaptra_span span;
  struct adaptra_client *c;
  uint64_t stream_id;
  bool blocked = false;
  uint64_t p;
  int err = 0;

  if (count == 0)
    return 0;
  pthread_mutex_lock (&e->lock);
  if (offset > e->cfg.export_size || count > e->cfg.export_size - offset) {
    pthread_mutex_unlock (&e->lock);
    return EINVAL;
  }
  adaptra_stat_add (&e->stats.client_requests, 1);
  adaptra_stat_add (&e->stats.client_bytes, count);
  if ((c = adaptra_client_of (e, client)) != NULL) {
    c->requests++;
    c->bytes += count;
  }
  adaptra_streams_reap_one (&e->streams, adaptra_now (e));

  span = adaptra_span_of (offset, count, e->page_shift);
  stream_id = decide (e, client, span);

  p = span.first;
  while (p < span.last && !err) {
    uint32_t f = adaptra_pool_lookup (&e->pool, p);

    if (f == ADAPTRA_NO_FRAME) {
      err = read_run (e, client, ctx, stream_id, &r, &p, span.last);
      /* adaptra_fetch touched the pages it read for the client. */
      if (!err)
        new_access (e, client, stream_id, p - 1);
    }
    else if (e->pool.pages[f].state == ADAPTRA_PAGE_READY)
      copy_ready (e, client, &r, &p, span.last);
    else {
      if (!blocked) {
        struct adaptra_stream *s =
          adaptra_streams_get (&e->streams, e->pool.pages[f].stream_id);

        adaptra_stat_add (&e->stats.io_block, 1);
        if (s)
          s->late++;
        blocked = true;
      }
      if (!adaptra_prefetch_steal (e, p, ctx))
        pthread_cond_wait (adaptra_wait_queue (e, p), &e->lock);
    }
  }
  pthread_mutex_unlock (&e->lock);
  return err;
}

void
adaptra_invalidate (struct adaptra_engine *e, uint64_t offset, uint64_t count)
{
  struct adaptra_span span;
  uint64_t n;

  if (count == 0)
    return;
  if (count > UINT64_MAX - offset)
    count = UINT64_MAX - offset;
  span = adaptra_span_of (offset, count, e->page_shift);
  pthread_mutex_lock (&e->lock);
  n = adaptra_pool_invalidate (&e->pool, span.first, span.last);
  pthread_mutex_unlock (&e->lock);
  adaptra_stat_add (&e->stats.invalidated, n);
}

void
adaptra_cache_hint (struct adaptra_engine *e, int client, uint64_t offset,
                    uint64_t count)
{
  struct adaptra_span span;
  uint64_t spare;

  (void) client;
  adaptra_stat_add (&e->stats.cache_hints, 1);
  pthread_mutex_lock (&e->lock);
  count = adaptra_clamp_to_size (offset, count, e->cfg.export_size);
  if (count > 0 && !adaptra_prefetch_congested (e)) {
    span = adaptra_span_of (offset, count, e->page_shift);
    spare = adaptra_pool_spare (&e->pool);
    if (span.last - span.first > spare)
      span.last = span.first + spare;
    adaptra_prefetch_dispatch (e, span.first, span.last, UINT64_MAX, 0,
                               ADAPTRA_METHOD_NONE, 0);
  }
  else if (count > 0)
    adaptra_stat_add (&e->stats.io_congestion, 1);
  pthread_mutex_unlock (&e->lock);
}

void
adaptra_stats_snapshot (struct adaptra_engine *e, struct adaptra_stats *out)
{
  size_t i;

  memset (out, 0, sizeof *out);
  pthread_mutex_lock (&e->lock);
  adaptra_stats_copy_counters (out, &e->stats);
  out->evicted = e->pool.evicted - e->evicted_base;
  out->evicted_unread = e->pool.evicted_unread - e->evicted_unread_base;
  out->pages_free = e->pool.nfree;
  out->pages_inactive = e->pool.inactive.len;
  out->pages_active = e->pool.active.len;
  out->pages_in_flight = e->pool.in_flight;
  out->streams_active = e->streams.active;
  for (i = 0; i < e->nclients; i++)
    out->clients_active += e->clients[i].used;
  out->prefetch_queued_bytes = e->queued_bytes;
  out->prefetch_flight_bytes = e->flight_bytes;
  out->backend_latency_ns = adaptra_bdp_latency_ns (&e->bdp);
  out->backend_bytes_per_sec = adaptra_bdp_bytes_per_sec (&e->bdp);
  out->window_max_bytes = adaptra_readahead_max_pages (e) << e->page_shift;
  pthread_mutex_unlock (&e->lock);
}

void
adaptra_stats_reset (struct adaptra_engine *e)
{
  pthread_mutex_lock (&e->lock);
  adaptra_stats_clear_counters (&e->stats);
  e->evicted_base = e->pool.evicted;
  e->evicted_unread_base = e->pool.evicted_unread;
  pthread_mutex_unlock (&e->lock);
}

size_t
adaptra_streams_snapshot (struct adaptra_engine *e,
                          struct adaptra_stream_row *rows, size_t max)
{
  const unsigned shift = e->page_shift;
  struct adaptra_stream *s;
  size_t n = 0;
  uint64_t now;

  pthread_mutex_lock (&e->lock);
  now = adaptra_now (e);
  for (s = adaptra_streams_first (&e->streams); s && n < max;
       s = adaptra_streams_after (&e->streams, s), n++) {
    struct adaptra_stream_row *r = &rows[n];

    r->id = s->id;
    r->client = s->client;
    r->method = s->method;
    r->backward = s->backward;
    r->position = s->next << shift;
    r->window_offset = s->ra_index << shift;
    r->window_bytes = (s->readahead_index - s->ra_index) << shift;
    r->lookahead_bytes = s->backward
      ? (s->lookahead_index - s->ra_index) << shift
      : (s->readahead_index - s->lookahead_index) << shift;
    r->idle_ns = now - s->atime_ns;
  }
  pthread_mutex_unlock (&e->lock);
  return n;
}

size_t
adaptra_clients_snapshot (struct adaptra_engine *e,
                          struct adaptra_client_row *rows, size_t max)
{
  struct adaptra_stream *s;
  size_t i, n = 0;

  pthread_mutex_lock (&e->lock);
  for (i = 0; i < e->nclients && n < max; i++) {
    const struct adaptra_client *c = &e->clients[i];
    struct adaptra_client_row *r = &rows[n];

    if (!c->used)
      continue;
    r->id = (int) i;
    memcpy (r->name, c->name, sizeof r->name);
    r->requests = c->requests;
    r->bytes = c->bytes;
    r->readahead_hits = c->readahead_hits;
    r->backend_bytes = c->backend_bytes;
    r->streams_started = c->streams_started;
    r->streams_active = 0;
    for (s = adaptra_streams_first (&e->streams); s;
         s = adaptra_streams_after (&e->streams, s))
      r->streams_active += s->client == (int) i;
    n++;
  }
  pthread_mutex_unlock (&e->lock);
  return n;
}

enum tunable { TUNE_RATIO, TUNE_MIN, TUNE_MAX, TUNE_MODE };

/* Change one tunable if the configuration stays valid. */
static int
tune (struct adaptra_engine *e, enum tunable which, uint64_t value,
      char *why, size_t len)
{
  struct adaptra_config next;
  int r;

  pthread_mutex_lock (&e->lock);
  next = e->cfg;
  switch (which) {
  case TUNE_RATIO: next.ratio = (unsigned) value; break;
  case TUNE_MIN: next.min_bytes = value; break;
  case TUNE_MAX: next.max_bytes = value; break;
  case TUNE_MODE: next.mode = (enum adaptra_mode) value; break;
  }
  r = adaptra_config_check (&next, why, len);
  if (r == 0)
    e->cfg = next;
  pthread_mutex_unlock (&e->lock);
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

void
adaptra_engine_get_config (struct adaptra_engine *e,
                           struct adaptra_config *cfg)
{
  pthread_mutex_lock (&e->lock);
  *cfg = e->cfg;
  pthread_mutex_unlock (&e->lock);
}
