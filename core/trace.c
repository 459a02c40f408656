/* trace.c: the engine's decision records as the seed's trace lines.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine hands its tracer records (engine.h: struct adaptra_trace),
 * not text, so that tests read fields and a tracer pays for text only
 * if it wants it.  The text is the one of the seed's traces,
 * readahead-METHOD(client, stream, index, ra=START+SIZE-LOOKAHEAD) =
 * PAGES, where LOOKAHEAD is the part of the window past its mark.
 */

#include <config.h>

#include <inttypes.h>
#include <stdio.h>

#include "adaptra/engine.h"

/* The word after "readahead-": the window's method, or the kind. */
static const char *
decision_name (const struct adaptra_trace *t)
{
  switch (t->kind) {
  case ADAPTRA_TRACE_RESCUE: return "rescue";
  case ADAPTRA_TRACE_FOLLOW: return "follow";
  case ADAPTRA_TRACE_WINDOW: case ADAPTRA_TRACE_BYPASS: default:
    return adaptra_method_name (t->placement.method);
  }
}

int
adaptra_trace_format (const struct adaptra_trace *t, char *buf, size_t len)
{
  const struct adaptra_placement *pl = &t->placement;

  if (t->kind == ADAPTRA_TRACE_BYPASS)
    return snprintf (buf, len,
                     "bypass(volume=%d, read_ns=%.0f, bytes=%.0f) = %s",
                     t->bypass.volume, t->bypass.read_ns, t->bypass.bytes,
                     t->bypass.on ? "on" : "off");
  return snprintf (buf, len,
                   "readahead-%s(client=%d, stream=%" PRIu64 ", index=%"
                   PRIu64 ", ra=%" PRIu64 "+%" PRIu64 "-%" PRIu64 ") = %"
                   PRIu64, decision_name (t), pl->client, pl->stream,
                   t->event.reader, pl->start, pl->end - pl->start,
                   pl->mark == ADAPTRA_NO_MARK ? 0 : pl->end - pl->mark,
                   t->pages);
}
