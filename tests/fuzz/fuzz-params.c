/* fuzz-params.c: libFuzzer harness for the parameter parser.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* libFuzzer harness for the parameter parser (plugin/params.c) and
 * adaptra_config_check.  The input is up to 16 "key=value" lines, given
 * to params_parse in order as nbdkit would, then checked.
 *
 * The checks: a refusal is one line that names an adaptra- parameter;
 * a configuration that passes holds every invariant the engine relies
 * on (the limits in adaptra/config.h).
 */

#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/config.h"
#include "../../core/range.h"
#include "../../core/stream.h"
#include "../../plugin/params.h"

static void
expect (int ok, const char *what, const char *why)
{
  if (!ok) {
    fprintf (stderr, "%s (message: \"%s\")\n", what, why);
    abort ();
  }
}

static void
expect_one_line_naming (const char *why)
{
  expect (why[0] != '\0', "refused without a message", why);
  expect (strchr (why, '\n') == NULL, "message of more than one line", why);
  expect (strstr (why, "adaptra-") != NULL, "message names no parameter",
          why);
}

static void
expect_valid (const struct adaptra_config *c)
{
  uint64_t page = c->page_size;

  expect (adaptra_log2_exact (page) >= 0, "page not a power of 2", "");
  expect (page >= ADAPTRA_PAGE_MIN && page <= ADAPTRA_PAGE_MAX,
          "page out of range", "");
  expect (c->pool_bytes / page >= ADAPTRA_POOL_MIN_PAGES, "pool too small",
          "");
  expect (c->min_bytes >= page, "min below a page", "");
  expect (c->max_bytes == 0 || c->max_bytes >= c->min_bytes, "max < min", "");
  expect (c->max_bytes <= c->pool_bytes / ADAPTRA_POOL_WINDOWS,
          "max over a quarter of the pool", "");
  expect (c->ratio >= 1 && c->ratio <= 100, "ratio out of range", "");
  expect (c->streams >= 1 && c->streams <= ADAPTRA_STREAMS_MAX,
          "streams out of range", "");
  expect (c->workers <= ADAPTRA_WORKERS_MAX, "workers out of range", "");
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct adaptra_config cfg;
  char *text = malloc (size + 1);
  char *line, *next;
  char why[256];
  int n = 0;

  if (text == NULL)
    return 0;
  memcpy (text, data, size);
  text[size] = '\0';
  adaptra_config_defaults (&cfg);

  for (line = text; line != NULL && n < 16; line = next, n++) {
    char *eq;

    next = strchr (line, '\n');
    if (next != NULL)
      *next++ = '\0';
    eq = strchr (line, '=');
    if (eq == NULL)
      continue;
    *eq = '\0';
    why[0] = '\0';
    if (params_parse (&cfg, line, eq + 1, why, sizeof why) == -1) {
      expect_one_line_naming (why);
      goto out;
    }
  }
  if (adaptra_config_check (&cfg, why, sizeof why) != 0) {
    char quoted[512];

    /* The refusal as printed, with the values as typed: still one
     * line naming a parameter, within its buffer.
     */
    params_quote (why, quoted, sizeof quoted);
    expect_one_line_naming (quoted);
  }
  else
    expect_valid (&cfg);
 out:
  params_free ();
  free (text);
  return 0;
}
