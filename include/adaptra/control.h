/* control.h: the control protocol spoken on the statistics socket.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The control protocol spoken on the statistics socket.
 *
 * A client sends one command per line and gets a reply of one or more
 * lines followed by an empty line, so a reader knows where each reply
 * ends.  A reply that starts "error: " failed.  The commands (one
 * table in control.c dispatches them and writes "help"):
 *
 *   stats               counters, gauges and ratios, for people
 *   stats json          the same as one line of JSON (versioned)
 *   metrics [clients]   Prometheus text exposition (clients: with the
 *                       per-client families, at most
 *                       ADAPTRA_REPORT_MAX_CLIENT_SERIES clients)
 *   streams             one row per live stream
 *   clients             one row per connected client
 *   exports [json]      one row per volume: an export, or one
 *                       connection's own view of one
 *   control             the socket server's own state (answered by
 *                       the server, plugin/server.c, not here)
 *   get [NAME]          a parameter's value, or all of them
 *   set NAME VALUE      change a tunable: ratio, min, max, mode, bypass
 *   reset               zero the counters
 *   trace on|off        stream one line per read-ahead decision
 *   help                the command list
 *   quit                close the connection
 *
 * After "trace on" (reply "ok"), the server sends a line "trace: ..."
 * for each read-ahead decision, as -D adaptra.trace=1 logs it, and
 * "trace: dropped N lines" where a burst did not fit its buffers,
 * between the replies to whatever else the client asks, until "trace
 * off".  Replies still end with an empty line; trace lines never do.
 *
 * set, reset and trace change the server; the socket server refuses
 * them to unprivileged peers (adaptra_control_needs_privilege).
 *
 * The module is pure: it reaches the engine through the operations
 * below, so the parser is unit-tested and fuzzed without a server.
 */

#ifndef ADAPTRA_CONTROL_H
#define ADAPTRA_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include "adaptra/engine.h"
#include "adaptra/stats.h"
#include "adaptra/strbuf.h"

/* First line of the reply to "help": lets a client check that it
 * talks to adaptra and which protocol.
 */
#define ADAPTRA_CONTROL_BANNER "adaptra control protocol 1"

/* The most rows of each kind a reply lists; the rest are left out.
 * A command gathers its rows in a buffer of that many, allocated for
 * it and freed after (128, 184 and 136 bytes a stream, client and
 * volume row: 512, 184 and 544 KiB), filled under the engine lock,
 * which the read path takes too; and the reply must fit the socket
 * client's output buffer (CLIENT_MAX_OUTPUT in plugin/server.c,
 * 4 MiB), or the client is dropped.  At these bounds, with every name
 * 63 bytes that all need escaping and every row's numbers at their
 * widest, the largest replies are "metrics clients" and "metrics"
 * (every export's families) at 3.2 MiB, "exports json" 1.7 MiB,
 * "exports" and "streams" 0.9 MiB, "clients" 0.3 MiB:
 * adaptra_control_execute over fake rows, computed, not timed.  Far
 * below the bounds a listing misses rows an operator looks for; far
 * above them a reply outgrows that buffer, dropping the client that
 * asked, and holds the engine lock longer.  No run chose the values:
 * they came with their commands (030083e, 6a399e2, 27e43c9), which
 * record none.
 *
 * Streams: the most recently used are listed, of up to
 * ADAPTRA_STREAMS_MAX: four for each of ADAPTRA_CONTROL_MAX_CLIENTS,
 * more than a person reads, and the busiest for a script.
 */
#define ADAPTRA_CONTROL_MAX_STREAMS 4096

/* Clients ("clients", "metrics clients", the client column of
 * "streams"), lowest ids first.  Linux's default soft limit on open
 * files (RLIMIT_NOFILE, ulimit -n) is 1024, and nbdkit holds a socket
 * for each connection, so unless the operator raised it every
 * connection is listed.
 */
#define ADAPTRA_CONTROL_MAX_CLIENTS 1024

/* Volumes ("exports", the per-export families of "metrics"), lowest
 * ids first.  A connection reads one volume, and at most
 * EXPORTS_IDLE_MAX (plugin/exports.h) more are kept without one: under
 * the default open-file limit about 1100, which this covers four times.
 */
#define ADAPTRA_CONTROL_MAX_VOLUMES 4096

struct adaptra_control_ops {
  void *opaque;
  void (*snapshot) (void *opaque, struct adaptra_stats *s);
  void (*reset) (void *opaque);
  size_t (*streams) (void *opaque, struct adaptra_stream_row *rows,
                     size_t max);
  size_t (*clients) (void *opaque, struct adaptra_client_row *rows,
                     size_t max);
  size_t (*volumes) (void *opaque, struct adaptra_volume_row *rows,
                     size_t max);
  /* Append "NAME VALUE" lines (name NULL: every parameter); 0 or -1
   * with why.
   */
  int (*get) (void *opaque, const char *name, struct adaptra_strbuf *out,
              char *why, size_t len);
  /* Change a tunable; 0 or -1 with why. */
  int (*set) (void *opaque, const char *name, const char *value,
              char *why, size_t len);
};

/* What the connection does after a request's reply. */
enum adaptra_control_next {
  ADAPTRA_CONTROL_CONTINUE,     /* read the next request */
  ADAPTRA_CONTROL_QUIT,         /* close once the reply is sent */
  ADAPTRA_CONTROL_TRACE_ON,     /* start streaming trace lines */
  ADAPTRA_CONTROL_TRACE_OFF,    /* stop streaming them */
};

/* Does the request line change the server (set, reset, trace)?  False
 * for lines that adaptra_control_execute refuses anyway.
 */
extern bool adaptra_control_needs_privilege (const char *line, size_t len);

/* Execute the request line (len bytes; it may hold any bytes) and
 * append the whole reply, terminating empty line included, to out.
 * Returns what the connection does next; the server keeps the trace
 * state of each connection.  Never fails: bad input gets an "error: "
 * reply (and ADAPTRA_CONTROL_CONTINUE).
 */
extern enum adaptra_control_next
adaptra_control_execute (const struct adaptra_control_ops *ops,
                         const char *line, size_t len,
                         struct adaptra_strbuf *out);

#endif /* ADAPTRA_CONTROL_H */
