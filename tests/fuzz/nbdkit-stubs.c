/* nbdkit-stubs.c: the nbdkit functions the fuzzed parsers call.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The nbdkit functions plugin/params.c calls, for the fuzzers, which
 * run without a server.  They follow nbdkit's documented behaviour
 * (nbdkit-plugin(3)): sizes with an optional b/K/M/G/T/P/E suffix,
 * no negatives, -1 with an error on anything else.
 */

#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-filter.h>

void
nbdkit_error (const char *fmt, ...)
{
  (void) fmt;
}

int64_t
nbdkit_parse_size (const char *str)
{
  static const char suffixes[] = "bKMGTPE";
  const char *s;
  char *end;
  int64_t size;
  int shift;

  for (s = str; isspace ((unsigned char) *s); s++)
    ;
  if (*s == '-')
    return -1;
  errno = 0;
  size = strtoll (str, &end, 10);
  if (errno || end == str || size < 0)
    return -1;
  if (*end == '\0')
    return size;
  s = strchr (suffixes, *end);
  if (s == NULL || end[1] != '\0')
    return -1;
  shift = 10 * (s - suffixes);
  if (shift > 0 && size > (INT64_MAX >> shift))
    return -1;
  return size << shift;
}

int
nbdkit_parse_unsigned (const char *what, const char *str, unsigned *r)
{
  unsigned long v;
  char *end;

  (void) what;
  if (strchr (str, '-') != NULL)
    return -1;
  errno = 0;
  v = strtoul (str, &end, 0);
  if (errno || end == str || *end != '\0' || v > UINT32_MAX)
    return -1;
  *r = v;
  return 0;
}
