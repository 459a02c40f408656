/* snapshot.c: the engine's counters and its four snapshots.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Snapshots: the statistics, the streams, the clients, the volumes.
 *
 * Terms and the counters' names: docs/DESIGN.md §3.5 and stats.h.
 *
 * Each snapshot copies what it reports into the caller's rows under
 * one hold of the engine lock, so that a consistent picture reaches
 * the control plane (control/) and the filter without either seeing
 * the engine's insides; but the volumes snapshot counts each volume's
 * pages before that, without the engine lock, stripe by stripe
 * (count_pages), since a walk of the whole index must not hold up the
 * read path.  Counters the read path bumps without the lock
 * (atomics, and the per-thread shards of snapshot.h) are read with
 * relaxed loads: a snapshot may miss the reads in progress, never
 * count one twice.  Reset clears the counters and takes the pool's
 * eviction counts as a new base, since the pool's own never go back.
 *
 * Positions are reported in bytes of their volume (the volume's base
 * taken off); a volume's client bytes and read-ahead hits are its
 * closed clients' (volume.c adds them at close) plus its open ones'.
 */

#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-impl.h"

_Thread_local unsigned adaptra_shard_token;
unsigned adaptra_shard_next;

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
  struct adaptra_model_estimate model;
  size_t i;

  memset (out, 0, sizeof *out);
  adaptra_lock (e);
  adaptra_stats_add_counters (out, &e->stats);
  for (i = 0; i < ADAPTRA_STAT_SHARDS; i++)
    adaptra_stats_add_counters (out, &e->shards[i].s);
  pool = adaptra_pool_counts (&e->pool);
  out->evicted = pool.evicted - e->evicted_base;
  out->evicted_unread = pool.evicted_unread - e->evicted_unread_base;
  out->page_bytes = UINT64_C (1) << e->page_shift;
  out->pages_free = pool.free;
  out->pages_inactive = pool.inactive;
  out->pages_active = pool.active;
  out->pages_in_flight = pool.in_flight;
  out->pages_lent = pool.lent;
  out->streams_active = adaptra_streams_count (&e->streams);
  for (i = 0; i < e->nclients; i++)
    out->clients_active += adaptra_client_at (e, i)->used;
  out->prefetch_queued_bytes = e->queue.queued_bytes;
  out->prefetch_flight_bytes = e->flight_bytes;
  adaptra_model_estimate (&e->model, adaptra_now (e), &model);
  out->backend_latency_ns = model.latency_ns;
  out->backend_bytes_per_sec = model.bandwidth;
  out->backend_flight_bytes = adaptra_model_running (&e->model);
  out->backend_reads = adaptra_model_reads (&e->model);
  out->workers_running = e->threads + e->hint_threads;
  out->backend_flight_limit_bytes =
    model.limit == UINT64_MAX ? 0 : model.limit;
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

/* bsearch's order of client rows: by id. */
static int
client_row_cmp (const void *key, const void *row)
{
  int id = *(const int *) key;
  int other = ((const struct adaptra_client_row *) row)->id;

  return (id > other) - (id < other);
}

size_t
adaptra_clients_snapshot (struct adaptra_engine *e,
                          struct adaptra_client_row *rows, size_t max)
{
  struct adaptra_stream *s;
  struct adaptra_client_row *row;
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
    n++;
  }
  /* One pass over the streams, not one per client: the rows are in
   * the order of their ids.
   */
  for (s = adaptra_streams_first (&e->streams); s;
       s = adaptra_streams_after (&e->streams, s))
    if ((row = bsearch (&s->client, rows, n, sizeof *rows,
                        client_row_cmp)) != NULL)
      row->streams_active++;
  adaptra_unlock (e);
  return n;
}

/* Pages of each of the first n volumes into pages: the last count if
 * it covers them and is younger than ADAPTRA_PAGE_COUNTS_REUSE_NS, else
 * a new one.  Each indexed page lies in the byte range of one volume;
 * the pool counts them a stripe at a time, without the engine lock,
 * which the read path must not wait for.  Engine lock not held.
 */
static void
count_pages (struct adaptra_engine *e, uint64_t *pages, size_t n)
{
  struct adaptra_page_counts *pc = &e->page_counts;
  uint64_t now = adaptra_now (e);
  uint64_t *grown;

  if (n == 0)
    return;
  pthread_mutex_lock (&pc->lock);
  if (!pc->valid || pc->n < n ||
      now - pc->taken_ns >= ADAPTRA_PAGE_COUNTS_REUSE_NS) {
    if (pc->n < n) {
      grown = realloc (pc->pages, n * sizeof *grown);
      if (!grown) {
        pthread_mutex_unlock (&pc->lock);
        adaptra_pool_count_by (&e->pool, ADAPTRA_VOLUME_SHIFT - e->page_shift,
                               pages, n);
        return;
      }
      pc->pages = grown;
      pc->n = n;
    }
    memset (pc->pages, 0, pc->n * sizeof *pc->pages);
    adaptra_pool_count_by (&e->pool, ADAPTRA_VOLUME_SHIFT - e->page_shift,
                           pc->pages, pc->n);
    pc->taken_ns = now;
    pc->valid = true;
  }
  memcpy (pages, pc->pages, n * sizeof *pages);
  pthread_mutex_unlock (&pc->lock);
}

size_t
adaptra_volumes_snapshot (struct adaptra_engine *e,
                          struct adaptra_volume_row *rows, size_t max)
{
  uint64_t *pages;
  size_t i, j, n = 0, nvolumes;

  adaptra_lock (e);
  nvolumes = e->nvolumes;
  adaptra_unlock (e);
  pages = calloc (nvolumes ? nvolumes : 1, sizeof *pages);
  if (pages)
    count_pages (e, pages, nvolumes);
  adaptra_lock (e);
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
    r->backend_read_ns = (uint64_t) v->model.all.t;
    r->pages = pages && i < nvolumes ? pages[i] : 0;
    r->client_bytes = v->client_bytes;
    r->readahead_hits = v->readahead_hits;
    r->backend_bytes = 0;
    for (j = 0; j < e->nclients; j++) {
      const struct adaptra_client *c = adaptra_client_at (e, j);

      if (c->used && c->volume == v) {
        r->client_bytes += __atomic_load_n (&c->bytes, __ATOMIC_RELAXED);
        r->readahead_hits += __atomic_load_n (&c->readahead_hits,
                                              __ATOMIC_RELAXED);
        r->backend_bytes += __atomic_load_n (&c->direct_bytes,
                                             __ATOMIC_RELAXED);
      }
    }
    r->backend_bytes += __atomic_load_n (&v->backend_bytes, __ATOMIC_RELAXED);
    n++;
  }
  adaptra_unlock (e);
  free (pages);
  return n;
}
