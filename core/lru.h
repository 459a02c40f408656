/* lru.h: the pool's eviction policy: two LRU lists, delayed activation.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The pool (pool.c) owns the frames, the page index and the page
 * states; which READY page goes when a frame is needed is decided
 * here.  The pool calls these functions at each event of a READY page
 * and nowhere else touches the lists, so another policy (CLOCK-Pro,
 * ARC-like ghost lists) replaces this header and lru.c, keeping the
 * contracts below.  The aging clock belongs to the policy: the window
 * policy reads it (through adaptra_pool_clock) as the pool's progress.
 *
 * Like the pool, the engine lock is held, except that a hit sets a
 * page's ACTIVATE bit without it (lru.c).
 */

#ifndef ADAPTRA_LRU_H
#define ADAPTRA_LRU_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ilist.h"

struct adaptra_pool;

struct adaptra_lru {
  struct ilist inactive, active; /* head = most recently entered */
  /* The aging clock: entries into the inactive list and delayed
   * activations.  Atomic: a hit activates without the engine lock.
   */
  _Atomic uint64_t clock;
};

extern void adaptra_lru_init (struct adaptra_lru *lru);

/* Frame f became READY (its read completed): it enters the policy's
 * lists as a page read once at most, and the clock ticks.
 */
extern void adaptra_lru_add (struct adaptra_pool *pool, uint32_t f);

/* READY frame f leaves the pool (dropped, invalidated): off its list. */
extern void adaptra_lru_remove (struct adaptra_pool *pool, uint32_t f);

/* A client read READY frame f again (a second access, not the first):
 * flag it ACTIVATE, ticking the clock, unless it is active or flagged
 * already.  Without the engine lock too (a hit), atomically: of two
 * touches at once one flags it and ticks.
 */
extern void adaptra_lru_reference (struct adaptra_pool *pool, uint32_t f);

/* Choose a READY, unpinned frame to evict, claim it from the index
 * (adaptra_pool_claim, pool.h) and take it off its list;
 * ADAPTRA_NO_FRAME when every candidate is pinned.  The pool then
 * frees it.
 */
extern uint32_t adaptra_lru_victim (struct adaptra_pool *pool);

/* Rescue READY, unpinned frame f, whose reader is about to get there:
 * make it the newest of the pages read once.  Returns false when the
 * page needs no rescue (it was read twice).  Ticks the clock.
 */
extern bool adaptra_lru_rescue (struct adaptra_pool *pool, uint32_t f);

/* Pages evictable before any page read twice: the inactive list. */
static inline uint32_t
adaptra_lru_cold (const struct adaptra_lru *lru)
{
  return lru->inactive.len;
}

#endif /* ADAPTRA_LRU_H */
