/* metrics.c: the Prometheus scrape endpoint over libmicrohttpd.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>
#include <nbdkit-filter.h>

#include "metrics.h"

/* The Prometheus text format's content type. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A scrape's body is the socket's reply: at most this much; a larger
 * one gets 500.  The largest the control rows allow, the export
 * families of 4096 volumes with 63-byte names, is about 2.2 MiB
 * (measured with control/report.c), so 16 MiB leaves room for label
 * escaping (a quote or backslash doubles).  Much smaller would turn a
 * large server's scrapes into errors; the limit allocates nothing
 * itself (the buffer grows with the text).
 */
#define METRICS_MAX_BODY (16 * 1024 * 1024)

static char *host, *port;       /* from adaptra-metrics, NULL: off */
static char *given;             /* adaptra-metrics as the user typed it */
static int listen_fd = -1;
static struct MHD_Daemon *daemon_;
static metrics_render_fn render_fn;

/* The forms adaptra-metrics takes, for the messages that refuse one. */
#define METRICS_FORMS "give PORT, ADDR:PORT or [IPV6]:PORT"

int
metrics_config (const char *value)
{
  const char *colon = strrchr (value, ':');
  const char *h = METRICS_DEFAULT_ADDR, *p = value;
  size_t hlen = strlen (h);
  bool bracketed = false;
  unsigned long n;
  char digits[sizeof "65535"];

  if (colon != NULL) {
    h = value;
    hlen = colon - value;
    p = colon + 1;
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']')
      h++, hlen -= 2, bracketed = true;
  }
  /* An address with a colon is IPv6's and needs its brackets: "::1"
   * would otherwise be port 1 of "::".  A bracket left over is a typo.
   */
  if (hlen == 0 || *p == '\0' || strspn (p, "0123456789") != strlen (p) ||
      strcspn (h, "[]") < hlen ||
      (!bracketed && memchr (h, ':', hlen) != NULL)) {
    nbdkit_error ("adaptra-metrics=%s is not [ADDR:]PORT (" METRICS_FORMS
                  ")", value);
    return -1;
  }
  /* getaddrinfo would take any number as a port, modulo 2^16 (99999
   * is 34463), and 0 as "any free port": the user meant neither.
   */
  errno = 0;
  n = strtoul (p, NULL, 10);
  if (errno != 0 || n < 1 || n > UINT16_MAX) {
    nbdkit_error ("adaptra-metrics=%s: port %s is not in 1-%d ("
                  METRICS_FORMS ")", value, p, UINT16_MAX);
    return -1;
  }
  snprintf (digits, sizeof digits, "%lu", n);
  free (host);
  free (port);
  free (given);
  host = strndup (h, hlen);
  port = strdup (digits);
  given = strdup (value);
  if (host == NULL || port == NULL || given == NULL) {
    nbdkit_error ("adaptra-metrics=%s: %m", value);
    return -1;
  }
  return 0;
}

int
metrics_listen (void)
{
  struct addrinfo hints = {
    .ai_socktype = SOCK_STREAM,
    .ai_flags = AI_NUMERICSERV,
  };
  struct addrinfo *ai;
  int r, one = 1;

  if (host == NULL)
    return 0;
  r = getaddrinfo (host, port, &hints, &ai);
  if (r != 0) {
    nbdkit_error ("adaptra-metrics=%s: %s", given, gai_strerror (r));
    return -1;
  }
  listen_fd = socket (ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC,
                      ai->ai_protocol);
  if (listen_fd == -1 ||
      setsockopt (listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one)
      == -1 ||
      bind (listen_fd, ai->ai_addr, ai->ai_addrlen) == -1 ||
      listen (listen_fd, SOMAXCONN) == -1) {
    nbdkit_error ("adaptra-metrics=%s: cannot listen: %m", given);
    freeaddrinfo (ai);
    if (listen_fd >= 0)
      close (listen_fd);
    listen_fd = -1;
    return -1;
  }
  freeaddrinfo (ai);
  nbdkit_debug ("adaptra-metrics: listening on %s:%s", host, port);
  return 0;
}

static enum MHD_Result
reply (struct MHD_Connection *conn, unsigned status, const char *type,
       const char *body, size_t len)
{
  struct MHD_Response *r;
  enum MHD_Result ret;

  r = MHD_create_response_from_buffer (len, (void *) body,
                                       MHD_RESPMEM_MUST_COPY);
  if (r == NULL)
    return MHD_NO;
  MHD_add_response_header (r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  ret = MHD_queue_response (conn, status, r);
  MHD_destroy_response (r);
  return ret;
}

static enum MHD_Result
answer (void *cls, struct MHD_Connection *conn, const char *url,
        const char *method, const char *version, const char *upload_data,
        size_t *upload_data_size, void **con_cls)
{
  static const char not_found[] = "adaptra serves /metrics only\n";
  static const char not_allowed[] = "GET /metrics only\n";
  static const char no_memory[] = "out of memory\n";
  struct adaptra_strbuf body = ADAPTRA_STRBUF_INIT (METRICS_MAX_BODY);
  enum MHD_Result ret;

  if (strcmp (method, MHD_HTTP_METHOD_GET) != 0 &&
      strcmp (method, MHD_HTTP_METHOD_HEAD) != 0)
    return reply (conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
                  not_allowed, sizeof not_allowed - 1);
  if (strcmp (url, "/metrics") != 0)
    return reply (conn, MHD_HTTP_NOT_FOUND, "text/plain",
                  not_found, sizeof not_found - 1);
  render_fn (&body);
  if (body.overflow) {
    adaptra_strbuf_free (&body);
    return reply (conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
                  no_memory, sizeof no_memory - 1);
  }
  ret = reply (conn, MHD_HTTP_OK, METRICS_CONTENT_TYPE,
               body.data ? body.data : "", body.len);
  adaptra_strbuf_free (&body);
  return ret;
}

int
metrics_start (metrics_render_fn render)
{
  if (listen_fd == -1)
    return 0;
  render_fn = render;
  daemon_ = MHD_start_daemon (MHD_USE_INTERNAL_POLLING_THREAD |
                              MHD_USE_POLL,
                              0, NULL, NULL, answer, NULL,
                              MHD_OPTION_LISTEN_SOCKET, listen_fd,
                              MHD_OPTION_CONNECTION_LIMIT,
                              (unsigned) METRICS_MAX_CONNECTIONS,
                              MHD_OPTION_CONNECTION_TIMEOUT,
                              (unsigned) METRICS_TIMEOUT_SECS,
                              MHD_OPTION_END);
  if (daemon_ == NULL) {
    nbdkit_error ("adaptra-metrics=%s: cannot start the HTTP server",
                  given);
    return -1;
  }
  return 0;
}

void
metrics_stop (void)
{
  if (daemon_ != NULL) {
    MHD_stop_daemon (daemon_);  /* closes listen_fd too */
    daemon_ = NULL;
    listen_fd = -1;
  }
  if (listen_fd >= 0) {
    close (listen_fd);
    listen_fd = -1;
  }
  free (host);
  free (port);
  free (given);
  host = port = given = NULL;
}
