/* control-fake.c: a fake engine behind the control protocol.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <stdio.h>
#include <string.h>

#include "control-fake.h"

/* Counters that the stats, json and metrics replies print, ratios
 * among them (misses of requests, backend bytes of client bytes).
 */
static void
fake_snapshot (void *opaque, struct adaptra_stats *s)
{
  struct control_fake *f = opaque;

  memset (s, 0, sizeof *s);
  s->cache_miss = 42;
  s->readrandom = 400;
  s->client_requests = 300;
  s->client_bytes = 1 << 20;
  s->backend_bytes = 3 << 20;
  f->snapshots++;
}

static void
fake_reset (void *opaque)
{
  ((struct control_fake *) opaque)->resets++;
}

/* Copy the n rows of size bytes at table to rows, at most max of
 * them: how many.  Each row function below copies its table.
 */
static size_t
copy_rows (void *rows, size_t max, const void *table, size_t n,
           size_t size)
{
  n = n < max ? n : max;
  memcpy (rows, table, n * size);
  return n;
}

#define COPY_TABLE(rows, max, table) \
  copy_rows (rows, max, table, sizeof table / sizeof table[0], \
             sizeof table[0])

static size_t
fake_streams (void *opaque, struct adaptra_stream_row *rows, size_t max)
{
  static const struct adaptra_stream_row table[] = {
    { .id = 7, .client = 1, .volume = 3, .volume_name = "vm1.img",
      .method = ADAPTRA_METHOD_STATE,
      .position = 1048576, .window_offset = 1048576, .window_bytes = 262144,
      .lookahead_bytes = 32768, .idle_ns = 5000000 },
    { .id = 8, .client = 2, .volume_name = "x\n\n\ty\x1b\\",
      .method = ADAPTRA_METHOD_CONTEXT,
      .backward = true, .position = 2 << 20, .window_bytes = 65536 },
  };

  (void) opaque;
  return COPY_TABLE (rows, max, table);
}

static size_t
fake_clients (void *opaque, struct adaptra_client_row *rows, size_t max)
{
  static const struct adaptra_client_row table[] = {
    { .id = 1, .name = "unix:pid=99", .volume_name = "vm1.img",
      .requests = 12, .bytes = 49152 },
    { .id = 2, .name = "odd\"name", .requests = 3 },
  };

  (void) opaque;
  return COPY_TABLE (rows, max, table);
}

/* Two per-connection volumes of one export, and a name that needs
 * escaping.
 */
static size_t
fake_volumes (void *opaque, struct adaptra_volume_row *rows, size_t max)
{
  static const struct adaptra_volume_row table[] = {
    { .id = 0, .name = "", .size = 1048576, .clients = 2, .pages = 17 },
    { .id = 3, .name = "vm1.img", .flags = ADAPTRA_VOLUME_PER_CONNECTION,
      .size = 4194304, .clients = 1, .contexts = 4, .pages = 99,
      .client_bytes = 8192, .bypass = true, .backend_read_ns = 12345 },
    { .id = 4, .name = "vm1.img", .flags = ADAPTRA_VOLUME_PER_CONNECTION,
      .size = 4194304, .clients = 1, .pages = 1 },
    { .id = 5, .name = "q\"\\\n", .size = 512 },
  };

  (void) opaque;
  return COPY_TABLE (rows, max, table);
}

/* One parameter, ratio: name NULL asks for all of them. */
static int
fake_get (void *opaque, const char *name, struct adaptra_strbuf *out,
          char *why, size_t len)
{
  struct control_fake *f = opaque;

  if (name != NULL && strcmp (name, "ratio") != 0) {
    snprintf (why, len, "unknown parameter '%s'", name);
    return -1;
  }
  adaptra_strbuf_printf (out, "ratio %u\n", f->ratio);
  return 0;
}

struct adaptra_control_ops
control_fake_ops (struct control_fake *f,
                  int (*set) (void *opaque, const char *name,
                              const char *value, char *why, size_t len))
{
  return (struct adaptra_control_ops) {
    .opaque = f,
    .snapshot = fake_snapshot,
    .reset = fake_reset,
    .streams = fake_streams,
    .clients = fake_clients,
    .volumes = fake_volumes,
    .get = fake_get,
    .set = set,
  };
}
