/* lru.c: the pool's eviction policy: inactive and active LRU lists.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The seed's two-list LRU with delayed activation, over the pool's
 * READY frames (lru.h says what the pool asks of it).
 *
 * Terms and the whole algorithm: docs/DESIGN.md §2 (the two lists,
 * the aging clock) and §4.2.
 *
 *          add (read completed), rescue, demotion
 *                        |
 *                        v
 *   inactive:  head  [ . . . . . . . . . . . . ]  tail --> evicted
 *                        ^                         |  ACTIVATE set
 *                        | demote the tail         v  (read twice)
 *   active:    head  [ . . . . . . . ]  tail      promoted at the head
 *
 * The inactive list holds pages read once or not at all: new
 * read-ahead, demand reads, pages demoted from the active list.
 * Pages enter at the head and leave at the tail.  A second client
 * read of a page only sets ACTIVATE ("delayed activation", as in the
 * seed): the page stays where it is, so a read-ahead window stays
 * contiguous and in order on the list, and it moves to the active
 * list only when eviction reaches it at the tail.  The active list is
 * kept to at most 1/ACTIVE_SHARE of the frames by demoting its tail.
 *
 * The aging clock counts entries into the inactive head (completion,
 * demotion, rescue) and delayed activations: the seed's
 * mark_page_accessed ticks it (nr_page_aging++) where it sets
 * PG_activate, since a page flagged so will leave the inactive list
 * for the active one, making room that pushes the others towards the
 * tail.  Without that tick a workload that re-reads pages would see a
 * slower clock, so a larger thrashing threshold, than the seed would
 * compute.  The window policy compares a stream's
 * consumption with the clock's progress since its window was issued
 * to estimate the thrashing threshold (window.c); the clock at issue
 * lives in the stream, and in its look-ahead mark page (pool.h).
 *
 * With a single inactive list there is one aging order, so the seed's
 * per-zone aging imbalance (which it corrected by balancing the aging
 * of zones) cannot arise.
 *
 * Everything here runs under the engine lock, but a hit does not take
 * it (pool.c, docs/DESIGN.md §9): it sets ACTIVATE with a
 * compare-and-swap (adaptra_lru_reference), ticking the clock if it
 * was the one to set it, as Linux's mark_page_accessed sets
 * PG_referenced without the LRU lock, and this file reads the bit
 * when the page reaches the inactive tail.  A hit may set it on a
 * page just promoted (ACTIVE): harmless, demotion clears both.
 * Choosing the victim claims it from the index under its stripe lock
 * (adaptra_pool_claim), so a hit that pinned it meanwhile keeps it.
 */

#include <config.h>

#include "lru.h"
#include "pool.h"

/* Active list limit: at most this fraction (1/N) of all frames.  A
 * half leaves the other half, the inactive list, to windows read ahead
 * and not yet read, the balance Linux's file LRU kept from 2.6.31 on
 * (mm/vmscan.c: inactive_file_is_low, active > inactive).  With N = 1
 * pages read twice could fill the pool, and windows would be evicted
 * unread from a sliver of inactive list; with N much larger, pages
 * several clients read again (a boot storm's) would be demoted and
 * evicted among the pages streams read once.
 */
#define ACTIVE_SHARE 2

/* How far eviction looks past pinned pages at the inactive tail.  It
 * bounds the walk of one eviction under the engine lock.  Pins are
 * brief (a reader's copy of at most PIN_BATCH pages, core/read.c), so
 * a few readers' batches are all a tail holds pinned.  Much smaller,
 * an eviction behind them would find no victim though unpinned pages
 * lie past them, and a miss would be read through uncached (read.c);
 * much larger, one eviction could walk a long tail of pinned pages
 * while every reader waits for the lock.
 */
#define EVICT_SKIP_MAX 64

#define LINKS(pool) ILIST_ARRAY ((pool)->pages, lru)

static struct ilist *
list_of (struct adaptra_pool *pool, uint32_t f)
{
  return pool->pages[f].flags & ADAPTRA_PG_ACTIVE
    ? &pool->lru.active : &pool->lru.inactive;
}

/* One tick of the aging clock.  Relaxed: the clock orders nothing,
 * and a hit ticks it without the engine lock.
 */
static void
tick (struct adaptra_lru *lru)
{
  atomic_fetch_add_explicit (&lru->clock, 1, memory_order_relaxed);
}

/* Enter the inactive head, ticking the aging clock. */
static void
enter_inactive (struct adaptra_pool *pool, uint32_t f)
{
  tick (&pool->lru);
  pool->pages[f].flags &= ~ADAPTRA_PG_ACTIVE;
  ilist_push_head (&pool->lru.inactive, LINKS (pool), f);
}

/* Move the active tail to the inactive head, as read once. */
static void
demote_tail (struct adaptra_pool *pool)
{
  uint32_t f = pool->lru.active.tail;

  ilist_unlink (&pool->lru.active, LINKS (pool), f);
  pool->pages[f].flags &= ~(ADAPTRA_PG_REFERENCED | ADAPTRA_PG_ACTIVATE);
  enter_inactive (pool, f);
}

/* Keep the active list within its share by demoting its tail. */
static void
balance_active (struct adaptra_pool *pool)
{
  while (pool->lru.active.len > pool->nframes / ACTIVE_SHARE)
    demote_tail (pool);
}

/* The frame to evict from the inactive tail, taken off the list.
 * Pages flagged ACTIVATE are promoted on the way (delayed activation);
 * pinned pages are stepped over, at most EVICT_SKIP_MAX of them.
 */
static uint32_t
inactive_victim (struct adaptra_pool *pool)
{
  uint32_t f = pool->lru.inactive.tail;
  unsigned skipped = 0;

  while (f != ADAPTRA_NO_FRAME && skipped < EVICT_SKIP_MAX) {
    struct adaptra_page *p = &pool->pages[f];
    uint32_t prev = p->lru.prev;

    if (p->pins > 0) {
      skipped++;
    }
    else if (p->flags & ADAPTRA_PG_ACTIVATE) {
      ilist_unlink (&pool->lru.inactive, LINKS (pool), f);
      p->flags &= ~ADAPTRA_PG_ACTIVATE;
      p->flags |= ADAPTRA_PG_ACTIVE;
      ilist_push_head (&pool->lru.active, LINKS (pool), f);
      balance_active (pool);
    }
    else if (adaptra_pool_claim (pool, f)) {
      ilist_unlink (&pool->lru.inactive, LINKS (pool), f);
      return f;
    }
    else {
      skipped++;                /* a hit pinned it meanwhile */
    }
    f = prev;
  }
  return ADAPTRA_NO_FRAME;
}

void
adaptra_lru_init (struct adaptra_lru *lru)
{
  ilist_init (&lru->inactive);
  ilist_init (&lru->active);
  atomic_init (&lru->clock, 0);
}

void
adaptra_lru_add (struct adaptra_pool *pool, uint32_t f)
{
  enter_inactive (pool, f);
}

void
adaptra_lru_remove (struct adaptra_pool *pool, uint32_t f)
{
  ilist_unlink (list_of (pool, f), LINKS (pool), f);
}

void
adaptra_lru_reference (struct adaptra_pool *pool, uint32_t f)
{
  struct adaptra_page *p = &pool->pages[f];
  uint8_t flags = atomic_load_explicit (&p->flags, memory_order_relaxed);

  while (!(flags & (ADAPTRA_PG_ACTIVE | ADAPTRA_PG_ACTIVATE)))
    if (atomic_compare_exchange_weak_explicit
        (&p->flags, &flags, (uint8_t) (flags | ADAPTRA_PG_ACTIVATE),
         memory_order_relaxed, memory_order_relaxed)) {
      tick (&pool->lru);
      return;
    }
}

uint32_t
adaptra_lru_victim (struct adaptra_pool *pool)
{
  uint32_t f = inactive_victim (pool);

  /* Everything at the tail was pinned: the active list may still hold
   * evictable pages, so demote one and try once more.
   */
  if (f == ADAPTRA_NO_FRAME && pool->lru.active.len > 0) {
    demote_tail (pool);
    f = inactive_victim (pool);
  }
  return f;
}

bool
adaptra_lru_rescue (struct adaptra_pool *pool, uint32_t f)
{
  if (pool->pages[f].flags & (ADAPTRA_PG_ACTIVE | ADAPTRA_PG_ACTIVATE))
    return false;
  ilist_unlink (&pool->lru.inactive, LINKS (pool), f);
  enter_inactive (pool, f);
  return true;
}
