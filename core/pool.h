/* pool.h: the page pool's descriptors, calls and accessors.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The page pool: a fixed memory budget cut into pages, indexed by
 * page number, aged by the eviction policy of lru.h.
 *
 * Every function here must be called with the engine lock held (see
 * core/engine-impl.h), except the three of the hit path that say
 * otherwise: adaptra_pool_pin_hits, adaptra_pool_unpin and (on a page
 * already read) adaptra_pool_touch.  For those the pool has stripe
 * locks of its own, one per group of hash buckets (pool.c explains
 * the rules; docs/DESIGN.md §9 the lock order).  It never calls the
 * backend.  Other files read it through the functions below, never
 * its fields, so that its layout and policy can change alone.
 */

#ifndef ADAPTRA_POOL_H
#define ADAPTRA_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheline.h"
#include "ilist.h"
#include "lru.h"

/* "No frame": returned by lookups that find nothing. */
#define ADAPTRA_NO_FRAME ILIST_NONE

enum adaptra_page_state {
  ADAPTRA_PAGE_FREE = 0,        /* on the free list */
  ADAPTRA_PAGE_IN_FLIGHT,       /* indexed, data being read by its owner */
  ADAPTRA_PAGE_READY,           /* indexed, data valid, on an LRU list */
  ADAPTRA_PAGE_LENT,            /* lent out of the pool (adaptra_pool_lend) */
};

enum adaptra_page_flag {
  ADAPTRA_PG_READAHEAD  = 1 << 0, /* inserted by read-ahead, not yet read */
  ADAPTRA_PG_REFERENCED = 1 << 1, /* read once by a client */
  ADAPTRA_PG_ACTIVATE   = 1 << 2, /* read twice: activate at the tail */
  ADAPTRA_PG_MARK       = 1 << 3, /* look-ahead mark */
  ADAPTRA_PG_ACTIVE     = 1 << 4, /* on the active list */
  ADAPTRA_PG_STALE      = 1 << 5, /* invalidated: free when released */
};

/* One page descriptor: 40 bytes on LP64 (see pool.c for the overhead
 * arithmetic).
 */
struct adaptra_page {
  uint64_t page_no;             /* which export page this frame holds */
  uint64_t stream_id;           /* stream that read it, 0 for none */
  uint32_t hash_next;           /* next frame in the same hash bucket */
  struct ilist_link lru;        /* LRU (or free list: next only) links */
  /* On a look-ahead mark page, the state of the stream that set it,
   * as the seed's mark page carries the stream's window size: the
   * size in pages of the window it marks, and the low 32 bits of the
   * aging clock when that window was issued.  A stream that left the
   * table resumes from them (core/recognise.c).  0 elsewhere.
   */
  uint32_t window;
  uint32_t age;
  /* pins and flags are atomic: the hit path pins and touches a page
   * without the engine lock (pool.c).
   */
  _Atomic uint16_t pins;        /* copies in progress */
  _Atomic uint8_t flags;        /* enum adaptra_page_flag bits */
  uint8_t state : 2;            /* enum adaptra_page_state */
  uint8_t method : 6;           /* read-ahead method that inserted it */
};

/* Called when a read-ahead page is evicted before anyone read it. */
typedef void (*adaptra_pool_lost_fn) (void *opaque, uint64_t stream_id,
                                      unsigned method);

/* Stripe locks of the page index: a power of two, each alone on its
 * cache line.
 */
#define ADAPTRA_POOL_STRIPES 64

/* Runs of 2^ADAPTRA_POOL_RUN_SHIFT consecutive pages (64 KiB of 4 KiB
 * pages, the size of most clients' reads) share a stripe, so that a
 * hit takes one stripe lock per run of its pages, not one per page.
 */
#define ADAPTRA_POOL_RUN_SHIFT 4

/* The pool counts its indexed pages by area: 2^ADAPTRA_POOL_AREA_SHIFT
 * consecutive pages (1 MiB of 4 KiB pages), ADAPTRA_POOL_AREAS
 * counters, direct-mapped (areas that many apart share one, which can
 * only make an area look held).  A lockless read of pages whose areas
 * count none finds them absent without a lookup or a stripe lock
 * (adaptra_pool_pin_hits): the reads of a volume that stepped aside,
 * which holds at most its trial's pages (aside.c: ASIDE_TRIAL_BYTES),
 * and the first reads of pages never read.  An area of a few 64 KiB
 * reads keeps one held page from hiding many absent ones around it;
 * 1024 counters (4 KiB) cover 1 GiB of 4 KiB pages before two areas
 * share one.
 */
#define ADAPTRA_POOL_AREA_SHIFT 8
#define ADAPTRA_POOL_AREAS 1024

struct adaptra_pool_stripe {
  _Alignas (ADAPTRA_CACHE_LINE) pthread_mutex_t lock;
};

struct adaptra_pool {
  size_t page_size;
  unsigned page_shift;
  uint32_t nframes;             /* pages the budget holds */
  unsigned char *arena;         /* nframes * page_size bytes of data, or
                                   NULL for a pool of metadata only */
  struct adaptra_page *pages;   /* nframes descriptors */
  uint32_t *buckets;            /* hash heads, nbuckets entries */
  unsigned bucket_bits;
  /* Bucket b's stripe is (b >> ADAPTRA_POOL_RUN_SHIFT) %
   * ADAPTRA_POOL_STRIPES (pool.c: bucket_of).
   */
  struct adaptra_pool_stripe *stripes;
  /* Indexed frames by area of their page (ADAPTRA_POOL_AREA_SHIFT),
   * changed with the index, read without any lock: atomic.
   */
  uint32_t area_pages[ADAPTRA_POOL_AREAS];
  struct adaptra_lru lru;       /* eviction policy and aging clock */
  uint32_t free_head, nfree;
  uint32_t lent_head, nlent;    /* frames lent (adaptra_pool_lend) */
  uint64_t lent_bytes;          /* what they cover */
  uint32_t in_flight;           /* frames in state IN_FLIGHT */
  uint64_t evicted;             /* pages evicted, all kinds */
  uint64_t evicted_unread;      /* READAHEAD pages evicted unread */
  /* The frame after the last one evicted, and the page after the one
   * it held: evicted next if it still holds that page, read once
   * (pool.c: follow_victim).
   */
  uint32_t follow_frame;
  uint64_t follow_page;
  adaptra_pool_lost_fn lost;    /* optional eviction hook */
  void *lost_opaque;
};

/* Set up a pool of pool_bytes / 2^page_shift pages.  The data arena
 * is one allocation of at most pool_bytes bytes, never grown; with
 * no_data there is none (adaptra_pool_data returns NULL), and the pool
 * costs its metadata only: for a simulator that moves no bytes.
 * Returns 0, or -1 with errno set.
 */
extern int adaptra_pool_init (struct adaptra_pool *pool, uint64_t pool_bytes,
                              unsigned page_shift, bool no_data);

/* Free everything the pool allocated. */
extern void adaptra_pool_fini (struct adaptra_pool *pool);

/* The frame that holds page_no (READY or IN_FLIGHT), or ADAPTRA_NO_FRAME.
 * O(1): one hash bucket walk.
 */
extern uint32_t adaptra_pool_lookup (const struct adaptra_pool *pool,
                                     uint64_t page_no);

/* Take a frame for page_no (which must not be present), evicting from
 * the inactive tail if no frame is free, and index it as IN_FLIGHT.
 * The caller then owns the frame until adaptra_pool_complete or
 * adaptra_pool_drop.  Returns ADAPTRA_NO_FRAME when every frame is in
 * flight or pinned.
 */
extern uint32_t adaptra_pool_insert (struct adaptra_pool *pool,
                                     uint64_t page_no, uint64_t stream_id,
                                     unsigned method, unsigned flags);

/* The owner of an IN_FLIGHT frame filled its data: make it READY at
 * the inactive head (ticking the aging clock).  If the frame was
 * invalidated meanwhile (STALE), it is freed instead; returns false in
 * that case.
 */
extern bool adaptra_pool_complete (struct adaptra_pool *pool, uint32_t f);

/* For the eviction policy, choosing its victim READY frame f: take f
 * out of the index unless it is pinned, in one critical section of
 * its stripe lock, so that no hit pins it afterwards.  Returns false
 * (and leaves f indexed) if it is pinned.
 */
extern bool adaptra_pool_claim (struct adaptra_pool *pool, uint32_t f);

/* Remove a frame from the index and the LRU and free it; a pinned
 * READY frame is freed by its last unpin instead.  Used for failed
 * reads and for invalidation.
 */
extern void adaptra_pool_drop (struct adaptra_pool *pool, uint32_t f);

/* Drop every page overlapping pages [first, last).  IN_FLIGHT pages are
 * unindexed and flagged STALE, so that their completion discards them.
 * Returns the number of pages dropped or flagged.
 */
extern uint64_t adaptra_pool_invalidate (struct adaptra_pool *pool,
                                         uint64_t first, uint64_t last);

/* Pin a READY frame so that it is neither evicted nor reused while
 * its data is copied outside the lock.
 */
extern void adaptra_pool_pin (struct adaptra_pool *pool, uint32_t f);

/* Might the pool hold any of the n pages from first?  false: none of
 * their areas (ADAPTRA_POOL_AREA_SHIFT) counts an indexed page.  With
 * or without the engine lock; without it, the answer is as of a moment
 * during the call: a page indexed meanwhile may be missed, as a lookup
 * an instant earlier would have missed it.
 */
extern bool adaptra_pool_may_hold (const struct adaptra_pool *pool,
                                   uint64_t first, uint64_t n);

/* Without the engine lock: for each of the n pages from first, if it
 * is READY, pin its frame (as adaptra_pool_pin) into frames[i], else
 * set ADAPTRA_NO_FRAME there, or with stop_at_absent stop at it.
 * Returns the pages looked at: n, or the index of the first page not
 * READY when stop_at_absent stopped there (frames[] is set below it
 * only).  Takes each page's stripe lock, once per run of pages that
 * share it, and none where adaptra_pool_may_hold says the pool holds
 * none of the n pages.  A pinned frame's data, page number and stream
 * id stay as they are until it is unpinned.
 */
extern uint32_t adaptra_pool_pin_hits (struct adaptra_pool *pool,
                                       uint64_t first, uint32_t n,
                                       uint32_t *frames, bool stop_at_absent);

/* Release a pin of each of frames[0..n) (ADAPTRA_NO_FRAME entries are
 * skipped), with or without the engine lock, taking each stripe lock
 * once per run of frames that share it.  Moves to the front of frames
 * those whose last pin this was and that were dropped meanwhile
 * (STALE) and returns how many: the caller must then free each with
 * adaptra_pool_release, under the engine lock.
 */
extern uint32_t adaptra_pool_unpin (struct adaptra_pool *pool,
                                    uint32_t *frames, uint32_t n);

/* Free a STALE frame whose last pin adaptra_pool_unpin released. */
extern void adaptra_pool_release (struct adaptra_pool *pool, uint32_t f);

/* A client read the page.  The first touch sets REFERENCED and clears
 * READAHEAD (one atomic step: exactly one touch returns true), a later
 * one sets ACTIVATE (delayed activation: the page moves to the active
 * list only when eviction reaches it).  Returns true on the first
 * touch of a page that read-ahead inserted.  The engine lock is held,
 * or the frame is pinned: then the touch changes only those flag bits,
 * atomically, and the policy consumes ACTIVATE under the engine lock
 * when eviction reaches the page.
 */
extern bool adaptra_pool_touch (struct adaptra_pool *pool, uint32_t f);

/* Count the pool's pages (in flight or READY, not STALE) by group of
 * 2^shift page numbers: counts[page_no >> shift]++ for the groups
 * below n.  Without the engine lock (and not with it: it takes the
 * stripe locks): the index is walked stripe by stripe, at most
 * ADAPTRA_POOL_SCAN_BATCH buckets under a stripe lock at a time, so a
 * hit waits for no more than that.  Before, the whole walk ran under
 * the engine lock: 2.9 ms at an 8 GiB pool, and random misses' p99
 * went from 1.65 to 4.46 ms while the exports command repeated.  Much
 * smaller, the walk takes a lock round trip per few buckets; much
 * larger, a hit on the stripe waits that much longer.  Whole blocks
 * of a run's buckets (pool.c asserts it).  Pages indexed or dropped
 * meanwhile may be counted or not.  O(pool frames).
 */
#define ADAPTRA_POOL_SCAN_BATCH 256
extern void adaptra_pool_count_by (struct adaptra_pool *pool, unsigned shift,
                                   uint64_t *counts, size_t n);

/* Lend bytes out of the pool, for memory the engine's user keeps
 * beside it (boot profiles' recorders, plugin/profiles.c), so that the
 * two together stay within the pool's budget: the pool keeps out of
 * use the frames that cover every byte lent, taking free frames first,
 * then the eviction policy's victims.  A lent frame holds no page; its
 * data is given back to the operating system (the whole pages of it
 * the frame covers).  Returns false, lending nothing, when every other
 * frame is in flight or pinned.  One that fails because frames are in
 * flight evicts no page; one that fails on pinned pages (readers hold
 * a pin only a moment) may have evicted some.
 */
extern bool adaptra_pool_lend (struct adaptra_pool *pool, uint64_t bytes);

/* Take back bytes lent (at most what is lent): the frames no longer
 * needed to cover the rest are free again.
 */
extern void adaptra_pool_take_back (struct adaptra_pool *pool, uint64_t bytes);

/* Test and clear the look-ahead mark. */
extern bool adaptra_pool_take_mark (struct adaptra_pool *pool, uint32_t f);

/* Number of consecutive present pages just before page index
 * (index-1, index-2, ...), at most max.  With read_only, count only
 * pages that a client read, or that are in flight for a client (not
 * for read-ahead): the evidence of a stream.
 */
extern uint64_t adaptra_pool_history (const struct adaptra_pool *pool,
                                      uint64_t index, uint64_t max,
                                      bool read_only);

/* The same from index upwards (index, index+1, ...). */
extern uint64_t adaptra_pool_run_from (const struct adaptra_pool *pool,
                                       uint64_t index, uint64_t max,
                                       bool read_only);

/* Rescue: move the READY, unpinned, inactive, not-to-be-activated pages
 * among the n pages from first back to the inactive head, stopping at
 * the first absent page.  Each move ticks the aging clock.  Returns
 * the number of pages moved.
 */
extern uint64_t adaptra_pool_rescue (struct adaptra_pool *pool,
                                     uint64_t first, uint64_t n);

/* What read-ahead may use without pushing out more than half of the
 * evictable pool: (inactive + free) / 2 pages.
 */
extern uint64_t adaptra_pool_spare (const struct adaptra_pool *pool);

/* Call lost (opaque, stream id, method) for every read-ahead page
 * evicted before a client read it.
 */
static inline void
adaptra_pool_on_lost (struct adaptra_pool *pool, adaptra_pool_lost_fn lost,
                      void *opaque)
{
  pool->lost = lost;
  pool->lost_opaque = opaque;
}

/* Set the look-ahead mark on READY or IN_FLIGHT frame f. */
extern void adaptra_pool_set_mark (struct adaptra_pool *pool, uint32_t f);

/* If frame f is stream_id's look-ahead mark, record on it the size of
 * the window it marks and the aging clock when that was issued (its
 * low 32 bits), for the stream to resume from (struct adaptra_page).
 */
extern void adaptra_pool_mark_state (struct adaptra_pool *pool, uint32_t f,
                                     uint64_t stream_id, uint64_t window,
                                     uint64_t age);

/* The descriptor of frame f (< adaptra_pool_frames), to read. */
static inline const struct adaptra_page *
adaptra_pool_page (const struct adaptra_pool *pool, uint32_t f)
{
  return &pool->pages[f];
}

/* Frames in the pool. */
static inline uint32_t
adaptra_pool_frames (const struct adaptra_pool *pool)
{
  return pool->nframes;
}

/* True when the pool holds data (not a pool of metadata only). */
static inline bool
adaptra_pool_has_data (const struct adaptra_pool *pool)
{
  return pool->arena != NULL;
}

/* The aging clock (lru.h): it ticks once per page that enters the
 * eviction order and once per delayed activation, so the pages a page
 * survives are clock ticks.
 */
static inline uint64_t
adaptra_pool_clock (const struct adaptra_pool *pool)
{
  return atomic_load_explicit (&pool->lru.clock, memory_order_relaxed);
}

/* Free frames and pages evictable before any page read twice: the
 * pages a page read ahead now has ahead of it (G in window.h).
 */
static inline uint64_t
adaptra_pool_reclaimable (const struct adaptra_pool *pool)
{
  return (uint64_t) adaptra_lru_cold (&pool->lru) + pool->nfree;
}

/* Where the frames are, and what became of them. */
struct adaptra_pool_counts {
  uint64_t evicted;             /* pages evicted, all kinds */
  uint64_t evicted_unread;      /* read-ahead pages evicted unread */
  uint32_t free;                /* frames free */
  uint32_t inactive, active;    /* READY frames on each LRU list */
  uint32_t in_flight;           /* frames IN_FLIGHT */
  uint32_t lent;                /* frames lent (adaptra_pool_lend) */
};

static inline struct adaptra_pool_counts
adaptra_pool_counts (const struct adaptra_pool *pool)
{
  struct adaptra_pool_counts c = {
    .evicted = pool->evicted,
    .evicted_unread = pool->evicted_unread,
    .free = pool->nfree,
    .inactive = pool->lru.inactive.len,
    .active = pool->lru.active.len,
    .in_flight = pool->in_flight,
    .lent = pool->nlent,
  };

  return c;
}

/* The data of frame f (page_size bytes); NULL in a pool without data. */
static inline void *
adaptra_pool_data (const struct adaptra_pool *pool, uint32_t f)
{
  return pool->arena ? pool->arena + ((size_t) f << pool->page_shift) : NULL;
}

#endif /* ADAPTRA_POOL_H */
