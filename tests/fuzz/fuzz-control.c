/* fuzz-control.c: libFuzzer harness for the control protocol.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* libFuzzer harness for the control protocol (control/control.c): every
 * input is one request line, executed against fake engine operations
 * whose "set" goes through the real parameter parser and checker.
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

static struct adaptra_config config;

static void
fake_snapshot (void *opaque, struct adaptra_stats *s)
{
  (void) opaque;
  memset (s, 0, sizeof *s);
  s->cache_miss = 12;
  s->readrandom = 400;
  s->client_requests = 300;
  s->client_bytes = 1 << 20;
  s->backend_bytes = 3 << 20;
}

/* Calls of the operations that change the server, for the check that
 * only lines adaptra_control_needs_privilege flags make them.
 */
static unsigned changes;

static void
fake_reset (void *opaque)
{
  (void) opaque;
  changes++;
}

static size_t
fake_streams (void *opaque, struct adaptra_stream_row *rows, size_t max)
{
  size_t i;

  (void) opaque;
  for (i = 0; i < 3 && i < max; i++)
    rows[i] = (struct adaptra_stream_row) {
      .id = i, .client = i % 2, .method = i, .backward = i == 2,
      .position = i << 20, .window_bytes = 65536, .idle_ns = i * 1000000,
    };
  return i;
}

static size_t
fake_clients (void *opaque, struct adaptra_client_row *rows, size_t max)
{
  size_t i;

  (void) opaque;
  for (i = 0; i < 2 && i < max; i++) {
    rows[i] = (struct adaptra_client_row) { .id = i, .requests = 10 * i };
    snprintf (rows[i].name, sizeof rows[i].name, "unix:pid=%zu", 100 + i);
  }
  return i;
}

static size_t
fake_volumes (void *opaque, struct adaptra_volume_row *rows, size_t max)
{
  size_t i;

  (void) opaque;
  for (i = 0; i < 3 && i < max; i++) {
    rows[i] = (struct adaptra_volume_row) {
      .id = i, .flags = i, .size = 1 << 20, .pages = i,
    };
    snprintf (rows[i].name, sizeof rows[i].name, "vm%zu.img", i);
  }
  return i;
}

static int
fake_get (void *opaque, const char *name, struct adaptra_strbuf *out,
          char *why, size_t len)
{
  (void) opaque;
  if (name != NULL && strcmp (name, "ratio") != 0) {
    snprintf (why, len, "unknown parameter '%s'", name);
    return -1;
  }
  adaptra_strbuf_printf (out, "ratio %u\n", config.ratio);
  return 0;
}

/* As the filter does: parse with the real parser, keep it if valid. */
static int
fake_set (void *opaque, const char *name, const char *value,
          char *why, size_t len)
{
  struct adaptra_config next = config;
  char key[300];

  (void) opaque;
  changes++;
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
  return 0;
}

static const struct adaptra_control_ops ops = {
  .snapshot = fake_snapshot,
  .reset = fake_reset,
  .streams = fake_streams,
  .clients = fake_clients,
  .volumes = fake_volumes,
  .get = fake_get,
  .set = fake_set,
};

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct adaptra_strbuf out = ADAPTRA_STRBUF_INIT (1024 * 1024);
  enum adaptra_control_next next;

  adaptra_config_defaults (&config);
  changes = 0;
  next = adaptra_control_execute (&ops, (const char *) data, size, &out);

  /* The socket server refuses the lines that needs_privilege flags to
   * unprivileged clients: every line that changes anything must be one.
   */
  if ((changes > 0 || next == ADAPTRA_CONTROL_TRACE_ON
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
