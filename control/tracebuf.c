/* tracebuf.c: the trace buffer between the data path and its readers.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The trace buffer: one bounded text buffer under a mutex.  The data
 * path appends a line under the engine lock, so an append is a copy
 * and nothing more; the reader swaps the whole text out at once, so the
 * lock is never held while text is sent anywhere.  A full buffer drops
 * the line: a trace that loses lines (and says how many) is better
 * than a data path that waits for a slow socket client.
 */

#include <config.h>

#include "adaptra/tracebuf.h"

void
adaptra_tracebuf_init (struct adaptra_tracebuf *t, size_t limit)
{
  pthread_mutex_init (&t->lock, NULL);
  t->text = ADAPTRA_STRBUF_INIT (limit);
  t->dropped = 0;
}

void
adaptra_tracebuf_fini (struct adaptra_tracebuf *t)
{
  adaptra_strbuf_free (&t->text);
  pthread_mutex_destroy (&t->lock);
}

void
adaptra_tracebuf_push (struct adaptra_tracebuf *t, const char *line)
{
  pthread_mutex_lock (&t->lock);
  if (adaptra_strbuf_printf (&t->text, "%s\n", line) == -1) {
    t->dropped++;
    t->text.overflow = false;
  }
  pthread_mutex_unlock (&t->lock);
}

uint64_t
adaptra_tracebuf_take (struct adaptra_tracebuf *t, struct adaptra_strbuf *out)
{
  struct adaptra_strbuf empty = *out;
  uint64_t dropped;

  empty.overflow = false;
  pthread_mutex_lock (&t->lock);
  *out = t->text;
  empty.limit = t->text.limit;
  t->text = empty;
  dropped = t->dropped;
  t->dropped = 0;
  pthread_mutex_unlock (&t->lock);
  return dropped;
}
