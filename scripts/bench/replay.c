/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* replay: replays the reads of a recorded guest trace against an NBD
 * server, closed loop, keeping the trace's causality.
 *
 *   replay TRACE.csv[.gz] URI
 *
 * TRACE is what scripts/bench/guest/nbdlog2trace writes: a header,
 * then one request a line, "t_ms,op,offset,length,conn,dur_ms", in
 * the order the server saw them start.  Only reads (op R) are sent;
 * the other requests (writes, flushes, block status) are dropped and
 * count as done at once, so the replay never changes the export.
 *
 * Dependency mode ("dep"): a read is sent only when every read sent
 * before it in the trace has been sent, and every request that had
 * finished before it started in the trace has finished here.  A guest
 * waits for the blocks it needs (the inode before the file, the
 * library before the program that maps it) and this is what the trace
 * shows of those waits; reads that overlapped in the trace still
 * overlap, and the client's think time is dropped, so the replay runs
 * as fast as the server lets it.  Each connection of the trace gets a
 * connection of its own, its reads sent in its order.
 *
 * Prints one line:
 *   RESULT wall_s=S reads=N skipped=N bytes=N seconds=S requests=N
 *          lat_mean_us=X lat_p99_us=X late=0
 * (wall_s and seconds: from before the connections' handshakes to the
 * last reply; bytes: read; skipped: requests that are not reads).
 * Exits 1 if a read fails.
 */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnbd.h>
#include <zlib.h>

#include "benchlib.h"

struct request {
  double start_ms, end_ms;      /* in the trace */
  uint64_t offset;
  uint32_t length;
  unsigned conn;                /* index into conns */
  bool read;
  bool done;
  size_t deps;                  /* requests (in end order) that had
                                   ended before this one started */
  double sent;                  /* bench_now () when sent */
};

struct conn {
  long id;                      /* the trace's connection number */
  struct nbd_handle *nbd;
  size_t inflight;
};

static struct request *reqs;
static size_t nreqs;
static struct conn *conns;
static size_t nconns;
static size_t *by_end;          /* request indices sorted by end_ms */
static size_t ended;            /* by_end[0 .. ended) are all done */
static size_t ndone;
static int failures;
static struct latency_log latencies;
static uint64_t bytes_read;

static void *
xrealloc (void *p, size_t size)
{
  p = realloc (p, size);
  if (p == NULL) {
    perror ("replay");
    exit (1);
  }
  return p;
}

static unsigned
conn_index (long id)
{
  size_t i;

  for (i = 0; i < nconns; i++)
    if (conns[i].id == id)
      return i;
  conns = xrealloc (conns, (nconns + 1) * sizeof *conns);
  conns[nconns] = (struct conn) { .id = id };
  return nconns++;
}

static void
load (const char *path)
{
  gzFile f = gzopen (path, "r");  /* reads plain files too */
  char line[256], op;
  double t, dur;
  uint64_t offset, length;
  long conn;
  int at[2];                    /* where offset and length start */
  size_t cap = 0, lineno = 0;

  if (f == NULL) {
    fprintf (stderr, "replay: %s: %s\n", path, strerror (errno));
    exit (1);
  }
  while (gzgets (f, line, sizeof line) != NULL) {
    if (lineno++ == 0 && strncmp (line, "t_ms,", 5) == 0)
      continue;
    /* scanf's %u conversions take a sign ("-4096" is 2^64 - 4096):
     * where offset and length start, after blanks, is no '-'.
     */
    if (sscanf (line, "%lf,%c,%n%" SCNu64 ",%n%" SCNu64 ",%ld,%lf",
                &t, &op, &at[0], &offset, &at[1], &length, &conn,
                &dur) != 6 ||
        line[at[0] + strspn (line + at[0], " \t")] == '-' ||
        line[at[1] + strspn (line + at[1], " \t")] == '-' ||
        length > UINT32_MAX || !(dur >= 0)) {
      fprintf (stderr, "replay: %s:%zu: not t_ms,op,offset,length,conn,"
               "dur_ms (offset and length without a sign)\n", path, lineno);
      exit (1);
    }
    if (nreqs == cap) {
      cap = cap ? 2 * cap : 4096;
      reqs = xrealloc (reqs, cap * sizeof *reqs);
    }
    reqs[nreqs++] = (struct request) {
      .start_ms = t, .end_ms = t + dur, .offset = offset,
      .length = length, .conn = conn_index (conn),
      .read = op == 'R' && length > 0,
    };
  }
  gzclose (f);
}

static int
by_end_cmp (const void *a, const void *b)
{
  double x = reqs[*(const size_t *) a].end_ms;
  double y = reqs[*(const size_t *) b].end_ms;

  return (x > y) - (x < y);
}

/* deps of each request: how many requests ended strictly before it
 * started.  Such a request started before it too, so it comes earlier
 * in the trace and the replay cannot wait on a request not yet sent.
 */
static void
find_deps (void)
{
  size_t i, k = 0;

  by_end = xrealloc (NULL, (nreqs + 1) * sizeof *by_end);
  for (i = 0; i < nreqs; i++)
    by_end[i] = i;
  qsort (by_end, nreqs, sizeof *by_end, by_end_cmp);
  /* Requests are in start order, so deps only grows. */
  for (i = 0; i < nreqs; i++) {
    while (k < nreqs && reqs[by_end[k]].end_ms < reqs[i].start_ms)
      k++;
    reqs[i].deps = k;
  }
}

static void
finish (size_t i)
{
  reqs[i].done = true;
  ndone++;
  while (ended < nreqs && reqs[by_end[ended]].done)
    ended++;
}

static int
read_done (void *user_data, int *error)
{
  size_t i = (uintptr_t) user_data;
  struct request *r = &reqs[i];

  if (*error) {
    if (failures++ < 5)
      fprintf (stderr, "replay: read of %" PRIu32 " bytes at %" PRIu64
               " failed: %s\n", r->length, r->offset, strerror (*error));
  }
  else {
    latency_log_add (&latencies, bench_now () - r->sent);
    bytes_read += r->length;
  }
  conns[r->conn].inflight--;
  finish (i);
  return 1;                     /* retire the command */
}

static void
die_nbd (void)
{
  fprintf (stderr, "replay: %s\n", nbd_get_error ());
  exit (1);
}

/* Wait for progress on the connections with reads in flight. */
static void
wait_some (void)
{
  struct pollfd fds[nconns];
  size_t map[nconns], n = 0, i;

  for (i = 0; i < nconns; i++) {
    unsigned dir;
    int fd;

    if (conns[i].inflight == 0)
      continue;
    fd = nbd_aio_get_fd (conns[i].nbd);
    if (fd == -1)
      die_nbd ();
    dir = nbd_aio_get_direction (conns[i].nbd);
    fds[n] = (struct pollfd) {
      .fd = fd,
      .events = ((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
                ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0),
    };
    map[n++] = i;
  }
  if (poll (fds, n, -1) == -1) {
    if (errno == EINTR)
      return;
    perror ("replay: poll");
    exit (1);
  }
  for (i = 0; i < n; i++) {
    struct nbd_handle *nbd = conns[map[i]].nbd;

    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
        nbd_aio_notify_read (nbd) == -1)
      die_nbd ();
    if ((fds[i].revents & POLLOUT) && nbd_aio_notify_write (nbd) == -1)
      die_nbd ();
  }
}

int
main (int argc, char **argv)
{
  size_t next = 0, skipped = 0, reads = 0, i;
  uint32_t longest = 0;
  char *buf;
  double start, wall;

  if (argc != 3) {
    fprintf (stderr, "usage: replay TRACE.csv[.gz] URI\n");
    return 2;
  }
  load (argv[1]);
  find_deps ();
  for (i = 0; i < nreqs; i++)
    if (reqs[i].read && reqs[i].length > longest)
      longest = reqs[i].length;
  /* Every read lands in the same buffer: the bytes are not looked at. */
  buf = xrealloc (NULL, longest ? longest : 1);
  /* The clock starts before the handshakes: a guest's boot waits for
   * them too, and a server that is slow to let a connection in (one
   * guest of a storm) must show in its time.
   */
  start = bench_now ();
  for (i = 0; i < nconns; i++) {
    conns[i].nbd = nbd_create ();
    if (conns[i].nbd == NULL || nbd_connect_uri (conns[i].nbd, argv[2]) == -1)
      die_nbd ();
  }

  while (ndone < nreqs) {
    while (next < nreqs && ended >= reqs[next].deps) {
      struct request *r = &reqs[next];

      if (!r->read) {
        skipped++;
        finish (next++);
        continue;
      }
      r->sent = bench_now ();
      if (nbd_aio_pread (conns[r->conn].nbd, buf, r->length, r->offset,
                         (nbd_completion_callback) {
                           .callback = read_done,
                           .user_data = (void *) (uintptr_t) next,
                         }, 0) == -1)
        die_nbd ();
      conns[r->conn].inflight++;
      reads++;
      next++;
    }
    if (ndone < nreqs)
      wait_some ();
  }
  wall = bench_now () - start;

  for (i = 0; i < nconns; i++) {
    nbd_shutdown (conns[i].nbd, 0);
    nbd_close (conns[i].nbd);
  }
  printf ("RESULT wall_s=%.3f reads=%zu skipped=%zu ", wall, reads, skipped);
  bench_print_result (bytes_read, wall, &latencies, 0);
  free (buf);
  free (by_end);
  free (reqs);
  free (conns);
  latency_log_free (&latencies);
  return failures ? 1 : 0;
}
