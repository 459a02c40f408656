/* adaptra-stat.c: the command-line client of the statistics socket.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* adaptra-stat: read an adaptra filter's statistics socket.
 *
 *   adaptra-stat PATH                    a summary, then counters
 *   adaptra-stat PATH --json             one line of JSON
 *   adaptra-stat PATH --prometheus       Prometheus exposition
 *   adaptra-stat PATH --streams          live streams
 *   adaptra-stat PATH --clients          connected clients
 *   adaptra-stat PATH --watch SECS       a line of rates every SECS
 *   adaptra-stat PATH --trace            read-ahead decisions as they happen
 *   adaptra-stat PATH --command 'CMD'    any protocol command
 *
 * It first asks for "help" and checks the banner, so that a socket
 * belonging to something else is reported as such rather than
 * misread.  Replies are read through one buffer per connection: what
 * arrives after a reply (trace lines after "ok") stays for the next
 * read.  JSON is parsed with json-c.
 */

#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
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

#include <json.h>

#include "adaptra/control.h"
#include "cli.h"

/* How long a reply may take, and its most bytes.  The server answers
 * from its own loop within milliseconds (a pool walk of gigabytes
 * takes a few, core/snapshot.h); ten seconds tells a hung or overloaded
 * server, or a socket that is not adaptra's, from a busy one without
 * leaving a script waiting long.  The server never sends a reply
 * larger than a client's output buffer (4 MiB, plugin/server.c's
 * CLIENT_MAX_OUTPUT: it drops the client instead), so 8 MiB is twice
 * any reply and stops only a peer that is not an adaptra server from
 * growing the buffer without end.
 */
#define REPLY_TIMEOUT_MS 10000
#define MAX_REPLY (8 * 1024 * 1024)

/* How often --trace tells the server it is still there: the server
 * closes a client control_idle_secs (its "control" reply; 60 unless
 * adaptra-stats-idle says otherwise) after its last command when no
 * trace output flows.  A third of that, so that a keep-alive delayed
 * by a loaded machine still has two more chances in time.
 */
#define TRACE_KEEPALIVE_SHARE 3

const char *const cli_name = "adaptra-stat";

static void
usage (FILE *fp)
{
  fprintf (fp,
           "usage: %s PATH [--json | --prometheus | --streams | --clients |\n"
           "                    --command CMD | --trace] [--watch SECS] "
           "[--raw]\n"
           "       %s --version | --help\n"
           "Read the statistics of an nbdkit adaptra filter started with\n"
           "adaptra-stats=PATH.\n"
           "\n"
           "  (none)          a summary (1 s), then counters, gauges, ratios\n"
           "  --json          the same as one line of JSON\n"
           "  --prometheus    Prometheus text exposition\n"
           "  --streams       live read-ahead streams\n"
           "  --clients       connected NBD clients\n"
           "  --command CMD   any protocol command, e.g. 'set ratio 30'\n"
           "  --trace         each read-ahead decision as it happens\n"
           "  --watch SECS    rates every SECS seconds (with --json: JSON "
           "lines)\n"
           "  --raw           plain numbers instead of human units\n"
           "  --version       adaptra's version\n"
           "See adaptra-stat(1).\n", cli_name, cli_name);
}

/* One connection to the control socket.  buf holds what was read and
 * not yet consumed.
 */
struct conn {
  int fd;
  const char *path;
  char *buf;
  size_t len, cap;
};

/* After stat (path) failed with EACCES: die naming the directory on
 * the path that this user may not search, with its mode and owner.
 */
static void
die_directory_denied (const char *path)
{
  char dir[sizeof ((struct sockaddr_un *) 0)->sun_path];
  struct stat st;
  char *slash;

  strcpy (dir, path);
  /* Each prefix ending at a slash, from the root down. */
  for (slash = strchr (dir + 1, '/'); slash; slash = strchr (slash + 1, '/')) {
    *slash = '\0';
    if (access (dir, X_OK) == -1 && errno == EACCES && stat (dir, &st) == 0)
      cli_die ("%s: permission denied: this user (uid %u) may not enter "
               "the directory %s (mode %04o, owner uid %u, group gid %u); "
               "join its group, or give the directory to the statistics "
               "readers' group", path, (unsigned) getuid (), dir,
               (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid,
               (unsigned) st.st_gid);
    *slash = '/';
  }
  cli_die ("%s: permission denied on a directory of the path", path);
}

static void
connect_socket (struct conn *c, const char *path)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  struct stat st;

  c->path = path;
  c->len = 0;
  c->cap = 65536;
  c->buf = malloc (c->cap);
  if (c->buf == NULL)
    cli_die ("out of memory");
  if (strlen (path) >= sizeof addr.sun_path)
    cli_die ("%s: path too long for a unix socket", path);
  strcpy (addr.sun_path, path);
  if (stat (path, &st) == -1) {
    if (errno == EACCES)
      die_directory_denied (path);
    cli_die ("%s: %s (is nbdkit running with adaptra-stats=%s?)",
         path, strerror (errno), path);
  }
  if (!S_ISSOCK (st.st_mode))
    cli_die ("%s: not a socket", path);
  c->fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd == -1)
    cli_die ("socket: %s", strerror (errno));
  if (connect (c->fd, (struct sockaddr *) &addr, sizeof addr) == -1) {
    if (errno == EACCES)
      cli_die ("%s: permission denied (the socket is mode %04o, owner uid %u; "
           "the server can widen it with adaptra-stats-mode)",
           path, (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid);
    if (errno == ECONNREFUSED)
      cli_die ("%s: nothing is listening (a stale socket of a stopped server?)",
           path);
    cli_die ("%s: %s", path, strerror (errno));
  }
}

/* Read more into c's buffer, waiting at most timeout_ms (-1: forever).
 * Returns the bytes read, 0 at EOF or after a reset (what the server
 * sent before is in the buffer), FILL_TIMEOUT or FILL_SIGNAL.
 */
#define FILL_TIMEOUT (-1)
#define FILL_SIGNAL (-2)

static ssize_t
fill (struct conn *c, int timeout_ms)
{
  struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
  ssize_t n;
  int r;

  r = poll (&pfd, 1, timeout_ms);
  if (r == 0)
    return FILL_TIMEOUT;
  if (r == -1)
    return errno == EINTR ? FILL_SIGNAL : 0;
  if (c->len + 1 >= c->cap) {
    if (c->cap >= MAX_REPLY)
      cli_die ("%s: reply larger than %d bytes", c->path, MAX_REPLY);
    c->cap *= 2;
    c->buf = realloc (c->buf, c->cap);
    if (c->buf == NULL)
      cli_die ("realloc: %s", strerror (errno));
  }
  n = read (c->fd, c->buf + c->len, c->cap - c->len - 1);
  if (n == -1 && errno == EINTR)
    return FILL_SIGNAL;
  if (n <= 0)
    return 0;
  c->len += n;
  c->buf[c->len] = '\0';
  return n;
}

/* How a reply that failed starts (adaptra/control.h). */
#define ERROR_PREFIX "error: "

static bool
is_error (const char *reply)
{
  return strncmp (reply, ERROR_PREFIX, strlen (ERROR_PREFIX)) == 0;
}

/* Die quoting the server's error line, which err points at. */
static void __attribute__ ((noreturn))
die_refused (struct conn *c, char *err)
{
  err[strcspn (err, "\n")] = '\0';
  cli_die ("%s: the server refused: %s", c->path,
           err + strlen (ERROR_PREFIX));
}

/* The server hung up: say what it said last, if anything. */
static void __attribute__ ((noreturn))
hung_up (struct conn *c, bool first)
{
  char *err = c->len ? strstr (c->buf, ERROR_PREFIX) : NULL;

  if (err)
    die_refused (c, err);
  if (c->len >= 8 && memcmp (c->buf, "NBDMAGIC", 8) == 0)
    cli_die ("%s is an NBD socket, not an adaptra control socket "
         "(give the path of adaptra-stats=)", c->path);
  if (first)
    cli_die ("%s is not an adaptra control socket (it closed the connection "
         "without a reply)", c->path);
  cli_die ("%s: the server closed the connection (has nbdkit stopped?)",
       c->path);
}

/* Send cmd in one write, without SIGPIPE (a peer that answered and
 * hung up is an error message rather than a silent death).
 */
static void
send_command (struct conn *c, const char *cmd, bool first)
{
  size_t n = strlen (cmd);
  char *line = malloc (n + 2);

  if (line == NULL)
    cli_die ("out of memory");
  memcpy (line, cmd, n);
  line[n] = '\n';
  if (send (c->fd, line, n + 1, MSG_NOSIGNAL) != (ssize_t) n + 1) {
    /* Gone: read what it said before it went, if anything. */
    while (fill (c, 100) > 0)
      ;
    hung_up (c, first);
  }
  free (line);
}

/* Take the next reply, up to its terminating empty line (stripped),
 * from c's buffer, reading as needed.  Returns the reply (caller
 * frees), or NULL if a signal came first.  first: this is the first
 * reply on the connection, so silence means a foreign socket.
 */
static char *
take_reply (struct conn *c, bool first)
{
  for (;;) {
    char *end = c->len ? strstr (c->buf, "\n\n") : NULL;
    ssize_t n;

    /* A reply holds no empty line but the one that ends it. */
    if (end) {
      size_t used = end + 2 - c->buf;
      char *reply = strndup (c->buf, used - 1);

      if (reply == NULL)
        cli_die ("out of memory");
      memmove (c->buf, c->buf + used, c->len - used + 1);
      c->len -= used;
      return reply;
    }
    n = fill (c, REPLY_TIMEOUT_MS);
    if (n == 0)
      hung_up (c, first);
    if (n == FILL_SIGNAL)
      return NULL;
    if (n == FILL_TIMEOUT) {
      if (first && c->len >= 8 && memcmp (c->buf, "NBDMAGIC", 8) == 0)
        hung_up (c, first);
      cli_die ("%s: no reply within %d s: %s", c->path, REPLY_TIMEOUT_MS / 1000,
           first ? "not an adaptra control socket?"
           : "is the server overloaded?");
    }
  }
}

static char *
request (struct conn *c, const char *cmd)
{
  char *reply;

  send_command (c, cmd, false);
  reply = take_reply (c, false);
  if (reply == NULL)
    exit (EXIT_SUCCESS);        /* interrupted: the user is done */
  return reply;
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

/* n bytes in binary units: "512 B", "1.5 KiB", "12.0 MiB"... */
static void
human_bytes (double n, const char *per, char *buf, size_t len)
{
  static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB",
                                       "PiB" };
  unsigned u = 0;

  while (fabs (n) >= 1024 && u < sizeof units / sizeof units[0] - 1) {
    n /= 1024;
    u++;
  }
  if (u == 0)
    snprintf (buf, len, "%.0f %s%s", n, units[u], per);
  else
    snprintf (buf, len, "%.1f %s%s", n, units[u], per);
}

static bool
ends_with (const char *s, size_t len, const char *suffix)
{
  size_t n = strlen (suffix);

  return len >= n && memcmp (s + len - n, suffix, n) == 0;
}

/* The column of values in the text output. */
#define NAME_WIDTH 26

/* The name NAME_ns (len bytes) as NAME_ms, in a static buffer. */
static const char *
ms_name (const char *name, size_t len)
{
  static char buf[128];

  snprintf (buf, sizeof buf, "%.*s_ms", (int) (len - 3), name);
  return buf;
}

/* Print the "stats" reply's "name value" lines with the values in one
 * column, and if human, sizes in binary units and nanoseconds as
 * milliseconds: the values of names ending in _bytes or _bytes_per_sec
 * get their unit after them, names ending in _ns become NAME_ms.  The
 * rest (the method table) is as sent.
 */
static void
print_stats (const char *reply, bool human)
{
  const char *line = reply;

  while (*line) {
    size_t len = strcspn (line, "\n");
    size_t name = strcspn (line, " ");
    const char *value = line + name + strspn (line + name, " ");
    size_t vlen = line + len - value;
    char *end, buf[64];
    unsigned long long v;

    if (name >= len || memchr (value, ' ', vlen) != NULL) {
      printf ("%.*s\n", (int) len, line);  /* not "name value": a table */
      line += len + (line[len] == '\n');
      continue;
    }
    errno = 0;
    v = strtoull (value, &end, 10);
    if (!human || end != value + vlen || errno)
      snprintf (buf, sizeof buf, "%.*s", (int) vlen, value);
    else if (ends_with (line, name, "_bytes"))
      human_bytes (v, "", buf, sizeof buf);
    else if (ends_with (line, name, "_bytes_per_sec"))
      human_bytes (v, "/s", buf, sizeof buf);
    else if (ends_with (line, name, "_ns")) {
      /* The name says its unit: nanoseconds shown as milliseconds are
       * called _ms.
       */
      printf ("%-*s %.3f\n", NAME_WIDTH, ms_name (line, name), v / 1e6);
      line += len + (line[len] == '\n');
      continue;
    }
    else
      snprintf (buf, sizeof buf, "%llu", v);
    printf ("%-*.*s %s\n", NAME_WIDTH, (int) name, line, buf);
    line += len + (line[len] == '\n');
  }
}

/* A number from a JSON object, or die. */
static double
json_number (json_object *obj, const char *group, const char *name,
             const char *path)
{
  json_object *g, *v;

  if (!json_object_object_get_ex (obj, group, &g)
      || !json_object_object_get_ex (g, name, &v)
      || !(json_object_is_type (v, json_type_int)
           || json_object_is_type (v, json_type_double)))
    cli_die ("%s: the server's JSON has no number %s.%s", path, group, name);
  return json_object_get_double (v);
}

/* How much a counter grew; a counter that went down was reset (the
 * "reset" command) and counts from zero.
 */
static double
delta (double cur, double prev)
{
  return cur >= prev ? cur - prev : cur;
}

/* The summary's throughputs are measured over this interval. */
#define SUMMARY_INTERVAL_MS 1000

/* A stream that has not read for this long is idle: it still holds
 * its slot (until the server reaps it, ADAPTRA_STREAM_REAP_NS) but
 * reads nothing.
 */
#define STREAM_IDLE_MS 10000

/* The reply to "stats json", parsed, or die. */
static json_object *
stats_json (struct conn *c)
{
  char *reply = request (c, "stats json");
  json_object *obj = json_tokener_parse (reply);
  json_object *v;

  if (obj == NULL || !json_object_object_get_ex (obj, "version", &v)
      || json_object_get_int (v) != 1)
    cli_die ("%s: unexpected reply to 'stats json': %.80s", c->path, reply);
  free (reply);
  return obj;
}

/* Streams in the "streams" table that read within STREAM_IDLE_MS, and
 * the others: the last column is idle_ms.
 */
static void
count_streams (struct conn *c, unsigned *reading, unsigned *idle)
{
  char *reply = request (c, "streams");
  char *line = strchr (reply, '\n');

  *reading = *idle = 0;
  while (line && line[1]) {
    char *next = strchr (line + 1, '\n'), *last;

    if (next)
      *next = '\0';
    last = strrchr (line + 1, ' ');
    if (last && strtoull (last + 1, NULL, 10) < STREAM_IDLE_MS)
      (*reading)++;
    else
      (*idle)++;
    line = next;
  }
  free (reply);
}

/* The summary that opens the default output, as "name value" lines
 * with the units in the names (caller frees): what an operator looks
 * at first.  Throughputs over SUMMARY_INTERVAL_MS, the ratios since
 * the start (or the last reset).
 */
static char *
summary (struct conn *c)
{
  json_object *a = stats_json (c), *b;
  struct timespec t0, t1;
  struct timespec pause = { .tv_sec = SUMMARY_INTERVAL_MS / 1000,
                            .tv_nsec = SUMMARY_INTERVAL_MS % 1000 * 1000000L };
  unsigned reading, idle;
  double dt;
  char *text;

  clock_gettime (CLOCK_MONOTONIC, &t0);
  nanosleep (&pause, NULL);
  b = stats_json (c);
  clock_gettime (CLOCK_MONOTONIC, &t1);
  dt = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  count_streams (c, &reading, &idle);
  if (asprintf (&text,
                "%s %.2f\n%s %.3f\n%s %.3f\n%s %.0f\n%s %.0f\n"
                "%s %.0f\n%s %.0f\n%s %u\n%s %u\n%s %.0f\n%s %.0f\n",
                "readahead_hit_pct",
                json_number (b, "derived", "readahead_hit_pct", c->path),
                "amplification",
                json_number (b, "derived", "amplification", c->path),
                "evicted_unread_pct",
                json_number (b, "derived", "evicted_unread_pct", c->path),
                "client_read_bytes_per_sec",
                delta (json_number (b, "counters", "client_bytes", c->path),
                       json_number (a, "counters", "client_bytes", c->path))
                / dt,
                "backend_read_bytes_per_sec",
                delta (json_number (b, "counters", "backend_bytes", c->path),
                       json_number (a, "counters", "backend_bytes", c->path))
                / dt,
                "pool_used_bytes",
                json_number (b, "derived", "pool_used_bytes", c->path),
                "pool_size_bytes",
                json_number (b, "derived", "pool_size_bytes", c->path),
                "streams_reading", reading, "streams_idle", idle,
                "backend_handles_open",
                json_number (b, "gauges", "backend_handles", c->path),
                "backend_reads_in_flight",
                json_number (b, "gauges", "backend_reads", c->path)) == -1)
    cli_die ("out of memory");
  json_object_put (a);
  json_object_put (b);
  return text;
}

/* Counters and gauges a watch line is computed from. */
struct sample {
  double t;
  double reads, client_bytes, backend_bytes, readahead, pgreadahead,
    pgreadahead_hit, readrandom, evicted_unread, streams, window_max;
};

static struct sample
take_sample (struct conn *c)
{
  struct timespec ts;
  json_object *obj = stats_json (c);
  struct sample s;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  s.t = ts.tv_sec + ts.tv_nsec / 1e9;
  s.reads = json_number (obj, "counters", "client_requests", c->path);
  s.client_bytes = json_number (obj, "counters", "client_bytes", c->path);
  s.backend_bytes = json_number (obj, "counters", "backend_bytes", c->path);
  s.readahead = json_number (obj, "counters", "readahead", c->path);
  s.pgreadahead = json_number (obj, "counters", "pgreadahead", c->path);
  s.pgreadahead_hit = json_number (obj, "counters", "pgreadahead_hit",
                                   c->path);
  s.readrandom = json_number (obj, "counters", "readrandom", c->path);
  s.evicted_unread = json_number (obj, "counters", "evicted_unread",
                                  c->path);
  s.streams = json_number (obj, "gauges", "streams_active", c->path);
  s.window_max = json_number (obj, "gauges", "window_max_bytes", c->path);
  json_object_put (obj);
  return s;
}

enum watch_format { WATCH_HUMAN, WATCH_RAW, WATCH_JSON };

/* The text of --watch repeats its header every this many lines. */
#define WATCH_HEADER_EVERY 20

/* vmstat-style: a header, then one line per interval of rates over
 * that interval (or one JSON object per line).  The hit rate is of the
 * read-ahead pages whose fate was settled in the interval, read or
 * evicted unread: pages read ahead in one interval are often read in
 * the next, so hits over pages read ahead in the same interval could
 * pass 100%.  The window is the average size of the windows issued.
 */
static void
watch (struct conn *c, double secs, enum watch_format format)
{
  char *reply = request (c, "get page");
  double page = strtod (reply + strlen ("page "), NULL);
  struct sample prev = take_sample (c), cur;
  unsigned lines = 0;

  free (reply);
  catch_stop_signals ();
  while (!stop) {
    double dt, dra, dpg, dhit, dlost, dsettled, hit, window;
    struct timespec ts = { .tv_sec = (time_t) secs,
                           .tv_nsec = (long) ((secs - (time_t) secs) * 1e9) };

    nanosleep (&ts, NULL);
    if (stop)
      break;
    cur = take_sample (c);
    dt = cur.t - prev.t;
    dra = delta (cur.readahead, prev.readahead);
    dpg = delta (cur.pgreadahead, prev.pgreadahead);
    dhit = delta (cur.pgreadahead_hit, prev.pgreadahead_hit);
    dlost = delta (cur.evicted_unread, prev.evicted_unread);
    dsettled = dhit + dlost;
    hit = dsettled > 0 ? 100. * dhit / dsettled : 0.;
    window = dra > 0 ? dpg * page / dra : 0.;
    if (format == WATCH_JSON) {
      json_object *o = json_object_new_object ();

#define ADD(name, v) json_object_object_add (o, name, json_object_new_double (v))
      ADD ("interval_s", dt);
      ADD ("reads_per_s", delta (cur.reads, prev.reads) / dt);
      ADD ("client_bytes_per_s",
           delta (cur.client_bytes, prev.client_bytes) / dt);
      ADD ("backend_bytes_per_s",
           delta (cur.backend_bytes, prev.backend_bytes) / dt);
      ADD ("hit_pct", hit);
      ADD ("readahead_per_s", dra / dt);
      ADD ("random_per_s", delta (cur.readrandom, prev.readrandom) / dt);
      ADD ("window_bytes", window);
      ADD ("evicted_unread_per_s", dlost / dt);
#undef ADD
      /* Gauges that count (streams, bytes) are integers, as in the
       * server's JSON: the sample keeps them as doubles, exactly (the
       * server's counts are far below 2^53).
       */
      json_object_object_add (o, "streams",
                              json_object_new_int64 ((int64_t) cur.streams));
      json_object_object_add (o, "window_max_bytes",
                              json_object_new_int64 ((int64_t)
                                                     cur.window_max));
      puts (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN));
      json_object_put (o);
    }
    else {
      /* Sizes in bytes with --raw, else in MiB and KiB: each column's
       * name says which.
       */
      double mib = format == WATCH_RAW ? 1. : 1024. * 1024.;
      double kib = format == WATCH_RAW ? 1. : 1024.;

      if (lines++ % WATCH_HEADER_EVERY == 0)
        printf ("%9s %13s %13s %6s %7s %8s %10s %9s %7s %10s\n",
                "reads/s",
                format == WATCH_RAW ? "client_B/s" : "client_MiB/s",
                format == WATCH_RAW ? "backend_B/s" : "backend_MiB/s",
                "hit%", "ra/s", "random/s",
                format == WATCH_RAW ? "window_B" : "window_KiB",
                "lost_pg/s", "streams",
                format == WATCH_RAW ? "max_B" : "max_KiB");
      printf ("%9.0f %13.*f %13.*f %6.1f %7.0f %8.0f %10.0f %9.0f %7.0f "
              "%10.0f\n",
              delta (cur.reads, prev.reads) / dt,
              format == WATCH_RAW ? 0 : 1,
              delta (cur.client_bytes, prev.client_bytes) / dt / mib,
              format == WATCH_RAW ? 0 : 1,
              delta (cur.backend_bytes, prev.backend_bytes) / dt / mib,
              hit, dra / dt, delta (cur.readrandom, prev.readrandom) / dt,
              window / kib, dlost / dt, cur.streams, cur.window_max / kib);
    }
    fflush (stdout);
    prev = cur;
  }
}

/* The server's idle limit in milliseconds, from its "control" reply. */
static long
idle_ms (struct conn *c)
{
  char *reply = request (c, "control");
  const char *line = strstr (reply, "control_idle_secs ");
  long secs = line ? strtol (line + strlen ("control_idle_secs "), NULL, 10)
    : 0;

  if (secs <= 0)
    cli_die ("%s: no control_idle_secs in the reply to 'control': %s",
             c->path, reply);
  free (reply);
  return secs * 1000;
}

/* Print the server's trace lines without their "trace: " prefix until
 * a signal, as they arrive, beginning with any that came in the same
 * read as the reply to "trace on".  Replies (to the keep-alive "trace
 * on" sent every TRACE_KEEPALIVE_SHARE-th of the idle limit) are
 * skipped.
 */
static void
trace (struct conn *c)
{
  long keepalive_ms = idle_ms (c) / TRACE_KEEPALIVE_SHARE;
  char *reply = request (c, "trace on");
  struct timespec last, now;

  if (strcmp (reply, "ok\n") != 0)
    cli_die ("%s: 'trace on' was refused: %s", c->path, reply);
  free (reply);
  catch_stop_signals ();
  clock_gettime (CLOCK_MONOTONIC, &last);
  while (!stop) {
    char *start = c->buf, *nl;
    ssize_t n;

    while ((nl = memchr (start, '\n', c->buf + c->len - start)) != NULL) {
      *nl = '\0';
      if (strncmp (start, "trace: ", 7) == 0)
        puts (start + 7);
      start = nl + 1;
    }
    c->len -= start - c->buf;
    memmove (c->buf, start, c->len + 1);
    fflush (stdout);
    clock_gettime (CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - last.tv_sec) * 1000 >= keepalive_ms) {
      send_command (c, "trace on", false);
      last = now;
    }
    n = fill (c, 1000);
    if (n == 0)
      cli_die ("%s: the server closed the connection (has nbdkit stopped, or "
           "did this trace fall more than 256 KiB behind?)", c->path);
  }
}

/* Output modes; at most one may be asked for. */
enum mode { MODE_TEXT, MODE_JSON, MODE_PROMETHEUS, MODE_STREAMS,
            MODE_CLIENTS, MODE_COMMAND, MODE_TRACE };

static const char *const mode_option[] = {
  NULL, "--json", "--prometheus", "--streams", "--clients", "--command",
  "--trace",
};

static void
set_mode (enum mode *mode, enum mode m)
{
  if (*mode != MODE_TEXT && *mode != m)
    cli_die ("%s and %s do not go together: give one of them",
         mode_option[*mode], mode_option[m]);
  *mode = m;
}

int
main (int argc, char *argv[])
{
  static const struct option long_options[] = {
    { "json", no_argument, NULL, 'j' },
    { "prometheus", no_argument, NULL, 'p' },
    { "streams", no_argument, NULL, 's' },
    { "clients", no_argument, NULL, 'C' },
    { "command", required_argument, NULL, 'c' },
    { "watch", required_argument, NULL, 'w' },
    { "trace", no_argument, NULL, 't' },
    { "raw", no_argument, NULL, 'r' },
    { "version", no_argument, NULL, 'V' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  enum mode mode = MODE_TEXT;
  const char *command = NULL;
  double interval = 0;
  bool raw = false;
  char *end, *reply;
  struct conn conn;
  int c;

  while ((c = getopt_long (argc, argv, "jpsCc:w:trVh", long_options, NULL))
         != -1) {
    switch (c) {
    case 'j': set_mode (&mode, MODE_JSON); break;
    case 'p': set_mode (&mode, MODE_PROMETHEUS); break;
    case 's': set_mode (&mode, MODE_STREAMS); break;
    case 'C': set_mode (&mode, MODE_CLIENTS); break;
    case 'c': set_mode (&mode, MODE_COMMAND); command = optarg; break;
    case 't': set_mode (&mode, MODE_TRACE); break;
    case 'r': raw = true; break;
    case 'w':
      interval = strtod (optarg, &end);
      if (*optarg == '\0' || *end != '\0' || !(interval > 0)
          || interval > 86400)
        cli_die ("--watch %s: not a number of seconds in (0, 86400]", optarg);
      break;
    case 'V': printf ("adaptra-stat (adaptra) %s\n", PACKAGE_VERSION);
      exit (EXIT_SUCCESS);
    case 'h': usage (stdout); exit (EXIT_SUCCESS);
    default:
      fprintf (stderr, "Try '%s --help'.\n", cli_name);
      exit (EXIT_FAILURE);
    }
  }
  if (optind != argc - 1) {
    if (optind == argc)
      fprintf (stderr, "%s: give the path of the statistics socket\n",
               cli_name);
    else
      fprintf (stderr, "%s: one socket path only (extra: '%s')\n",
               cli_name, argv[optind + 1]);
    fprintf (stderr, "Try '%s --help'.\n", cli_name);
    exit (EXIT_FAILURE);
  }
  if (interval > 0 && mode != MODE_TEXT && mode != MODE_JSON)
    cli_die ("--watch and %s do not go together: --watch prints rates, as "
         "text or (with --json) JSON lines", mode_option[mode]);
  if (raw && mode != MODE_TEXT)
    cli_die ("--raw and %s do not go together: --raw changes the text output",
         mode_option[mode]);

  connect_socket (&conn, argv[optind]);
  send_command (&conn, "help", true);
  reply = take_reply (&conn, true);
  if (reply == NULL)
    exit (EXIT_FAILURE);
  if (is_error (reply))
    die_refused (&conn, reply);
  if (strncmp (reply, ADAPTRA_CONTROL_BANNER "\n",
               strlen (ADAPTRA_CONTROL_BANNER) + 1) != 0)
    cli_die ("%s is not an adaptra control socket (it answered: %.60s)",
         conn.path, reply);
  free (reply);

  if (mode == MODE_TRACE)
    trace (&conn);
  else if (interval > 0)
    watch (&conn, interval,
           mode == MODE_JSON ? WATCH_JSON : raw ? WATCH_RAW : WATCH_HUMAN);
  else {
    static const char *const commands[] = {
      [MODE_TEXT] = "stats", [MODE_JSON] = "stats json",
      [MODE_PROMETHEUS] = "metrics", [MODE_STREAMS] = "streams",
      [MODE_CLIENTS] = "clients",
    };

    if (mode == MODE_TEXT) {
      char *text = summary (&conn);

      puts ("# summary");
      print_stats (text, !raw);
      puts ("# counters and gauges");
      free (text);
    }
    reply = request (&conn, mode == MODE_COMMAND ? command : commands[mode]);
    if (mode == MODE_TEXT && !is_error (reply))
      print_stats (reply, !raw);
    else
      fputs (reply, stdout);
    if (is_error (reply))
      exit (EXIT_FAILURE);
    free (reply);
  }
  close (conn.fd);
  free (conn.buf);
  return EXIT_SUCCESS;
}
