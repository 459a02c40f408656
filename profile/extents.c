/* extents.c: a boot profile in memory: its key, extents and checks.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* What the recorder, the file format, the merge and the matcher share:
 * building and checking a profile, appending extents (joined where
 * they continue each other), and the extents sorted by start for
 * lookups by page.  Contracts in profile.h and extents.h.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/engine.h"
#include "range.h"
#include "extents.h"

int
adaptra_profile_key_check (const struct adaptra_profile_key *key,
                           char *why, size_t len)
{
  if (key->page_size < 512 || key->page_size > 1024 * 1024 ||
      adaptra_log2_exact (key->page_size) < 0) {
    snprintf (why, len, "page size %" PRIu32 " is not a power of 2 "
              "from 512 to 1M", key->page_size);
    return -1;
  }
  if (key->export_size == 0 || key->export_size > ADAPTRA_VOLUME_SIZE_MAX) {
    snprintf (why, len, "export size %" PRIu64 " is not from 1 to 2^50",
              key->export_size);
    return -1;
  }
  if (!key->identity ||
      strlen (key->identity) > ADAPTRA_PROFILE_IDENTITY_MAX) {
    snprintf (why, len, "export identity missing or over %d bytes",
              ADAPTRA_PROFILE_IDENTITY_MAX);
    return -1;
  }
  return 0;
}

struct adaptra_profile *
adaptra_profile_new (const struct adaptra_profile_key *key)
{
  struct adaptra_profile *p;
  char why[128];

  if (adaptra_profile_key_check (key, why, sizeof why) == -1) {
    errno = EINVAL;
    return NULL;
  }
  p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  p->identity = strdup (key->identity);
  if (!p->identity) {
    free (p);
    return NULL;
  }
  p->page_size = key->page_size;
  p->export_size = key->export_size;
  p->boots = 1;
  return p;
}

void
adaptra_profile_free (struct adaptra_profile *p)
{
  if (!p)
    return;
  free (p->identity);
  free (p->extents);
  free (p);
}

struct adaptra_profile_key
profile_key_of (const struct adaptra_profile *p)
{
  return (struct adaptra_profile_key) {
    .identity = p->identity, .page_size = p->page_size,
    .export_size = p->export_size,
  };
}

bool
profile_same_key (const struct adaptra_profile_key *a,
          const struct adaptra_profile_key *b)
{
  return a->page_size == b->page_size && a->export_size == b->export_size &&
    strcmp (a->identity, b->identity) == 0;
}

uint64_t
profile_export_pages (const struct adaptra_profile *p)
{
  return adaptra_pages_in (p->export_size,
                           (unsigned) adaptra_log2_exact (p->page_size));
}

int
profile_append (struct adaptra_profile *p, size_t *cap,
        const struct adaptra_profile_extent *x)
{
  struct adaptra_profile_extent *last =
    p->count > 0 ? &p->extents[p->count - 1] : NULL;

  if (last && last->start + last->pages == x->start &&
      last->seen == x->seen && last->missed == x->missed &&
      (uint64_t) last->pages + x->pages <= UINT32_MAX) {
    last->pages += x->pages;
    p->pages += x->pages;
    return 0;
  }
  if (p->count == ADAPTRA_PROFILE_EXTENTS_MAX) {
    errno = EOVERFLOW;
    return -1;
  }
  if (p->count == *cap) {
    size_t n = *cap ? 2 * *cap : 64;
    struct adaptra_profile_extent *a;

    a = realloc (p->extents, n * sizeof *a);
    if (!a)
      return -1;
    p->extents = a;
    *cap = n;
  }
  p->extents[p->count++] = *x;
  p->pages += x->pages;
  return 0;
}

/* qsort has no context argument, so sort (start, index) pairs. */
struct keyed {
  uint64_t start;
  uint32_t index;
};

static int
by_keyed_start (const void *a, const void *b)
{
  uint64_t x = ((const struct keyed *) a)->start;
  uint64_t y = ((const struct keyed *) b)->start;

  return x < y ? -1 : x > y;
}

uint32_t *
profile_sorted_index (const struct adaptra_profile_extent *x, size_t n)
{
  struct keyed *k = malloc ((n ? n : 1) * sizeof *k);
  uint32_t *idx = malloc ((n ? n : 1) * sizeof *idx);
  size_t i;

  if (!k || !idx) {
    free (k);
    free (idx);
    return NULL;
  }
  for (i = 0; i < n; i++)
    k[i] = (struct keyed) { .start = x[i].start, .index = (uint32_t) i };
  qsort (k, n, sizeof *k, by_keyed_start);
  for (i = 0; i < n; i++)
    idx[i] = k[i].index;
  free (k);
  return idx;
}

int
adaptra_profile_check (const struct adaptra_profile *p, char *why, size_t len)
{
  struct adaptra_profile_key key = profile_key_of (p);
  uint64_t npages, total = 0;
  uint32_t *idx;
  size_t i;

  if (adaptra_profile_key_check (&key, why, len) == -1)
    return -1;
  if (p->boots == 0) {
    snprintf (why, len, "0 boots");
    return -1;
  }
  if (p->count > ADAPTRA_PROFILE_EXTENTS_MAX) {
    snprintf (why, len, "%zu extents, over %" PRIu32, p->count,
              ADAPTRA_PROFILE_EXTENTS_MAX);
    return -1;
  }
  npages = profile_export_pages (p);
  for (i = 0; i < p->count; i++) {
    const struct adaptra_profile_extent *x = &p->extents[i];

    if (x->pages == 0 || x->start >= npages || x->pages > npages - x->start) {
      snprintf (why, len, "extent %zu (page %" PRIu64 " + %" PRIu32
                ") empty or past the export's %" PRIu64 " pages",
                i, x->start, x->pages, npages);
      return -1;
    }
    if (x->seen == 0 || x->seen > p->boots || x->missed >= x->seen ||
        x->missed > ADAPTRA_PROFILE_MISSED_MAX) {
      snprintf (why, len, "extent %zu: seen %u, missed %u in %" PRIu32
                " boots", i, x->seen, x->missed, p->boots);
      return -1;
    }
    total += x->pages;
  }
  if (total > ADAPTRA_PROFILE_PAGES_MAX || total != p->pages) {
    snprintf (why, len, "%" PRIu64 " pages (limit %" PRIu64 ")", total,
              ADAPTRA_PROFILE_PAGES_MAX);
    return -1;
  }
  idx = profile_sorted_index (p->extents, p->count);
  if (!idx) {
    snprintf (why, len, "out of memory");
    return -1;
  }
  for (i = 1; i < p->count; i++) {
    const struct adaptra_profile_extent *a = &p->extents[idx[i - 1]];
    const struct adaptra_profile_extent *b = &p->extents[idx[i]];

    if (a->start + a->pages > b->start) {
      snprintf (why, len, "extents %" PRIu32 " and %" PRIu32 " overlap",
                idx[i - 1], idx[i]);
      free (idx);
      return -1;
    }
  }
  free (idx);
  return 0;
}

size_t
profile_first_overlap (const struct adaptra_profile_extent *x,
                       const uint32_t *idx, size_t n, uint64_t start)
{
  size_t lo = 0, hi = n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct adaptra_profile_extent *m = &x[idx[mid]];

    if (m->start + m->pages <= start)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}
