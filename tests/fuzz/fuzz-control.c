/* fuzz-control.c: libFuzzer harness for the control protocol.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* libFuzzer harness for the control protocol (control/control.c): every
 * input is one request line, executed against the fake engine of the
 * unit tests (tests/unit/control-fake.h) whose "set" goes through the
 * real parameter parser and checker.
 *
 * Beyond "no crash, no sanitizer report", the contract of
 * adaptra_control_execute is checked: the reply always ends with the
 * empty line that terminates it, and a reply either succeeds or is a
 * single "error: " line; and every line that changes the server (set,
 * reset, trace) is one that adaptra_control_needs_privilege flags, so
 * the socket server's permission check cannot be bypassed.
 */

#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/config.h"
#include "adaptra/control.h"
#include "../../plugin/params.h"
#include "../unit/control-fake.h"

static struct adaptra_config config;

/* Calls of the operations that change the server, for the check that
 * only lines adaptra_control_needs_privilege flags make them: sets
 * here, resets in the fake engine's count.
 */
static struct control_fake engine;
static unsigned sets;

/* As the filter does: parse with the real parser, keep it if valid. */
static int
fake_set (void *opaque, const char *name, const char *value,
          char *why, size_t len)
{
  struct adaptra_config next = config;
  char key[300];

  (void) opaque;
  sets++;
  snprintf (key, sizeof key, "adaptra-%s", name);
  switch (params_parse (&next, key, value, why, len)) {
  case 0:
    snprintf (why, len, "unknown parameter '%s'", name);
    return -1;
  case -1:
    return -1;
  }
  if (adaptra_config_check (&next, why, len) != 0)
    return -1;
  config = next;
  engine.ratio = config.ratio;
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1024 * 1024);
  const struct adaptra_control_ops ops =
    control_fake_ops (&engine, fake_set);
  enum adaptra_control_next next;

  adaptra_config_defaults (&config);
  engine.ratio = config.ratio;
  engine.resets = sets = 0;
  next = adaptra_control_execute (&ops, (const char *) data, size, &out);

  /* The socket server refuses the lines that needs_privilege flags to
   * unprivileged clients: every line that changes anything must be one.
   */
  if ((engine.resets + sets > 0 || next == ADAPTRA_CONTROL_TRACE_ON
       || next == ADAPTRA_CONTROL_TRACE_OFF)
      && !adaptra_control_needs_privilege ((const char *) data, size)) {
    fprintf (stderr, "a change that needs no privilege\n");
    abort ();
  }

  if (out.len < 2 || out.data[out.len - 1] != '\n'
      || out.data[out.len - 2] != '\n') {
    fprintf (stderr, "reply does not end with an empty line\n");
    abort ();
  }
  if (strncmp (out.data, "error: ", 7) == 0
      && strchr (out.data, '\n') != out.data + out.len - 2) {
    fprintf (stderr, "error reply of more than one line\n");
    abort ();
  }
  if ((next == ADAPTRA_CONTROL_TRACE_ON || next == ADAPTRA_CONTROL_TRACE_OFF)
      && strcmp (out.data, "ok\n\n") != 0) {
    fprintf (stderr, "a trace switch that did not answer ok\n");
    abort ();
  }
  adaptra_strbuf_free (&out);
  return 0;
}
