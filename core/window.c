/* window.c: the window policy: how much to read ahead.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The window policy.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §3.3 and §3.4 (the
 * thrashing threshold, rescue).
 *
 * A window is ra pages read ahead of a stream, with a look-ahead mark
 * la pages before its end.  When the reader touches the mark, the next
 * window is issued while la pages remain to cover the backend's
 * latency:
 *
 *       ra_index                      mark             readahead_index
 *          |<------------ ra - la ------>|<----- la ----->|
 *          +------------------------------#---------------+
 *                                          \__ next window issued here
 *
 * How large may ra be?  Pages that are read ahead wait on the inactive
 * list until the reader arrives, and the list moves on as the whole
 * pool inserts pages.  If the stream advanced s pages while the pool's
 * aging clock advanced g ticks, and a page survives about G ticks (the
 * inactive list plus free pages), then a page read ahead now must be
 * read within G ticks, i.e. within s*G/g pages of the reader: that is
 * the thrashing threshold T.  The state method sizes windows at
 * ratio% of T less what is already ahead, grows at most 2x a step
 * (with light load g is tiny and T is noise), and keeps the next mark
 * at least ra/4 pages on so that the next s is measurable.  When the
 * reader is so slow that the unread pages ahead would fall off the
 * list before it reaches them (remain = s*(G-g)/g <= la_old), the
 * stream issues nothing and rescues those pages instead.
 *
 * Without per-stream state (a reaped stream, a restart, a stream that
 * moved to another connection) the context method reads the pool: a
 * run of h pages present just behind the reader is history that
 * survived, so h is a lower bound of T.  A run that reaches page 0
 * shows a stream that started there, and the accelerated variant
 * doubles the position at once (exponential ramp-up).
 *
 * The pure functions here take the measurements; core/readahead.c
 * takes them from the pool and the stream table under the lock.  The
 * mode (adaptive or the legacy fixed window) is decided here too, in
 * adaptra_window_fixed_mode.
 */

#include <config.h>

#include "minmax.h"
#include "window.h"

/* a * b / c without overflow, saturating at UINT64_MAX. */
static uint64_t
mul_div (uint64_t a, uint64_t b, uint64_t c)
{
  unsigned __int128 r = (unsigned __int128) a * b / c;

  return r > UINT64_MAX ? UINT64_MAX : (uint64_t) r;
}

static uint64_t
clamp_ra (uint64_t ra, const struct adaptra_window_bounds *b)
{
  return min_u64 (max_u64 (ra, b->min), b->max);
}

/* The usual look-ahead: an eighth of the window, but at least what
 * hides the backend latency, and never more than the window.
 */
static uint64_t
lookahead_of (uint64_t ra, const struct adaptra_window_bounds *b)
{
  return min_u64 (max_u64 (1 + ra / 8, b->lead), ra);
}

uint64_t
adaptra_window_max (uint64_t max_pages, uint64_t floor_pages,
                    uint64_t bdp_pages, uint64_t spare_pages)
{
  uint64_t cap = max_pages ? max_pages : max_u64 (floor_pages, bdp_pages);

  return min_u64 (cap, spare_pages);
}

struct adaptra_window
adaptra_window_initial (uint64_t req, const struct adaptra_window_bounds *b)
{
  struct adaptra_window w;

  w.ra = clamp_ra (4 * min_u64 (req, b->max), b);
  w.la = w.ra / 2;
  return w;
}

/* The look-ahead of a state window of ra pages: lookahead_of, less
 * what keeps the next measuring interval at least ra/4 pages long,
 * but never below the lead that hides the backend's latency.
 */
static uint64_t
state_lookahead (uint64_t ra, const struct adaptra_state_input *in,
                 const struct adaptra_window_bounds *b)
{
  uint64_t la = lookahead_of (ra, b);
  uint64_t shift_next = in->la_old + (ra - la);

  if (shift_next < ra / 4) {
    uint64_t cut = ra / 4 - shift_next;
    uint64_t floor = min_u64 (max_u64 (b->lead, 1), la);

    la = la > cut + floor ? la - cut : floor;
  }
  return la;
}

struct adaptra_state_decision
adaptra_window_state (const struct adaptra_state_input *in,
                      const struct adaptra_window_bounds *b)
{
  struct adaptra_state_decision d = { .action = ADAPTRA_STATE_NONE };
  uint64_t g = in->global_shift | 1;
  uint64_t scaled, limit, ra;

  /* Over two intervals T is steadier: whether another stream's
   * window landed in one interval or not swings a single g several
   * times over (eight streams at a disk: g / s 1.8 to 10).
   */
  d.threshold = mul_div (in->stream_shift + in->prev_shift, in->global_size,
                         g + in->prev_global_shift);
  d.remain = in->global_size > g
    ? mul_div (in->stream_shift, in->global_size - g, g) : 0;

  if (d.remain <= in->la_old && in->la_old > 1) {
    d.action = ADAPTRA_STATE_RESCUE;
    return d;
  }

  /* The pages already ahead count against the threshold. */
  scaled = mul_div (d.threshold, in->share, 100);
  if (scaled <= in->la_old)
    return d;
  ra = scaled - in->la_old;

  limit = min_u64 (b->max, 2 * max_u64 (in->ra_old, 1));
  ra = min_u64 (ra, limit);
  if (in->lost > 0)
    ra = min_u64 (ra, max_u64 (in->ra_old / 2, 1));
  if (ra == 0)
    return d;

  d.action = ADAPTRA_STATE_WINDOW;
  d.window.ra = ra;
  d.window.la = state_lookahead (ra, in, b);
  return d;
}

struct adaptra_window
adaptra_window_alike (const struct adaptra_state_input *in,
                      const struct adaptra_state_decision *d, uint64_t mean,
                      const struct adaptra_window_bounds *b)
{
  uint64_t ra = d->window.ra;

  if (mean < ra)
    ra = max_u64 (mean, 1);
  else if (mean > ra && in->lost == 0 && d->threshold > in->la_old)
    ra = max_u64 (ra, min_u64 (min_u64 (mean, d->threshold - in->la_old),
                               b->max));
  if (ra == d->window.ra)
    return d->window;
  return (struct adaptra_window) { ra, state_lookahead (ra, in, b) };
}

unsigned
adaptra_window_share (unsigned share, unsigned ratio, uint64_t lost)
{
  if (lost > 0)
    return ratio;
  return (unsigned) max_u64 (ratio, min_u64 (share + ADAPTRA_SHARE_STEP,
                                             ADAPTRA_SHARE_MAX));
}

struct adaptra_window
adaptra_window_context (uint64_t index, uint64_t history,
                        const struct adaptra_window_bounds *b,
                        unsigned *method)
{
  struct adaptra_window w;

  if (history >= index) {
    /* Everything up to the reader is still here: a stream from page
     * 0.  Aim the next mark at twice the position reached.
     */
    uint64_t la = mul_div (index, b->ratio, 100);

    w.ra = clamp_ra (2 * la, b);
    w.la = min_u64 (max_u64 (la, b->lead), w.ra);
    *method = ADAPTRA_METHOD_CONTEXTA;
    return w;
  }
  w.ra = clamp_ra (mul_div (history, b->ratio, 100), b);
  w.la = lookahead_of (w.ra, b);
  *method = ADAPTRA_METHOD_CONTEXT;
  return w;
}

struct adaptra_window
adaptra_window_fixed (uint64_t fixed_pages,
                      const struct adaptra_window_bounds *b)
{
  struct adaptra_window w;

  w.ra = min_u64 (fixed_pages, b->max);
  w.la = w.ra;
  return w;
}

bool
adaptra_window_fixed_mode (const struct adaptra_window_bounds *b,
                           struct adaptra_window *w, unsigned *method)
{
  if (b->fixed == 0)
    return false;
  *w = adaptra_window_fixed (b->fixed, b);
  *method = ADAPTRA_METHOD_FIXED;
  return true;
}

struct adaptra_window
adaptra_window_backward (uint64_t req, uint64_t ra_old,
                         const struct adaptra_window_bounds *b)
{
  struct adaptra_window w;

  w.ra = clamp_ra (2 * max_u64 (req, ra_old), b);
  w.la = w.ra / 4;
  return w;
}

bool
adaptra_window_fit_eof (uint64_t start, uint64_t eof, bool keep_mark,
                        struct adaptra_window *w, bool *at_eof)
{
  *at_eof = false;
  if (start >= eof)
    return false;
  if (w->ra >= eof - start || eof - start - w->ra < w->ra / 4) {
    w->ra = eof - start;
    w->la = keep_mark ? min_u64 (w->la, w->ra) : 0;
    *at_eof = true;
  }
  return true;
}
