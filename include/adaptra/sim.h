/* sim.h: the engine's calls for adaptra-sim, which runs no thread.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* adaptra-sim drives the engine in virtual time: its simulated workers
 * ask the same gate as the worker threads (adaptra_prefetch_may_start),
 * look at the queue in the same fair order (adaptra_prefetch_peek),
 * mark the job they take (adaptra_prefetch_started) and run it when
 * its read completes in virtual time (adaptra_prefetch_run_within).
 * Nothing else uses these calls; the filter sees engine.h only.
 */

#ifndef ADAPTRA_SIM_H
#define ADAPTRA_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptra/engine.h"

/* Split windows for n workers the caller runs itself, as for n threads
 * (jobs peeked, started and run with the calls below): for
 * adaptra-sim, which starts no thread.  Returns 0, or EBUSY when
 * threads run.
 */
extern int adaptra_workers_simulate (struct adaptra_engine *e, unsigned n);

/* Run the next queued job of volume that lies within bytes
 * [offset, offset + count) of it, in fair order, with ctx: a simulated
 * worker runs so, when its read completes, the job it took, or what
 * of it a reader left queued.
 */
extern bool adaptra_prefetch_run_within (struct adaptra_engine *e,
                                         int volume, uint64_t offset,
                                         uint64_t count, void *ctx);

/* The k-th queued prefetch job of any volume (0: the next; with one
 * volume, the one run_one runs next): the backend read it will make,
 * offset in its volume, in bytes.  Returns false when
 * fewer than k + 1 jobs are queued.  (For adaptra-sim, which models
 * when each read would complete and runs the job then.)
 */
extern bool adaptra_prefetch_peek (struct adaptra_engine *e, size_t k,
                                   uint64_t *offset, uint32_t *count);

/* The k-th queued prefetch job's read started now: a reader that runs
 * it later (it needs one of its pages) is timed from now, for the
 * backend's latency and throughput estimates.  Returns false when
 * fewer than k + 1 jobs are queued.  (For adaptra-sim, whose simulated
 * workers leave the job they read queued until it completes, and
 * whose readers wait for it by running it.)
 */
extern bool adaptra_prefetch_started (struct adaptra_engine *e, size_t k);

/* May a prefetch job start while running bytes are being read from
 * the backend, busy jobs of them by workers?  True while the bytes are
 * under the model's congestion limit (the measured bandwidth-delay
 * product and a quarter), or none are; where there is no limit, while
 * fewer jobs than the model's depth are: what the worker threads ask
 * before they take a job, and the simulated ones with what they read.
 */
extern bool adaptra_prefetch_may_start (struct adaptra_engine *e,
                                        uint64_t running, unsigned busy);

#endif /* ADAPTRA_SIM_H */
