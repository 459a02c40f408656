/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine: the facade the nbdkit filter drives.  It owns the pool,
 * the stream table, the prefetch queue and workers, and the counters.
 * Every function is thread-safe unless its comment says otherwise.
 */

#ifndef ADAPTRA_ENGINE_H
#define ADAPTRA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptra/config.h"
#include "adaptra/stats.h"

/* What lies below the filter.  pread reads count bytes at offset into
 * buf and returns 0 or a positive errno.  ctx is the caller's: demand
 * reads pass the calling connection's, prefetch a worker's.  The
 * engine never calls it with count 0 or past the export size.
 */
struct adaptra_backend {
  int (*pread) (void *ctx, void *buf, uint32_t count, uint64_t offset);
};

/* A monotonic clock in nanoseconds (tests pass a fake one). */
struct adaptra_clock {
  uint64_t (*now_ns) (void *opaque);
  void *opaque;
};

struct adaptra_engine;

/* Create an engine.  cfg must pass adaptra_config_check; backend and
 * clock are copied.  Returns NULL with errno set (EINVAL, ENOMEM).
 * No workers run until adaptra_workers_start.
 */
extern struct adaptra_engine *adaptra_engine_new (
  const struct adaptra_config *cfg, const struct adaptra_backend *backend,
  const struct adaptra_clock *clock);

/* Stop the workers (if running) and free everything. */
extern void adaptra_engine_free (struct adaptra_engine *e);

/* The export size changed (or is first known): drop every page and
 * every queued prefetch.  A prefetch already running still reads
 * within the old size, so shrink the export only when no worker
 * reads.
 */
extern void adaptra_engine_set_size (struct adaptra_engine *e,
                                     uint64_t export_size);

/* Register a client (a connection; name is its peer, for the rows).
 * Returns a client id >= 0 for the calls below, or -1 (ENOMEM).
 */
extern int adaptra_client_open (struct adaptra_engine *e, const char *name);

/* The connection closed.  Its streams live on (other connections of
 * the same client may continue them) and are reaped when idle.
 */
extern void adaptra_client_close (struct adaptra_engine *e, int client);

/* Read count bytes at offset: from the pool where present, waiting
 * for pages in flight, from the backend with ctx otherwise; and make
 * the request's one read-ahead decision.  count > 0 and the range lies
 * inside the export.  Returns 0, or the errno of this client's own
 * failed backend read (a failed prefetch never fails a read: its
 * pages are dropped and read here instead).  EINVAL for a range past
 * the export.
 */
extern int adaptra_read (struct adaptra_engine *e, int client, void *ctx,
                         void *buf, uint32_t count, uint64_t offset);

/* A write, zero or trim of [offset, offset + count) reached the
 * backend (or failed there): drop the pool's pages overlapping it.
 * Pages still in flight are discarded when their read completes, so
 * no byte read before the write is served after this returns.
 */
extern void adaptra_invalidate (struct adaptra_engine *e, uint64_t offset,
                                uint64_t count);

/* NBD_CMD_CACHE: queue a prefetch of the range, clamped to the export
 * and to what the pool can spare; skipped when the backend is
 * congested.  Never blocks on the backend.
 */
extern void adaptra_cache_hint (struct adaptra_engine *e, int client,
                                uint64_t offset, uint64_t count);

/* Start n prefetch threads, thread i calling pread with ctxs[i]
 * (ctxs is copied).  Returns 0, or an errno (workers already running,
 * thread creation failed: none are left running).
 */
extern int adaptra_workers_start (struct adaptra_engine *e, unsigned n,
                                  void **ctxs);

/* Stop and join the workers.  Jobs not yet started are dropped: their
 * pages are freed and readers waiting for them read them themselves.
 */
extern void adaptra_workers_stop (struct adaptra_engine *e);

/* Run the oldest queued prefetch job in the caller's thread with ctx.
 * Returns false when the queue is empty.  (For deterministic tests;
 * readers also use it to run a job they are waiting for.)
 */
extern bool adaptra_prefetch_run_one (struct adaptra_engine *e, void *ctx);

/* The k-th queued prefetch job (0: the oldest, which run_one runs
 * next): the backend read it will make, in bytes.  Returns false when
 * fewer than k + 1 jobs are queued.  (For adaptra-sim, which models
 * when each read would complete and runs the job then.)
 */
extern bool adaptra_prefetch_peek (struct adaptra_engine *e, size_t k,
                                   uint64_t *offset, uint32_t *count);

/* Counters and gauges now. */
extern void adaptra_stats_snapshot (struct adaptra_engine *e,
                                    struct adaptra_stats *out);

/* Zero the counters (gauges are state, not history). */
extern void adaptra_stats_reset (struct adaptra_engine *e);

/* One stream, for the "streams" command.  Positions in bytes. */
struct adaptra_stream_row {
  uint64_t id;
  int client;                   /* client that started it */
  unsigned method;              /* enum adaptra_method of its window */
  bool backward;
  uint64_t position;            /* where it is expected to read next */
  uint64_t window_offset;       /* current window */
  uint64_t window_bytes;
  uint64_t lookahead_bytes;     /* part of the window past the mark */
  uint64_t idle_ns;             /* since its last read */
};

/* Fill up to max rows, most recently used stream first; returns the
 * number filled.
 */
extern size_t adaptra_streams_snapshot (struct adaptra_engine *e,
                                        struct adaptra_stream_row *rows,
                                        size_t max);

/* One client (connection), for per-client accounting. */
struct adaptra_client_row {
  int id;
  char name[64];
  uint64_t requests;            /* reads */
  uint64_t bytes;               /* bytes read */
  uint64_t readahead_hits;      /* pages served that read-ahead brought */
  uint64_t backend_bytes;       /* bytes its own misses read */
  uint64_t streams_started;
  uint64_t streams_active;      /* streams it started that still live */
};

/* Fill up to max rows, one per open client; returns the number filled. */
extern size_t adaptra_clients_snapshot (struct adaptra_engine *e,
                                        struct adaptra_client_row *rows,
                                        size_t max);

/* Run-time tunables.  Each validates the changed configuration with
 * adaptra_config_check and returns 0, or -1 with the message in why.
 */
extern int adaptra_engine_set_ratio (struct adaptra_engine *e, unsigned ratio,
                                     char *why, size_t len);
extern int adaptra_engine_set_min (struct adaptra_engine *e, uint64_t bytes,
                                   char *why, size_t len);
extern int adaptra_engine_set_max (struct adaptra_engine *e, uint64_t bytes,
                                   char *why, size_t len);
extern int adaptra_engine_set_mode (struct adaptra_engine *e,
                                    enum adaptra_mode mode,
                                    char *why, size_t len);

/* The configuration now (tunables included). */
extern void adaptra_engine_get_config (struct adaptra_engine *e,
                                       struct adaptra_config *cfg);

#endif /* ADAPTRA_ENGINE_H */
