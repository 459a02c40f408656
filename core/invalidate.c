/* invalidate.c: a write's invalidation of the pages it changed.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Coherency (docs/DESIGN.md §5 and §11): a read that starts after a
 * write returned gets the written bytes, never the pool's older copy.
 *
 * adaptra_invalidate runs after a write, zero or trim reached the
 * backend.  It drops the overlapping READY pages and flags IN_FLIGHT
 * ones STALE, so their completion discards what they read (which
 * may predate the write).  A page pinned by a copy in progress (from
 * the locked path or the hit path alike) is freed when the copy ends;
 * that copy races with the write anyway.  Dropping unindexes a page
 * under its stripe lock, so a hit that starts after the invalidation
 * returned misses it.  A write drops its range from every
 * volume that may hold the bytes (may_hold): the writer's, its
 * export's shared volume at any size, and the volumes opened with
 * ADAPTRA_VOLUME_MAY_ALIAS (which may be the same disk under another
 * name) of the same size; a connection without a volume of its own
 * (adaptra_invalidate_export) drops it from those of any size.
 *
 *   write, zero or trim ---> backend ---> adaptra_invalidate
 *                                           | every volume that
 *                                           | may_hold the bytes
 *                                           v
 *            READY pages: dropped (unindexed under their stripe
 *              locks; a pinned one is freed by its last unpin)
 *            IN_FLIGHT pages: flagged STALE, their read discards
 *              what it got when it completes
 *
 * Why a lockless hit and an invalidation may race: read.c's note.
 */

#include <config.h>

#include <string.h>

#include "range.h"
#include "engine-impl.h"

/* May volume other hold bytes that a write to export name (size
 * bytes) through volume v changes?  v is NULL for a connection that
 * has no volume (it passes through).  Its own volume, the export's
 * shared volume whatever its size (an image grown under a connected
 * client: the newcomer passes through), and volumes that may alias
 * another name's bytes: those of the same size, and any size for a
 * connection without a volume, whose export may be one of them
 * resized.  Names are compared as volumes keep them (truncated), which
 * errs on the side of dropping.  Lock held.
 */
static bool
may_hold (const struct adaptra_volume *other, const struct adaptra_volume *v,
          const char *name, uint64_t size)
{
  if (other == v)
    return true;
  if (!(other->flags & ADAPTRA_VOLUME_PER_CONNECTION) &&
      strncmp (other->name, name, sizeof other->name - 1) == 0)
    return true;
  return (other->flags & ADAPTRA_VOLUME_MAY_ALIAS) &&
         (v == NULL || other->size == size);
}

/* Drop [offset, offset + count) of export name (size bytes), written
 * through volume v (or NULL), from every volume that may hold it.
 * Returns the pages dropped.  Lock held.
 */
static uint64_t
invalidate (struct adaptra_engine *e, const struct adaptra_volume *v,
            const char *name, uint64_t size, uint64_t offset, uint64_t count)
{
  struct adaptra_volume *other;
  struct adaptra_span span;
  uint64_t n = 0, c;
  size_t i;

  assert_locked (e);
  for (i = 0; i < e->nvolumes; i++) {
    other = e->volumes[i];
    if (other == NULL || !may_hold (other, v, name, size) ||
        (c = adaptra_clamp_to_size (offset, count, other->size)) == 0)
      continue;
    span = adaptra_span_of (other->base + offset, c, e->page_shift);
    n += adaptra_pool_invalidate (&e->pool, span.first, span.last);
    adaptra_holes_set (&other->holes, offset, offset + c, false);
  }
  return n;
}

void
adaptra_invalidate (struct adaptra_engine *e, int volume, uint64_t offset,
                    uint64_t count)
{
  const struct adaptra_volume *v;
  uint64_t n = 0;

  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (v)
    n = invalidate (e, v, v->name, v->size, offset, count);
  adaptra_unlock (e);
  adaptra_stat_add (&e->stats.invalidated, n);
}

void
adaptra_invalidate_export (struct adaptra_engine *e, const char *name,
                           uint64_t size, uint64_t offset, uint64_t count)
{
  uint64_t n;

  adaptra_lock (e);
  n = invalidate (e, NULL, name, size, offset, count);
  adaptra_unlock (e);
  adaptra_stat_add (&e->stats.invalidated, n);
}
