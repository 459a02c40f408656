/* What the command-line tools share: one line on stderr, then exit.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

void
cli_die (const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "%s: ", cli_name);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  exit (EXIT_FAILURE);
}
