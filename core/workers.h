/* workers.h: the prefetch worker threads and the gate they pass.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Workers are pthreads with their own backend context each (a plugin
 * that serialises requests gets one request per context, so more
 * workers mean more parallel requests).  adaptra-workers is their
 * ceiling: only as many read as the model's depth says the backend
 * rewards (model.h), the others are parked until it grows.  Workers
 * for hints only (adaptra-profile-workers, after the adaptra-workers
 * ones) take only cache hints' jobs, which is how boot profiles
 * prefetch: a profile's short, scattered extents need many reads at
 * once to hide the backend's latency (DESIGN.md §8).
 *
 * The start, stop and simulate calls are public (engine.h).
 */

#ifndef ADAPTRA_WORKERS_H
#define ADAPTRA_WORKERS_H

#include <pthread.h>
#include <stdbool.h>

struct adaptra_engine;

struct adaptra_worker {
  struct adaptra_engine *e;
  unsigned index;               /* reads with a volume's ctxs[index % nctx] */
  bool hints_only;              /* takes only cache hints' jobs (stream 0) */
  pthread_t thread;
};

#endif /* ADAPTRA_WORKERS_H */
