/* metrics.h: the Prometheus scrape endpoint (adaptra-metrics=ADDR:PORT).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* An HTTP server (libmicrohttpd) answering GET /metrics with the
 * control socket's "metrics" reply, so Prometheus scrapes adaptra
 * directly.  Read-only, like the socket's read-only commands: whoever
 * reaches the address may read the statistics, so the address is the
 * loopback one unless given.
 */

#ifndef ADAPTRA_METRICS_H
#define ADAPTRA_METRICS_H

#include "adaptra/strbuf.h"

/* The address when adaptra-metrics gives a port only. */
#define METRICS_DEFAULT_ADDR "127.0.0.1"

/* Most scrapes served at once, and seconds a scrape may stay idle.
 * A Prometheus server scrapes a target once an interval, so a few
 * servers (a redundant pair, a second site) and a person's curl are
 * a handful at once, and each scrape holds a copy of its body until
 * it is sent, up to METRICS_MAX_BODY: 8 bound that to 128 MiB.  10 s
 * is Prometheus' default scrape_timeout, after which the scraper has
 * given up.
 */
#define METRICS_MAX_CONNECTIONS 8
#define METRICS_TIMEOUT_SECS 10

/* .config: adaptra-metrics=[ADDR:]PORT ("9101", "127.0.0.1:9101",
 * "localhost:9101", "[::1]:9101"): PORT in 1-65535, an IPv6 ADDR in
 * brackets.  Returns 0, or -1 after nbdkit_error naming the value.
 */
extern int metrics_config (const char *value);

/* .get_ready: bind and listen, so that an address in use stops nbdkit
 * at start-up.  0, or -1 after nbdkit_error.  Does nothing without
 * adaptra-metrics.
 */
extern int metrics_listen (void);

/* Appends the body of a scrape to out. */
typedef void (*metrics_render_fn) (struct adaptra_strbuf *out);

/* .after_fork: serve scrapes in a thread of libmicrohttpd's.  0, or -1
 * after nbdkit_error.
 */
extern int metrics_start (metrics_render_fn render);

/* .cleanup and .unload: stop serving and close the socket. */
extern void metrics_stop (void);

#endif /* ADAPTRA_METRICS_H */
