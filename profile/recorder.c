/* recorder.c: the order in which a connection first touches pages.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* First touches are found with a hash set of the pages
 * recorded (open addressing, kept at most half full, so 16 bytes per
 * page) beside the extents (16 bytes per extent, one per page at
 * worst): a sorted structure would cost a memmove per random read,
 * and a bitmap of the export 32 MiB for a 1 TiB image at 4 KiB.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/engine.h"
#include "range.h"
#include "extents.h"

/* Initial sizes of the hash set (slots) and of the extents. */
#define RECORDER_SET_INITIAL 1024
#define RECORDER_EXTENTS_INITIAL 64

struct adaptra_recorder {
  struct adaptra_profile *p;    /* the recording */
  size_t cap;                   /* allocated extents */
  struct adaptra_profile_memory *mem;   /* charged, or NULL */
  uint64_t charged;             /* bytes taken from mem */
  unsigned page_shift;
  uint64_t budget_pages;
  uint64_t deadline_ns;
  bool done;
  uint64_t *set;                /* page + 1 of recorded pages; 0: empty */
  size_t set_size;              /* a power of 2 */
};

bool
adaptra_profile_memory_take (struct adaptra_profile_memory *mem,
                             uint64_t bytes)
{
  uint64_t used = __atomic_load_n (&mem->used, __ATOMIC_RELAXED);

  do {
    if (bytes > mem->limit || used > mem->limit - bytes)
      return false;
  } while (!__atomic_compare_exchange_n (&mem->used, &used, used + bytes,
                                         true, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED));
  if (mem->source_take && !mem->source_take (mem->source, bytes)) {
    __atomic_sub_fetch (&mem->used, bytes, __ATOMIC_RELAXED);
    return false;
  }
  return true;
}

void
adaptra_profile_memory_give (struct adaptra_profile_memory *mem,
                             uint64_t bytes)
{
  if (mem->source_give)
    mem->source_give (mem->source, bytes);
  __atomic_sub_fetch (&mem->used, bytes, __ATOMIC_RELAXED);
}

/* Charge bytes the recorder is about to allocate.  false: the budget
 * is spent (the recording then ends).
 */
static bool
charge (struct adaptra_recorder *r, uint64_t bytes)
{
  if (r->mem && !adaptra_profile_memory_take (r->mem, bytes))
    return false;
  r->charged += bytes;
  return true;
}

static void
uncharge (struct adaptra_recorder *r, uint64_t bytes)
{
  if (r->mem)
    adaptra_profile_memory_give (r->mem, bytes);
  r->charged -= bytes;
}

struct adaptra_recorder *
adaptra_recorder_new (const struct adaptra_profile_key *key,
                      uint64_t budget_pages, uint64_t budget_ns,
                      uint64_t now_ns, struct adaptra_profile_memory *mem)
{
  struct adaptra_recorder *r;

  if (budget_pages == 0) {
    errno = EINVAL;
    return NULL;
  }
  r = calloc (1, sizeof *r);
  if (!r)
    return NULL;
  r->mem = mem;
  r->set_size = RECORDER_SET_INITIAL;
  if (!charge (r, sizeof *r + r->set_size * sizeof *r->set)) {
    free (r);
    errno = ENOMEM;
    return NULL;
  }
  r->p = adaptra_profile_new (key);
  r->set = calloc (r->set_size, sizeof *r->set);
  if (!r->p || !r->set) {
    adaptra_recorder_free (r);
    return NULL;
  }
  r->page_shift = (unsigned) adaptra_log2_exact (key->page_size);
  r->budget_pages = budget_pages < ADAPTRA_PROFILE_PAGES_MAX ? budget_pages
    : ADAPTRA_PROFILE_PAGES_MAX;
  r->deadline_ns = now_ns + budget_ns < now_ns ? UINT64_MAX
    : now_ns + budget_ns;
  return r;
}

void
adaptra_recorder_free (struct adaptra_recorder *r)
{
  if (!r)
    return;
  uncharge (r, r->charged);
  adaptra_profile_free (r->p);
  free (r->set);
  free (r);
}

static size_t
slot_of (uint64_t page, size_t size)
{
  /* Fibonacci hashing: consecutive pages spread over the table. */
  return (size_t) ((page * UINT64_C (0x9e3779b97f4a7c15)) >> 20) &
    (size - 1);
}

/* Add page to the set; returns 1 if it was new, 0 if present, -1 on
 * ENOMEM or when its growth is over the memory budget.
 */
static int
set_add (struct adaptra_recorder *r, uint64_t page)
{
  size_t i;

  for (i = slot_of (page, r->set_size); r->set[i];
       i = (i + 1) & (r->set_size - 1))
    if (r->set[i] == page + 1)
      return 0;
  /* Grow at half full: the new page is rehashed with the rest. */
  if (2 * (r->p->pages + 1) > r->set_size) {
    size_t n = 2 * r->set_size, j;
    uint64_t *t;

    /* Both tables are held while the set is rehashed. */
    if (!charge (r, n * sizeof *t))
      return -1;
    t = calloc (n, sizeof *t);
    if (!t) {
      uncharge (r, n * sizeof *t);
      return -1;
    }
    for (j = 0; j < r->set_size; j++)
      if (r->set[j]) {
        size_t k;

        for (k = slot_of (r->set[j] - 1, n); t[k]; k = (k + 1) & (n - 1))
          ;
        t[k] = r->set[j];
      }
    free (r->set);
    uncharge (r, r->set_size * sizeof *t);
    r->set = t;
    r->set_size = n;
    for (i = slot_of (page, n); r->set[i]; i = (i + 1) & (n - 1))
      ;
  }
  r->set[i] = page + 1;
  return 1;
}

/* Make room for one more extent, so that profile_append never grows
 * the array itself: the growth is charged first.  0, or -1.
 */
static int
extents_room (struct adaptra_recorder *r)
{
  struct adaptra_profile_extent *a;
  size_t n;

  if (r->p->count < r->cap)
    return 0;
  if (r->cap == ADAPTRA_PROFILE_EXTENTS_MAX)
    return -1;
  n = r->cap ? 2 * r->cap : RECORDER_EXTENTS_INITIAL;
  if (n > ADAPTRA_PROFILE_EXTENTS_MAX)
    n = ADAPTRA_PROFILE_EXTENTS_MAX;
  /* realloc may hold both arrays for a moment. */
  if (!charge (r, n * sizeof *a))
    return -1;
  a = realloc (r->p->extents, n * sizeof *a);
  if (!a) {
    uncharge (r, n * sizeof *a);
    return -1;
  }
  uncharge (r, r->cap * sizeof *a);
  r->p->extents = a;
  r->cap = n;
  return 0;
}

bool
adaptra_recorder_read (struct adaptra_recorder *r, uint64_t offset,
                       uint64_t count, uint64_t now_ns)
{
  struct adaptra_span span;
  uint64_t page;

  if (r->done)
    return false;
  if (now_ns >= r->deadline_ns) {
    r->done = true;
    return false;
  }
  count = adaptra_clamp_to_size (offset, count, r->p->export_size);
  span = adaptra_span_of (offset, count, r->page_shift);
  for (page = span.first; page < span.last; page++) {
    struct adaptra_profile_extent x = {
      .start = page, .pages = 1, .seen = 1, .missed = 0,
    };
    int added = set_add (r, page);

    /* Out of memory or of its budget ends the recording where it is:
     * still a valid profile, only shorter.
     */
    if (added == -1 ||
        (added == 1 && (extents_room (r) == -1 ||
                        profile_append (r->p, &r->cap, &x) == -1))) {
      r->done = true;
      return false;
    }
    if (r->p->pages == r->budget_pages) {
      r->done = true;
      return false;
    }
  }
  return true;
}

struct adaptra_profile *
adaptra_recorder_profile (const struct adaptra_recorder *r)
{
  struct adaptra_profile_key key = profile_key_of (r->p);
  struct adaptra_profile *p = adaptra_profile_new (&key);

  if (!p)
    return NULL;
  if (r->p->count > 0) {
    p->extents = malloc (r->p->count * sizeof *p->extents);
    if (!p->extents) {
      adaptra_profile_free (p);
      return NULL;
    }
    memcpy (p->extents, r->p->extents, r->p->count * sizeof *p->extents);
  }
  p->count = r->p->count;
  p->pages = r->p->pages;
  return p;
}
