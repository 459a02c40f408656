/* pool.c: the page arena and its hash index.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The page pool: frames, their descriptors and the page index.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §2 (page states) and §4.2.
 *
 * The budget (adaptra-pool less the engine's transfer slots) is cut
 * into nframes fixed-size frames.
 * Their data lives in one arena allocated once at start-up, so page
 * data can never exceed the budget, and the hit path never calls
 * malloc.  The operating system backs the arena lazily, so an idle
 * pool costs address space, not memory; where it can, with huge pages
 * (alloc_arena).
 *
 * Each frame has a 40-byte descriptor, and the page-number hash has
 * one 4-byte bucket per frame (rounded up to a power of two, so at
 * most 8 bytes).  Metadata is therefore at most 48 bytes per page:
 * 1.2% of the pool with 4 KiB pages, 0.3% with 16 KiB pages, and 9%
 * with the smallest allowed 512-byte pages.
 *
 * A frame is FREE (on the free list), IN_FLIGHT (indexed, owned by the
 * reader or prefetch job filling it, on no list), READY (indexed,
 * and in the eviction policy's keeping: lru.c) or LENT (on the lent
 * list, its data given back: adaptra_pool_lend takes a FREE frame,
 * adaptra_pool_take_back frees it):
 *
 *                    insert                complete
 *       FREE  ------------------>  IN_FLIGHT  ------>  READY
 *        ^                            |                  |
 *        |  drop / failed read        |                  |
 *        +----------------------------+                  |
 *        |          evicted (the policy's victim), drop  |
 *        +-----------------------------------------------+
 *
 * Which READY page is evicted, and the aging clock, are the policy's
 * (lru.c); this file tells it of every READY page's arrival, second
 * read, rescue and departure, and frees what it gives up, and the
 * victim's run of pages read once with it (follow_victim).
 *
 * One pool, one aging order, under the engine lock, which is held only
 * for hash and list operations, O(pages of one request), never across
 * backend I/O or page copies (readers pin pages and copy outside it).
 * A hit does not take it (docs/DESIGN.md §9): the page index is split
 * into ADAPTRA_POOL_STRIPES stripes of hash buckets, each with a lock
 * of its own (lock striping, as java.util.concurrent's
 * ConcurrentHashMap of JSR 166 had it), and the hit path finds and
 * pins READY pages under their stripe's lock alone
 * (adaptra_pool_pin_hits).  A run of consecutive pages shares one
 * stripe (bucket_of), so a request's pages are pinned, and unpinned,
 * in one critical section per run rather than one per page, as
 * SQLite's pcache1 fetches and unpins a page under one group mutex.
 * The rules that make that safe:
 *
 *   - the index (buckets, hash_next) and the state of an indexed frame
 *     change only with the engine lock AND the stripe lock held; a
 *     frame's page number, stream id and method are set before it is
 *     indexed and not changed while it is indexed or pinned; so a
 *     reader holding either lock sees a consistent index;
 *   - pins and flags are atomics;
 *   - a frame leaves the index (eviction: adaptra_pool_claim; drop,
 *     invalidation) under its stripe lock, in the same critical
 *     section that checks its pins: a hit either pinned it first, and
 *     then eviction skips it and a drop flags it STALE for the last
 *     unpin to free, or it looks it up afterwards and misses;
 *   - pins are released under the stripe lock too (adaptra_pool_unpin),
 *     so the last unpin and a drop agree on who frees a STALE frame;
 *     the last unpinner of a STALE frame frees it under the engine
 *     lock (adaptra_pool_release); meanwhile it is on no list and in
 *     no index, and nothing else frees or reuses it;
 *   - the descriptor changes a hit makes are atomics: its pins; on a
 *     first touch REFERENCED set and READAHEAD cleared in one
 *     compare-and-swap (adaptra_pool_touch), so that of two readers
 *     exactly one counts a read-ahead hit; on a later touch the
 *     ACTIVATE bit of delayed activation (lru.c:
 *     adaptra_lru_reference), which the policy reads under the engine
 *     lock when the page reaches the inactive tail.
 *
 * Lock order: engine lock, then one stripe lock; never two stripes,
 * and the hit path releases its stripe lock before taking the engine
 * lock.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hash.h"
#include "lru.h"
#include "minmax.h"
#include "pool.h"

/* Page page_no's hash bucket.  The pages of one run (the
 * 2^ADAPTRA_POOL_RUN_SHIFT pages that share page_no >> that) hash to
 * one block of as many consecutive buckets, one page per bucket: the
 * block is the run's hash, the bucket within it the page's low bits
 * mixed with the hash (so that pages at a run's stride, one per run,
 * do not all land in their blocks' first bucket).  A pool of fewer
 * buckets than a run has one block.
 */
static uint32_t
bucket_of (const struct adaptra_pool *pool, uint64_t page_no)
{
  const uint32_t in_run = (UINT32_C (1) << ADAPTRA_POOL_RUN_SHIFT) - 1;
  uint32_t h;

  if (pool->bucket_bits <= ADAPTRA_POOL_RUN_SHIFT)
    return (uint32_t) page_no & ((UINT32_C (1) << pool->bucket_bits) - 1);
  h = adaptra_hash_fib (page_no >> ADAPTRA_POOL_RUN_SHIFT,
                        pool->bucket_bits - ADAPTRA_POOL_RUN_SHIFT);
  return (h << ADAPTRA_POOL_RUN_SHIFT) | (((uint32_t) page_no ^ h) & in_run);
}

/* Bucket b's stripe: that of its block, so that a run's pages share
 * one stripe and a request's pages take few stripe locks.
 */
static unsigned
stripe_of_bucket (uint64_t b)
{
  return (unsigned) (b >> ADAPTRA_POOL_RUN_SHIFT) & (ADAPTRA_POOL_STRIPES - 1);
}

/* The lock of page_no's stripe. */
static pthread_mutex_t *
stripe_of (const struct adaptra_pool *pool, uint64_t page_no)
{
  return &pool->stripes[stripe_of_bucket (bucket_of (pool, page_no))].lock;
}

/* The slot in pool->area_pages of area a (its pages from
 * a << ADAPTRA_POOL_AREA_SHIFT).
 */
static unsigned
area_slot (uint64_t a)
{
  return (unsigned) a & (ADAPTRA_POOL_AREAS - 1);
}

/* Count page_no in or out (delta 1 or -1) of its area's pages, as the
 * index takes it in or out.  Atomic: read without a lock.
 */
static void
count_in_area (struct adaptra_pool *pool, uint64_t page_no, int delta)
{
  __atomic_fetch_add (&pool->area_pages[area_slot (page_no >>
                                                   ADAPTRA_POOL_AREA_SHIFT)],
                      (uint32_t) delta, __ATOMIC_RELAXED);
}

/* Index frame f, whose page number is set.  Engine lock held; takes
 * the stripe lock.
 */
static void
hash_insert (struct adaptra_pool *pool, uint32_t f)
{
  uint32_t b = bucket_of (pool, pool->pages[f].page_no);
  pthread_mutex_t *stripe = stripe_of (pool, pool->pages[f].page_no);

  pthread_mutex_lock (stripe);
  pool->pages[f].hash_next = pool->buckets[b];
  pool->buckets[b] = f;
  count_in_area (pool, pool->pages[f].page_no, 1);
  pthread_mutex_unlock (stripe);
}

/* Unindex frame f.  Engine lock and f's stripe lock held. */
static void
hash_remove (struct adaptra_pool *pool, uint32_t f)
{
  uint32_t *link = &pool->buckets[bucket_of (pool, pool->pages[f].page_no)];

  while (*link != f)
    link = &pool->pages[*link].hash_next;
  *link = pool->pages[f].hash_next;
  pool->pages[f].hash_next = ADAPTRA_NO_FRAME;
  count_in_area (pool, pool->pages[f].page_no, -1);
}

static void
free_frame (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];

  p->state = ADAPTRA_PAGE_FREE;
  p->flags = 0;
  p->pins = 0;
  p->stream_id = 0;
  p->window = p->age = 0;
  p->lru.prev = ADAPTRA_NO_FRAME;
  p->lru.next = pool->free_head;
  pool->free_head = f;
  pool->nfree++;
}

/* Transparent huge pages for the arena, where the kernel offers them
 * on request (Debian's default is "madvise"): without them the first
 * touch of each page of a fresh pool is a page fault (a cold 64M pool
 * took about a second of fast random reads to warm up), and every copy
 * from a random frame risks a TLB miss.
 */
#define ARENA_ALIGN (2 * 1024 * 1024)

static void *
alloc_arena (size_t bytes)
{
  void *arena;

  if (posix_memalign (&arena, ARENA_ALIGN, bytes) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  (void) madvise (arena, bytes, MADV_HUGEPAGE);
#endif
  return arena;
}

/* adaptra_pool_count_by walks whole blocks of a run's buckets. */
_Static_assert (ADAPTRA_POOL_SCAN_BATCH % (1 << ADAPTRA_POOL_RUN_SHIFT) == 0,
                "a scan batch is whole blocks of buckets");

/* The descriptor's size is part of the metadata budget above. */
_Static_assert (sizeof (struct adaptra_page) == 40,
                "struct adaptra_page is 40 bytes");

int
adaptra_pool_init (struct adaptra_pool *pool, uint64_t pool_bytes,
                   unsigned page_shift, bool no_data)
{
  uint64_t nframes = pool_bytes >> page_shift;
  uint64_t nbuckets;
  uint32_t f;

  memset (pool, 0, sizeof *pool);
  if (nframes == 0 || nframes >= ADAPTRA_NO_FRAME) {
    errno = EINVAL;
    return -1;
  }
  pool->page_shift = page_shift;
  pool->page_size = (size_t) 1 << page_shift;
  pool->nframes = (uint32_t) nframes;
  pool->bucket_bits = 1;
  while ((UINT64_C (1) << pool->bucket_bits) < nframes)
    pool->bucket_bits++;
  nbuckets = UINT64_C (1) << pool->bucket_bits;

  if (!no_data)
    pool->arena = alloc_arena (nframes << page_shift);
  pool->pages = calloc (nframes, sizeof *pool->pages);
  pool->buckets = malloc (nbuckets * sizeof *pool->buckets);
  pool->stripes = aligned_alloc (_Alignof (struct adaptra_pool_stripe),
                                 ADAPTRA_POOL_STRIPES *
                                 sizeof *pool->stripes);
  if ((!no_data && !pool->arena) || !pool->pages || !pool->buckets ||
      !pool->stripes) {
    free (pool->stripes);
    pool->stripes = NULL;
    adaptra_pool_fini (pool);
    errno = ENOMEM;
    return -1;
  }
  for (f = 0; f < ADAPTRA_POOL_STRIPES; f++)
    pthread_mutex_init (&pool->stripes[f].lock, NULL);
  memset (pool->buckets, 0xff, nbuckets * sizeof *pool->buckets);
  adaptra_lru_init (&pool->lru);
  pool->free_head = pool->lent_head = ADAPTRA_NO_FRAME;
  pool->follow_frame = ADAPTRA_NO_FRAME;
  /* Push in reverse so that frames are handed out in address order. */
  for (f = pool->nframes; f-- > 0; ) {
    pool->pages[f].hash_next = ADAPTRA_NO_FRAME;
    free_frame (pool, f);
  }
  return 0;
}

void
adaptra_pool_fini (struct adaptra_pool *pool)
{
  unsigned i;

  for (i = 0; pool->stripes && i < ADAPTRA_POOL_STRIPES; i++)
    pthread_mutex_destroy (&pool->stripes[i].lock);
  free (pool->stripes);
  pool->stripes = NULL;
  free (pool->arena);
  free (pool->pages);
  free (pool->buckets);
  pool->arena = NULL;
  pool->pages = NULL;
  pool->buckets = NULL;
}

uint32_t
adaptra_pool_lookup (const struct adaptra_pool *pool, uint64_t page_no)
{
  uint32_t f = pool->buckets[bucket_of (pool, page_no)];

  while (f != ADAPTRA_NO_FRAME && pool->pages[f].page_no != page_no)
    f = pool->pages[f].hash_next;
  return f;
}

bool
adaptra_pool_claim (struct adaptra_pool *pool, uint32_t f)
{
  pthread_mutex_t *stripe = stripe_of (pool, pool->pages[f].page_no);
  bool unpinned;

  pthread_mutex_lock (stripe);
  unpinned = pool->pages[f].pins == 0;
  if (unpinned)
    hash_remove (pool, f);
  pthread_mutex_unlock (stripe);
  return unpinned;
}

/* The frame after the one evicted last, if it holds the page after
 * that one's and is a page read once by a client and nothing since
 * (its flags exactly REFERENCED: not read ahead and unread, not
 * marked, not read twice, not demoted): the rest of the victim's run,
 * inserted with it, so on the inactive list beside it, as near the
 * tail.  Claimed and taken off the list; ADAPTRA_NO_FRAME otherwise.
 *
 * Why: a backend read lands straight in its frames only when they are
 * consecutive in the arena (fetch.c), else it goes through a transfer
 * buffer and is copied again.  The policy's victims come in the order
 * their pages completed, which interleaves jobs and streams, so frames
 * taken in that order scatter, and stay scattered: remote W2's
 * sixteen streams copied nearly every byte twice.  Taking the
 * victim's neighbour instead keeps a run of pages in a run of frames
 * from one read to the next, at the cost of evicting, a little ahead
 * of its turn, a page already read that was inserted with the victim.
 */
static uint32_t
follow_victim (struct adaptra_pool *pool)
{
  uint32_t f = pool->follow_frame;
  struct adaptra_page *p;

  if (f >= pool->nframes)
    return ADAPTRA_NO_FRAME;
  p = &pool->pages[f];
  if (p->state != ADAPTRA_PAGE_READY || p->page_no != pool->follow_page ||
      atomic_load_explicit (&p->flags, memory_order_relaxed) !=
      ADAPTRA_PG_REFERENCED || !adaptra_pool_claim (pool, f))
    return ADAPTRA_NO_FRAME;
  adaptra_lru_remove (pool, f);
  return f;
}

/* Free a frame for reuse: the victim's neighbour (follow_victim), or
 * the one the eviction policy gives up (it claimed it: it is out of
 * the index).  Returns false when it has none (every candidate
 * pinned).
 */
static bool
evict_one (struct adaptra_pool *pool)
{
  uint32_t f = follow_victim (pool);
  struct adaptra_page *p;

  if (f == ADAPTRA_NO_FRAME)
    f = adaptra_lru_victim (pool);
  if (f == ADAPTRA_NO_FRAME)
    return false;
  p = &pool->pages[f];
  pool->evicted++;
  pool->follow_frame = f + 1;
  pool->follow_page = p->page_no + 1;
  if (p->flags & ADAPTRA_PG_READAHEAD) {
    pool->evicted_unread++;
    if (pool->lost)
      pool->lost (pool->lost_opaque, p->stream_id, p->method);
  }
  free_frame (pool, f);
  return true;
}

/* Take a free frame off the free list, evicting one if none is free;
 * ADAPTRA_NO_FRAME if every frame is in flight, pinned or lent.
 */
static uint32_t
take_frame (struct adaptra_pool *pool)
{
  uint32_t f;

  if (pool->nfree == 0 && !evict_one (pool))
    return ADAPTRA_NO_FRAME;
  f = pool->free_head;
  pool->free_head = pool->pages[f].lru.next;
  pool->nfree--;
  return f;
}

/* Give frame f's data back to the operating system: the whole pages
 * of it the frame covers (none for a frame smaller than a page).  The
 * arena stays mapped; a frame taken back is backed again on its first
 * write.
 */
static void
release_data (struct adaptra_pool *pool, uint32_t f)
{
  uintptr_t os_page = (uintptr_t) sysconf (_SC_PAGESIZE), start, end;

  if (!pool->arena)
    return;
  start = (uintptr_t) adaptra_pool_data (pool, f);
  end = start + pool->page_size;
  start = (start + os_page - 1) & ~(os_page - 1);
  end &= ~(os_page - 1);
  if (start < end)
    (void) madvise ((void *) start, end - start, MADV_DONTNEED);
}

/* Frames that cover bytes. */
static uint64_t
frames_of (const struct adaptra_pool *pool, uint64_t bytes)
{
  return (bytes + pool->page_size - 1) >> pool->page_shift;
}

/* Free the last n frames lent. */
static void
unlend (struct adaptra_pool *pool, uint64_t n)
{
  uint32_t f;

  while (n-- > 0) {
    f = pool->lent_head;
    assert (pool->pages[f].state == ADAPTRA_PAGE_LENT);
    pool->lent_head = pool->pages[f].lru.next;
    pool->nlent--;
    free_frame (pool, f);
  }
}

bool
adaptra_pool_lend (struct adaptra_pool *pool, uint64_t bytes)
{
  uint64_t want, got = 0;
  uint32_t f;

  if (bytes > (uint64_t) pool->nframes << pool->page_shift)
    return false;
  want = frames_of (pool, pool->lent_bytes + bytes) - pool->nlent;
  /* Fewer frames free or READY than wanted (the rest in flight): fail
   * before evicting any page for nothing.
   */
  if (want > (uint64_t) pool->nfree + pool->lru.inactive.len +
      pool->lru.active.len)
    return false;
  for (; got < want && (f = take_frame (pool)) != ADAPTRA_NO_FRAME; got++) {
    pool->pages[f].state = ADAPTRA_PAGE_LENT;
    pool->pages[f].lru.next = pool->lent_head;
    pool->lent_head = f;
    pool->nlent++;
    release_data (pool, f);
  }
  if (got < want) {
    unlend (pool, got);
    return false;
  }
  pool->lent_bytes += bytes;
  return true;
}

void
adaptra_pool_take_back (struct adaptra_pool *pool, uint64_t bytes)
{
  assert (bytes <= pool->lent_bytes);
  pool->lent_bytes -= bytes;
  unlend (pool, pool->nlent - frames_of (pool, pool->lent_bytes));
}

uint32_t
adaptra_pool_insert (struct adaptra_pool *pool, uint64_t page_no,
                     uint64_t stream_id, unsigned method, unsigned flags)
{
  struct adaptra_page *p;
  uint32_t f;

  f = take_frame (pool);
  if (f == ADAPTRA_NO_FRAME)
    return ADAPTRA_NO_FRAME;
  p = &pool->pages[f];
  p->page_no = page_no;
  p->lru.prev = p->lru.next = ADAPTRA_NO_FRAME;
  p->stream_id = stream_id;
  p->window = p->age = 0;
  p->method = (uint8_t) method & 0x3f;
  p->flags = (uint8_t) flags;
  p->pins = 0;
  p->state = ADAPTRA_PAGE_IN_FLIGHT;
  hash_insert (pool, f);
  pool->in_flight++;
  return f;
}

bool
adaptra_pool_complete (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];
  pthread_mutex_t *stripe;

  assert (p->state == ADAPTRA_PAGE_IN_FLIGHT);
  pool->in_flight--;
  if (p->flags & ADAPTRA_PG_STALE) {
    free_frame (pool, f);
    return false;
  }
  stripe = stripe_of (pool, p->page_no);
  pthread_mutex_lock (stripe);
  p->state = ADAPTRA_PAGE_READY;
  pthread_mutex_unlock (stripe);
  adaptra_lru_add (pool, f);
  return true;
}

/* Unindex frame f; if it is pinned (READY and read by a hit or a
 * copy now), flag it STALE for its last unpin to free.  Returns true
 * if it was pinned.
 */
static bool
unindex (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];
  pthread_mutex_t *stripe = stripe_of (pool, p->page_no);
  bool pinned;

  pthread_mutex_lock (stripe);
  hash_remove (pool, f);
  pinned = p->pins > 0;
  if (pinned)
    p->flags |= ADAPTRA_PG_STALE;
  pthread_mutex_unlock (stripe);
  return pinned;
}

void
adaptra_pool_drop (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];

  if (p->flags & ADAPTRA_PG_STALE) {
    /* Already unindexed by an invalidation. */
    if (p->state == ADAPTRA_PAGE_IN_FLIGHT) {
      pool->in_flight--;
      free_frame (pool, f);
    }
    return;
  }
  if (p->state == ADAPTRA_PAGE_IN_FLIGHT) {
    unindex (pool, f);
    pool->in_flight--;
    free_frame (pool, f);
    return;
  }
  adaptra_lru_remove (pool, f);
  if (!unindex (pool, f))
    free_frame (pool, f);
}

/* Invalidate one indexed frame: in-flight pages belong to their owner,
 * which frees them on completion, so only flag and unindex those.
 */
static void
invalidate_frame (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];

  if (p->state == ADAPTRA_PAGE_IN_FLIGHT) {
    unindex (pool, f);
    p->flags |= ADAPTRA_PG_STALE;
  }
  else
    adaptra_pool_drop (pool, f);
}

uint64_t
adaptra_pool_invalidate (struct adaptra_pool *pool,
                         uint64_t first, uint64_t last)
{
  uint64_t i, n = 0;
  uint32_t f;

  if (last - first <= pool->nframes) {
    for (i = first; i < last; i++) {
      f = adaptra_pool_lookup (pool, i);
      if (f != ADAPTRA_NO_FRAME) {
        invalidate_frame (pool, f);
        n++;
      }
    }
    return n;
  }
  /* A range larger than the pool (a big trim): walking the frames is
   * cheaper than looking up every page of the range.
   */
  for (f = 0; f < pool->nframes; f++) {
    struct adaptra_page *p = &pool->pages[f];

    if ((p->state == ADAPTRA_PAGE_IN_FLIGHT ||
         p->state == ADAPTRA_PAGE_READY) && !(p->flags & ADAPTRA_PG_STALE) &&
        p->page_no >= first && p->page_no < last) {
      invalidate_frame (pool, f);
      n++;
    }
  }
  return n;
}

void
adaptra_pool_count_by (struct adaptra_pool *pool, unsigned shift,
                       uint64_t *counts, size_t n)
{
  const uint64_t run = UINT64_C (1) << ADAPTRA_POOL_RUN_SHIFT;
  uint64_t nbuckets = UINT64_C (1) << pool->bucket_bits, block, b;
  unsigned s, k;
  uint32_t f;

  /* Stripe s holds the blocks s, s + ADAPTRA_POOL_STRIPES, ... */
  for (s = 0; s < ADAPTRA_POOL_STRIPES && s * run < nbuckets; s++)
    for (block = s; block * run < nbuckets; ) {
      pthread_mutex_lock (&pool->stripes[s].lock);
      for (k = 0; k < ADAPTRA_POOL_SCAN_BATCH && block * run < nbuckets;
           k += run, block += ADAPTRA_POOL_STRIPES)
        for (b = block * run; b < min_u64 ((block + 1) * run, nbuckets); b++)
          for (f = pool->buckets[b]; f != ADAPTRA_NO_FRAME;
               f = pool->pages[f].hash_next) {
            const struct adaptra_page *p = &pool->pages[f];

            if (!(atomic_load_explicit (&p->flags, memory_order_relaxed) &
                  ADAPTRA_PG_STALE) && (p->page_no >> shift) < n)
              counts[p->page_no >> shift]++;
          }
      pthread_mutex_unlock (&pool->stripes[s].lock);
    }
}

void
adaptra_pool_pin (struct adaptra_pool *pool, uint32_t f)
{
  assert (pool->pages[f].state == ADAPTRA_PAGE_READY);
  assert (pool->pages[f].pins < UINT16_MAX);
  pool->pages[f].pins++;
}

/* Hold stripe lock next instead of *held (NULL: none), unless it is
 * the same: consecutive pages of a run keep their stripe's lock.
 */
static void
switch_stripe (pthread_mutex_t **held, pthread_mutex_t *next)
{
  if (*held == next)
    return;
  if (*held)
    pthread_mutex_unlock (*held);
  pthread_mutex_lock (next);
  *held = next;
}

bool
adaptra_pool_may_hold (const struct adaptra_pool *pool, uint64_t first,
                       uint64_t n)
{
  uint64_t a, end;

  if (n == 0)
    return false;
  a = first >> ADAPTRA_POOL_AREA_SHIFT;
  end = ((first + n - 1) >> ADAPTRA_POOL_AREA_SHIFT) + 1;
  /* Past ADAPTRA_POOL_AREAS areas every counter has been read. */
  end = min_u64 (end, a + ADAPTRA_POOL_AREAS);
  for (; a < end; a++)
    if (__atomic_load_n (&pool->area_pages[area_slot (a)],
                         __ATOMIC_RELAXED))
      return true;
  return false;
}

uint32_t
adaptra_pool_pin_hits (struct adaptra_pool *pool, uint64_t first, uint32_t n,
                       uint32_t *frames, bool stop_at_absent)
{
  pthread_mutex_t *held = NULL;
  uint32_t i, f;

  /* Pages absent by their areas' counts need no lookup: a stepped-aside
   * read's pages, mostly, which would otherwise take a stripe lock that
   * every reader shares, for nothing.
   */
  if (!adaptra_pool_may_hold (pool, first, n)) {
    for (i = 0; i < n && !stop_at_absent; i++)
      frames[i] = ADAPTRA_NO_FRAME;
    return i;
  }
  for (i = 0; i < n; i++) {
    switch_stripe (&held, stripe_of (pool, first + i));
    f = adaptra_pool_lookup (pool, first + i);
    if (f != ADAPTRA_NO_FRAME && pool->pages[f].state == ADAPTRA_PAGE_READY)
      adaptra_pool_pin (pool, f);
    else if (stop_at_absent)
      break;
    else
      f = ADAPTRA_NO_FRAME;
    frames[i] = f;
  }
  if (held)
    pthread_mutex_unlock (held);
  return i;
}

uint32_t
adaptra_pool_unpin (struct adaptra_pool *pool, uint32_t *frames, uint32_t n)
{
  pthread_mutex_t *held = NULL;
  uint32_t i, stale = 0;

  for (i = 0; i < n; i++) {
    struct adaptra_page *p;

    if (frames[i] == ADAPTRA_NO_FRAME)
      continue;
    p = &pool->pages[frames[i]];
    switch_stripe (&held, stripe_of (pool, p->page_no));
    assert (p->pins > 0);
    if (--p->pins == 0 && (p->flags & ADAPTRA_PG_STALE))
      frames[stale++] = frames[i];
  }
  if (held)
    pthread_mutex_unlock (held);
  return stale;
}

void
adaptra_pool_release (struct adaptra_pool *pool, uint32_t f)
{
  assert (pool->pages[f].pins == 0 &&
          (pool->pages[f].flags & ADAPTRA_PG_STALE));
  free_frame (pool, f);
}

bool
adaptra_pool_touch (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];
  uint8_t flags = atomic_load_explicit (&p->flags, memory_order_relaxed);

  /* The first touch in one step: two readers of a pinned page without
   * the engine lock (read.c: a stream hit) must not both count it.
   */
  while (!(flags & ADAPTRA_PG_REFERENCED))
    if (atomic_compare_exchange_weak_explicit
        (&p->flags, &flags,
         (uint8_t) ((flags | ADAPTRA_PG_REFERENCED) & ~ADAPTRA_PG_READAHEAD),
         memory_order_relaxed, memory_order_relaxed))
      return (flags & ADAPTRA_PG_READAHEAD) != 0;
  adaptra_lru_reference (pool, f);
  return false;
}

void
adaptra_pool_set_mark (struct adaptra_pool *pool, uint32_t f)
{
  assert (pool->pages[f].state != ADAPTRA_PAGE_FREE);
  pool->pages[f].flags |= ADAPTRA_PG_MARK;
}

void
adaptra_pool_mark_state (struct adaptra_pool *pool, uint32_t f,
                         uint64_t stream_id, uint64_t window, uint64_t age)
{
  struct adaptra_page *p = &pool->pages[f];

  if (p->stream_id != stream_id || !(p->flags & ADAPTRA_PG_MARK))
    return;
  p->window = (uint32_t) min_u64 (window, UINT32_MAX);
  p->age = (uint32_t) age;
}

bool
adaptra_pool_take_mark (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];

  if (!(p->flags & ADAPTRA_PG_MARK))
    return false;
  p->flags &= ~ADAPTRA_PG_MARK;
  return true;
}

/* Does page_no count towards a run? */
static bool
counts (const struct adaptra_pool *pool, uint64_t page_no, bool read_only)
{
  uint32_t f = adaptra_pool_lookup (pool, page_no);
  const struct adaptra_page *p;

  if (f == ADAPTRA_NO_FRAME)
    return false;
  if (!read_only)
    return true;
  p = &pool->pages[f];
  if (p->state == ADAPTRA_PAGE_IN_FLIGHT)
    return !(p->flags & ADAPTRA_PG_READAHEAD);
  return (p->flags & (ADAPTRA_PG_REFERENCED | ADAPTRA_PG_ACTIVATE |
                      ADAPTRA_PG_ACTIVE)) != 0;
}

uint64_t
adaptra_pool_history (const struct adaptra_pool *pool, uint64_t index,
                      uint64_t max, bool read_only)
{
  uint64_t n = 0;

  while (n < max && n < index && counts (pool, index - n - 1, read_only))
    n++;
  return n;
}

uint64_t
adaptra_pool_run_from (const struct adaptra_pool *pool, uint64_t index,
                       uint64_t max, bool read_only)
{
  uint64_t n = 0;

  while (n < max && index + n >= index && counts (pool, index + n, read_only))
    n++;
  return n;
}

uint64_t
adaptra_pool_rescue (struct adaptra_pool *pool, uint64_t first, uint64_t n)
{
  uint64_t i, moved = 0;

  for (i = 0; i < n; i++) {
    uint32_t f = adaptra_pool_lookup (pool, first + i);
    struct adaptra_page *p;

    if (f == ADAPTRA_NO_FRAME)
      break;
    p = &pool->pages[f];
    if (p->state == ADAPTRA_PAGE_READY && p->pins == 0 &&
        adaptra_lru_rescue (pool, f))
      moved++;
  }
  return moved;
}

uint64_t
adaptra_pool_spare (const struct adaptra_pool *pool)
{
  return adaptra_pool_reclaimable (pool) / 2;
}
