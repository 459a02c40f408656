/* window.h: the window policy's pure functions and formulas.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The window policy: how many pages to read ahead, and where to put
 * the look-ahead mark.  Pure functions of their inputs, all sizes in
 * pool pages.  The formulas are the seed's (docs/DESIGN.md §1 names it):
 * each function's comment gives its own.
 */

#ifndef ADAPTRA_WINDOW_H
#define ADAPTRA_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "adaptra/stats.h"

/* A window of ra pages whose last la pages lie beyond the look-ahead
 * mark: the mark sits ra - la pages into the window, la == 0 means no
 * mark.  ra == 0 means "no read-ahead".  The functions here keep la
 * within ra; a lone stream's look-ahead may be longer (readahead.c:
 * lone_window), and then the mark lies la - ra pages before the
 * window, on a page of an earlier one.
 */
struct adaptra_window {
  uint64_t ra;
  uint64_t la;
};

/* Effective bounds of one decision. */
struct adaptra_window_bounds {
  uint64_t min;                 /* floor of initial/context windows */
  uint64_t max;                 /* ceiling of every window */
  unsigned ratio;               /* percent of the thrashing threshold */
  uint64_t lead;                /* look-ahead that hides backend latency */
  uint64_t fixed;               /* fixed mode: the fixed window's pages;
                                   0: adaptive */
};

/* Mode dispatch, the one place the mode decides anything: in fixed
 * mode (b->fixed > 0) every forward window is the legacy fixed one
 * (adaptra_window_fixed of b->fixed pages, method
 * ADAPTRA_METHOD_FIXED), whatever its case, and no adaptive method is
 * consulted or measured for: sets *w and *method and returns true.  In
 * adaptive mode returns false: the case's own method sizes the window.
 * Backward windows are adaptive in either mode.
 */
extern bool adaptra_window_fixed_mode (const struct adaptra_window_bounds *b,
                                       struct adaptra_window *w,
                                       unsigned *method);

/* Effective maximum: max_pages (0 = auto: the larger of floor_pages and
 * the backend's bandwidth-delay product bdp_pages), never more than
 * the pool can spare.  May be 0 when the pool has nothing to spare.
 */
extern uint64_t adaptra_window_max (uint64_t max_pages, uint64_t floor_pages,
                                    uint64_t bdp_pages, uint64_t spare_pages);

/* Initial window for a first sequential read of req pages: four times
 * the request, within [min, max], mark half way.
 */
extern struct adaptra_window adaptra_window_initial (
  uint64_t req, const struct adaptra_window_bounds *b);

/* The state method's share of T where a turn at the backend costs a
 * seek (core/readahead.c: state_share).  It starts at adaptra-ratio,
 * grows by ADAPTRA_SHARE_STEP points a window while the stream loses
 * no page read ahead, up to ADAPTRA_SHARE_MAX, and falls back to
 * adaptra-ratio at the first page lost: the seed's own feedback
 * (a page evicted unread says T was overestimated).  The step is
 * small so that a climb takes four clean windows; the ceiling is what
 * T over two intervals keeps without loss: adaptra-sim's disk model,
 * eight and sixteen interleaved streams in 16-128 MiB pools, evicted
 * no page at 70 and some at 80 (docs/bench/history/beside-the-matrix.md,
 * "w3c").  Never below adaptra-ratio.
 */
#define ADAPTRA_SHARE_STEP 5
#define ADAPTRA_SHARE_MAX 70

/* Inputs of the state method, sampled at a look-ahead mark. */
struct adaptra_state_input {
  uint64_t stream_shift;        /* s: pages the stream advanced */
  uint64_t global_size;         /* G: inactive + free pages of the pool */
  uint64_t global_shift;        /* g: aging clock ticks meanwhile */
  uint64_t prev_shift;          /* s of the interval before (0: none) */
  uint64_t prev_global_shift;   /* g of the interval before */
  uint64_t ra_old;              /* size of the stream's current window */
  uint64_t la_old;              /* pages of it still ahead of the reader */
  uint64_t lost;                /* its pages evicted unread meanwhile */
  unsigned share;               /* percent of T the window may take */
};

enum adaptra_state_action {
  ADAPTRA_STATE_NONE,           /* no safe room: no read-ahead now */
  ADAPTRA_STATE_WINDOW,         /* issue window */
  ADAPTRA_STATE_RESCUE,         /* pages ahead are in danger: rescue them */
};

struct adaptra_state_decision {
  enum adaptra_state_action action;
  struct adaptra_window window;
  uint64_t threshold;           /* T = s * G / g */
  uint64_t remain;              /* pages readable before eviction starts */
};

/* The state method: the thrashing threshold T = s*G/g (g at least 1;
 * s and g summed over this interval and the one before when the
 * input has one: prev_shift, prev_global_shift), scaled by share/100,
 * less the la_old pages already ahead, grown at
 * most 2x ra_old per step, at most max; halved when the stream lost
 * pages.  la = ra/8 (at least 1, at least lead), reduced so that the
 * next mark is at least ra/4 pages on (the next estimate needs a
 * measurable s).  Asks for a rescue when the pages ahead would be
 * evicted before the reader gets there (remain <= la_old, la_old > 1).
 * Not floored at min: a window the pool cannot keep is worse than a
 * small one.
 */
extern struct adaptra_state_decision adaptra_window_state (
  const struct adaptra_state_input *in, const struct adaptra_window_bounds *b);

/* Windows alike for a client's streams that take turns where each
 * turn costs a seek: the state window d (sized from in) moved to mean,
 * the mean of the client's streams' last proposals.  Down to it
 * always; up to it only while the stream lost no page, and no further
 * than its whole threshold less the la_old pages ahead (the share's
 * margin is for T's noise, which the mean takes out) nor max.  The
 * look-ahead as adaptra_window_state places it.
 */
extern struct adaptra_window adaptra_window_alike (
  const struct adaptra_state_input *in,
  const struct adaptra_state_decision *d, uint64_t mean,
  const struct adaptra_window_bounds *b);

/* The share of T a stream's next window may take after a window
 * sized at share percent, ratio being adaptra-ratio: ratio when the
 * stream lost pages, otherwise share + ADAPTRA_SHARE_STEP, at most
 * ADAPTRA_SHARE_MAX, never below ratio.
 */
extern unsigned adaptra_window_share (unsigned share, unsigned ratio,
                                      uint64_t lost);

/* The context method, for a read at page index with history pages
 * present just before it.  A run of history that reaches page 0
 * (history >= index) selects the accelerated variant, which doubles
 * the position reached; otherwise the window is history * ratio / 100
 * within [min, max].
 */
extern struct adaptra_window adaptra_window_context (
  uint64_t index, uint64_t history, const struct adaptra_window_bounds *b,
  unsigned *method);

/* The legacy fixed window: fixed_pages (limited only by b->max), with
 * the mark on its first page, so the next window is issued as soon as
 * the reader enters this one (the pre-seed kernel's ahead window).
 */
extern struct adaptra_window adaptra_window_fixed (
  uint64_t fixed_pages, const struct adaptra_window_bounds *b);

/* A backward stream: twice the larger of the request and the previous
 * window, within [min, max], mark a quarter from the far end.
 */
extern struct adaptra_window adaptra_window_backward (
  uint64_t req, uint64_t ra_old, const struct adaptra_window_bounds *b);

/* Fit a forward window starting at page start into an export of eof
 * pages.  Returns false when start is at or past the end (nothing to
 * do).  A window whose end comes within ra/4 of eof is stretched to
 * eof, and loses its mark unless keep_mark: *at_eof is set then.
 */
extern bool adaptra_window_fit_eof (uint64_t start, uint64_t eof,
                                    bool keep_mark, struct adaptra_window *w,
                                    bool *at_eof);

#endif /* ADAPTRA_WINDOW_H */
