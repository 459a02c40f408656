/* sim.h: the engine's calls for adaptra-sim, which runs no thread.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* adaptra-sim drives the engine in virtual time: its simulated workers
 * take jobs as the worker threads do (adaptra_worker_take: the same
 * gate, the same fair order and batches) and run them when their
 * reads complete in virtual time (adaptra_worker_complete); a reader
 * that needs a page of a taken job waits in the clock's wait hook
 * (engine.h), where the simulator completes reads in virtual time.
 * The last two calls, adaptra_prefetch_peek and
 * adaptra_prefetch_may_start, are the unit tests' alone: they look at
 * the queue's order and the workers' gate.  The filter sees engine.h
 * only.
 */

#ifndef ADAPTRA_SIM_H
#define ADAPTRA_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptra/engine.h"

/* Split windows for n workers the caller runs itself, as for n threads
 * (jobs taken and completed with the calls below): for
 * adaptra-sim, which starts no thread.  Returns 0, or EBUSY when
 * threads run.
 */
extern int adaptra_workers_simulate (struct adaptra_engine *e, unsigned n);

struct adaptra_job;

/* A simulated worker takes the next job that a worker thread would
 * (NULL if none may start now), and its read begins now: *offset and
 * *count say what it reads of its volume.  Until
 * adaptra_worker_complete, the job is in flight as a thread's.
 */
extern struct adaptra_job *adaptra_worker_take (struct adaptra_engine *e,
                                                uint64_t *offset,
                                                uint32_t *count);

/* The read of job (adaptra_worker_take's) by simulated worker index
 * completes now: the engine calls the backend's pread with the
 * volume's context of that worker, as a thread's
 * (adaptra_volume_set_contexts; the simulator's pread returns at once),
 * and fills the job's pages, timed from the take.
 */
extern void adaptra_worker_complete (struct adaptra_engine *e,
                                     struct adaptra_job *job, unsigned index);

/* The k-th queued prefetch job of any volume (0: the next; with one
 * volume, the one run_one runs next): the backend read it will make,
 * offset in its volume, in bytes.  Returns false when
 * fewer than k + 1 jobs are queued.  (For the unit tests, which look
 * at the queue's order.)
 */
extern bool adaptra_prefetch_peek (struct adaptra_engine *e, size_t k,
                                   uint64_t *offset, uint32_t *count);

/* May a prefetch job start while running bytes are being read from
 * the backend, busy jobs of them by workers?  True while the bytes are
 * under the model's congestion limit (its limit, core/model.h: the
 * bandwidth-delay product and a mean read, by
 * ADAPTRA_MODEL_GAIN_NUM/ADAPTRA_MODEL_GAIN_DEN), or none are; where
 * there is no limit, while fewer jobs than the model's depth are: what
 * a worker asks before it takes a job (adaptra_worker_take asks it
 * with the reads in flight).
 * For the unit tests, which ask it of any load.
 */
extern bool adaptra_prefetch_may_start (struct adaptra_engine *e,
                                        uint64_t running, unsigned busy);

#endif /* ADAPTRA_SIM_H */
