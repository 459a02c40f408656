/* engine.c: the engine's lifecycle and its tunables.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine: its creation, its end and its tunables.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §3.1, §5, §7 and §9.
 *
 * adaptra_engine_new checks the configuration, then carves adaptra-pool
 * into the pool's frames and the transfer buffers (init_bounce), so
 * that all the data adaptra holds fits in the one budget, and sets up
 * the counter shards (snapshot.h), the stream table, the lock and its
 * condition variables.  No thread starts here: the workers start with
 * adaptra_workers_start (workers.c).  adaptra_engine_free stops the
 * workers, drops the queued jobs and frees the rest, volumes and
 * clients (volume.c) included.
 *
 * A tunable changes under the lock, and only if the configuration
 * stays valid (adaptra_config_check); readers see the new value at
 * their next decision.  A new step-aside setting is applied to every
 * volume at once, because the lockless read path goes by each
 * volume's flag, not by the configuration.
 *
 * The engine's other mechanisms: volume.c (volumes and clients),
 * read.c (the read paths, cache hints), aside.c (stepping aside),
 * hedge.c (a waiting reader's own read), invalidate.c (a write's
 * invalidation), snapshot.c (the counters and the four snapshots),
 * recognise.c (which stream a read is), readahead.c (the decision),
 * depth.c (clients that read ahead themselves), holes.c (the zero
 * extents), model.c (the backend), queue.c (jobs), fetch.c (the
 * backend read), workers.c (the threads); docs/DESIGN.md §4.1 maps
 * every file.  The lock's rules: engine-impl.h; why the lockless paths
 * are safe: read.c's note.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "range.h"
#include "engine-impl.h"

#ifndef NDEBUG
_Thread_local char adaptra_lock_token;
#endif

static void
on_lost (void *opaque, uint64_t stream_id, unsigned method)
{
  struct adaptra_engine *e = opaque;
  struct adaptra_stream *s = adaptra_streams_get (&e->streams, stream_id);

  (void) method;
  if (s)
    s->lost++;
}

/* An allocation at creation failed: say which budget, return ENOMEM. */
static int
out_of_memory (char *why, size_t len, const struct adaptra_config *cfg)
{
  snprintf (why, len, "cannot allocate adaptra-pool=%" PRIu64
            " and adaptra-streams=%u", cfg->pool_bytes, cfg->streams);
  return ENOMEM;
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
  uint64_t shares = min_u64 (cfg->workers, ADAPTRA_MODEL_DEPTH) +
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

int
adaptra_engine_new (const struct adaptra_config *cfg,
                    const struct adaptra_backend *backend,
                    const struct adaptra_clock *clock,
                    struct adaptra_engine **out, char *why, size_t len)
{
  struct adaptra_engine *e;
  pthread_condattr_t monotonic;
  uint64_t frame_bytes;
  unsigned i;
  int r;

  r = adaptra_config_check (cfg, why, len);
  if (r != 0)
    return r;
  if (!backend->pread || !clock->now_ns) {
    snprintf (why, len, "the backend has no pread or the clock no now_ns");
    return EINVAL;
  }
  e = calloc (1, sizeof *e);
  if (!e)
    return out_of_memory (why, len, cfg);
  e->cfg = *cfg;
  e->backend = *backend;
  e->clock = *clock;
  e->page_shift = (unsigned) adaptra_log2_exact (cfg->page_size);
  adaptra_queue_init (&e->queue, e->page_shift, &e->streams);
  e->shards = aligned_alloc (ADAPTRA_CACHE_LINE,
                             ADAPTRA_STAT_SHARDS * sizeof *e->shards);
  frame_bytes = e->shards ? init_bounce (e, cfg) : 0;
  if (frame_bytes == 0)
    goto no_bounce;
  memset (e->shards, 0, ADAPTRA_STAT_SHARDS * sizeof *e->shards);
  if (adaptra_pool_init (&e->pool, frame_bytes, e->page_shift,
                         cfg->no_data) == -1)
    goto no_pool;
  if (adaptra_streams_init (&e->streams, cfg->streams) == -1)
    goto no_streams;
  adaptra_pool_on_lost (&e->pool, on_lost, e);
  pthread_mutex_init (&e->lock, NULL);
  pthread_mutex_init (&e->page_counts.lock, NULL);
  /* Readers wait for pages with a deadline on the engine's clock,
   * which is monotonic (adaptra_wait).
   */
  pthread_condattr_init (&monotonic);
  pthread_condattr_setclock (&monotonic, CLOCK_MONOTONIC);
  for (i = 0; i < ADAPTRA_WAIT_QUEUES; i++)
    pthread_cond_init (&e->page_done[i], &monotonic);
  pthread_condattr_destroy (&monotonic);
  pthread_cond_init (&e->job_queued, NULL);
  pthread_cond_init (&e->hint_queued, NULL);
  pthread_cond_init (&e->job_done, NULL);
  *out = e;
  return 0;

  /* Undo what was set up, in reverse order. */
 no_streams:
  adaptra_pool_fini (&e->pool);
 no_pool:
  adaptra_bounce_fini (&e->bounce);
 no_bounce:
  free (e->shards);
  free (e);
  return out_of_memory (why, len, cfg);
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
  adaptra_volumes_free (e);
  pthread_cond_destroy (&e->job_done);
  pthread_cond_destroy (&e->hint_queued);
  pthread_cond_destroy (&e->job_queued);
  for (i = 0; i < ADAPTRA_WAIT_QUEUES; i++)
    pthread_cond_destroy (&e->page_done[i]);
  pthread_mutex_destroy (&e->lock);
  pthread_mutex_destroy (&e->page_counts.lock);
  free (e->page_counts.pages);
  adaptra_streams_fini (&e->streams);
  adaptra_pool_fini (&e->pool);
  free (e->shards);
  free (e);
}

/* Change the tunable parameter called name (its field: the table of
 * adaptra_params) if the configuration stays valid; else EINVAL.
 */
static int
tune (struct adaptra_engine *e, const char *name, uint64_t value,
      char *why, size_t len)
{
  const struct adaptra_param *p = adaptra_param_find (name);
  struct adaptra_config next;
  size_t i;
  int r;

  adaptra_lock (e);
  next = e->cfg;
  adaptra_param_put (&next, p, value);
  r = adaptra_config_check (&next, why, len);
  if (r == 0)
    e->cfg = next;
  /* The lockless read path goes by each volume's flag: apply a new
   * step-aside setting to it now, not at the volume's next locked read.
   */
  for (i = 0; r == 0 && p->type == ADAPTRA_PARAM_BYPASS && i < e->nvolumes;
       i++)
    if (e->volumes[i])
      adaptra_steps_aside (e, e->volumes[i]);
  adaptra_unlock (e);
  return r;
}

int
adaptra_engine_set_ratio (struct adaptra_engine *e, unsigned ratio,
                          char *why, size_t len)
{
  return tune (e, "ratio", ratio, why, len);
}

int
adaptra_engine_set_min (struct adaptra_engine *e, uint64_t bytes,
                        char *why, size_t len)
{
  return tune (e, "min", bytes, why, len);
}

int
adaptra_engine_set_max (struct adaptra_engine *e, uint64_t bytes,
                        char *why, size_t len)
{
  return tune (e, "max", bytes, why, len);
}

int
adaptra_engine_set_mode (struct adaptra_engine *e, enum adaptra_mode mode,
                         char *why, size_t len)
{
  return tune (e, "mode", mode, why, len);
}

int
adaptra_engine_set_bypass (struct adaptra_engine *e,
                           enum adaptra_bypass bypass, char *why, size_t len)
{
  return tune (e, "bypass", bypass, why, len);
}

void
adaptra_engine_get_config (struct adaptra_engine *e,
                           struct adaptra_config *cfg)
{
  adaptra_lock (e);
  *cfg = e->cfg;
  adaptra_unlock (e);
}
