/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The page pool.
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
 * reader or prefetch job filling it, on no list) or READY (indexed,
 * on one of two LRU lists):
 *
 *                    insert                complete
 *       FREE  ------------------>  IN_FLIGHT  ------>  READY, inactive head
 *        ^                            |                 |   ^      |
 *        |  drop / failed read        |                 |   |demote| 2nd touch
 *        +----------------------------+                 |   |      v  at tail
 *        |                 evict from inactive tail     |  READY, active
 *        +----------------------------------------------+
 *
 * The inactive list holds pages read once or not at all: new
 * read-ahead, demand reads, pages demoted from the active list.
 * Pages enter at the head and leave at the tail.  A second client
 * read of a page only sets ACTIVATE ("delayed activation", as in the
 * seed): the page stays where it is, so a read-ahead window stays
 * contiguous and in order on the list, and it moves to the active
 * list only when eviction reaches it at the tail.  The active list is
 * kept to at most half the frames by demoting its tail.
 *
 * The aging clock counts entries into the inactive head (completion,
 * demotion, rescue).  The window policy compares a stream's
 * consumption with the clock's progress since its window was issued
 * to estimate the thrashing threshold (window.c); the clock at issue
 * lives in the stream, and in its look-ahead mark page (pool.h).
 *
 * One pool, one lock (the engine's).  The pool is not sharded: on the
 * small machines adaptra targets the lock is held only for hash and
 * list operations, O(pages of one request), never across backend I/O
 * or page copies (readers pin pages and copy outside the lock).  With
 * a single inactive list there is one aging order, so the seed's
 * per-zone aging imbalance (which it corrected by balancing the aging
 * of zones) cannot arise.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hash.h"
#include "pool.h"

/* Active list limit: at most this fraction (1/N) of all frames. */
#define ACTIVE_SHARE 2

/* How far eviction looks past pinned pages at the inactive tail. */
#define EVICT_SKIP_MAX 64

static uint32_t
bucket_of (const struct adaptra_pool *pool, uint64_t page_no)
{
  return adaptra_hash_fib (page_no, pool->bucket_bits);
}

static void
lru_unlink (struct adaptra_pool *pool, struct ilist *l, uint32_t f)
{
  ilist_unlink (l, ILIST_ARRAY (pool->pages, lru), f);
}

static void
lru_push_head (struct adaptra_pool *pool, struct ilist *l, uint32_t f)
{
  ilist_push_head (l, ILIST_ARRAY (pool->pages, lru), f);
}

static struct ilist *
list_of (struct adaptra_pool *pool, uint32_t f)
{
  return pool->pages[f].flags & ADAPTRA_PG_ACTIVE
    ? &pool->active : &pool->inactive;
}

/* Enter the inactive head: the one place the aging clock ticks. */
static void
enter_inactive (struct adaptra_pool *pool, uint32_t f)
{
  pool->clock++;
  pool->pages[f].flags &= ~ADAPTRA_PG_ACTIVE;
  lru_push_head (pool, &pool->inactive, f);
}

static void
hash_insert (struct adaptra_pool *pool, uint32_t f)
{
  uint32_t b = bucket_of (pool, pool->pages[f].page_no);

  pool->pages[f].hash_next = pool->buckets[b];
  pool->buckets[b] = f;
}

static void
hash_remove (struct adaptra_pool *pool, uint32_t f)
{
  uint32_t *link = &pool->buckets[bucket_of (pool, pool->pages[f].page_no)];

  while (*link != f)
    link = &pool->pages[*link].hash_next;
  *link = pool->pages[f].hash_next;
  pool->pages[f].hash_next = ADAPTRA_NO_FRAME;
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
  if ((!no_data && !pool->arena) || !pool->pages || !pool->buckets) {
    adaptra_pool_fini (pool);
    errno = ENOMEM;
    return -1;
  }
  memset (pool->buckets, 0xff, nbuckets * sizeof *pool->buckets);
  ilist_init (&pool->inactive);
  ilist_init (&pool->active);
  pool->free_head = ADAPTRA_NO_FRAME;
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

/* Move the active tail to the inactive head, as read once. */
static void
demote_tail (struct adaptra_pool *pool)
{
  uint32_t f = pool->active.tail;

  lru_unlink (pool, &pool->active, f);
  pool->pages[f].flags &= ~(ADAPTRA_PG_REFERENCED | ADAPTRA_PG_ACTIVATE);
  enter_inactive (pool, f);
}

/* Keep the active list within its share by demoting its tail. */
static void
balance_active (struct adaptra_pool *pool)
{
  while (pool->active.len > pool->nframes / ACTIVE_SHARE)
    demote_tail (pool);
}

/* Free one frame from the inactive tail.  Pages flagged ACTIVATE are
 * promoted on the way (delayed activation); pinned pages are stepped
 * over, at most EVICT_SKIP_MAX of them.
 */
static bool
evict_one (struct adaptra_pool *pool)
{
  uint32_t f = pool->inactive.tail;
  unsigned skipped = 0;

  while (f != ADAPTRA_NO_FRAME && skipped < EVICT_SKIP_MAX) {
    struct adaptra_page *p = &pool->pages[f];
    uint32_t prev = p->lru.prev;

    if (p->pins > 0) {
      skipped++;
    }
    else if (p->flags & ADAPTRA_PG_ACTIVATE) {
      lru_unlink (pool, &pool->inactive, f);
      p->flags &= ~ADAPTRA_PG_ACTIVATE;
      p->flags |= ADAPTRA_PG_ACTIVE;
      lru_push_head (pool, &pool->active, f);
      balance_active (pool);
    }
    else {
      lru_unlink (pool, &pool->inactive, f);
      hash_remove (pool, f);
      pool->evicted++;
      if (p->flags & ADAPTRA_PG_READAHEAD) {
        pool->evicted_unread++;
        if (pool->lost)
          pool->lost (pool->lost_opaque, p->stream_id, p->method);
      }
      free_frame (pool, f);
      return true;
    }
    f = prev;
  }
  return false;
}

uint32_t
adaptra_pool_insert (struct adaptra_pool *pool, uint64_t page_no,
                     uint64_t stream_id, unsigned method, unsigned flags)
{
  struct adaptra_page *p;
  uint32_t f;

  if (pool->nfree == 0 && !evict_one (pool)) {
    /* Everything at the tail was pinned: the active list may still
     * hold evictable pages, so demote one and try once more.
     */
    if (pool->active.len == 0)
      return ADAPTRA_NO_FRAME;
    demote_tail (pool);
    if (!evict_one (pool))
      return ADAPTRA_NO_FRAME;
  }
  f = pool->free_head;
  p = &pool->pages[f];
  pool->free_head = p->lru.next;
  pool->nfree--;

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

  assert (p->state == ADAPTRA_PAGE_IN_FLIGHT);
  pool->in_flight--;
  if (p->flags & ADAPTRA_PG_STALE) {
    free_frame (pool, f);
    return false;
  }
  p->state = ADAPTRA_PAGE_READY;
  enter_inactive (pool, f);
  return true;
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
  hash_remove (pool, f);
  if (p->state == ADAPTRA_PAGE_IN_FLIGHT) {
    pool->in_flight--;
    free_frame (pool, f);
    return;
  }
  lru_unlink (pool, list_of (pool, f), f);
  if (p->pins > 0)
    p->flags |= ADAPTRA_PG_STALE;
  else
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
    hash_remove (pool, f);
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

    if (p->state != ADAPTRA_PAGE_FREE && !(p->flags & ADAPTRA_PG_STALE) &&
        p->page_no >= first && p->page_no < last) {
      invalidate_frame (pool, f);
      n++;
    }
  }
  return n;
}

void
adaptra_pool_pin (struct adaptra_pool *pool, uint32_t f)
{
  assert (pool->pages[f].state == ADAPTRA_PAGE_READY);
  assert (pool->pages[f].pins < UINT16_MAX);
  pool->pages[f].pins++;
}

void
adaptra_pool_unpin (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];

  assert (p->pins > 0);
  if (--p->pins == 0 && (p->flags & ADAPTRA_PG_STALE))
    free_frame (pool, f);
}

bool
adaptra_pool_touch (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];
  bool readahead_hit;

  if (!(p->flags & ADAPTRA_PG_REFERENCED)) {
    readahead_hit = (p->flags & ADAPTRA_PG_READAHEAD) != 0;
    p->flags |= ADAPTRA_PG_REFERENCED;
    p->flags &= ~ADAPTRA_PG_READAHEAD;
    return readahead_hit;
  }
  if (!(p->flags & ADAPTRA_PG_ACTIVE))
    p->flags |= ADAPTRA_PG_ACTIVATE;
  return false;
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
    if (p->state != ADAPTRA_PAGE_READY || p->pins > 0 ||
        (p->flags & (ADAPTRA_PG_ACTIVE | ADAPTRA_PG_ACTIVATE)))
      continue;
    lru_unlink (pool, &pool->inactive, f);
    enter_inactive (pool, f);
    moved++;
  }
  return moved;
}

uint64_t
adaptra_pool_spare (const struct adaptra_pool *pool)
{
  return ((uint64_t) pool->inactive.len + pool->nfree) / 2;
}
