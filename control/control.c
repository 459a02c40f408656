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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/control.h"
#include "report.h"

/* A valid request has at most three words (set NAME VALUE): one word
 * more is still split, so that a command given one argument too many
 * is answered with its usage; longer lines are refused whole.
 */
#define MAX_WORDS 4
/* A word's buffer, NUL included: a valid word (a command, a
 * parameter's name, a value) is tens of bytes at most, and a longer
 * one is refused as too long rather than cut.
 */
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

/* Append the error reply "error: MESSAGE"; a message quotes at most
 * one word of the request.
 */
static void reply_error (struct adaptra_strbuf *out, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

static void
reply_error (struct adaptra_strbuf *out, const char *fmt, ...)
{
  char msg[2 * MAX_WORD];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
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
  char name[ADAPTRA_REPORT_NAME_SIZE];
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
                         "%-6s %-16s %-24s %-8s %-3s %14s %14s %12s %15s "
                         "%8s\n",
                         "id", "export", "client", "method", "dir",
                         "next_offset", "window_offset", "window_bytes",
                         "lookahead_bytes", "idle_ms");
  for (i = 0; i < n; i++) {
    const struct adaptra_stream_row *r = &rows[i];

    adaptra_strbuf_printf (out,
                           "%-6" PRIu64 " %-16s %-24s %-8s %-3s %14" PRIu64
                           " %14" PRIu64 " %12" PRIu64 " %15" PRIu64
                           " %8" PRIu64 "\n",
                           r->id,
                           adaptra_report_export_name (r->volume_name, name),
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

/* The commands' handlers: req->words[0] is the command, the rest its
 * arguments, already matched against its form.
 */
typedef enum adaptra_control_next
  (*command_fn) (const struct adaptra_control_ops *ops,
                 const struct request *req, struct adaptra_strbuf *out);

static enum adaptra_control_next
cmd_stats (const struct adaptra_control_ops *ops, const struct request *req,
           struct adaptra_strbuf *out)
{
  struct adaptra_stats s;

  ops->snapshot (ops->opaque, &s);
  if (req->nwords == 2)
    adaptra_report_json (&s, out);
  else
    adaptra_report_text (&s, out);
  return ADAPTRA_CONTROL_CONTINUE;
}

static enum adaptra_control_next
cmd_metrics (const struct adaptra_control_ops *ops, const struct request *req,
             struct adaptra_strbuf *out)
{
  struct adaptra_stats s;

  ops->snapshot (ops->opaque, &s);
  adaptra_report_prometheus (&s, out);
  do_exports (ops, EXPORTS_PROMETHEUS, out);
  if (req->nwords == 2)
    do_clients (ops, true, out);
  return ADAPTRA_CONTROL_CONTINUE;
}

static enum adaptra_control_next
cmd_streams (const struct adaptra_control_ops *ops, const struct request *req,
             struct adaptra_strbuf *out)
{
  do_streams (ops, out);
  return ADAPTRA_CONTROL_CONTINUE;
}

static enum adaptra_control_next
cmd_clients (const struct adaptra_control_ops *ops, const struct request *req,
             struct adaptra_strbuf *out)
{
  do_clients (ops, false, out);
  return ADAPTRA_CONTROL_CONTINUE;
}

static enum adaptra_control_next
cmd_exports (const struct adaptra_control_ops *ops, const struct request *req,
             struct adaptra_strbuf *out)
{
  do_exports (ops, req->nwords == 2 ? EXPORTS_JSON : EXPORTS_TABLE, out);
  return ADAPTRA_CONTROL_CONTINUE;
}

static enum adaptra_control_next
cmd_get (const struct adaptra_control_ops *ops, const struct request *req,
         struct adaptra_strbuf *out)
{
  char why[ADAPTRA_WHY_LEN];

  if (ops->get (ops->opaque, req->nwords == 2 ? req->words[1] : NULL, out,
                why, sizeof why) == -1)
    reply_error (out, "%s", why);
  return ADAPTRA_CONTROL_CONTINUE;
}

static enum adaptra_control_next
cmd_set (const struct adaptra_control_ops *ops, const struct request *req,
         struct adaptra_strbuf *out)
{
  char why[ADAPTRA_WHY_LEN];

  if (ops->set (ops->opaque, req->words[1], req->words[2],
                why, sizeof why) == -1)
    reply_error (out, "%s", why);
  else
    adaptra_strbuf_printf (out, "ok\n");
  return ADAPTRA_CONTROL_CONTINUE;
}

static enum adaptra_control_next
cmd_reset (const struct adaptra_control_ops *ops, const struct request *req,
           struct adaptra_strbuf *out)
{
  ops->reset (ops->opaque);
  adaptra_strbuf_printf (out, "ok\n");
  return ADAPTRA_CONTROL_CONTINUE;
}

static enum adaptra_control_next
cmd_trace (const struct adaptra_control_ops *ops, const struct request *req,
           struct adaptra_strbuf *out)
{
  adaptra_strbuf_printf (out, "ok\n");
  return strcmp (req->words[1], "on") == 0
    ? ADAPTRA_CONTROL_TRACE_ON : ADAPTRA_CONTROL_TRACE_OFF;
}

static enum adaptra_control_next
cmd_help (const struct adaptra_control_ops *ops, const struct request *req,
          struct adaptra_strbuf *out);

static enum adaptra_control_next
cmd_quit (const struct adaptra_control_ops *ops, const struct request *req,
          struct adaptra_strbuf *out)
{
  adaptra_strbuf_printf (out, "bye\n");
  return ADAPTRA_CONTROL_QUIT;
}

/* One command of the protocol: the one table that dispatches, decides
 * privilege and writes "help"; a test checks the man page and the
 * README against "help".  args is the arguments' form, word by word:
 * a word in capitals stands for any word, a|b for either word, and
 * [...] makes the words within optional (only trailing words may be).
 */
struct command {
  const char *name;
  const char *args;
  bool privileged;              /* changes the server: set, reset, trace */
  command_fn run;               /* NULL: answered by the socket server
                                   (plugin/server.c), never here */
  const char *help;
};

static const struct command commands[] = {
  { "stats", "[json]", false, cmd_stats,
    "counters, gauges and ratios [as one line of JSON]" },
  { "metrics", "[clients]", false, cmd_metrics,
    "Prometheus text exposition [with per-client series]" },
  { "streams", "", false, cmd_streams, "live streams" },
  { "clients", "", false, cmd_clients, "connected clients" },
  { "exports", "[json]", false, cmd_exports,
    "exports (volumes) and their pool pages [as JSON]" },
  { "control", "", false, NULL, "this socket's clients and limits" },
  { "get", "[NAME]", false, cmd_get, "parameter values" },
  { "set", "NAME VALUE", true, cmd_set,
    "change a parameter that can be set at run time" },
  { "reset", "", true, cmd_reset, "zero the counters" },
  { "trace", "on|off", true, cmd_trace,
    "stream read-ahead decisions (trace: lines)" },
  { "help", "", false, cmd_help, "this list" },
  { "quit", "", false, cmd_quit, "close the connection" },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* The column of the help text. */
#define HELP_COLUMN 20

/* Bytes of a command's form, "set NAME VALUE", with room to spare. */
#define FORM_MAX 64

/* c's name and the form of its arguments, as "help" shows them. */
static void
command_form (const struct command *c, char form[FORM_MAX])
{
  snprintf (form, FORM_MAX, "%s%s%s", c->name, c->args[0] ? " " : "",
            c->args);
}

static enum adaptra_control_next
cmd_help (const struct adaptra_control_ops *ops, const struct request *req,
          struct adaptra_strbuf *out)
{
  char form[FORM_MAX];
  size_t i;

  adaptra_strbuf_printf (out, ADAPTRA_CONTROL_BANNER "\n");
  for (i = 0; i < NCOMMANDS; i++) {
    const struct command *c = &commands[i];

    command_form (c, form);
    adaptra_strbuf_printf (out, "%-*s%s%s\n", HELP_COLUMN, form, c->help,
                           c->privileged ? " (*)" : "");
  }
  adaptra_strbuf_printf (out, "(*) for root and the user nbdkit runs as "
                         "only\n");
  return ADAPTRA_CONTROL_CONTINUE;
}

/* Does word match the form's word spec (no brackets): a word in
 * capitals matches any word, else one of the |-separated words.
 */
static bool
word_matches (const char *spec, size_t len, const char *word)
{
  size_t i, n;

  for (i = 0; i < len && spec[i] >= 'A' && spec[i] <= 'Z'; i++)
    ;
  if (i == len)
    return true;
  while (len > 0) {
    n = 0;
    while (n < len && spec[n] != '|')
      n++;
    if (strlen (word) == n && strncmp (spec, word, n) == 0)
      return true;
    spec += n;
    len -= n;
    if (len > 0)
      spec++, len--;
  }
  return false;
}

/* Do req's arguments match c's form? */
static bool
args_match (const struct command *c, const struct request *req)
{
  const char *a = c->args;
  unsigned i = 1;
  bool optional = false;

  for (;;) {
    size_t n;

    while (*a == ' ')
      a++;
    if (*a == '[')
      optional = true, a++;
    if (*a == '\0')
      return i == req->nwords;
    n = strcspn (a, " ]");
    if (i == req->nwords)
      return optional;
    if (!word_matches (a, n, req->words[i]))
      return false;
    i++;
    a += n;
    if (*a == ']')
      a++;
  }
}

/* The command named by req's first word, or NULL. */
static const struct command *
find_command (const struct request *req)
{
  size_t i;

  for (i = 0; i < NCOMMANDS; i++)
    if (strcmp (commands[i].name, req->words[0]) == 0)
      return &commands[i];
  return NULL;
}

/* Execute req, appending the reply without its terminating empty line.
 * Returns what the connection does next.
 */
static enum adaptra_control_next
dispatch (const struct adaptra_control_ops *ops, const struct request *req,
          struct adaptra_strbuf *out)
{
  const struct command *c = find_command (req);
  char form[FORM_MAX];

  if (c == NULL) {
    reply_error (out, "unknown command '%s' (try 'help')", req->words[0]);
    return ADAPTRA_CONTROL_CONTINUE;
  }
  if (!args_match (c, req)) {
    command_form (c, form);
    reply_error (out, "wrong arguments to '%s' (usage: %s)", c->name, form);
    return ADAPTRA_CONTROL_CONTINUE;
  }
  if (c->run == NULL) {
    reply_error (out, "this command is answered by the socket server");
    return ADAPTRA_CONTROL_CONTINUE;
  }
  return c->run (ops, req, out);
}

bool
adaptra_control_needs_privilege (const char *line, size_t len)
{
  struct request req;
  const struct command *c;

  if (split_words (line, len, &req) != NULL || req.nwords == 0)
    return false;               /* refused anyway */
  c = find_command (&req);
  return c != NULL && c->privileged;
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
    reply_error (out, "%s", refused);
  else if (req.nwords == 0)
    reply_error (out, "empty request (try 'help')");
  else
    next = dispatch (ops, &req, out);
  adaptra_strbuf_printf (out, "\n");
  return next;
}
