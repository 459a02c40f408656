/* workers.h: the prefetch worker threads and the gate they pass.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Workers are pthreads with their own backend context each (a plugin
 * that serialises requests gets one request per context, so more
 * workers mean more parallel requests).  adaptra-workers is their
 * ceiling, not their number: ADAPTRA_WORKERS_MIN threads start (and
 * ADAPTRA_HINT_WORKERS_MIN for hints); when
 * a job is queued, or a worker takes one, every queued job that could
 * start now (by the gate and each stream's share) gets a thread at
 * once: a waiting one woken, or one started while fewer run than the
 * model says pay (adaptra_workers_wanted); and a thread
 * that found no job for ADAPTRA_WORKERS_IDLE_NS ends, down to those.
 * So an idle server holds a few threads (and, over a serialising
 * plugin, no handle: plugin/handles.h),
 * and a scan as many as its reads in flight.  Workers for hints only
 * (adaptra-profile-workers, after the adaptra-workers ones) take only
 * cache hints' jobs, which is how boot profiles prefetch: a profile's
 * short, scattered extents need many reads at once to hide the
 * backend's latency (DESIGN.md §8); they grow the same way up to
 * their own ceiling.
 *
 * The start, stop and simulate calls are public (engine.h).
 */

#ifndef ADAPTRA_WORKERS_H
#define ADAPTRA_WORKERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "model.h"

/* Threads that run while there is nothing to read: as many as read at
 * once on a backend not measured yet (the model's default depth), so
 * that a client's first windows do not wait for threads to start (one
 * alone cost a sparse image's copy at one request at a time over 2 ms
 * a seventh of its time); and one for hints only, which takes the
 * first hint and starts the next thread (above).
 */
#define ADAPTRA_WORKERS_MIN ADAPTRA_MODEL_DEPTH
#define ADAPTRA_HINT_WORKERS_MIN 1

/* A thread that found no job this long ends: long enough to keep a
 * scan's threads through its client's pauses, as the handles it reads
 * with (HANDLES_IDLE_NS, plugin/handles.h).
 */
#define ADAPTRA_WORKERS_IDLE_NS UINT64_C (2000000000)

/* While the model is in startup, its product is the delivery-rate
 * samples' (model.h), which a token bucket's burst inflates ten times
 * and more: a worker then starts at most this much of a stream's job
 * (workers.c: start_pages), and a stream at most four such
 * (ADAPTRA_MODEL_STREAM_READS), until a slot has measured the link.
 * One chunk's worth (ADAPTRA_MODEL_CHUNK_MAX) split adaptra-sim's
 * interleaved streams' first 2 MiB jobs, whose rests then queued
 * behind the other streams' (its p99 5.0 ms against 4.7).
 */
#define ADAPTRA_WORKERS_STARTUP_LEAD (2 * ADAPTRA_MODEL_CHUNK_MAX)

struct adaptra_engine;

struct adaptra_worker {
  struct adaptra_engine *e;
  unsigned index;               /* reads with a volume's ctxs[index % nctx] */
  bool hints_only;              /* takes only cache hints' jobs (stream 0) */
  bool alive;                   /* its thread runs (set under the lock) */
  bool exited;                  /* its thread ended: join it before the
                                   slot starts another */
  pthread_t thread;
};

/* How many worker threads (of jobs of any stream) may pay now, by the
 * model's estimate est, within ceiling (adaptra-workers): where the
 * backend is not latency-bound, its depth (more only share its CPUs or
 * queue at its head); where it is, the ceiling, and the gate decides:
 * a thread starts only for a job that may start now, while the bytes
 * in flight are under the model's limit (a window's small jobs, or a
 * sparse image's extents, fit many more reads in it than its chunks
 * do); never fewer than ADAPTRA_WORKERS_MIN (when the ceiling allows).
 * A pure function, for the unit tests.
 */
extern unsigned
adaptra_workers_wanted (const struct adaptra_model_estimate *est,
                        unsigned ceiling);

/* A job was queued (a cache hint's when hint): wake the workers of the
 * kinds that may take it, one for each queued job that could start
 * now, and start a thread for each such job more while fewer run than
 * pay.  Lock held.
 */
extern void adaptra_workers_job_queued (struct adaptra_engine *e, bool hint);

/* A read that no worker thread will follow with its next job (a
 * client's own, a job a reader ran itself) ended, leaving room in
 * flight: wake or start threads for the queued jobs that could start
 * now, as adaptra_workers_job_queued.  (Cache hints' workers pass no
 * gate, so room wakes none of them.)  Lock held.
 */
extern void adaptra_workers_room (struct adaptra_engine *e);

/* Do workers take queued jobs: threads that run, or the workers
 * adaptra-sim runs itself (adaptra_workers_simulate)?  Then a reader
 * may leave a job queued for them (queue.c: adaptra_prefetch_steal).
 * Lock held.
 */
extern bool adaptra_workers_take_jobs (const struct adaptra_engine *e);

#endif /* ADAPTRA_WORKERS_H */
