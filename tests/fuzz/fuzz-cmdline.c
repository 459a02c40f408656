/* fuzz-cmdline.c: libFuzzer harness for the reading of nbdkit's
 * command line and of numeric user and group ids.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* libFuzzer harness for plugin/runas.c: runas_options, which reads
 * nbdkit's command line (an input is its bytes, NUL-separated, as
 * /proc/self/cmdline gives them) with getopt_long, and runas_parse_id
 * on each of its arguments, which reads the ids of -u, -g and
 * adaptra-stats-owner=.
 *
 * Beyond "no crash, no sanitizer report", the contracts are checked:
 * a user or group found is one of the arguments or the rest of one
 * (inside the input, NUL-terminated there); an id accepted is decimal
 * digits whose value prints back as the argument less its leading
 * zeros, and below (uid_t) -1.
 */

#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "../../plugin/runas.h"
#include "expect.h"

static void
check_found (const char *found, const char *args, size_t n)
{
  if (found == NULL)
    return;
  /* "--group=" at the line's end is the empty string at args[n]. */
  expect (found >= args && found <= args + n, "a value outside the line");
  expect (found + strlen (found) <= args + n, "a value past the line");
}

static void
check_id (const char *s, int group)
{
  char back[32];
  unsigned long id;
  const char *digits = s;

  if (!runas_parse_id (s, group, &id))
    return;
  expect (strspn (s, "0123456789") == strlen (s), "an id not in digits");
  expect (id < (unsigned long) (uid_t) -1, "an id of (uid_t) -1 or more");
  while (digits[0] == '0' && digits[1] != '\0')
    digits++;
  snprintf (back, sizeof back, "%lu", id);
  expect (strcmp (back, digits) == 0, "an id that is not its digits");
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *user, *group, *p;
  char *args;

  /* The line and the NUL that runas_check_dir puts after it. */
  args = malloc (size + 1);
  if (args == NULL)
    return 0;
  memcpy (args, data, size);
  args[size] = '\0';
  if (runas_options (args, size, &user, &group) == 0) {
    check_found (user, args, size);
    check_found (group, args, size);
  }
  for (p = args; p < args + size; p += strlen (p) + 1) {
    check_id (p, 0);
    check_id (p, 1);
  }
  free (args);
  return 0;
}
