/* report.c: statistics snapshots printed as text, JSON and Prometheus metrics.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Printers for statistics snapshots.
 *
 * The stats table lists the per-method counters twice over: the
 * totals under the seed's plain names ("readahead") and each method's
 * copy ("ra_state").  For JSON and Prometheus the method copies are
 * grouped by method instead, which needs each copy's method and the
 * plain name it is a copy of; both follow from the field's offset
 * inside the method array, so nothing here lists names again.
 */

#include <config.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define METHOD_BASE offsetof (struct adaptra_stats, method)
#define METHOD_SIZE sizeof (struct adaptra_method_stats)

/* If f is a per-method counter, its method (ADAPTRA_METHOD_NONE for
 * the totals); otherwise -1.
 */
static int
field_method (const struct adaptra_stat_field *f)
{
  if (f->offset < METHOD_BASE
      || f->offset >= METHOD_BASE + ADAPTRA_METHOD_COUNT * METHOD_SIZE)
    return -1;
  return (f->offset - METHOD_BASE) / METHOD_SIZE;
}

/* The totals field that f is a per-method copy of. */
static const struct adaptra_stat_field *
field_total (const struct adaptra_stat_field *f)
{
  size_t within = (f->offset - METHOD_BASE) % METHOD_SIZE;
  size_t i;

  for (i = 0; i < adaptra_stat_field_count; i++)
    if (adaptra_stat_fields[i].offset == METHOD_BASE + within)
      return &adaptra_stat_fields[i];
  return f;
}

static double
ratio (uint64_t num, uint64_t den, double scale)
{
  return den ? scale * (double) num / (double) den : 0.;
}

struct adaptra_derived
adaptra_report_derive (const struct adaptra_stats *s)
{
  const struct adaptra_method_stats *all = &s->method[ADAPTRA_METHOD_NONE];
  uint64_t used = s->pages_inactive + s->pages_active + s->pages_in_flight;

  return (struct adaptra_derived) {
    .pool_size_bytes = (s->pages_free + used) * s->page_bytes,
    .pool_used_bytes = used * s->page_bytes,
    .readahead_hit_pct = ratio (all->pgreadahead_hit, all->pgreadahead, 100.),
    .readahead_per_random = ratio (all->readahead, s->readrandom, 1.),
    .amplification = ratio (s->backend_bytes, s->client_bytes, 1.),
    .evicted_unread_pct = ratio (s->evicted_unread, all->pgreadahead, 100.),
  };
}

int
adaptra_report_text (const struct adaptra_stats *s, struct adaptra_strbuf *out)
{
  struct adaptra_derived d = adaptra_report_derive (s);
  unsigned m;
  size_t i;

  for (i = 0; i < adaptra_stat_field_count; i++) {
    const struct adaptra_stat_field *f = &adaptra_stat_fields[i];

    if (field_method (f) <= 0)
      adaptra_strbuf_printf (out, "%-24s %" PRIu64 "\n",
                             f->name, adaptra_stat_value (s, f));
  }
  adaptra_strbuf_printf (out, "%-10s %10s %10s %10s %12s %12s %12s\n",
                         "method", "readahead", "return", "eof",
                         "pgreadahead", "pg_hit", "pg_eof");
  for (m = 0; m < ADAPTRA_METHOD_COUNT; m++) {
    const struct adaptra_method_stats *ms = &s->method[m];

    adaptra_strbuf_printf (out,
                           "%-10s %10" PRIu64 " %10" PRIu64 " %10" PRIu64
                           " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
                           m == ADAPTRA_METHOD_NONE
                           ? "all" : adaptra_method_name (m),
                           ms->readahead, ms->readahead_return,
                           ms->readahead_eof, ms->pgreadahead,
                           ms->pgreadahead_hit, ms->pgreadahead_eof);
  }
  adaptra_strbuf_printf (out,
                         "%-24s %.2f\n%-24s %.2f\n%-24s %.3f\n%-24s %.3f\n"
                         "%-24s %" PRIu64 "\n%-24s %" PRIu64 "\n",
                         "readahead_hit_pct", d.readahead_hit_pct,
                         "readahead_per_random", d.readahead_per_random,
                         "amplification", d.amplification,
                         "evicted_unread_pct", d.evicted_unread_pct,
                         "pool_size_bytes", d.pool_size_bytes,
                         "pool_used_bytes", d.pool_used_bytes);
  return out->overflow ? -1 : 0;
}

/* Append comma-separated "name":value pairs of the fields of kind
 * that belong to method, or with method < 0 of those that are not
 * per-method copies (the totals included).
 */
static void
json_members (const struct adaptra_stats *s, struct adaptra_strbuf *out,
              enum adaptra_stat_kind kind, int method)
{
  bool first = true;
  size_t i;

  for (i = 0; i < adaptra_stat_field_count; i++) {
    const struct adaptra_stat_field *f = &adaptra_stat_fields[i];
    int fm = field_method (f);

    if (f->kind != kind || (method < 0 ? fm > 0 : fm != method))
      continue;
    adaptra_strbuf_printf (out, "%s\"%s\":%" PRIu64, first ? "" : ",",
                           fm > 0 ? field_total (f)->name : f->name,
                           adaptra_stat_value (s, f));
    first = false;
  }
}

int
adaptra_report_json (const struct adaptra_stats *s, struct adaptra_strbuf *out)
{
  struct adaptra_derived d = adaptra_report_derive (s);
  unsigned m;

  adaptra_strbuf_printf (out, "{\"version\":%d,\"counters\":{",
                         ADAPTRA_REPORT_JSON_VERSION);
  json_members (s, out, ADAPTRA_STAT_COUNTER, -1);
  adaptra_strbuf_printf (out, "},\"methods\":{");
  for (m = 1; m < ADAPTRA_METHOD_COUNT; m++) {
    adaptra_strbuf_printf (out, "%s\"%s\":{", m > 1 ? "," : "",
                           adaptra_method_name (m));
    json_members (s, out, ADAPTRA_STAT_COUNTER, m);
    adaptra_strbuf_printf (out, "}");
  }
  adaptra_strbuf_printf (out, "},\"gauges\":{");
  json_members (s, out, ADAPTRA_STAT_GAUGE, -1);
  adaptra_strbuf_printf (out,
                         "},\"derived\":{\"readahead_hit_pct\":%.4f,"
                         "\"readahead_per_random\":%.4f,"
                         "\"amplification\":%.4f,"
                         "\"evicted_unread_pct\":%.4f,"
                         "\"pool_size_bytes\":%" PRIu64 ","
                         "\"pool_used_bytes\":%" PRIu64 "},"
                         "\"adaptra_version\":\"%s\"}\n",
                         d.readahead_hit_pct, d.readahead_per_random,
                         d.amplification, d.evicted_unread_pct,
                         d.pool_size_bytes, d.pool_used_bytes,
                         PACKAGE_VERSION);
  return out->overflow ? -1 : 0;
}

/* Fields whose Prometheus name is not adaptra_NAME[_total]: gauges in
 * units other than the base ones (seconds, bytes), converted by scale
 * (0: printed as the integer they are).
 */
static const struct {
  const char *field;
  const char *name;
  double scale;
} prometheus_renames[] = {
  { "backend_latency_ns", "backend_latency_seconds", 1e-9 },
  { "backend_bytes_per_sec", "backend_throughput_bytes_per_second", 0. },
};

/* f's Prometheus name (without "adaptra_" and "_total") and scale. */
static const char *
prometheus_name (const struct adaptra_stat_field *f, double *scale)
{
  size_t i;

  *scale = 0.;
  for (i = 0; i < sizeof prometheus_renames / sizeof prometheus_renames[0];
       i++)
    if (strcmp (f->name, prometheus_renames[i].field) == 0) {
      *scale = prometheus_renames[i].scale;
      return prometheus_renames[i].name;
    }
  return f->name;
}

int
adaptra_report_prometheus (const struct adaptra_stats *s,
                           struct adaptra_strbuf *out)
{
  struct adaptra_derived d = adaptra_report_derive (s);
  size_t i;

  adaptra_strbuf_printf (out,
                         "# HELP adaptra_build_info The adaptra version "
                         "serving these metrics\n"
                         "# TYPE adaptra_build_info gauge\n"
                         "adaptra_build_info{version=\"%s\"} 1\n"
                         "# HELP adaptra_pool_size_bytes Pool pages, all "
                         "of them, in bytes (adaptra-pool less transfer "
                         "buffers)\n"
                         "# TYPE adaptra_pool_size_bytes gauge\n"
                         "adaptra_pool_size_bytes %" PRIu64 "\n"
                         "# HELP adaptra_pool_used_bytes Pool pages "
                         "holding data or being read, in bytes\n"
                         "# TYPE adaptra_pool_used_bytes gauge\n"
                         "adaptra_pool_used_bytes %" PRIu64 "\n",
                         PACKAGE_VERSION, d.pool_size_bytes,
                         d.pool_used_bytes);

  for (i = 0; i < adaptra_stat_field_count; i++) {
    const struct adaptra_stat_field *f = &adaptra_stat_fields[i];
    bool counter = f->kind == ADAPTRA_STAT_COUNTER;
    const char *suffix = counter ? "_total" : "";
    int fm = field_method (f);
    double scale;
    const char *name = prometheus_name (f, &scale);
    unsigned m;

    if (fm > 0)
      continue;                 /* printed with its total, below */
    adaptra_strbuf_printf (out, "# HELP adaptra_%s%s %s\n"
                           "# TYPE adaptra_%s%s %s\n",
                           name, suffix, f->help,
                           name, suffix, counter ? "counter" : "gauge");
    if (fm < 0 && scale != 0.) {
      adaptra_strbuf_printf (out, "adaptra_%s%s %.9g\n", name, suffix,
                             (double) adaptra_stat_value (s, f) * scale);
      continue;
    }
    if (fm < 0) {
      adaptra_strbuf_printf (out, "adaptra_%s%s %" PRIu64 "\n",
                             name, suffix, adaptra_stat_value (s, f));
      continue;
    }
    /* A per-method family: one sample per method, no "all" sample,
     * which sum() gives.
     */
    for (m = 1; m < ADAPTRA_METHOD_COUNT; m++) {
      const struct adaptra_stat_field copy = {
        .offset = f->offset + m * METHOD_SIZE,
      };
      adaptra_strbuf_printf (out, "adaptra_%s%s{method=\"%s\"} %" PRIu64 "\n",
                             name, suffix, adaptra_method_name (m),
                             adaptra_stat_value (s, &copy));
    }
  }
  return out->overflow ? -1 : 0;
}

const char *
adaptra_report_export_name (const char *name,
                            char buf[ADAPTRA_REPORT_NAME_SIZE])
{
  size_t n = 0;

  if (name[0] == '\0')
    return "(default)";
  /* At most 4 bytes a byte, and the NUL. */
  for (; *name && n + 5 <= ADAPTRA_REPORT_NAME_SIZE; name++) {
    unsigned char c = (unsigned char) *name;

    switch (c) {
    case '\\': buf[n++] = '\\'; buf[n++] = '\\'; break;
    case '\n': buf[n++] = '\\'; buf[n++] = 'n'; break;
    case '\r': buf[n++] = '\\'; buf[n++] = 'r'; break;
    case '\t': buf[n++] = '\\'; buf[n++] = 't'; break;
    default:
      if (c < 0x20 || c == 0x7f)
        n += (size_t) snprintf (buf + n, 5, "\\x%02x", c);
      else
        buf[n++] = (char) c;
    }
  }
  buf[n] = '\0';
  return buf;
}

static const char *
share_name (const struct adaptra_volume_row *r)
{
  return r->flags & ADAPTRA_VOLUME_PER_CONNECTION ? "connection" : "export";
}

int
adaptra_report_volumes (const struct adaptra_volume_row *rows, size_t n,
                        struct adaptra_strbuf *out)
{
  char name[ADAPTRA_REPORT_NAME_SIZE];
  size_t i;

  adaptra_strbuf_printf (out,
                         "%-6s %-24s %-10s %14s %7s %8s %-9s %9s %10s %14s "
                         "%14s %12s\n",
                         "id", "export", "share", "size_bytes", "clients",
                         "contexts", "readahead", "read_us", "pages",
                         "client_bytes", "backend_bytes", "ra_hit_pages");
  for (i = 0; i < n; i++)
    adaptra_strbuf_printf (out,
                           "%-6d %-24s %-10s %14" PRIu64 " %7u %8u %-9s %9"
                           PRIu64 " %10" PRIu64 " %14" PRIu64 " %14" PRIu64
                           " %12" PRIu64 "\n",
                           rows[i].id,
                           adaptra_report_export_name (rows[i].name, name),
                           share_name (&rows[i]), rows[i].size,
                           rows[i].clients, rows[i].contexts,
                           rows[i].bypass ? "bypass" : "on",
                           rows[i].backend_read_ns / 1000, rows[i].pages,
                           rows[i].client_bytes, rows[i].backend_bytes,
                           rows[i].readahead_hits);
  return out->overflow ? -1 : 0;
}

/* The length of the well-formed UTF-8 sequence at s (RFC 3629 section
 * 4: no overlong form, no surrogate, nothing past U+10FFFF), 1 for an
 * ASCII byte, or 0 where s starts none: a stray byte, or a sequence
 * cut short, as the engine's 63-byte names (engine.h) cut a longer
 * name inside a character.  Reads no byte past a NUL.
 */
static size_t
utf8_length (const unsigned char *s)
{
  unsigned char lo = 0x80, hi = 0xbf;
  size_t n, i;

  if (s[0] < 0x80)
    return 1;
  if (s[0] >= 0xc2 && s[0] <= 0xdf)
    n = 2;
  else if (s[0] >= 0xe0 && s[0] <= 0xef) {
    n = 3;
    lo = s[0] == 0xe0 ? 0xa0 : 0x80;      /* not overlong */
    hi = s[0] == 0xed ? 0x9f : 0xbf;      /* no surrogate */
  }
  else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
    n = 4;
    lo = s[0] == 0xf0 ? 0x90 : 0x80;      /* not overlong */
    hi = s[0] == 0xf4 ? 0x8f : 0xbf;      /* at most U+10FFFF */
  }
  else
    return 0;
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return n;
}

/* s as a JSON string: quotes, backslashes and control bytes escaped
 * (an export name may hold any byte but NUL), and a byte that starts
 * no UTF-8 character as U+FFFD, the replacement character: JSON is
 * UTF-8 (RFC 8259 section 8.1), and a parser refuses the whole reply
 * for one such byte.
 */
static void
json_string (const char *s, struct adaptra_strbuf *out)
{
  size_t n;

  adaptra_strbuf_printf (out, "\"");
  for (; *s; s += n) {
    unsigned char c = (unsigned char) *s;

    n = utf8_length ((const unsigned char *) s);
    if (n == 0) {
      adaptra_strbuf_printf (out, "\\ufffd");
      n = 1;
    }
    else if (c == '"' || c == '\\')
      adaptra_strbuf_printf (out, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      adaptra_strbuf_printf (out, "\\u%04x", c);
    else
      adaptra_strbuf_printf (out, "%.*s", (int) n, s);
  }
  adaptra_strbuf_printf (out, "\"");
}

int
adaptra_report_volumes_json (const struct adaptra_volume_row *rows, size_t n,
                             struct adaptra_strbuf *out)
{
  size_t i;

  adaptra_strbuf_printf (out, "{\"version\":%d,\"exports\":[",
                         ADAPTRA_REPORT_JSON_VERSION);
  for (i = 0; i < n; i++) {
    const struct adaptra_volume_row *r = &rows[i];

    adaptra_strbuf_printf (out, "%s{\"id\":%d,\"export\":",
                           i ? "," : "", r->id);
    json_string (r->name, out);
    adaptra_strbuf_printf (out,
                           ",\"share\":\"%s\",\"size\":%" PRIu64
                           ",\"clients\":%u,\"contexts\":%u,"
                           "\"bypass\":%s,\"backend_read_ns\":%" PRIu64
                           ",\"pages\":%" PRIu64 ",\"client_bytes\":%" PRIu64
                           ",\"backend_bytes\":%" PRIu64
                           ",\"readahead_hits\":%" PRIu64 "}",
                           share_name (r), r->size, r->clients, r->contexts,
                           r->bypass ? "true" : "false", r->backend_read_ns,
                           r->pages, r->client_bytes, r->backend_bytes,
                           r->readahead_hits);
  }
  adaptra_strbuf_printf (out, "]}\n");
  return out->overflow ? -1 : 0;
}

int
adaptra_report_clients (const struct adaptra_client_row *rows, size_t n,
                        struct adaptra_strbuf *out)
{
  char name[ADAPTRA_REPORT_NAME_SIZE];
  size_t i;

  adaptra_strbuf_printf (out,
                         "%-6s %-24s %-16s %10s %14s %12s %14s %15s %12s\n",
                         "id", "client", "export", "requests", "bytes",
                         "ra_hit_pages", "backend_bytes", "streams_started",
                         "streams_live");
  for (i = 0; i < n; i++)
    adaptra_strbuf_printf (out,
                           "%-6d %-24s %-16s %10" PRIu64 " %14" PRIu64 " %12"
                           PRIu64 " %14" PRIu64 " %15" PRIu64 " %12" PRIu64
                           "\n",
                           rows[i].id, rows[i].name,
                           adaptra_report_export_name (rows[i].volume_name,
                                                       name),
                           rows[i].requests,
                           rows[i].bytes, rows[i].readahead_hits,
                           rows[i].backend_bytes, rows[i].streams_started,
                           rows[i].streams_active);
  return out->overflow ? -1 : 0;
}

/* A name as a Prometheus label value: backslash, double quote and
 * newline escaped, and a byte that starts no UTF-8 character as
 * U+FFFD: label values are UTF-8, and Prometheus drops the whole
 * scrape for one that is not ("invalid label value").
 */
static void
print_label_value (const char *v, struct adaptra_strbuf *out)
{
  size_t n;

  for (; *v; v += n) {
    n = utf8_length ((const unsigned char *) v);
    if (n == 0) {
      adaptra_strbuf_printf (out, "\xef\xbf\xbd");
      n = 1;
    }
    else if (*v == '\\' || *v == '"')
      adaptra_strbuf_printf (out, "\\%c", *v);
    else if (*v == '\n')
      adaptra_strbuf_printf (out, "\\n");
    else
      adaptra_strbuf_printf (out, "%.*s", (int) n, v);
  }
}

/* The clients with the most bytes read first. */
static int
by_bytes_desc (const void *a, const void *b)
{
  const struct adaptra_client_row *x = *(const struct adaptra_client_row *const *) a;
  const struct adaptra_client_row *y = *(const struct adaptra_client_row *const *) b;

  return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : x->id - y->id;
}

int
adaptra_report_clients_prometheus (const struct adaptra_client_row *rows,
                                   size_t n, struct adaptra_strbuf *out)
{
  /* Named adaptra_connection_*: the server-wide adaptra_client_*
   * counters (all clients together) are other families.
   */
  static const struct {
    const char *name;
    size_t offset;
    const char *help;
  } families[] = {
    { "read_requests", offsetof (struct adaptra_client_row, requests),
      "Read requests from the connection" },
    { "read_bytes", offsetof (struct adaptra_client_row, bytes),
      "Bytes read by the connection" },
    { "readahead_hit_pages",
      offsetof (struct adaptra_client_row, readahead_hits),
      "Pages the connection read that read-ahead had brought" },
    { "backend_read_bytes",
      offsetof (struct adaptra_client_row, backend_bytes),
      "Bytes the connection's own misses read from the backend" },
    { "streams_started",
      offsetof (struct adaptra_client_row, streams_started),
      "Streams the connection started" },
  };
  const struct adaptra_client_row **top;
  size_t shown = n < ADAPTRA_REPORT_MAX_CLIENT_SERIES
    ? n : ADAPTRA_REPORT_MAX_CLIENT_SERIES;
  size_t f, i;

  top = malloc ((n ? n : 1) * sizeof *top);
  if (top == NULL) {
    out->overflow = true;
    return -1;
  }
  for (i = 0; i < n; i++)
    top[i] = &rows[i];
  qsort (top, n, sizeof *top, by_bytes_desc);
  adaptra_strbuf_printf (out,
                         "# HELP adaptra_connections_unlisted Connections "
                         "left out of the adaptra_connection_* families "
                         "(only the %d that read the most are listed)\n"
                         "# TYPE adaptra_connections_unlisted gauge\n"
                         "adaptra_connections_unlisted %zu\n",
                         ADAPTRA_REPORT_MAX_CLIENT_SERIES, n - shown);
  for (f = 0; f < sizeof families / sizeof families[0]; f++) {
    adaptra_strbuf_printf (out, "# HELP adaptra_connection_%s_total %s\n"
                           "# TYPE adaptra_connection_%s_total counter\n",
                           families[f].name, families[f].help,
                           families[f].name);
    for (i = 0; i < shown; i++) {
      uint64_t v = *(const uint64_t *) ((const char *) top[i]
                                        + families[f].offset);

      adaptra_strbuf_printf (out, "adaptra_connection_%s_total{client=\"",
                             families[f].name);
      print_label_value (top[i]->name, out);
      adaptra_strbuf_printf (out, "\",id=\"%d\"} %" PRIu64 "\n",
                             top[i]->id, v);
    }
  }
  free (top);
  return out->overflow ? -1 : 0;
}

int
adaptra_report_volumes_prometheus (const struct adaptra_volume_row *rows,
                                   size_t n, struct adaptra_strbuf *out)
{
  static const struct {
    const char *name;
    const char *type;
    size_t offset;
    const char *help;
  } families[] = {
    { "pages", "gauge", offsetof (struct adaptra_volume_row, pages),
      "Pool pages holding the export's data" },
    { "client_bytes_total", "counter",
      offsetof (struct adaptra_volume_row, client_bytes),
      "Bytes clients read from the export" },
    { "backend_bytes_total", "counter",
      offsetof (struct adaptra_volume_row, backend_bytes),
      "Bytes read from the backend for the export" },
    { "readahead_hits_total", "counter",
      offsetof (struct adaptra_volume_row, readahead_hits),
      "Read-ahead pages of the export that clients read" },
  };
  size_t f, i, j;

#define SAME_SERIES(a, b) \
  (strcmp ((a)->name, (b)->name) == 0 && \
   ((a)->flags & ADAPTRA_VOLUME_PER_CONNECTION) == \
   ((b)->flags & ADAPTRA_VOLUME_PER_CONNECTION))
  for (f = 0; f < sizeof families / sizeof families[0]; f++) {
    adaptra_strbuf_printf (out, "# HELP adaptra_export_%s %s\n"
                           "# TYPE adaptra_export_%s %s\n",
                           families[f].name, families[f].help,
                           families[f].name, families[f].type);
    for (i = 0; i < n; i++) {
      uint64_t sum = 0;

      /* One series per (export, share): print at its first row. */
      for (j = 0; j < i && !SAME_SERIES (&rows[j], &rows[i]); j++)
        ;
      if (j < i)
        continue;
      for (j = i; j < n; j++)
        if (SAME_SERIES (&rows[j], &rows[i]))
          sum += *(const uint64_t *) ((const char *) &rows[j]
                                      + families[f].offset);
      adaptra_strbuf_printf (out, "adaptra_export_%s{export=\"",
                             families[f].name);
      print_label_value (rows[i].name, out);
      adaptra_strbuf_printf (out, "\",share=\"%s\"} %" PRIu64 "\n",
                             share_name (&rows[i]), sum);
    }
  }
#undef SAME_SERIES
  return out->overflow ? -1 : 0;
}
