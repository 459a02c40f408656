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
 * reader or prefetch job filling it, on no list) or READY (indexed,
 * and in the eviction policy's keeping: lru.c):
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
 * read, rescue and departure, and frees what it gives up.
 *
 * One pool, one lock (the engine's).  The pool is not sharded: on the
 * small machines adaptra targets the lock is held only for hash and
 * list operations, O(pages of one request), never across backend I/O
 * or page copies (readers pin pages and copy outside the lock).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hash.h"
#include "lru.h"
#include "minmax.h"
#include "pool.h"

static uint32_t
bucket_of (const struct adaptra_pool *pool, uint64_t page_no)
{
  return adaptra_hash_fib (page_no, pool->bucket_bits);
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
  adaptra_lru_init (&pool->lru);
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

/* Free the frame the eviction policy gives up.  Returns false when it
 * has none (every candidate pinned).
 */
static bool
evict_one (struct adaptra_pool *pool)
{
  uint32_t f = adaptra_lru_victim (pool);
  struct adaptra_page *p;

  if (f == ADAPTRA_NO_FRAME)
    return false;
  p = &pool->pages[f];
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

uint32_t
adaptra_pool_insert (struct adaptra_pool *pool, uint64_t page_no,
                     uint64_t stream_id, unsigned method, unsigned flags)
{
  struct adaptra_page *p;
  uint32_t f;

  if (pool->nfree == 0 && !evict_one (pool))
    return ADAPTRA_NO_FRAME;
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
  adaptra_lru_add (pool, f);
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
  adaptra_lru_remove (pool, f);
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
