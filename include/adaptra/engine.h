/* engine.h: the engine's interface: volumes, clients, reads, writes, workers.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine: the facade the nbdkit filter drives.  It owns the pool,
 * the stream table, the prefetch queue and workers, and the counters.
 * Every function is thread-safe unless its comment says otherwise.
 *
 * Errors, one convention for every function here: a function that can
 * fail returns int, 0 on success or a positive errno value (as the
 * backend's pread below and pthreads do), and neither sets nor reads
 * errno.  What it makes (an engine, a volume or client id) comes back
 * through its last pointer argument, written only on success.  One
 * whose failure a person must be told the reason for (a configuration
 * that adaptra_config_check refuses) takes why and len as well, and on
 * failure writes a one-line message there (at most len bytes, always
 * terminated; ADAPTRA_WHY_LEN holds any).  Each function's comment
 * lists the errno values it returns.  Functions that return bool,
 * size_t, uint64_t or nothing cannot fail.
 */

#ifndef ADAPTRA_ENGINE_H
#define ADAPTRA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

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

/* What a thread has had of the CPUs since it started (struct
 * adaptra_clock's cpu_use).  On Linux: run_ns its CPU time
 * (CLOCK_THREAD_CPUTIME_ID), wait_ns and slices the second and third
 * fields of /proc/thread-self/schedstat (its run-queue delay, and how
 * often it was put on a CPU).
 */
struct adaptra_cpu_use {
  uint64_t run_ns;              /* time it ran on a CPU */
  uint64_t wait_ns;             /* time it was runnable, waiting on a
                                   run queue */
  uint64_t slices;              /* times it was put on a CPU */
};

/* A monotonic clock in nanoseconds (tests pass a fake one). */
struct adaptra_clock {
  uint64_t (*now_ns) (void *opaque);
  /* Optional.  Called, without the engine's lock, where a reader waits
   * for a backend read in flight (a worker's job that holds a page it
   * needs); returns when some read in flight completed, or when now_ns
   * reached deadline_ns (UINT64_MAX: none), whichever comes first: a
   * reader waits no longer than reading its pages itself would take
   * (core/hedge.c: adaptra_hedge_deadline).  NULL: the reader sleeps
   * until the worker thread wakes it or the deadline passes.  For
   * adaptra-sim, which runs no thread: its hook completes its simulated
   * workers' reads in virtual time.
   */
  void (*wait) (void *opaque, uint64_t deadline_ns);
  /* Optional.  What the calling thread has had of the CPUs so far
   * (struct adaptra_cpu_use); false: not known.  Only the difference
   * of two calls of one thread is used: the step-aside test takes what
   * the machine took of a sampled read's time out of it (core/aside.c:
   * adaptra_read_aside), so that a loaded machine does not look like a
   * slow backend.  NULL: a read is judged by its whole time.
   */
  bool (*cpu_use) (void *opaque, struct adaptra_cpu_use *use);
  void *opaque;
};

/* The system's monotonic clock in nanoseconds: the filter's clock, and
 * the real time that idle threads and handles are measured in.
 */
static inline uint64_t
adaptra_monotonic_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * UINT64_C (1000000000) + (uint64_t) ts.tv_nsec;
}

struct adaptra_engine;

/* Bytes of a why buffer that hold any message the engine writes. */
#define ADAPTRA_WHY_LEN 256

/* Create an engine in *out.  backend and clock are copied.  Returns 0;
 * EINVAL (cfg fails adaptra_config_check, whose message is in why; or
 * backend or clock lacks its function); ENOMEM (the pool, the stream
 * table or the transfer buffers cannot be allocated).  No workers run
 * until adaptra_workers_start.
 */
extern int adaptra_engine_new (const struct adaptra_config *cfg,
                               const struct adaptra_backend *backend,
                               const struct adaptra_clock *clock,
                               struct adaptra_engine **out,
                               char *why, size_t len);

/* Stop the workers (if running) and free everything. */
extern void adaptra_engine_free (struct adaptra_engine *e);

/* Volumes.  A volume is one set of bytes that clients read: an
 * export as every connection to it sees it, or one connection's own
 * view where connections of an export may see different data (a
 * per-connection scratch disk).  Every page, stream and job belongs to
 * one volume, and a page is only ever served to clients of the volume
 * it was read for.  All volumes share the pool and its aging order.
 *
 * Volume i owns bytes [i << ADAPTRA_VOLUME_SHIFT, (i + 1) <<
 * ADAPTRA_VOLUME_SHIFT) of one 64-bit byte space, so the pool and the
 * stream table index pages of all volumes without knowing of them.
 * That bounds a volume to ADAPTRA_VOLUME_SIZE_MAX (1 PiB) and their
 * number to ADAPTRA_VOLUMES_MAX (16383) at once.
 */
#define ADAPTRA_VOLUME_SHIFT 50
#define ADAPTRA_VOLUME_SIZE_MAX (UINT64_C (1) << ADAPTRA_VOLUME_SHIFT)
#define ADAPTRA_VOLUMES_MAX ((1u << (64 - ADAPTRA_VOLUME_SHIFT)) - 1)

/* Flags of a volume. */
enum adaptra_volume_flag {
  /* One connection's view (only reported: the caller decides). */
  ADAPTRA_VOLUME_PER_CONNECTION = 1 << 0,
  /* Its bytes may be another volume's under another name (a plugin
   * that ignores export names, or whose connections share data that
   * they do not promise to share): a write to any volume of the same
   * size also drops the written range from this one.
   */
  ADAPTRA_VOLUME_MAY_ALIAS = 1 << 1,
};

/* Open a volume of size bytes with flags (enum adaptra_volume_flag);
 * name (the export name, for the rows) is copied, truncated to 63
 * bytes.  Its id (>= 0) goes to *id.  Returns 0; EFBIG (size over
 * ADAPTRA_VOLUME_SIZE_MAX); ENOSPC (ADAPTRA_VOLUMES_MAX open); ENOMEM.
 * Its prefetch runs only in its readers' threads until
 * adaptra_volume_set_contexts.
 */
extern int adaptra_volume_open (struct adaptra_engine *e, const char *name,
                                uint64_t size, unsigned flags, int *id);

/* From now on the workers read the volume's prefetch jobs with these
 * n backend contexts (worker i with ctxs[i % n]; ctxs is copied).
 * n == 0: only its readers run its jobs (adaptra_prefetch_run_one),
 * and the jobs queued now are dropped.  When a context of the old set
 * is not in ctxs, returns only once no job of the volume runs (so
 * that the caller may close it); adding contexts returns at once.
 * Returns 0, or ENOMEM.
 */
extern int adaptra_volume_set_contexts (struct adaptra_engine *e, int volume,
                                        unsigned n, void **ctxs);

/* Close the volume: drop its pages (in-flight ones are discarded when
 * their read ends), its queued jobs and its streams, wait for its
 * running jobs, and free the id for reuse.  Its clients must be
 * closed.
 */
extern void adaptra_volume_close (struct adaptra_engine *e, int volume);

/* Register a client (a connection reading volume; name is its peer,
 * for the rows); its id (>= 0) for the calls below goes to *id.
 * Returns 0; EINVAL (the volume is not open); ENOMEM.
 */
extern int adaptra_client_open (struct adaptra_engine *e, int volume,
                                const char *name, int *id);

/* The connection closed.  Its streams live on (other connections of
 * the same client may continue them) and are reaped when idle.
 */
extern void adaptra_client_close (struct adaptra_engine *e, int client);

/* Read count bytes at offset of the client's volume: from the pool
 * where present, waiting for pages in flight, from the backend with
 * ctx (a context that sees the volume's bytes) otherwise; and make
 * the request's one read-ahead decision.  count > 0 and the range lies
 * inside the export.  Returns 0, or the errno of this client's own
 * failed backend read (a failed prefetch never fails a read: its
 * pages are dropped and read here instead).  EINVAL for a range past
 * the export.
 */
extern int adaptra_read (struct adaptra_engine *e, int client, void *ctx,
                         void *buf, uint32_t count, uint64_t offset);

/* A write, zero or trim of [offset, offset + count) of volume reached
 * the backend (or failed there): drop the pages overlapping it of
 * every volume that may hold those bytes: the volume itself, the
 * shared volume (not ADAPTRA_VOLUME_PER_CONNECTION) of the same name
 * whatever its size, and every ADAPTRA_VOLUME_MAY_ALIAS volume of the
 * same size.  Other volumes' pages are other bytes and stay.
 * Pages still in flight are discarded when their read completes, so
 * no byte read before the write is served after this returns.
 */
extern void adaptra_invalidate (struct adaptra_engine *e, int volume,
                                uint64_t offset, uint64_t count);

/* The same for a write through a connection that has no volume (it
 * passes through: its export is size bytes to it, another size to the
 * connections of the export's volume, or no volume could be opened):
 * drop the range from the shared volume of export name, and from
 * every ADAPTRA_VOLUME_MAY_ALIAS volume whatever its size.
 */
extern void adaptra_invalidate_export (struct adaptra_engine *e,
                                       const char *name, uint64_t size,
                                       uint64_t offset, uint64_t count);

/* NBD_CMD_CACHE: queue a prefetch of the range of the client's
 * volume, clamped to the volume and to what the pool can spare;
 * skipped when the volume stepped aside or the backend is congested
 * (counted as io_congestion).  Never blocks on the backend.
 */
extern void adaptra_cache_hint (struct adaptra_engine *e, int client,
                                uint64_t offset, uint64_t count);

/* How many bytes adaptra_cache_hint would queue for the client now:
 * 0 when its volume stepped aside or may start no prefetch
 * (congested), else what the pool can spare.  (For boot profiles,
 * which must not propose what the engine would drop.)
 */
extern uint64_t adaptra_cache_room (struct adaptra_engine *e, int client);

/* Memory the caller keeps beside the engine (boot profiles' recorders
 * and matchers) taken out of adaptra-pool: adaptra_lend keeps out of
 * use the pool's frames that cover every byte lent (evicting pages,
 * their memory given back to the operating system), so the pool and
 * what is lent stay within adaptra-pool together.  false, lending
 * nothing, when the pool cannot (its other frames in flight or
 * pinned).  adaptra_take_back returns bytes lent.
 */
extern bool adaptra_lend (struct adaptra_engine *e, uint64_t bytes);
extern void adaptra_take_back (struct adaptra_engine *e, uint64_t bytes);

/* A boot profile proposed, saw hit and saw wasted pages (counted in
 * the statistics).
 */
extern void adaptra_stats_add_profile (struct adaptra_engine *e,
                                       uint64_t proposed, uint64_t hit,
                                       uint64_t wasted);

/* Start n prefetch threads, and hints more that take only the jobs of
 * cache hints (adaptra_cache_hint: boot profiles, NBD_CMD_CACHE); each
 * reads the jobs of the volumes that have contexts
 * (adaptra_volume_set_contexts).  Returns 0; EBUSY (workers already
 * running); ENOMEM or pthread_create's error (none are left running).
 */
extern int adaptra_workers_start (struct adaptra_engine *e, unsigned n,
                                  unsigned hints);

/* Stop and join the workers.  Jobs not yet started are dropped: their
 * pages are freed and readers waiting for them read them themselves.
 */
extern void adaptra_workers_stop (struct adaptra_engine *e);

/* Run the next queued prefetch job (in fair order) of volume in the
 * caller's thread with ctx.  Returns false when the volume has none
 * queued.  (Readers of a volume without contexts run its read-ahead
 * so; tests too.)
 */
extern bool adaptra_prefetch_run_one (struct adaptra_engine *e, int volume,
                                      void *ctx);

/* adaptra-sim's calls, through which its simulated workers take and
 * run jobs: adaptra/sim.h.
 */

/* Counters and gauges now. */
extern void adaptra_stats_snapshot (struct adaptra_engine *e,
                                    struct adaptra_stats *out);

/* Zero the counters (gauges are state, not history). */
extern void adaptra_stats_reset (struct adaptra_engine *e);

/* One stream, for the "streams" command.  Positions in bytes. */
struct adaptra_stream_row {
  uint64_t id;
  int client;                   /* client that started it */
  int volume;                   /* volume it reads */
  char volume_name[64];
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
  int volume;                   /* volume it reads */
  char volume_name[64];
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

/* One volume, for the "exports" command. */
struct adaptra_volume_row {
  int id;
  char name[64];                /* export name */
  unsigned flags;               /* enum adaptra_volume_flag */
  uint64_t size;                /* bytes */
  unsigned clients;             /* open clients */
  unsigned contexts;            /* background contexts: 0 = readers
                                   run its prefetch */
  bool bypass;                  /* stepped aside: backend as fast as
                                   the pool, no read-ahead */
  uint64_t backend_read_ns;     /* mean time of its backend reads */
  uint64_t pages;               /* pool pages it holds (any state) */
  uint64_t client_bytes;        /* bytes its clients read */
  uint64_t backend_bytes;       /* bytes read from the backend for it */
  uint64_t readahead_hits;      /* its read-ahead pages read */
};

/* Fill up to max rows, one per open volume; returns the number filled.
 * Counts the pool's pages, O(pool pages), without the engine lock (a
 * stripe of the page index at a time): readers wait for no scan.
 */
extern size_t adaptra_volumes_snapshot (struct adaptra_engine *e,
                                        struct adaptra_volume_row *rows,
                                        size_t max);

/* The engine's decisions, as tracers and tests see them: the trace
 * callback of struct adaptra_config receives one record per decision,
 * under the engine lock.  Read-ahead decides once per request, on an
 * event (the request's first absent page, or the look-ahead mark it
 * took), and puts a window (its placement); stepping aside switches a
 * volume on or off.  Pages are numbered in the engine's byte space
 * (a volume's pages start at its base, ADAPTRA_VOLUME_SHIFT).
 */
enum adaptra_trace_kind {
  ADAPTRA_TRACE_WINDOW,         /* a window issued, of placement.method */
  ADAPTRA_TRACE_RESCUE,         /* a stream's pages kept from eviction */
  ADAPTRA_TRACE_FOLLOW,         /* a reader followed a window in flight */
  ADAPTRA_TRACE_BYPASS,         /* a volume stepped aside, or back */
};

enum adaptra_event_kind {
  ADAPTRA_EVENT_MISS,           /* a page of the request was absent */
  ADAPTRA_EVENT_MARK,           /* the request took a look-ahead mark */
};

/* What happened: the input of one read-ahead decision. */
struct adaptra_event {
  enum adaptra_event_kind what;
  int volume;                   /* the volume read */
  int client;                   /* the client reading */
  uint64_t first, last;         /* the request's pages [first, last) */
  uint64_t reader;              /* the page decided on: the first absent
                                   one, or the mark taken */
};

/* No look-ahead mark in the window. */
#define ADAPTRA_NO_MARK UINT64_MAX

/* Where the decision put a window: its output. */
struct adaptra_placement {
  uint64_t stream;              /* the stream's id */
  int client;                   /* the client that started the stream */
  unsigned method;              /* enum adaptra_method that sized it
                                   (NONE for a rescue or a follow) */
  uint64_t start, end;          /* the window: pages [start, end) */
  uint64_t mark;                /* its look-ahead mark, or
                                   ADAPTRA_NO_MARK */
  bool at_eof;                  /* it reaches the volume's end */
};

/* A volume's step-aside switch. */
struct adaptra_bypass_switch {
  int volume;
  bool on;                      /* stepped aside (true) or back */
  double read_ns, bytes;        /* its backend's mean read, by which
                                   adaptra-bypass=auto decided */
};

struct adaptra_trace {
  enum adaptra_trace_kind kind;
  /* WINDOW, RESCUE and FOLLOW: */
  struct adaptra_event event;
  struct adaptra_placement placement;
  uint64_t pages;               /* pages inserted (WINDOW), moved
                                   (RESCUE); 0 for FOLLOW */
  /* BYPASS: */
  struct adaptra_bypass_switch bypass;
};

/* Bytes that hold any trace line (the numbers at their widest). */
#define ADAPTRA_TRACE_LINE_LEN 256

/* The record as one line of the seed's trace text ("readahead-state(
 * client=1, stream=65537, index=40, ra=40+64-32) = 64"), for logs and
 * the control socket's trace command.  Returns what snprintf does.
 */
extern int adaptra_trace_format (const struct adaptra_trace *t, char *buf,
                                 size_t len);

/* Run-time tunables.  Each validates the changed configuration with
 * adaptra_config_check and returns 0, or EINVAL with its message in
 * why (the configuration is then unchanged).
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
extern int adaptra_engine_set_bypass (struct adaptra_engine *e,
                                      enum adaptra_bypass bypass,
                                      char *why, size_t len);

/* The configuration now (tunables included). */
extern void adaptra_engine_get_config (struct adaptra_engine *e,
                                       struct adaptra_config *cfg);

#endif /* ADAPTRA_ENGINE_H */
