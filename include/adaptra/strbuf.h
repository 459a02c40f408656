/* strbuf.h: a growable text buffer with a hard limit.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A growable text buffer with a hard limit.
 *
 * The control protocol builds every reply in one of these and the
 * server writes it out.  The limit bounds what one slow socket client
 * can make the server hold; text past it is dropped and the buffer
 * remembers that it overflowed, so the reply can say so.
 */

#ifndef ADAPTRA_STRBUF_H
#define ADAPTRA_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct adaptra_strbuf {
  char *data;                   /* NUL-terminated text, or NULL if empty */
  size_t len;                   /* bytes of text, excluding the NUL */
  size_t cap;                   /* bytes allocated */
  size_t limit;                 /* most text bytes it will ever hold */
  bool overflow;                /* some text was dropped at the limit */
};

/* An empty buffer that will hold at most limit bytes of text. */
#define ADAPTRA_STRBUF_INIT(limit_) \
  ((struct adaptra_strbuf) { .limit = (limit_) })

/* Append printf-formatted text.  Returns 0, or -1 when the text did not
 * fit under the limit or memory ran out (then overflow is set and the
 * buffer keeps what it had).
 */
extern int adaptra_strbuf_printf (struct adaptra_strbuf *sb,
                                  const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

/* Drop the first n bytes of text (n <= len), e.g. once they are sent. */
extern void adaptra_strbuf_consume (struct adaptra_strbuf *sb, size_t n);

/* Empty the buffer and clear overflow, keeping the allocation. */
extern void adaptra_strbuf_clear (struct adaptra_strbuf *sb);

/* Free the allocation; the buffer is then empty and reusable. */
extern void adaptra_strbuf_free (struct adaptra_strbuf *sb);

#endif /* ADAPTRA_STRBUF_H */
