/* recognise.h: which stream a read belongs to.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Stream recognition (recognise.c, its design note has the table of
 * cases): readahead.c asks it, on each event, which stream the read
 * belongs to.  Engine lock held.
 */

#ifndef ADAPTRA_RECOGNISE_H
#define ADAPTRA_RECOGNISE_H

#include <stdbool.h>
#include <stdint.h>

#include "readahead.h"

/* The stream miss ev belongs to: one whose reader the pool shows got
 * to the page before it (backward: above it), or one whose window it
 * lands next to with the history to show for it.  NULL if none; then
 * *near is the stream whose window it lands next to without that
 * history, or NULL.
 */
extern struct adaptra_stream *
adaptra_recognise_miss (struct adaptra_engine *e, const struct event *ev,
                        const struct adaptra_window_bounds *b,
                        struct adaptra_stream **near);

/* Miss ev with no stream (near: as adaptra_recognise_miss left it):
 * start a stream and issue its first window, follow another's
 * window, or read it as a random read, maybe with a trail.  Returns
 * the stream its pages go to, or NULL.
 */
extern struct adaptra_stream *
adaptra_recognise_start (struct adaptra_engine *e, const struct event *ev,
                         struct adaptra_window_bounds *b,
                         const struct adaptra_stream *near);

/* The stream whose window holds every page miss ev would read ahead:
 * s (the miss's own, or NULL), or the stream of the page past the
 * request; else NULL.
 */
extern struct adaptra_stream *
adaptra_recognise_covering (struct adaptra_engine *e, const struct event *ev,
                            struct adaptra_stream *s);

/* Miss ev follows s's window (adaptra_recognise_covering): no window;
 * the reader's pages are s's.  Returns s.
 */
extern struct adaptra_stream *
adaptra_recognise_follow (struct adaptra_engine *e, const struct event *ev,
                          struct adaptra_stream *s);

/* Is the request of mark event ev from stream s's own reader? */
extern bool adaptra_recognise_reader (const struct adaptra_stream *s,
                                      const struct event *ev,
                                      const struct adaptra_window_bounds *b);

/* The mark of frame f was taken by ev and its stream has left the
 * table: a new stream that resumes from the state the mark carries,
 * if the history behind the mark shows its reader is back; or NULL.
 */
extern struct adaptra_stream *
adaptra_recognise_resume (struct adaptra_engine *e, const struct event *ev,
                          uint32_t f, struct adaptra_window_bounds *b);

#endif /* ADAPTRA_RECOGNISE_H */
