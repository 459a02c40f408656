/* fetch.h: the one backend read path, for prefetch jobs and misses.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Every read from the backend that fills the pool goes through
 * adaptra_fetch_then_lock: a worker's job, a reader's stolen part of
 * one, a reader's own miss.  It reads into the frames (or a transfer
 * buffer, or the client's buffer), times the read for the model
 * (model.h), completes or drops the frames and wakes their readers,
 * and the workers that the room it leaves lets start.
 */

#ifndef ADAPTRA_FETCH_H
#define ADAPTRA_FETCH_H

#include <stdbool.h>
#include <stdint.h>

struct adaptra_engine;
struct adaptra_volume;
struct adaptra_job;
struct adaptra_request;

/* Read the n consecutive pages from first, whose frames the caller
 * owns IN_FLIGHT, from volume v's backend with ctx (bytes of them:
 * fewer than n pages at the end of the volume) and complete them.  Called
 * without the lock; returns with it held, so that a caller with more
 * to do under it saves a round trip.  For a client's own read (demand
 * not NULL) the pages are also touched and copied out to the request.
 * Unless the frames are consecutive in the arena or demand wants every
 * byte read, n is at most e->slot_pages.  The read is timed (for
 * model.c) from the call.
 * Returns 0 or the backend's errno, in which case the frames are
 * dropped.
 */
extern int adaptra_fetch_then_lock (struct adaptra_engine *e,
                                    struct adaptra_volume *v, void *ctx,
                                    uint64_t first, const uint32_t *frames,
                                    uint32_t n, uint32_t bytes,
                                    const struct adaptra_request *demand);

/* Job's backend read begins now: counted in flight (model.h) and timed
 * from now.  A worker, a thread or simulated, begins it as it takes the
 * job, under the lock, so that the gate the next worker asks counts it
 * (workers.c: take); a simulated worker runs it when the read completes
 * in virtual time.  Elsewhere adaptra_fetch_job_then_lock begins it
 * itself.  Lock held or not: atomics and a clock reading.
 */
extern void adaptra_fetch_job_begin (struct adaptra_engine *e,
                                     struct adaptra_job *job);

/* Run job, taken off the queue (adaptra_prefetch_take), with ctx, and
 * free it; its read began already if begun (adaptra_fetch_job_begin),
 * else it begins now.  Called without the lock; returns with it held.
 * Its volume counts it as running meanwhile, so that
 * adaptra_volume_set_contexts and adaptra_volume_close can wait for it.
 * The room its end leaves in flight goes to queued jobs
 * (adaptra_workers_room), unless worker: the caller is a worker that
 * takes its next job itself.
 */
extern void adaptra_fetch_job_then_lock (struct adaptra_engine *e, void *ctx,
                                         struct adaptra_job *job, bool begun,
                                         bool worker);

#endif /* ADAPTRA_FETCH_H */
