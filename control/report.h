/* report.h: the printers of statistics snapshots.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Statistics as text: for people, as JSON, and as Prometheus metrics.
 *
 * All three walk adaptra_stat_fields, so a counter added to the stats
 * table appears everywhere without touching this module.
 */

#ifndef ADAPTRA_REPORT_H
#define ADAPTRA_REPORT_H

#include "adaptra/engine.h"
#include "adaptra/stats.h"
#include "adaptra/strbuf.h"

/* Version of the JSON layout; bumped when a field changes meaning or
 * disappears (new fields may appear without a bump).
 */
#define ADAPTRA_REPORT_JSON_VERSION 1

/* Ratios derived from a snapshot, as the seed quoted them. */
struct adaptra_derived {
  double readahead_hit_pct;     /* pgreadahead_hit / pgreadahead, % */
  double readahead_per_random;  /* readahead : readrandom */
  double amplification;         /* backend bytes / client bytes */
  double evicted_unread_pct;    /* evicted_unread / pgreadahead, % */
  uint64_t pool_size_bytes;     /* pool pages, all of them, in bytes */
  uint64_t pool_used_bytes;     /* pool pages holding data or being read */
};

/* The ratios of s; a ratio with a zero denominator is 0. */
extern struct adaptra_derived adaptra_report_derive (
  const struct adaptra_stats *s);

/* Append s for people: one "name value" line per counter and gauge,
 * a per-method table, then the derived ratios.  Returns 0, or -1 when
 * out hit its limit.
 */
extern int adaptra_report_text (const struct adaptra_stats *s,
                                struct adaptra_strbuf *out);

/* Append s as one line of JSON:
 * {"version":1,"counters":{...},"methods":{"initial":{...},...},
 *  "gauges":{...},"derived":{...}}
 * Returns 0, or -1 when out hit its limit.
 */
extern int adaptra_report_json (const struct adaptra_stats *s,
                                struct adaptra_strbuf *out);

/* Append s in the Prometheus text exposition format (version 0.0.4):
 * adaptra_NAME_total counters, adaptra_NAME gauges, HELP and TYPE lines,
 * per-method counters as one family with a method label.  Gauges are in
 * base units: backend_latency_ns is adaptra_backend_latency_seconds,
 * backend_bytes_per_sec adaptra_backend_throughput_bytes_per_second.
 * The output passes "promtool check metrics".  Returns 0, or -1 when
 * out hit its limit.
 */
extern int adaptra_report_prometheus (const struct adaptra_stats *s,
                                      struct adaptra_strbuf *out);

/* Room for adaptra_report_export_name's text: a row's export name
 * (engine.h: at most 63 bytes) with every byte escaped to 4 ("\x1b").
 */
#define ADAPTRA_REPORT_NAME_SIZE \
  (4 * sizeof ((struct adaptra_volume_row *) 0)->name)

/* An export name for a table column, in buf: "(default)" for "", and
 * on one line.  An NBD client chooses the name, any bytes but NUL, and
 * a table prints it raw: a newline in it would end a line of the
 * table, two the reply itself (a reply ends at its empty line), and
 * what follows would read as the reply to the control client's next
 * command.  So a backslash and the bytes below 0x20 and 0x7f are C
 * escapes ("\\", "\n", "\r", "\t", "\x1b").  Returns buf.
 */
extern const char *adaptra_report_export_name (
  const char *name, char buf[ADAPTRA_REPORT_NAME_SIZE]);

/* Append the n volumes of rows as a table, one line each: the export,
 * whose bytes (export: every connection of it; connection: one
 * connection's own), its size and pool pages.
 */
extern int adaptra_report_volumes (const struct adaptra_volume_row *rows,
                                   size_t n, struct adaptra_strbuf *out);

/* The same as one line of JSON: {"version":1,"exports":[{...},...]}. */
extern int adaptra_report_volumes_json (const struct adaptra_volume_row *rows,
                                        size_t n, struct adaptra_strbuf *out);

/* Per-export Prometheus families (adaptra_export_*), labelled with the
 * export name and its sharing.  The per-connection volumes of one
 * export add up into one series, so that connections coming and going
 * make no new series.
 */
extern int adaptra_report_volumes_prometheus (
  const struct adaptra_volume_row *rows, size_t n,
  struct adaptra_strbuf *out);

/* Append the n clients of rows as a table, one line each. */
extern int adaptra_report_clients (const struct adaptra_client_row *rows,
                                   size_t n, struct adaptra_strbuf *out);

/* Most connections that adaptra_report_clients_prometheus lists.
 * Each is five series (the adaptra_connection_* families), and a
 * Prometheus server keeps every series it scraped until its retention
 * drops it: connections that come and go make new ones, the growth
 * Prometheus' practices warn of for labels of unbounded values
 * (prometheus.io/docs/practices/naming).  64 bound a scrape to 320
 * such series, and the churn to the connections that read the most;
 * "metrics clients" is opt-in, for set-ups with few long-lived
 * clients (a host's guests), which 64 covers.  Far below it such a
 * set-up sees guests only in adaptra_connections_unlisted; far above
 * it a busy server's scrapes carry series that churn with every
 * connection.  No run chose 64: 2bd1f8a, which brought it, records no
 * measurement.
 */
#define ADAPTRA_REPORT_MAX_CLIENT_SERIES 64

/* Append the per-connection counters of the n clients of rows in the
 * Prometheus exposition format, as families adaptra_connection_*_total
 * with client (the peer's name) and id labels, for at most
 * ADAPTRA_REPORT_MAX_CLIENT_SERIES connections (those that read the
 * most bytes), and the gauge adaptra_connections_unlisted counting the
 * others.  Every connection is a series of its own, so this is for
 * scrapes that ask for it ("metrics clients"), not the default.
 */
extern int adaptra_report_clients_prometheus (
  const struct adaptra_client_row *rows, size_t n,
  struct adaptra_strbuf *out);

#endif /* ADAPTRA_REPORT_H */
