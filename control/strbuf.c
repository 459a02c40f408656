/* strbuf.c: a growable text buffer with a hard limit.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/strbuf.h"

/* Make room for need more text bytes plus the NUL. */
static int
reserve (struct adaptra_strbuf *sb, size_t need)
{
  size_t want = sb->len + need + 1;
  size_t cap = sb->cap ? sb->cap : 256;
  char *p;

  if (want <= sb->cap)
    return 0;
  while (cap < want)
    cap *= 2;
  p = realloc (sb->data, cap);
  if (p == NULL)
    return -1;
  sb->data = p;
  sb->cap = cap;
  return 0;
}

int
adaptra_strbuf_printf (struct adaptra_strbuf *sb, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start (ap, fmt);
  n = vsnprintf (NULL, 0, fmt, ap);
  va_end (ap);
  if (n < 0 || (size_t) n > sb->limit - sb->len || reserve (sb, n) == -1) {
    sb->overflow = true;
    return -1;
  }
  va_start (ap, fmt);
  vsnprintf (sb->data + sb->len, n + 1, fmt, ap);
  va_end (ap);
  sb->len += n;
  return 0;
}

void
adaptra_strbuf_consume (struct adaptra_strbuf *sb, size_t n)
{
  memmove (sb->data, sb->data + n, sb->len - n + 1);
  sb->len -= n;
}

void
adaptra_strbuf_clear (struct adaptra_strbuf *sb)
{
  sb->len = 0;
  sb->overflow = false;
  if (sb->data)
    sb->data[0] = '\0';
}

void
adaptra_strbuf_free (struct adaptra_strbuf *sb)
{
  free (sb->data);
  sb->data = NULL;
  sb->len = sb->cap = 0;
  sb->overflow = false;
}
