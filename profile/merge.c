/* merge.c: merging a fresh recording into an export's profile.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Per page, by walking each side's extents against the other
 * side sorted by start (binary search), cutting extents where the
 * other side's coverage starts or ends.  Adjacent pieces with the
 * same weights are joined again, so a stable profile does not
 * fragment over boots.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>

#include "minmax.h"
#include "extents.h"

/* Append extent a to out in pieces, cut where the extents of other
 * (sorted by idx; NULL: none) begin and end.  fn decides each piece:
 * given the extent of other that covers it (or NULL), it fills the
 * piece's weights, or returns false to drop it.  Returns 0, or -1
 * with errno (ENOMEM; EOVERFLOW when out is full of extents).
 */
typedef bool (*piece_fn) (const struct adaptra_profile_extent *a,
                          const struct adaptra_profile_extent *cover,
                          struct adaptra_profile_extent *out);

static int
cut (struct adaptra_profile *out, size_t *cap,
     const struct adaptra_profile_extent *a,
     const struct adaptra_profile *other, const uint32_t *idx, piece_fn fn)
{
  uint64_t p = a->start, end = a->start + a->pages;
  size_t i = other ? profile_first_overlap (other->extents, idx, other->count, p) : 0;
  struct adaptra_profile_extent piece;

  while (p < end) {
    const struct adaptra_profile_extent *o =
      other && i < other->count ? &other->extents[idx[i]] : NULL;
    uint64_t to;

    if (o && o->start <= p) {
      to = min_u64 (o->start + o->pages, end);
      i++;
    }
    else {
      to = o && o->start < end ? o->start : end;
      o = NULL;
    }
    if (fn (a, o, &piece)) {
      piece.start = p;
      piece.pages = (uint32_t) (to - p);
      if (profile_append (out, cap, &piece) == -1)
        return -1;
    }
    p = to;
  }
  return 0;
}

/* A page of the fresh boot: seen once more than old had it. */
static bool
fresh_piece (const struct adaptra_profile_extent *a,
             const struct adaptra_profile_extent *old,
             struct adaptra_profile_extent *out)
{
  (void) a;
  out->seen = old ? (old->seen < ADAPTRA_PROFILE_SEEN_MAX ? old->seen + 1
                     : ADAPTRA_PROFILE_SEEN_MAX) : 1;
  out->missed = 0;
  return true;
}

/* A page of old that fresh did not touch: missed once more, kept
 * while missed < seen and missed <= ADAPTRA_PROFILE_MISSED_MAX.
 */
static bool
old_piece (const struct adaptra_profile_extent *a,
           const struct adaptra_profile_extent *fresh,
           struct adaptra_profile_extent *out)
{
  unsigned missed = a->missed + 1u;

  if (fresh || missed >= a->seen || missed > ADAPTRA_PROFILE_MISSED_MAX)
    return false;
  out->seen = a->seen;
  out->missed = (uint8_t) missed;
  return true;
}

struct adaptra_profile *
adaptra_profile_merge (const struct adaptra_profile *old,
                       const struct adaptra_profile *fresh,
                       uint64_t budget_pages)
{
  struct adaptra_profile_key key = profile_key_of (fresh);
  struct adaptra_profile_key okey;
  struct adaptra_profile *out = adaptra_profile_new (&key);
  uint32_t *oidx = NULL, *fidx = NULL;
  size_t cap = 0, i;
  int r = 0;

  if (!out)
    return NULL;
  if (old) {
    okey = profile_key_of (old);
    if (!profile_same_key (&key, &okey))
      old = NULL;
  }
  if (old && (!(oidx = profile_sorted_index (old->extents, old->count)) ||
              !(fidx = profile_sorted_index (fresh->extents, fresh->count))))
    goto fail;
  /* Past 2^18 extents (cut into pieces, two profiles of up to 2^18
   * each may need more) the rest is dropped, as the budget would.
   */
  for (i = 0; r == 0 && i < fresh->count; i++)
    r = cut (out, &cap, &fresh->extents[i], old, oidx, fresh_piece);
  for (i = 0; r == 0 && old && i < old->count; i++)
    r = cut (out, &cap, &old->extents[i], fresh, fidx, old_piece);
  if (r == -1 && errno != EOVERFLOW)
    goto fail;
  out->boots = old ? (old->boots < UINT32_MAX ? old->boots + 1 : old->boots)
    : 1;
  /* Cut from the end: old-only pages, then the latest boot's last. */
  if (budget_pages > ADAPTRA_PROFILE_PAGES_MAX)
    budget_pages = ADAPTRA_PROFILE_PAGES_MAX;
  while (out->pages > budget_pages) {
    struct adaptra_profile_extent *last = &out->extents[out->count - 1];
    uint64_t over = out->pages - budget_pages;

    if (last->pages > over) {
      last->pages -= (uint32_t) over;
      out->pages -= over;
    }
    else {
      out->pages -= last->pages;
      out->count--;
    }
  }
  free (oidx);
  free (fidx);
  return out;

 fail:
  free (oidx);
  free (fidx);
  adaptra_profile_free (out);
  return NULL;
}

bool
adaptra_profile_is_boot (const struct adaptra_profile *fresh)
{
  return fresh->pages * fresh->page_size >= ADAPTRA_PROFILE_BOOT_MIN_BYTES;
}
