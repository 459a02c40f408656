/* control.c: the control protocol: parsing commands and answering them.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The control protocol: splitting a request line into words and
 * dispatching it.  Anything a socket client sends ends up here, so
 * the input is treated as hostile: any byte outside printable ASCII
 * and tab is refused before the line is split, and words are bounded.
 */

#include <config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/control.h"
#include "report.h"

#define MAX_WORDS 4
#define MAX_WORD 256

struct request {
  unsigned nwords;
  char words[MAX_WORDS][MAX_WORD];
};

/* Split line into at most MAX_WORDS words of less than MAX_WORD bytes
 * each.  Returns NULL, or the reason the line is refused.
 */
static const char *
split_words (const char *line, size_t len, struct request *req)
{
  size_t i = 0;

  req->nwords = 0;
  for (i = 0; i < len; i++) {
    unsigned char c = line[i];
    if (c != '\t' && (c < 0x20 || c > 0x7e))
      return "request contains binary data";
  }
  i = 0;
  for (;;) {
    size_t start, n;

    while (i < len && (line[i] == ' ' || line[i] == '\t'))
      i++;
    if (i == len)
      return NULL;
    if (req->nwords == MAX_WORDS)
      return "too many words in request";
    start = i;
    while (i < len && line[i] != ' ' && line[i] != '\t')
      i++;
    n = i - start;
    if (n >= MAX_WORD)
      return "word too long in request";
    memcpy (req->words[req->nwords], line + start, n);
    req->words[req->nwords][n] = '\0';
    req->nwords++;
  }
}

static void
reply_error (struct adaptra_strbuf *out, const char *msg)
{
  adaptra_strbuf_printf (out, "error: %s\n", msg);
}

/* The connected clients, in a calloc'd array (*n of them), or NULL
 * after an error reply.
 */
static struct adaptra_client_row *
get_clients (const struct adaptra_control_ops *ops, size_t *n,
             struct adaptra_strbuf *out)
{
  struct adaptra_client_row *rows;

  rows = calloc (ADAPTRA_CONTROL_MAX_CLIENTS, sizeof *rows);
  if (rows == NULL) {
    reply_error (out, "out of memory");
    return NULL;
  }
  *n = ops->clients (ops->opaque, rows, ADAPTRA_CONTROL_MAX_CLIENTS);
  return rows;
}

static const char *
client_name (const struct adaptra_client_row *clients, size_t nclients,
             int id)
{
  size_t i;

  for (i = 0; i < nclients; i++)
    if (clients[i].id == id)
      return clients[i].name;
  return "-";                   /* the client that started it has gone */
}

static void
do_streams (const struct adaptra_control_ops *ops, struct adaptra_strbuf *out)
{
  struct adaptra_stream_row *rows;
  struct adaptra_client_row *clients;
  size_t n, nclients, i;

  if ((clients = get_clients (ops, &nclients, out)) == NULL)
    return;
  rows = calloc (ADAPTRA_CONTROL_MAX_STREAMS, sizeof *rows);
  if (rows == NULL) {
    free (clients);
    reply_error (out, "out of memory");
    return;
  }
  n = ops->streams (ops->opaque, rows, ADAPTRA_CONTROL_MAX_STREAMS);
  adaptra_strbuf_printf (out,
                         "%-6s %-16s %-24s %-8s %-3s %14s %14s %10s %10s %8s\n",
                         "id", "export", "client", "method", "dir",
                         "position", "window_at", "window", "lookahead",
                         "idle_ms");
  for (i = 0; i < n; i++) {
    const struct adaptra_stream_row *r = &rows[i];

    adaptra_strbuf_printf (out,
                           "%-6" PRIu64 " %-16s %-24s %-8s %-3s %14" PRIu64
                           " %14" PRIu64 " %10" PRIu64 " %10" PRIu64
                           " %8" PRIu64 "\n",
                           r->id, adaptra_report_export_name (r->volume_name),
                           client_name (clients, nclients, r->client),
                           adaptra_method_name (r->method),
                           r->backward ? "bwd" : "fwd", r->position,
                           r->window_offset, r->window_bytes,
                           r->lookahead_bytes, r->idle_ns / 1000000);
  }
  free (rows);
  free (clients);
}

/* "clients" as a table, or "metrics"' per-client families. */
static void
do_clients (const struct adaptra_control_ops *ops, bool prometheus,
            struct adaptra_strbuf *out)
{
  struct adaptra_client_row *clients;
  size_t n;

  if ((clients = get_clients (ops, &n, out)) == NULL)
    return;
  if (prometheus)
    adaptra_report_clients_prometheus (clients, n, out);
  else
    adaptra_report_clients (clients, n, out);
  free (clients);
}

enum exports_format { EXPORTS_TABLE, EXPORTS_JSON, EXPORTS_PROMETHEUS };

static void
do_exports (const struct adaptra_control_ops *ops, enum exports_format format,
            struct adaptra_strbuf *out)
{
  struct adaptra_volume_row *rows;
  size_t n;

  rows = calloc (ADAPTRA_CONTROL_MAX_VOLUMES, sizeof *rows);
  if (rows == NULL) {
    reply_error (out, "out of memory");
    return;
  }
  n = ops->volumes (ops->opaque, rows, ADAPTRA_CONTROL_MAX_VOLUMES);
  switch (format) {
  case EXPORTS_TABLE: adaptra_report_volumes (rows, n, out); break;
  case EXPORTS_JSON: adaptra_report_volumes_json (rows, n, out); break;
  case EXPORTS_PROMETHEUS:
    adaptra_report_volumes_prometheus (rows, n, out);
    break;
  }
  free (rows);
}

static void
do_help (struct adaptra_strbuf *out)
{
  adaptra_strbuf_printf (out,
    ADAPTRA_CONTROL_BANNER "\n"
    "stats               counters, gauges and ratios\n"
    "stats json          the same as JSON\n"
    "metrics [clients]   Prometheus text exposition [with per-client series]\n"
    "streams             live streams\n"
    "clients             connected clients\n"
    "exports [json]      exports (volumes) and their pool pages\n"
    "control             this socket's clients and limits\n"
    "get [NAME]          parameter values\n"
    "set NAME VALUE      change ratio, min, max, mode or bypass (*)\n"
    "reset               zero the counters (*)\n"
    "trace on|off        stream read-ahead decisions (trace: lines) (*)\n"
    "help                this list\n"
    "quit                close the connection\n"
    "(*) for root and the user nbdkit runs as only\n");
}

/* Execute req, appending the reply without its terminating empty line.
 * Returns what the connection does next.
 */
static enum adaptra_control_next
dispatch (const struct adaptra_control_ops *ops, const struct request *req,
          struct adaptra_strbuf *out)
{
  const char *cmd = req->words[0];
  unsigned args = req->nwords - 1;
  struct adaptra_stats s;
  char why[256];

  if (strcmp (cmd, "stats") == 0 && args == 0) {
    ops->snapshot (ops->opaque, &s);
    adaptra_report_text (&s, out);
  }
  else if (strcmp (cmd, "stats") == 0 && args == 1
           && strcmp (req->words[1], "json") == 0) {
    ops->snapshot (ops->opaque, &s);
    adaptra_report_json (&s, out);
  }
  else if (strcmp (cmd, "metrics") == 0
           && (args == 0
               || (args == 1 && strcmp (req->words[1], "clients") == 0))) {
    ops->snapshot (ops->opaque, &s);
    adaptra_report_prometheus (&s, out);
    do_exports (ops, EXPORTS_PROMETHEUS, out);
    if (args == 1)
      do_clients (ops, true, out);
  }
  else if (strcmp (cmd, "streams") == 0 && args == 0)
    do_streams (ops, out);
  else if (strcmp (cmd, "clients") == 0 && args == 0)
    do_clients (ops, false, out);
  else if (strcmp (cmd, "exports") == 0 && args == 0)
    do_exports (ops, EXPORTS_TABLE, out);
  else if (strcmp (cmd, "exports") == 0 && args == 1
           && strcmp (req->words[1], "json") == 0)
    do_exports (ops, EXPORTS_JSON, out);
  else if (strcmp (cmd, "get") == 0 && args <= 1) {
    if (ops->get (ops->opaque, args ? req->words[1] : NULL, out,
                  why, sizeof why) == -1)
      reply_error (out, why);
  }
  else if (strcmp (cmd, "set") == 0 && args == 2) {
    if (ops->set (ops->opaque, req->words[1], req->words[2],
                  why, sizeof why) == -1)
      reply_error (out, why);
    else
      adaptra_strbuf_printf (out, "ok\n");
  }
  else if (strcmp (cmd, "reset") == 0 && args == 0) {
    ops->reset (ops->opaque);
    adaptra_strbuf_printf (out, "ok\n");
  }
  else if (strcmp (cmd, "trace") == 0 && args == 1
           && (strcmp (req->words[1], "on") == 0
               || strcmp (req->words[1], "off") == 0)) {
    adaptra_strbuf_printf (out, "ok\n");
    return strcmp (req->words[1], "on") == 0
      ? ADAPTRA_CONTROL_TRACE_ON : ADAPTRA_CONTROL_TRACE_OFF;
  }
  else if (strcmp (cmd, "help") == 0 && args == 0)
    do_help (out);
  else if (strcmp (cmd, "quit") == 0 && args == 0) {
    adaptra_strbuf_printf (out, "bye\n");
    return ADAPTRA_CONTROL_QUIT;
  }
  else
    reply_error (out, "unknown command or wrong arguments (try 'help')");
  return ADAPTRA_CONTROL_CONTINUE;
}

bool
adaptra_control_needs_privilege (const char *line, size_t len)
{
  struct request req;

  if (split_words (line, len, &req) != NULL || req.nwords == 0)
    return false;               /* refused anyway */
  return strcmp (req.words[0], "set") == 0
    || strcmp (req.words[0], "reset") == 0
    || strcmp (req.words[0], "trace") == 0;
}

enum adaptra_control_next
adaptra_control_execute (const struct adaptra_control_ops *ops,
                         const char *line, size_t len,
                         struct adaptra_strbuf *out)
{
  struct request req;
  const char *refused = split_words (line, len, &req);
  enum adaptra_control_next next = ADAPTRA_CONTROL_CONTINUE;

  if (refused != NULL)
    reply_error (out, refused);
  else if (req.nwords == 0)
    reply_error (out, "empty request (try 'help')");
  else
    next = dispatch (ops, &req, out);
  adaptra_strbuf_printf (out, "\n");
  return next;
}
