/* tracebuf.h: a bounded buffer of read-ahead trace lines.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A bounded buffer of trace lines between the data path, which adds
 * one line per read-ahead decision and must never wait, and the
 * statistics thread, which takes them all now and then and streams
 * them to the socket clients that asked ("trace on").  Lines that do
 * not fit are dropped and counted, never waited for.  Thread-safe.
 */

#ifndef ADAPTRA_TRACEBUF_H
#define ADAPTRA_TRACEBUF_H

#include <pthread.h>
#include <stdint.h>

#include "adaptra/strbuf.h"

struct adaptra_tracebuf {
  pthread_mutex_t lock;
  struct adaptra_strbuf text;   /* whole lines, each ending in '\n' */
  uint64_t dropped;             /* lines dropped since the last take */
};

/* An empty buffer holding at most limit bytes of lines. */
extern void adaptra_tracebuf_init (struct adaptra_tracebuf *t, size_t limit);

/* Free what it holds. */
extern void adaptra_tracebuf_fini (struct adaptra_tracebuf *t);

/* Append line and a newline if the whole of it fits, else count it
 * dropped.  Never blocks for longer than a copy of the line.
 */
extern void adaptra_tracebuf_push (struct adaptra_tracebuf *t,
                                   const char *line);

/* Move every buffered line to *out, which must be empty and is given
 * the buffer's text (the buffer takes out's allocation in exchange, so
 * nothing is copied).  Returns the lines dropped since the last take.
 */
extern uint64_t adaptra_tracebuf_take (struct adaptra_tracebuf *t,
                                       struct adaptra_strbuf *out);

#endif /* ADAPTRA_TRACEBUF_H */
