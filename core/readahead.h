/* readahead.h: the read-ahead decision's event, placement and issue.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The seam between the two halves of the read-ahead decision, both
 * called with the engine lock held:
 *
 *   recognise.c   which stream a read belongs to, and so which case
 *                 of the decision it is: a known stream, a new one, a
 *                 reader that follows another's window, a lone read
 *                 and its trail, a stream that resumes on a mark.
 *   readahead.c   the decision's entry points (engine-impl.h:
 *                 adaptra_readahead_miss, adaptra_readahead_mark), and
 *                 each case's window: its bounds, its size by the
 *                 case's method, where it goes, its dispatch.
 *
 * A decision is data, as in Linux's mm/readahead.c: its input is a
 * struct event, its output a struct placement that one case fills and
 * hands to adaptra_readahead_issue.  The cases of recognise.c that
 * start a stream size and place its first window with the calls
 * below, as the cases of readahead.c do for a known stream.
 */

#ifndef ADAPTRA_READAHEAD_H
#define ADAPTRA_READAHEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "window.h"
#include "engine-impl.h"

/* A placement's mark when its window carries none. */
#define NO_MARK UINT64_MAX

/* What happened: the input of one decision.  read.c finds it, once
 * per request (what Linux's struct readahead_control and the
 * arguments of its ondemand_readahead say of a request).
 */
struct event {
  enum { EVENT_MISS, EVENT_MARK } what;
  struct adaptra_volume *v;        /* the volume read: a window's
                                      dispatch queues its jobs and
                                      counts its pages in flight */
  int client;                      /* the client reading */
  uint64_t first, last;            /* the request's pages [first, last) */
  uint64_t reader;                 /* the page decided on: the first
                                      absent one, or the mark taken */
};

/* Where a decision puts a window: its output, filled by one case of
 * the decision and handed to adaptra_readahead_issue (Linux's
 * file_ra_state start, size and async_size, here with the mark as a
 * page).
 */
struct placement {
  struct adaptra_stream *s;     /* the stream it is for */
  unsigned method;              /* enum adaptra_method that sized it */
  uint64_t start, end;          /* the window: pages [start, end) */
  uint64_t mark;                /* its look-ahead mark, NO_MARK: none */
  bool at_eof;                  /* it reaches the volume's edge */
};

/* Hand the tracer the decision of kind on ev, placed at pl, which
 * inserted or moved n pages.
 */
extern void adaptra_readahead_trace (struct adaptra_engine *e,
                                     enum adaptra_trace_kind kind,
                                     const struct event *ev,
                                     const struct placement *pl, uint64_t n);

/* Size the forward window *w of stream pl->s by the method pl->method
 * names (initial, context or state; history: the pages read behind
 * the reader), within bounds b, unless the mode is fixed.  pl->method
 * ends as the method that sized *w.  False: no window.
 */
extern bool adaptra_readahead_size_forward (struct adaptra_engine *e,
                                            const struct event *ev,
                                            struct adaptra_window_bounds *b,
                                            uint64_t history,
                                            struct placement *pl,
                                            struct adaptra_window *w);

/* Place forward window w at page start into pl, fitted to the
 * volume's end and to where its recent runs ended.  False: nothing
 * to issue.
 */
extern bool adaptra_readahead_place_forward (struct adaptra_engine *e,
                                             const struct event *ev,
                                             struct placement *pl,
                                             uint64_t start,
                                             struct adaptra_window w);

/* Place backward window w to end (exclusive) at page end into pl, cut
 * at the volume's first page.  False: it would be empty.
 */
extern bool adaptra_readahead_place_backward (struct adaptra_engine *e,
                                              const struct event *ev,
                                              struct placement *pl,
                                              uint64_t end,
                                              struct adaptra_window w);

/* Issue window pl on event ev: record it as pl->s's current window
 * and dispatch its pages.  Every window of every case goes through
 * here.
 */
extern void adaptra_readahead_issue (struct adaptra_engine *e,
                                     const struct event *ev,
                                     struct placement *pl);

#endif /* ADAPTRA_READAHEAD_H */
