/* matcher.c: following a profile ahead of a client's reads.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The profile's pages in order get ordinals 0 .. pages-1
 * (a prefix sum over the extents); two bitmaps over the ordinals
 * (proposed, read: 1 MiB at the 2^22-page limit) make every count
 * exact.  Three cursors move forward only:
 *
 *      settled S        position P         proposed up to C
 *   ---------|--------------|--------------------|----------> ordinals
 *            <-- reorder --->                    <- lead from P ->
 *
 * S = P - reorder: proposed pages below S that were not read are
 * wasted (and become hits again should the client read them later).
 * C never trails P.  Proposals stop when the last `window` counted
 * reads are less than half matches, and for good past the waste
 * budget: every page is proposed only while the settled waste is
 * within budget and at most lead + reorder pages are unsettled, which
 * is the bound on waste stated in profile.h.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/engine.h"
#include "minmax.h"
#include "range.h"
#include "extents.h"

struct recent {
  bool match;
  uint64_t now_ns;
  uint64_t position;            /* P after the read */
};

struct adaptra_matcher {
  struct adaptra_matcher_config cfg;
  unsigned page_shift;
  uint64_t export_size;
  size_t count;
  struct adaptra_profile_extent *x;    /* profile order */
  uint64_t *ord;                /* ordinal of each extent's first page */
  uint32_t *idx;                /* extents sorted by start */
  uint64_t total;               /* pages */
  unsigned min_seen;            /* effective: min (cfg, boots) */
  uint64_t *proposed, *read;    /* bitmaps over ordinals */
  uint64_t reorder, lead_max, lead_min;        /* pages */
  uint64_t P, C, S;
  uint64_t far;                 /* ordinal past the last far read, or
                                   UINT64_MAX */
  struct recent ring[ADAPTRA_MATCHER_WINDOW_MAX];
  unsigned ring_next, ring_len;
  /* For the percentage rule: settled proposals and their waste, but
   * for those a jump settled (bitmap jumped).
   */
  uint64_t *jumped;
  uint64_t pct_settled, pct_wasted;
  struct adaptra_matcher_counters c;
};

void
adaptra_matcher_defaults (struct adaptra_matcher_config *cfg)
{
  *cfg = (struct adaptra_matcher_config) {
    .lead_bytes = ADAPTRA_MATCHER_LEAD_BYTES,
    .lead_min_bytes = ADAPTRA_MATCHER_LEAD_MIN_BYTES,
    .lead_ns = ADAPTRA_MATCHER_LEAD_NS,
    .reorder_bytes = ADAPTRA_MATCHER_REORDER_BYTES,
    .window = ADAPTRA_MATCHER_WINDOW,
    .waste_bytes = ADAPTRA_MATCHER_WASTE_BYTES,
    .waste_pct = ADAPTRA_MATCHER_WASTE_PCT,
    .waste_sample_bytes = ADAPTRA_MATCHER_WASTE_SAMPLE_BYTES,
    .min_seen = ADAPTRA_MATCHER_MIN_SEEN,
  };
}

static bool
bit (const uint64_t *map, uint64_t i)
{
  return map[i / 64] >> (i % 64) & 1;
}

static void
set_bit (uint64_t *map, uint64_t i)
{
  map[i / 64] |= UINT64_C (1) << (i % 64);
}

void
adaptra_matcher_free (struct adaptra_matcher *m)
{
  if (!m)
    return;
  free (m->x);
  free (m->ord);
  free (m->idx);
  free (m->proposed);
  free (m->read);
  free (m->jumped);
  free (m);
}

uint64_t
adaptra_matcher_bytes (const struct adaptra_profile *p)
{
  const struct adaptra_matcher *m;     /* for the sizes only */
  uint64_t n = p->count + 1, words = p->pages / 64 + 1;

  /* What adaptra_matcher_new allocates and keeps. */
  return sizeof *m + n * (sizeof *m->x + sizeof *m->ord + sizeof *m->idx) +
    words * (sizeof *m->proposed + sizeof *m->read + sizeof *m->jumped);
}

struct adaptra_matcher *
adaptra_matcher_new (const struct adaptra_profile *p,
                     const struct adaptra_matcher_config *cfg)
{
  struct adaptra_matcher *m;
  char why[160];
  size_t i, words;

  if (cfg->window < 1 || cfg->window > ADAPTRA_MATCHER_WINDOW_MAX ||
      adaptra_profile_check (p, why, sizeof why) == -1) {
    errno = EINVAL;
    return NULL;
  }
  m = calloc (1, sizeof *m);
  if (!m)
    return NULL;
  m->cfg = *cfg;
  m->page_shift = (unsigned) adaptra_log2_exact (p->page_size);
  m->export_size = p->export_size;
  m->count = p->count;
  m->total = p->pages;
  words = (size_t) (p->pages / 64 + 1);
  m->x = malloc ((p->count + 1) * sizeof *m->x);
  m->ord = malloc ((p->count + 1) * sizeof *m->ord);
  m->idx = profile_sorted_index (p->extents, p->count);
  m->proposed = calloc (words, sizeof *m->proposed);
  m->read = calloc (words, sizeof *m->read);
  m->jumped = calloc (words, sizeof *m->jumped);
  if (!m->x || !m->ord || !m->idx || !m->proposed || !m->read ||
      !m->jumped) {
    adaptra_matcher_free (m);
    return NULL;
  }
  if (p->count > 0)
    memcpy (m->x, p->extents, p->count * sizeof *m->x);
  m->ord[0] = 0;
  for (i = 0; i < p->count; i++)
    m->ord[i + 1] = m->ord[i] + p->extents[i].pages;
  m->min_seen = cfg->min_seen < p->boots ? cfg->min_seen : p->boots;
  m->reorder = cfg->reorder_bytes >> m->page_shift;
  m->lead_max = cfg->lead_bytes >> m->page_shift;
  m->lead_min = cfg->lead_min_bytes >> m->page_shift;
  if (m->lead_min > m->lead_max)
    m->lead_min = m->lead_max;
  m->far = UINT64_MAX;
  m->c.state = ADAPTRA_MATCHER_WAITING;
  return m;
}

/* Index of the extent holding ordinal o (< total). */
static size_t
extent_at (const struct adaptra_matcher *m, uint64_t o)
{
  size_t lo = 0, hi = m->count;

  /* The last extent whose first ordinal is <= o. */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;

    if (m->ord[mid] <= o)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Move S up to P - reorder, counting proposed pages left unread.
 * The pages a jump (a far match) passed count as waste but not in the
 * percentage rule: that rule is for a client that follows the profile
 * yet reads little of it, and a jump costs at most lead + reorder on
 * its own (so a 16 MiB budget allows about two with the defaults).
 */
static void
settle (struct adaptra_matcher *m, bool jump)
{
  uint64_t to = m->P > m->reorder ? m->P - m->reorder : 0;

  for (; m->S < to; m->S++)
    if (bit (m->proposed, m->S)) {
      bool unread = !bit (m->read, m->S);

      m->c.wasted += unread;
      m->c.pending -= unread;
      if (jump)
        set_bit (m->jumped, m->S);
      else {
        m->pct_settled++;
        m->pct_wasted += unread;
      }
    }
}

static bool
over_waste (const struct adaptra_matcher *m)
{
  uint64_t budget = m->cfg.waste_bytes >> m->page_shift;
  uint64_t sample = m->cfg.waste_sample_bytes >> m->page_shift;

  return m->c.wasted > budget ||
    (m->pct_settled >= sample && m->pct_settled > 0 &&
     m->pct_wasted * 100 > m->pct_settled * m->cfg.waste_pct);
}

static void
update_state (struct adaptra_matcher *m)
{
  unsigned i, matches = 0;

  if (m->c.state == ADAPTRA_MATCHER_GAVE_UP)
    return;
  if (over_waste (m)) {
    m->c.state = ADAPTRA_MATCHER_GAVE_UP;
    return;
  }
  if (m->ring_len == 0)
    return;
  for (i = 0; i < m->ring_len; i++)
    matches += m->ring[i].match;
  m->c.state = 2 * matches >= m->ring_len ? ADAPTRA_MATCHER_FOLLOWING
    : ADAPTRA_MATCHER_BACKED_OFF;
}

void
adaptra_matcher_read (struct adaptra_matcher *m, uint64_t offset,
                      uint64_t count, uint64_t now_ns)
{
  struct adaptra_span span;
  uint64_t hi = max_u64 (m->P + m->reorder, m->C);
  uint64_t lo = m->P > m->reorder ? m->P - m->reorder : 0;
  uint64_t near_top = 0, far_top = 0;
  bool fresh = false, near = false, jump = false, in_profile = false;
  size_t i;

  count = adaptra_clamp_to_size (offset, count, m->export_size);
  span = adaptra_span_of (offset, count, m->page_shift);
  if (span.first == span.last)
    return;
  /* The extents overlapping the read's pages, by start. */
  for (i = profile_first_overlap (m->x, m->idx, m->count, span.first);
       i < m->count && m->x[m->idx[i]].start < span.last; i++) {
    size_t e = m->idx[i];
    uint64_t a = max_u64 (m->x[e].start, span.first);
    uint64_t b = min_u64 (m->x[e].start + m->x[e].pages, span.last);
    uint64_t o;

    in_profile = true;
    for (o = m->ord[e] + (a - m->x[e].start);
         o < m->ord[e] + (b - m->x[e].start); o++) {
      if (bit (m->read, o))
        continue;
      set_bit (m->read, o);
      fresh = true;
      if (bit (m->proposed, o)) {
        m->c.hit++;
        if (o < m->S) {
          m->c.wasted--;
          m->pct_wasted -= !bit (m->jumped, o);
        }
        else
          m->c.pending--;
      }
      if (o >= lo && o < hi) {
        near = true;
        near_top = max_u64 (o + 1, near_top);
      }
      else if (m->far != UINT64_MAX && o >= m->P &&
               o + m->reorder >= m->far && o < m->far + m->reorder) {
        /* Ahead, but close to the last far read: two reads agree
         * that the client jumped there.
         */
        jump = true;
        near_top = max_u64 (o + 1, near_top);
      }
      else
        far_top = o + 1 > far_top ? o + 1 : far_top;
    }
  }
  if (in_profile && !fresh)
    return;                     /* a re-read: neutral */
  if (near || jump) {
    m->P = max_u64 (m->P, near_top);
    m->C = max_u64 (m->C, m->P);
    m->far = UINT64_MAX;
    m->c.reads_matched++;
    settle (m, jump);
  }
  else {
    /* Far in the profile: remember where, the client may have jumped. */
    m->far = far_top > 0 ? far_top : UINT64_MAX;
    m->c.reads_missed++;
  }
  m->ring[m->ring_next] = (struct recent) {
    .match = near || jump, .now_ns = now_ns, .position = m->P,
  };
  m->ring_next = (m->ring_next + 1) % m->cfg.window;
  if (m->ring_len < m->cfg.window)
    m->ring_len++;
  update_state (m);
}

/* The lead in pages now: the client's rate through the profile over
 * the window's reads times lead_ns, within [lead_min, lead_max].
 */
static uint64_t
lead (const struct adaptra_matcher *m, uint64_t now_ns)
{
  unsigned oldest = m->ring_len < m->cfg.window ? 0 : m->ring_next;
  const struct recent *r = &m->ring[oldest];
  double pages;

  if (m->ring_len < 2 || now_ns <= r->now_ns || m->P <= r->position)
    return m->lead_min;
  pages = (double) (m->P - r->position) * (double) m->cfg.lead_ns /
    (double) (now_ns - r->now_ns);
  if (pages < (double) m->lead_min)
    return m->lead_min;
  if (pages > (double) m->lead_max)
    return m->lead_max;
  return (uint64_t) pages;
}

/* Add pages [page, page + n) to out (merging with the last range
 * where they continue it).  Returns false when out is full.
 */
static bool
add_range (const struct adaptra_matcher *m, struct adaptra_profile_range *out,
           size_t *n, size_t max, uint64_t page, uint64_t pages)
{
  uint64_t off = page << m->page_shift;
  uint64_t len = adaptra_clamp_to_size (off, pages << m->page_shift,
                                        m->export_size);

  if (*n > 0 && out[*n - 1].offset + out[*n - 1].count == off)
    out[*n - 1].count += len;
  else if (*n == max)
    return false;
  else
    out[(*n)++] = (struct adaptra_profile_range) { .offset = off,
                                                   .count = len };
  return true;
}

size_t
adaptra_matcher_next (struct adaptra_matcher *m, uint64_t now_ns,
                      uint64_t max_bytes, struct adaptra_profile_range *out,
                      size_t max)
{
  uint64_t end, room = max_bytes >> m->page_shift;
  size_t n = 0;

  if (m->c.state != ADAPTRA_MATCHER_FOLLOWING || max == 0)
    return 0;
  end = min_u64 (m->P + lead (m, now_ns), m->total);
  /* Extent by extent, the runs of pages the client has not read. */
  while (m->C < end && room > 0) {
    size_t e = extent_at (m, m->C);
    uint64_t stop = min_u64 (m->ord[e + 1], end);
    uint64_t run, o;

    if (m->x[e].seen < m->min_seen) {
      m->C = stop;
      continue;
    }
    while (m->C < stop && bit (m->read, m->C))
      m->C++;
    for (run = m->C; run < stop && run - m->C < room &&
           !bit (m->read, run); run++)
      ;
    if (run == m->C)
      continue;
    if (!add_range (m, out, &n, max, m->x[e].start + (m->C - m->ord[e]),
                    run - m->C))
      break;
    for (o = m->C; o < run; o++)
      set_bit (m->proposed, o);
    m->c.proposed += run - m->C;
    m->c.pending += run - m->C; /* unread, and at or above S */
    room -= run - m->C;
    m->C = run;
  }
  return n;
}

void
adaptra_matcher_counters (const struct adaptra_matcher *m,
                          struct adaptra_matcher_counters *c)
{
  *c = m->c;
  c->position = m->P;
}
