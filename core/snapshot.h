/* snapshot.h: the engine's live counters, in per-thread shards.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The read path counts in shards, one per thread in turn, each on its
 * own cache lines, as Linux's per-CPU vm_event_states; the snapshots
 * (snapshot.c, API in engine.h) sum them.  adaptra_stats_here
 * (engine-impl.h) gives a thread its shard of an engine's counters.
 */

#ifndef ADAPTRA_SNAPSHOT_H
#define ADAPTRA_SNAPSHOT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptra/stats.h"
#include "cacheline.h"

/* Shards of the read path's counters, and the cache line that keeps
 * them apart.  nbdkit serves a connection with 16 threads by default
 * (nbdkit -t), so one client's readers each count in a shard of their
 * own as threads take them in turn; more shards would only make every
 * snapshot sum more copies of the whole counter table.  Each shard
 * starts a cache line (cacheline.h).
 */
#define ADAPTRA_STAT_SHARDS 16

/* One shard of live counters, alone on its cache lines. */
struct adaptra_stats_shard {
  _Alignas (ADAPTRA_CACHE_LINE) struct adaptra_stats s;
};

/* The model of the thread-local variables every read touches (this
 * thread's shard, and in a debug build the lock owner's token,
 * engine-impl.h).  The filter is a shared object that nbdkit loads
 * with dlopen, so by default each access is a call to __tls_get_addr
 * (the general-dynamic model); initial-exec reads them at a fixed
 * offset from the thread pointer instead.  glibc keeps a surplus in
 * every thread's static TLS block for objects loaded later that ask
 * for it (rtld.optional_static_tls, 512 bytes by default), and these
 * take eight.  perf on fast W4-qd16 put __tls_get_addr at 0.3-0.5% of
 * nbdkit's samples, five calls a stepped-aside read.
 */
#define ADAPTRA_TLS_INITIAL_EXEC __attribute__ ((tls_model ("initial-exec")))

/* This thread's shard number plus one (0: none yet), and the next
 * to give out: threads take shards in turn.
 */
extern _Thread_local unsigned adaptra_shard_token ADAPTRA_TLS_INITIAL_EXEC;
extern unsigned adaptra_shard_next;

/* This thread's shard, [0, ADAPTRA_STAT_SHARDS).  Any thread. */
static inline unsigned
adaptra_shard_here (void)
{
  if (adaptra_shard_token == 0)
    adaptra_shard_token = __atomic_fetch_add (&adaptra_shard_next, 1,
                                              __ATOMIC_RELAXED) %
      ADAPTRA_STAT_SHARDS + 1;
  return adaptra_shard_token - 1;
}

/* The volumes snapshot's pool pages per volume.  Counting them walks
 * the whole pool index (milliseconds in a pool of gigabytes, though
 * a stripe at a time and without the engine lock), and any peer of the
 * statistics socket or the scrape endpoint may ask for it, so a count
 * younger than ADAPTRA_PAGE_COUNTS_REUSE_NS is served again instead of
 * walking the pool once more: however often peers ask, the pool is
 * walked at most once an interval.  A second: a count is at most that
 * stale, about the finest interval a person watches at (adaptra-stat
 * --watch 1).  Much shorter, peers asking in a loop would walk the
 * pool back to back, its stripe locks in hits' way; much longer, the
 * pages column would lag the counters beside it.
 */
#define ADAPTRA_PAGE_COUNTS_REUSE_NS UINT64_C (1000000000)

struct adaptra_page_counts {
  pthread_mutex_t lock;         /* one counter at a time; not the
                                   engine lock */
  uint64_t *pages;              /* pages of volume i, i < n */
  size_t n;
  uint64_t taken_ns;            /* when counted (the engine's clock) */
  bool valid;
};

#endif /* ADAPTRA_SNAPSHOT_H */
