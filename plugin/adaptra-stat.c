/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* adaptra-stat: read an adaptra filter's statistics socket.
 *
 *   adaptra-stat PATH                    counters, for people
 *   adaptra-stat PATH --json             one line of JSON
 *   adaptra-stat PATH --prometheus       Prometheus exposition
 *   adaptra-stat PATH --streams          live streams
 *   adaptra-stat PATH --watch SECS       a line of rates every SECS
 *   adaptra-stat PATH --trace            read-ahead decisions as they happen
 *   adaptra-stat PATH --command 'CMD'    any protocol command
 *
 * It first asks for "help" and checks the banner, so that a socket
 * belonging to something else is reported as such rather than
 * misread.
 */

#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "adaptra/control.h"

#define REPLY_TIMEOUT_MS 10000
#define MAX_REPLY (8 * 1024 * 1024)

static const char *progname = "adaptra-stat";

static void __attribute__ ((noreturn, format (printf, 1, 2)))
die (const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "%s: ", progname);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  exit (EXIT_FAILURE);
}

static void
usage (FILE *fp)
{
  fprintf (fp,
           "usage: %s PATH [--json | --prometheus | --streams | "
           "--command CMD] [--watch SECS | --trace]\n"
           "Read the statistics of an nbdkit adaptra filter started with\n"
           "adaptra-stats=PATH.  See adaptra-stat(1).\n", progname);
}

static int
connect_socket (const char *path)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  struct stat st;
  int fd;

  if (strlen (path) >= sizeof addr.sun_path)
    die ("%s: path too long for a unix socket", path);
  strcpy (addr.sun_path, path);
  if (stat (path, &st) == -1)
    die ("%s: %s (is nbdkit running with adaptra-stats=%s?)",
         path, strerror (errno), path);
  if (!S_ISSOCK (st.st_mode))
    die ("%s: not a socket", path);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd == -1)
    die ("socket: %s", strerror (errno));
  if (connect (fd, (struct sockaddr *) &addr, sizeof addr) == -1) {
    if (errno == EACCES)
      die ("%s: permission denied (the socket is mode %04o, owner uid %u; "
           "the server can widen it with adaptra-stats-mode)",
           path, (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid);
    if (errno == ECONNREFUSED)
      die ("%s: nothing is listening (a stale socket of a stopped server?)",
           path);
    die ("%s: %s", path, strerror (errno));
  }
  return fd;
}

/* Send cmd and read its reply up to the terminating empty line, which
 * is stripped.  Returns the reply (caller frees).
 */
static char *
request (int fd, const char *path, const char *cmd)
{
  size_t cap = 65536, len = 0;
  char *buf = malloc (cap);
  size_t cmdlen = strlen (cmd);

  if (buf == NULL || cmdlen + 1 >= cap)
    die ("%s: command too long or out of memory", path);
  /* One send, so that a peer that answers the first bytes and hangs up
   * is still heard; no SIGPIPE, so that a peer gone is an error
   * message rather than a silent death.
   */
  memcpy (buf, cmd, cmdlen);
  buf[cmdlen] = '\n';
  if (send (fd, buf, cmdlen + 1, MSG_NOSIGNAL) != (ssize_t) cmdlen + 1)
    die ("%s: write: %s", path, strerror (errno));
  for (;;) {
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    ssize_t n;

    /* Replies hold no empty line but the one that ends them. */
    if (len >= 2 && buf[len - 1] == '\n' && buf[len - 2] == '\n')
      break;
    if (poll (&pfd, 1, REPLY_TIMEOUT_MS) == 0)
      die ("%s: no reply within %d s: not an adaptra control socket?",
           path, REPLY_TIMEOUT_MS / 1000);
    if (len + 1 >= cap) {
      if (cap >= MAX_REPLY)
        die ("%s: reply larger than %d bytes", path, MAX_REPLY);
      cap *= 2;
      buf = realloc (buf, cap);
      if (buf == NULL)
        die ("realloc: %s", strerror (errno));
    }
    n = read (fd, buf + len, cap - len - 1);
    if (n == -1 && errno == EINTR)
      continue;
    if (n <= 0)
      die ("%s: the server closed the connection%s", path,
           len ? " in mid-reply" : " without a reply");
    len += n;
  }
  buf[len - 1] = '\0';          /* drop the empty line */
  return buf;
}

/* The first number stored under "name": in a JSON reply.  The totals
 * come before the per-method objects, so plain names find the totals.
 */
static double
json_number (const char *json, const char *name)
{
  char key[128];
  const char *p;

  snprintf (key, sizeof key, "\"%s\":", name);
  p = strstr (json, key);
  if (p == NULL)
    die ("the server's JSON has no field '%s'", name);
  return strtod (p + strlen (key), NULL);
}

static volatile sig_atomic_t stop;

static void
on_signal (int sig)
{
  stop = 1;
}

/* SIGINT and SIGTERM set stop and interrupt a blocking read or sleep
 * (no SA_RESTART), so that --watch and --trace end cleanly.
 */
static void
catch_stop_signals (void)
{
  struct sigaction sa = { .sa_handler = on_signal };

  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
}

/* Counters and gauges a watch line is computed from. */
struct sample {
  double t;
  double reads, client_bytes, backend_bytes, readahead, pgreadahead,
    pgreadahead_hit, readrandom, evicted_unread, streams, window_max;
};

static struct sample
take_sample (int fd, const char *path)
{
  struct timespec ts;
  char *json = request (fd, path, "stats json");
  struct sample s;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  if (strncmp (json, "{\"version\":", 11) != 0)
    die ("%s: unexpected reply to 'stats json': %.80s", path, json);
  s.t = ts.tv_sec + ts.tv_nsec / 1e9;
  s.reads = json_number (json, "client_requests");
  s.client_bytes = json_number (json, "client_bytes");
  s.backend_bytes = json_number (json, "backend_bytes");
  s.readahead = json_number (json, "readahead");
  s.pgreadahead = json_number (json, "pgreadahead");
  s.pgreadahead_hit = json_number (json, "pgreadahead_hit");
  s.readrandom = json_number (json, "readrandom");
  s.evicted_unread = json_number (json, "evicted_unread");
  s.streams = json_number (json, "streams_active");
  s.window_max = json_number (json, "window_max_bytes");
  free (json);
  return s;
}

/* vmstat-style: a header, then one line per interval of rates over
 * that interval.  The hit rate is of the read-ahead pages whose fate
 * was settled in the interval, read or evicted unread: pages read
 * ahead in one interval are often read in the next, so hits over
 * pages read ahead in the same interval could pass 100%.  The window
 * is the average size of the windows issued.
 */
static void
watch (int fd, const char *path, double secs)
{
  char *reply = request (fd, path, "get page");
  double page = strtod (reply + strlen ("page "), NULL);
  struct sample prev = take_sample (fd, path), cur;
  unsigned lines = 0;

  free (reply);
  catch_stop_signals ();
  while (!stop) {
    double dt, dra, dpg, dhit, dsettled;
    struct timespec ts = { .tv_sec = (time_t) secs,
                           .tv_nsec = (long) ((secs - (time_t) secs) * 1e9) };

    nanosleep (&ts, NULL);
    if (stop)
      break;
    cur = take_sample (fd, path);
    if (lines++ % 20 == 0)
      printf ("%9s %9s %9s %6s %7s %8s %9s %9s %7s %9s\n",
              "reads/s", "client", "backend", "hit%", "ra/s", "random/s",
              "window", "lost/s", "streams", "max");
    dt = cur.t - prev.t;
    dra = cur.readahead - prev.readahead;
    dpg = cur.pgreadahead - prev.pgreadahead;
    dhit = cur.pgreadahead_hit - prev.pgreadahead_hit;
    dsettled = dhit + cur.evicted_unread - prev.evicted_unread;
    printf ("%9.0f %8.1fM %8.1fM %6.1f %7.0f %8.0f %8.0fK %9.0f %7.0f %8.0fK\n",
            (cur.reads - prev.reads) / dt,
            (cur.client_bytes - prev.client_bytes) / dt / 1e6,
            (cur.backend_bytes - prev.backend_bytes) / dt / 1e6,
            dsettled > 0 ? 100. * dhit / dsettled : 0.,
            dra / dt, (cur.readrandom - prev.readrandom) / dt,
            dra > 0 ? dpg * page / dra / 1024. : 0.,
            (cur.evicted_unread - prev.evicted_unread) / dt,
            cur.streams, cur.window_max / 1024.);
    fflush (stdout);
    prev = cur;
  }
}

/* Print the server's trace lines without their "trace: " prefix until
 * a signal, as they arrive.  Replies (the server sends none unasked)
 * and over-long lines are skipped.
 */
static void
trace (int fd, const char *path)
{
  static char buf[65536];
  char *reply = request (fd, path, "trace on");
  size_t len = 0;

  if (strcmp (reply, "ok\n") != 0)
    die ("%s: 'trace on' was refused: %s", path, reply);
  free (reply);
  catch_stop_signals ();
  while (!stop) {
    ssize_t n = read (fd, buf + len, sizeof buf - len);
    char *start = buf, *nl;

    if (n == -1 && errno == EINTR)
      continue;
    if (n <= 0)
      die ("%s: the server closed the connection", path);
    len += n;
    while ((nl = memchr (start, '\n', buf + len - start)) != NULL) {
      *nl = '\0';
      if (strncmp (start, "trace: ", 7) == 0)
        puts (start + 7);
      start = nl + 1;
    }
    len -= start - buf;
    memmove (buf, start, len);
    if (len == sizeof buf)
      len = 0;
    fflush (stdout);
  }
}

int
main (int argc, char *argv[])
{
  static const struct option long_options[] = {
    { "json", no_argument, NULL, 'j' },
    { "prometheus", no_argument, NULL, 'p' },
    { "streams", no_argument, NULL, 's' },
    { "command", required_argument, NULL, 'c' },
    { "watch", required_argument, NULL, 'w' },
    { "trace", no_argument, NULL, 't' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *command = "stats";
  double interval = 0;
  bool tracing = false;
  char *end, *reply;
  const char *path;
  int c, fd;

  while ((c = getopt_long (argc, argv, "jpsc:w:th", long_options, NULL))
         != -1) {
    switch (c) {
    case 'j': command = "stats json"; break;
    case 'p': command = "metrics"; break;
    case 's': command = "streams"; break;
    case 'c': command = optarg; break;
    case 'w':
      interval = strtod (optarg, &end);
      if (*optarg == '\0' || *end != '\0' || !(interval > 0)
          || interval > 86400)
        die ("--watch %s: not a number of seconds in (0, 86400]", optarg);
      break;
    case 't': tracing = true; break;
    case 'h': usage (stdout); exit (EXIT_SUCCESS);
    default: usage (stderr); exit (EXIT_FAILURE);
    }
  }
  if (optind != argc - 1) {
    usage (stderr);
    exit (EXIT_FAILURE);
  }
  if (tracing && interval > 0)
    die ("--trace and --watch do not go together");
  path = argv[optind];
  fd = connect_socket (path);

  reply = request (fd, path, "help");
  if (strncmp (reply, ADAPTRA_CONTROL_BANNER "\n",
               strlen (ADAPTRA_CONTROL_BANNER) + 1) != 0)
    die ("%s: not an adaptra control socket (it answered: %.60s)",
         path, reply);
  free (reply);

  if (tracing)
    trace (fd, path);
  else if (interval > 0)
    watch (fd, path, interval);
  else {
    reply = request (fd, path, command);
    fputs (reply, stdout);
    if (strncmp (reply, "error: ", 7) == 0)
      exit (EXIT_FAILURE);
    free (reply);
  }
  close (fd);
  return EXIT_SUCCESS;
}
