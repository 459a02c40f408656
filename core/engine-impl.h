/* engine-impl.h: the engine's insides, its lock and its helpers.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine's insides, shared by engine.c, volume.c, read.c,
 * aside.c, hedge.c, invalidate.c, holes.c, snapshot.c, readahead.c,
 * recognise.c, queue.c, fetch.c and workers.c.  Not a public header:
 * the filter sees engine.h only.
 */

#ifndef ADAPTRA_ENGINE_IMPL_H
#define ADAPTRA_ENGINE_IMPL_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bounce.h"
#include "minmax.h"
#include "model.h"
#include "adaptra/config.h"
#include "adaptra/engine.h"
#include "pool.h"
#include "queue.h"
#include "workers.h"
#include "fetch.h"
#include "read.h"
#include "aside.h"
#include "snapshot.h"
#include "stream.h"
#include "volume.h"

/* Wait queues for in-flight pages, and the pages of a group (2^shift)
 * that share one.  A completion broadcasts to the queues of its pages'
 * groups only (adaptra_wake), so a reader is woken by reads of nearby
 * pages, not by every read of the engine.  A group of 64 pages (256
 * KiB of 4 KiB pages) covers a typical job's piece in one or two
 * broadcasts; 64 queues outnumber the threads that wait at once (the
 * workers and the clients' readers), so that readers of different
 * streams seldom share one, and bound the broadcasts of a long job.
 */
#define ADAPTRA_WAIT_QUEUES 64
#define ADAPTRA_WAIT_GROUP_SHIFT 6

/* Transfer buffers (bounce.c) take this fraction (1/N) of
 * adaptra-pool; one transfer is at most its share of one reader that
 * reads in bulk: a prefetch worker without a congestion limit (at most
 * ADAPTRA_MODEL_DEPTH of adaptra-workers; under a limit the workers'
 * chunks are small), an adaptra-profile-worker, and this many
 * more for the clients' own reads.  512 KiB in a 64 MiB pool.
 */
#define ADAPTRA_BOUNCE_SHARE 16
#define ADAPTRA_BOUNCE_READER_SLOTS 4

struct adaptra_engine {
  /* Fixed at creation. */
  struct adaptra_backend backend;
  struct adaptra_clock clock;
  unsigned page_shift;

  /* lock protects everything below except stats (atomic counters).
   * Take it with adaptra_lock, never directly: a debug build records
   * its holder in lock_owner.
   */
  pthread_mutex_t lock;
#ifndef NDEBUG
  _Atomic uintptr_t lock_owner; /* holder's adaptra_lock_self (), or 0 */
#endif
  /* An in-flight page completed or was dropped: readers wait on the
   * queue of the page's group (2^ADAPTRA_WAIT_GROUP_SHIFT consecutive pages),
   * so a completion wakes only readers of nearby pages.
   */
  pthread_cond_t page_done[ADAPTRA_WAIT_QUEUES];
  pthread_cond_t job_queued;    /* a job was queued, or stop requested */
  pthread_cond_t hint_queued;   /* the same for workers of hints only:
                                   a cache hint's job was queued */
  pthread_cond_t job_done;      /* a volume's last running job ended */
  struct adaptra_config cfg;    /* tunables may change at run time */
  struct adaptra_volume **volumes; /* by id; NULL: free */
  size_t nvolumes;
  struct adaptra_pool pool;
  struct adaptra_bounce bounce; /* transfer buffers (own lock) */
  uint32_t slot_pages;          /* most pages of one transfer buffer */
  struct adaptra_streams streams;
  struct adaptra_model model;   /* the backend, from all its reads */
  struct adaptra_queue queue;   /* prefetch jobs (queue.c) */
  uint64_t flight_bytes;        /* prefetch jobs queued or running */
  unsigned volumes_in_flight;   /* volumes with flight_bytes > 0 */
  uint64_t last_window_stream;  /* the stream of the window issued last
                                   (readahead.c: lone_window) */
  uint64_t hedge_credit;        /* bytes hedged reads may still read
                                   (hedge.c: hedge_affords) */
  uint64_t hedge_earned_at;     /* the model's delivered bytes when the
                                   credit was last earned */
  struct adaptra_client *client_chunks[ADAPTRA_CLIENT_CHUNKS];
  size_t nclients;              /* slots in the chunks (atomic) */
  size_t client_free;           /* every slot below it is used: where
                                   adaptra_client_open looks first, so
                                   opening N clients costs O(N), not
                                   O(N^2) */
  struct adaptra_worker *workers; /* a slot for each up to the ceilings */
  unsigned nworkers;            /* most threads of any job (set under
                                   the lock) */
  unsigned nhint_workers;       /* most after them, of hints' jobs only */
  unsigned threads, hint_threads; /* of each kind, running now */
  unsigned workers_busy;        /* of the first, reading a job now */
  unsigned hint_workers_busy;   /* of the others */
  uint64_t idle_wakeups;        /* a waiting thread woken to find no job
                                   it may take (workers.c) */
  bool stopping;

  uint64_t evicted_base;        /* pool eviction counts at the last reset */
  uint64_t evicted_unread_base;

  struct adaptra_stats stats;   /* live counters */
  /* The read path's live counters: ADAPTRA_STAT_SHARDS shards, each
   * thread counting in its own (adaptra_stats_here); a snapshot sums
   * them with stats.
   */
  struct adaptra_stats_shard *shards;

  /* The volumes snapshot's last count of pages (snapshot.h). */
  struct adaptra_page_counts page_counts;
};

/* The engine lock.  Every function says whether it wants the lock
 * held on entry (and then holds it again on exit), or not; a function
 * that drops and retakes it on the way says so, and one that returns
 * with the lock in another state than it was called with says so in
 * its name (adaptra_fetch_then_lock).  In a debug build (without
 * NDEBUG) the engine records which thread holds the lock, and
 * assert_locked and assert_unlocked check the caller's state: a
 * relaxed atomic store per lock and unlock, and a load per check.
 * What is read and written without the lock (the hit path, stepped-
 * aside reads), and why that is safe: read.c's note, the one place
 * that argument is made.
 */
#ifndef NDEBUG
/* This thread, as a number: the address of a thread-local variable. */
extern _Thread_local char adaptra_lock_token ADAPTRA_TLS_INITIAL_EXEC;
static inline uintptr_t
adaptra_lock_self (void)
{
  return (uintptr_t) &adaptra_lock_token;
}
#define assert_locked(e)                                                \
  assert (atomic_load_explicit (&(e)->lock_owner, memory_order_relaxed) \
          == adaptra_lock_self ())
#define assert_unlocked(e)                                              \
  assert (atomic_load_explicit (&(e)->lock_owner, memory_order_relaxed) \
          != adaptra_lock_self ())
#define set_lock_owner(e, owner)                                        \
  atomic_store_explicit (&(e)->lock_owner, (owner), memory_order_relaxed)
#else
#define assert_locked(e) ((void) (e))
#define assert_unlocked(e) ((void) (e))
#define set_lock_owner(e, owner) ((void) (e))
#endif

static inline void
adaptra_lock (struct adaptra_engine *e)
{
  assert_unlocked (e);
  pthread_mutex_lock (&e->lock);
  set_lock_owner (e, adaptra_lock_self ());
}

static inline void
adaptra_unlock (struct adaptra_engine *e)
{
  assert_locked (e);
  set_lock_owner (e, 0);
  pthread_mutex_unlock (&e->lock);
}

/* Take the lock if it is free; true if taken.  For work that may be
 * skipped when the lock is busy (a throughput sample).
 */
static inline bool
adaptra_trylock (struct adaptra_engine *e)
{
  assert_unlocked (e);
  if (pthread_mutex_trylock (&e->lock) != 0)
    return false;
  set_lock_owner (e, adaptra_lock_self ());
  return true;
}

static inline uint64_t
adaptra_now (const struct adaptra_engine *e)
{
  return e->clock.now_ns (e->clock.opaque);
}

/* Wait on cond, which drops and retakes the lock, until it is
 * signalled or the engine's clock reaches deadline (UINT64_MAX: no
 * deadline); a spurious return is possible, so callers look again.
 * The conds run on CLOCK_MONOTONIC (engine.c); the deadline is taken
 * as its distance from the engine's clock now, so that a fake clock
 * (the tests') waits as long in real time as it is ahead of now.
 */
static inline void
adaptra_wait (struct adaptra_engine *e, pthread_cond_t *cond,
              uint64_t deadline)
{
  uint64_t now, at;
  struct timespec ts;

  assert_locked (e);
  if (e->clock.wait) {
    adaptra_unlock (e);
    e->clock.wait (e->clock.opaque, deadline);
    adaptra_lock (e);
    return;
  }
  set_lock_owner (e, 0);
  if (deadline == UINT64_MAX)
    pthread_cond_wait (cond, &e->lock);
  else if ((now = adaptra_now (e)) < deadline) {
    at = adaptra_monotonic_ns () + (deadline - now);
    ts.tv_sec = (time_t) (at / UINT64_C (1000000000));
    ts.tv_nsec = (long) (at % UINT64_C (1000000000));
    pthread_cond_timedwait (cond, &e->lock, &ts);
  }
  set_lock_owner (e, adaptra_lock_self ());
}

/* The open volume with this id, or NULL.  Lock held. */
static inline struct adaptra_volume *
adaptra_volume_of (struct adaptra_engine *e, int volume)
{
  assert_locked (e);
  if (volume < 0 || (size_t) volume >= e->nvolumes)
    return NULL;
  return e->volumes[volume];
}

/* Slot i (< nclients) of the client table. */
static inline struct adaptra_client *
adaptra_client_at (struct adaptra_engine *e, size_t i)
{
  size_t rank = i / ADAPTRA_CLIENT_CHUNK0 + 1;
  unsigned k = 63 - (unsigned) __builtin_clzll (rank);

  return &e->client_chunks[k][i - ADAPTRA_CLIENT_CHUNK0 * ((1ULL << k) - 1)];
}

/* The client with this id, or NULL (closed, or no client).  Lock held,
 * or not: the hit path's only call without it is for a client id the
 * caller holds open.
 */
static inline struct adaptra_client *
adaptra_client_of (struct adaptra_engine *e, int client)
{
  struct adaptra_client *c;

  if (client < 0 ||
      (size_t) client >= __atomic_load_n (&e->nclients, __ATOMIC_ACQUIRE))
    return NULL;
  c = adaptra_client_at (e, (size_t) client);
  return __atomic_load_n (&c->used, __ATOMIC_RELAXED) ? c : NULL;
}

/* The queue on which a reader of page waits. */
static inline pthread_cond_t *
adaptra_wait_queue (struct adaptra_engine *e, uint64_t page)
{
  return &e->page_done[(page >> ADAPTRA_WAIT_GROUP_SHIFT) %
                       ADAPTRA_WAIT_QUEUES];
}

/* Wake the readers of pages [first, first + n).  Lock held. */
static inline void
adaptra_wake (struct adaptra_engine *e, uint64_t first, uint64_t n)
{
  uint64_t g = first >> ADAPTRA_WAIT_GROUP_SHIFT;
  uint64_t last = n > 0 ? (first + n - 1) >> ADAPTRA_WAIT_GROUP_SHIFT : g;
  uint64_t i;

  assert_locked (e);
  for (i = g; i <= last && i - g < ADAPTRA_WAIT_QUEUES; i++)
    pthread_cond_broadcast (&e->page_done[i % ADAPTRA_WAIT_QUEUES]);
}

/* The counters this thread bumps: its shard of e's.  Any thread, lock
 * held or not.
 */
static inline struct adaptra_stats *
adaptra_stats_here (struct adaptra_engine *e)
{
  return &e->shards[adaptra_shard_here ()].s;
}

/* readahead.c: the read-ahead decision, lock held. */

/* A miss at page index of a read of pages [first, last) of volume v:
 * classify, maybe issue a window (queued on v, which counts its
 * pages in flight).  Returns the stream id that the demand pages
 * should carry (0 for random reads).
 */
extern uint64_t adaptra_readahead_miss (struct adaptra_engine *e,
                                        struct adaptra_volume *v,
                                        int client, uint64_t first,
                                        uint64_t last, uint64_t index);

/* A read of pages [first, last) of volume v took the look-ahead mark
 * of frame f: issue the stream's next window (queued on v), or rescue
 * its pages.
 */
extern void adaptra_readahead_mark (struct adaptra_engine *e,
                                    struct adaptra_volume *v,
                                    int client, uint64_t first,
                                    uint64_t last, uint32_t f);

/* The effective window cap in pages now (0: the pool cannot spare any). */
extern uint64_t adaptra_readahead_max_pages (const struct adaptra_engine *e);

/* The largest window any stream may be given now: the cap above, or
 * with adaptra-max=auto a stream's own raised one (raise_cap), within
 * the pool's spare pages.  Lock held.
 */
extern uint64_t adaptra_readahead_cap_pages (struct adaptra_engine *e);

/* queue.c: the engine's side of the prefetch queue. */

/* Insert the absent pages of [start, end) of volume v (clamped to its
 * end) IN_FLIGHT (stopping when the pool cannot give a frame), flag
 * the page mark (if inserted here) with the look-ahead mark, and queue
 * jobs to read them.  Returns the number of pages inserted.  Lock
 * held.
 */
extern uint64_t adaptra_prefetch_dispatch (struct adaptra_engine *e,
                                           struct adaptra_volume *v,
                                           uint64_t start, uint64_t end,
                                           uint64_t mark, uint64_t stream_id,
                                           unsigned method, unsigned flags);

/* True when volume v may start no more prefetch now: queued and
 * running prefetch exceeds the congestion limit, and v already has
 * its share of it.  Lock held.
 */
extern bool adaptra_prefetch_congested (const struct adaptra_engine *e,
                                        const struct adaptra_volume *v);

/* If a queued job holds page, take it off the queue and run it in this
 * thread with ctx: its pages up to last (the end of the reader's
 * request), the rest staying queued if it is ADAPTRA_JOB_MIN or more,
 * else all of it.  Returns true if it ran; false if no queued job
 * holds page, or if workers are to take it instead, because distance
 * costs and the head is in another run or other readers wait already
 * (adaptra_queue_promote): the reader then waits for it.  Lock held
 * on entry and exit; dropped and retaken while the job runs.
 */
extern bool adaptra_prefetch_steal (struct adaptra_engine *e, uint64_t page,
                                    uint64_t last, void *ctx);

/* Take job (after prev) off the queue to run it: in fair order (a
 * worker's next), or out of turn (a steal).  Its volume counts it
 * running.  Lock held.
 */
extern void adaptra_prefetch_take (struct adaptra_engine *e,
                                   struct adaptra_job *prev,
                                   struct adaptra_job *job, bool in_order);

/* Add (or take, with a negative n) n bytes to the prefetch queued or
 * running of v and of the engine.  Lock held.
 */
extern void adaptra_prefetch_account (struct adaptra_engine *e,
                                      struct adaptra_volume *v, int64_t n);

/* Drop every queued job of volume v (NULL: of every volume) and free
 * its pages.  Lock held.
 */
extern void adaptra_prefetch_drop_queue (struct adaptra_engine *e,
                                         const struct adaptra_volume *v);

/* Is there no latency for reads in parallel to hide at the backend
 * est describes: a latency under ADAPTRA_MODEL_LATENCY_MIN, whether
 * it seeks or not (a disk's head, the page cache)?  Then one stream
 * alone gains nothing from a window in pieces (readahead.c:
 * lone_window, queue.c: parallel_workers).  Not the model's
 * latency_bound, which no backend that seeks is: a store 2 ms away
 * whose far reads its jitter serves longer, taken for seeking, still
 * has its latency to hide.
 */
static inline bool
adaptra_latency_unhidden (const struct adaptra_model_estimate *est)
{
  return est->latency_ns < ADAPTRA_MODEL_LATENCY_MIN;
}

#endif /* ADAPTRA_ENGINE_IMPL_H */
