/* holes.c: a volume's map of the extents that read as zeros.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* See holes.h.  The map is a sorted array: a block status answer or a
 * write replaces a slice of it, a window's look-up is a binary search
 * and a walk over the extents the window crosses.
 */

#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "adaptra/holes.h"
#include "engine-impl.h"
#include "holes.h"
#include "minmax.h"
#include "range.h"
#include "window.h"

void
adaptra_holes_free (struct adaptra_holes *m)
{
  free (m->h);
  m->h = NULL;
  m->n = m->cap = 0;
  m->known_start = m->known_end = 0;
}

/* Index of the first extent that ends after off (n: none). */
static size_t
first_ending_after (const struct adaptra_holes *m, uint64_t off)
{
  size_t lo = 0, hi = m->n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;

    if (m->h[mid].end > off)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/* Room for n extents; false when the map may not or cannot grow. */
static bool
reserve (struct adaptra_holes *m, size_t n)
{
  struct adaptra_hole *h;
  size_t cap;

  if (n <= m->cap)
    return true;
  if (n > ADAPTRA_HOLES_MAX)
    return false;
  cap = min_u64 (max_u64 (2 * m->cap, 16), ADAPTRA_HOLES_MAX);
  h = realloc (m->h, cap * sizeof *h);
  if (!h)
    return false;
  m->h = h;
  m->cap = cap;
  return true;
}

/* Replace extents [lo, hi) with the k of with. */
static void
splice (struct adaptra_holes *m, size_t lo, size_t hi,
        const struct adaptra_hole *with, size_t k)
{
  /* An empty map may have no array yet: nothing to move or copy. */
  if (m->n - hi > 0)
    memmove (&m->h[lo + k], &m->h[hi], (m->n - hi) * sizeof *m->h);
  if (k > 0)
    memcpy (&m->h[lo], with, k * sizeof *with);
  m->n = m->n - (hi - lo) + k;
}

void
adaptra_holes_set (struct adaptra_holes *m, uint64_t start, uint64_t end,
                   bool zero)
{
  struct adaptra_hole with[2];
  size_t lo, hi, k = 0;

  if (start >= end)
    return;
  /* Extents [lo, hi) overlap or touch [start, end]. */
  lo = start > 0 ? first_ending_after (m, start - 1) : 0;
  for (hi = lo; hi < m->n && m->h[hi].start <= end; hi++)
    ;
  if (zero) {
    with[0].start = lo < hi ? min_u64 (start, m->h[lo].start) : start;
    with[0].end = lo < hi ? max_u64 (end, m->h[hi - 1].end) : end;
    k = 1;
  }
  else {
    /* What lies outside [start, end) of the extents it cuts stays
     * zero: a touching neighbour is kept whole that way.
     */
    if (lo < hi && m->h[lo].start < start)
      with[k++] = (struct adaptra_hole) { m->h[lo].start, start };
    if (lo < hi && m->h[hi - 1].end > end)
      with[k++] = (struct adaptra_hole) { end, m->h[hi - 1].end };
  }
  if (!reserve (m, m->n - (hi - lo) + k)) {
    /* Forget instead: drop the extents [lo, hi) and record nothing. */
    splice (m, lo, hi, with, 0);
    return;
  }
  splice (m, lo, hi, with, k);
}

/* The first page at or after page p that lies wholly in a zero
 * extent, or to if none before it: pages of 2^shift bytes of a volume
 * of size bytes.
 */
static uint64_t
next_zero_page (const struct adaptra_holes *m, unsigned shift, uint64_t size,
                uint64_t p, uint64_t to)
{
  size_t i;

  for (i = first_ending_after (m, p << shift); i < m->n; i++) {
    uint64_t from = max_u64 (m->h[i].start, p << shift);
    uint64_t q = (from + (UINT64_C (1) << shift) - 1) >> shift;

    if (q >= to)
      break;
    if (min_u64 ((q + 1) << shift, size) <= m->h[i].end)
      return q;
  }
  return to;
}

bool
adaptra_holes_data_run (const struct adaptra_holes *m, unsigned shift,
                        uint64_t size, uint64_t from, uint64_t to,
                        uint64_t *first, uint64_t *last)
{
  uint64_t p = from;

  while (p < to) {
    uint64_t start = p << shift;
    uint64_t end = min_u64 (start + (UINT64_C (1) << shift), size);
    size_t i = first_ending_after (m, start);

    if (i < m->n && m->h[i].start <= start && m->h[i].end >= end) {
      /* Page p is zero: on past the extent. */
      p = max_u64 (p + 1, m->h[i].end >> shift);
      continue;
    }
    *first = p;
    *last = next_zero_page (m, shift, size, p + 1, to);
    return true;
  }
  return false;
}

bool
adaptra_volume_data_run (const struct adaptra_engine *e,
                         const struct adaptra_volume *v, uint64_t from,
                         uint64_t to, uint64_t *first, uint64_t *last)
{
  assert_locked (e);
  if (!adaptra_holes_data_run (&v->holes, e->page_shift, v->size,
                               from - v->first_page, to - v->first_page,
                               first, last))
    return false;
  *first += v->first_page;
  *last += v->first_page;
  return true;
}

void
adaptra_volume_extent (struct adaptra_engine *e, int volume, uint64_t offset,
                       uint64_t count, bool zero)
{
  struct adaptra_volume *v;

  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (v) {
    count = adaptra_clamp_to_size (offset, count, v->size);
    adaptra_holes_set (&v->holes, offset, offset + count, zero);
  }
  adaptra_unlock (e);
}

uint64_t
adaptra_holes_horizon (struct adaptra_engine *e)
{
  /* The largest window the pool could ever spare (half of it, or the
   * configured maximum): the one a stream has when the query comes
   * may still grow before the reader reaches the query's end.
   */
  uint64_t half = adaptra_pool_frames (&e->pool) / 2, max_pages;

  /* adaptra-max may be set at run time (tune, under the lock). */
  adaptra_lock (e);
  max_pages = e->cfg.max_bytes >> e->page_shift;
  adaptra_unlock (e);
  return ADAPTRA_HOLES_HORIZON_WINDOWS *
    (adaptra_window_max (max_pages, half, 0, half) << e->page_shift);
}

int
adaptra_volume_block_status (struct adaptra_engine *e, int volume,
                             uint64_t offset, uint64_t count, bool one,
                             adaptra_extents_fn *ask, void *opaque)
{
  uint64_t horizon = adaptra_holes_horizon (e);
  uint64_t limit = offset + count, size, known_start, known, end;
  uint64_t first_end, named_end;
  struct adaptra_volume *v;

  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  size = v ? v->size : 0;
  known_start = v ? v->holes.known_start : 0;
  known = v ? v->holes.known_end : 0;
  adaptra_unlock (e);
  if (v == NULL)
    return ask (opaque, offset, limit, one, true, &first_end, &named_end);

  if (one && known_start <= offset && offset < known) {
    /* Within what the plugin named: the client's query as it is. */
    if (ask (opaque, offset, limit, true, true, &first_end,
             &named_end) == -1)
      return -1;
    known = max_u64 (known, first_end);
  }
  else {
    /* Every extent of the client's range and the horizon past it; for
     * one extent, of a stretch from offset, whatever its range.
     */
    end = one ? offset + ADAPTRA_HOLES_WALK_HORIZONS * horizon
      : limit + horizon;
    end = min_u64 (min_u64 (end, size), offset + ADAPTRA_HOLES_QUERY_MAX);
    if (ask (opaque, offset, end, false, true, &first_end,
             &named_end) == -1)
      return -1;
    known = named_end;
    /* The first extent fills the stretch: where it ends, so that the
     * client need not ask again.
     */
    if (one && first_end >= end && end < limit) {
      if (ask (opaque, end, limit, true, true, &first_end,
               &named_end) == -1)
        return -1;
      known = max_u64 (known, first_end);
    }
  }
  /* A client that wants one extent reads in it before it asks again:
   * the horizon past its end too.
   */
  if (one && known < min_u64 (first_end + horizon, size)) {
    end = min_u64 (min_u64 (first_end + ADAPTRA_HOLES_WALK_HORIZONS *
                            horizon, size),
                   known + ADAPTRA_HOLES_QUERY_MAX);
    if (ask (opaque, known, end, false, false, &first_end,
             &named_end) == -1)
      return -1;
    known = max_u64 (known, named_end);
  }
  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (v) {
    v->holes.known_start = offset;
    v->holes.known_end = known;
  }
  adaptra_unlock (e);
  return 0;
}
