/* server.h: the statistics and control socket's server.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The statistics and control socket: a unix socket served by a libev
 * loop in its own thread.  Of the protocol it knows only what a
 * connection does after each reply: each request line goes to a
 * handler that appends the reply and says whether to go on, close, or
 * start or stop streaming trace lines to that connection.
 */

#ifndef ADAPTRA_SERVER_H
#define ADAPTRA_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "adaptra/control.h"
#include "adaptra/strbuf.h"

/* Longest request line accepted, without its newline.  A valid
 * request is tens of bytes (the longest, set NAME VALUE), so a page
 * holds any of them with room and a longer line is no request; each
 * client's buffer is that page, SERVER_MAX_CLIENTS of them 64 KiB.
 */
#define SERVER_MAX_LINE 4096

/* Most socket clients served at once; more are told so and closed.
 * An operator's adaptra-stat --watch, a script and an exporter are a
 * handful at once; each may hold CLIENT_MAX_OUTPUT (server.c) of
 * replies it has not taken, so 16 bound that to 64 MiB.
 */
#define SERVER_MAX_CLIENTS 16

/* Of those, slots only privileged peers (who may change the server)
 * may take, so that idle read-only clients cannot lock root out.
 */
#define SERVER_PRIVILEGED_SLOTS 1

/* A client is closed adaptra-stats-idle seconds after its last
 * complete command (for a tracing client: or the last trace output it
 * took).  It bounds how long a client that went away without closing,
 * or keeps a slot on purpose, holds one of the SERVER_MAX_CLIENTS
 * slots.  It was 300 s from the last byte, which a trickle of a byte
 * now and then kept from ever ending.  The default, a minute, and the
 * bounds (ADAPTRA_STATS_IDLE_SECS_MIN, _MAX) are the parameter
 * table's (core/config.c, adaptra/config.h): much shorter, a person
 * typing at socat would be cut off between commands; much longer, an
 * abandoned client would hold its slot that much longer.  The test
 * suite sets it short, so as not to wait a minute.  adaptra-stat
 * --trace sends a command every third of it (TRACE_KEEPALIVE_SHARE).
 */

/* Execute one request line (len bytes, NUL-terminated, newline
 * stripped; it may contain other NULs), append the reply to out and
 * say what the connection does next.
 */
typedef enum adaptra_control_next (*server_line_fn) (const char *line,
                                                     size_t len,
                                                     struct adaptra_strbuf
                                                     *out);

/* adaptra-stats-owner=USER[:GROUP] (names or numbers; USER alone
 * means its primary group, :GROUP the group alone): whom server_listen
 * gives the socket to.  Returns 0, or -1 after nbdkit_error.
 */
extern int server_config_owner (const char *value);

/* adaptra-stats-idle=SECONDS: how long a client may go without a
 * command (the filter's load gives the default).  A decimal number
 * within ADAPTRA_STATS_IDLE_SECS_MIN..ADAPTRA_STATS_IDLE_SECS_MAX.
 * Returns 0, or -1 after nbdkit_error.
 */
extern int server_config_idle (const char *value);

/* Create the socket at path (absolute), with file mode mode, and
 * listen on it.  A stale socket file (nothing accepts on it) is
 * replaced; a live one, or any other kind of file, is an error.  Call
 * from .get_ready, so errors reach the user and clients can queue in
 * the backlog before the loop runs (nbdkit changes user after
 * .get_ready: a socket owner given with server_config_owner gets the
 * file then).  Returns 0, or -1 after nbdkit_error.  From then on the
 * file is removed at exit, by server_stop or, if nbdkit exits without
 * it, by an exit handler.
 */
extern int server_listen (const char *path, mode_t mode);

/* Start the loop thread serving requests with fn.  Call from
 * .after_fork.  Returns 0, or -1 after nbdkit_error.
 */
extern int server_start (server_line_fn fn);

/* Stop the loop, close every connection and remove the socket file.
 * Safe to call when nothing was started.
 */
extern void server_stop (void);

/* Queue one trace line for the connections that asked for them
 * ("trace on"); nothing when none did.  Called from the data path, any
 * thread: it never waits for a socket client (lines that do not fit
 * are dropped, and the stream says how many).
 */
extern void server_trace (const char *line);

#endif /* ADAPTRA_SERVER_H */
