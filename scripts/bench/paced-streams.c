/* paced-streams.c: workload W5: many paced sequential streams.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Workload W5: many slow sequential streams, each paced at a fixed
 * byte rate, spread over a few NBD connections.
 *
 *   paced-streams [--streams N] [--connections C] [--rate BYTES_PER_S]
 *                 [--block SIZE] [--group G] [--stagger SECS]
 *                 [--spread SECS] [--seconds T] [--seed S] URI
 *
 * The export is cut into N equal regions; stream s reads region s
 * sequentially, BLOCK bytes every BLOCK/RATE seconds (its period), and
 * starts over at the region's start when it reaches the end.
 *
 * Streams are grouped into "readers" of G streams.  A reader visits
 * its G streams round-robin, one read every period/G, and starts at
 * reader_index * STAGGER + a random delay in [0, SPREAD).  Every reader
 * is served by one connection; readers are dealt to connections
 * round-robin and each connection is driven by its own thread with
 * asynchronous reads, so a slow backend delays only the stream whose
 * read is in flight.
 *
 * Two presets matter:
 *   W5a: --streams 200 --connections 4 --rate 16K --block 4K
 *        (G = 1, every stream an independent reader, random phase)
 *   W5b: the seed's read_threads test rewritten for NBD: 80 readers
 *        of 10 streams at 1 KB/s each, 4 KiB reads every 0.4 s per
 *        reader, readers started 10 ms apart after a random 0-10 s
 *        sleep:
 *        --streams 800 --group 10 --rate 1K --block 4K --stagger 0.01
 *        --spread 10 --connections 8
 *
 * A read issued more than one period behind its schedule counts as
 * "late": the backend (or the filter) could not keep up.  The result
 * line is bench_print_result's (latencies are per read), followed by
 * "offered=BYTES": what the schedule asked for before the stop, which
 * is less than streams x rate x T when readers start late.
 */

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <libnbd.h>

#include "benchlib.h"

struct stream {
  uint64_t base;                /* first byte of the stream's region */
  uint64_t position;            /* next read, relative to base */
  double due;                   /* bench_now () time of the next read */
  double started;               /* issue time of the read in flight */
  bool busy;                    /* a read is in flight */
  char *buf;                    /* BLOCK bytes */
  struct connection *conn;      /* the connection serving this stream */
};

struct connection {
  struct nbd_handle *nbd;
  struct stream **streams;      /* the streams this connection serves */
  size_t nr_streams;
  struct latency_log log;       /* latencies of completed reads */
  uint64_t bytes;               /* completed bytes */
  uint64_t late;                /* reads issued > 1 period late */
  pthread_t thread;
};

/* Parameters shared read-only by every thread. */
static uint64_t block = 4096;   /* bytes per read */
static uint64_t region;         /* bytes per stream region */
static double period;           /* seconds between reads of a stream */
static double stop_time;        /* stop issuing at this bench_now () */

static void
die_nbd (const char *what)
{
  fprintf (stderr, "paced-streams: %s: %s\n", what, nbd_get_error ());
  exit (EXIT_FAILURE);
}

static int
read_complete (void *opaque, int *error)
{
  struct stream *stream = opaque;
  struct connection *conn = stream->conn;

  if (*error != 0) {
    fprintf (stderr, "paced-streams: read failed: errno %d\n", *error);
    exit (EXIT_FAILURE);
  }
  latency_log_add (&conn->log, bench_now () - stream->started);
  conn->bytes += block;
  stream->busy = false;
  return 1;                     /* retire the command */
}

static void
issue_read (struct stream *stream, double now)
{
  nbd_completion_callback done = { .callback = read_complete,
                                   .user_data = stream };

  if (now - stream->due > period)
    stream->conn->late++;
  stream->busy = true;
  stream->started = now;
  if (nbd_aio_pread (stream->conn->nbd, stream->buf, block,
                     stream->base + stream->position, done, 0) == -1)
    die_nbd ("nbd_aio_pread");
  stream->position = (stream->position + block) % region;
  /* Keep the schedule, but never try to catch up with a burst: a
   * stream more than a period behind restarts its schedule from now.
   */
  stream->due += period;
  if (stream->due < now)
    stream->due = now + period;
}

static void *
connection_thread (void *opaque)
{
  struct connection *conn = opaque;

  for (;;) {
    double now = bench_now (), next_due = now + 0.1;
    size_t i;
    int timeout_ms;

    if (now >= stop_time)
      break;
    for (i = 0; i < conn->nr_streams; i++) {
      struct stream *stream = conn->streams[i];

      if (stream->busy)
        continue;
      if (stream->due <= now)
        issue_read (stream, now);
      next_due = fmin (next_due, stream->due);
    }
    timeout_ms = (int) ceil ((fmin (next_due, stop_time) - now) * 1000);
    if (nbd_poll (conn->nbd, timeout_ms > 0 ? timeout_ms : 0) == -1)
      die_nbd ("nbd_poll");
  }
  while (nbd_aio_in_flight (conn->nbd) > 0) {
    if (nbd_poll (conn->nbd, -1) == -1)
      die_nbd ("nbd_poll");
  }
  return NULL;
}

static void
usage (void)
{
  fprintf (stderr,
           "usage: paced-streams [--streams N] [--connections C] "
           "[--rate BYTES_PER_S]\n"
           "                     [--block SIZE] [--group G] "
           "[--stagger SECS] [--spread SECS]\n"
           "                     [--seconds T] [--seed S] URI\n");
  exit (EXIT_FAILURE);
}

int
main (int argc, char *argv[])
{
  static const struct option longopts[] = {
    { "streams",     required_argument, NULL, 'n' },
    { "connections", required_argument, NULL, 'c' },
    { "rate",        required_argument, NULL, 'r' },
    { "block",       required_argument, NULL, 'b' },
    { "group",       required_argument, NULL, 'g' },
    { "stagger",     required_argument, NULL, 'a' },
    { "spread",      required_argument, NULL, 'p' },
    { "seconds",     required_argument, NULL, 't' },
    { "seed",        required_argument, NULL, 'e' },
    { NULL, 0, NULL, 0 }
  };
  uint64_t nr_streams = 200, nr_conns = 4, rate = 16384, group = 1;
  uint64_t seed = 1, bytes = 0, late = 0, offered = 0, s, c;
  double stagger = 0, spread = -1, seconds = 10, start, reader_start = 0;
  struct latency_log log = { 0 };
  struct connection *conns;
  struct stream *streams;
  int64_t size;
  int opt;

  while ((opt = getopt_long (argc, argv, "", longopts, NULL)) != -1) {
    int r = 0;

    switch (opt) {
    case 'n': r = bench_parse_size ("--streams", optarg, &nr_streams); break;
    case 'c': r = bench_parse_size ("--connections", optarg, &nr_conns); break;
    case 'r': r = bench_parse_size ("--rate", optarg, &rate); break;
    case 'b': r = bench_parse_size ("--block", optarg, &block); break;
    case 'g': r = bench_parse_size ("--group", optarg, &group); break;
    case 'a': r = bench_parse_number ("--stagger", optarg, &stagger); break;
    case 'p': r = bench_parse_number ("--spread", optarg, &spread); break;
    case 't': r = bench_parse_number ("--seconds", optarg, &seconds); break;
    case 'e': r = bench_parse_size ("--seed", optarg, &seed); break;
    default: usage ();
    }
    if (r == -1)
      usage ();
  }
  if (optind != argc - 1 || nr_streams == 0 || nr_conns == 0 ||
      rate == 0 || block == 0 || group == 0 || nr_streams % group != 0)
    usage ();
  period = (double) block / rate;
  if (spread < 0)
    spread = period;            /* default: a random phase per reader */

  conns = calloc (nr_conns, sizeof *conns);
  streams = calloc (nr_streams, sizeof *streams);
  if (conns == NULL || streams == NULL) {
    perror ("calloc");
    exit (EXIT_FAILURE);
  }
  for (c = 0; c < nr_conns; c++) {
    conns[c].nbd = nbd_create ();
    if (conns[c].nbd == NULL ||
        nbd_connect_uri (conns[c].nbd, argv[optind]) == -1)
      die_nbd ("connect");
    conns[c].streams = calloc (nr_streams, sizeof *conns[c].streams);
    if (conns[c].streams == NULL) {
      perror ("calloc");
      exit (EXIT_FAILURE);
    }
  }
  size = nbd_get_size (conns[0].nbd);
  if (size == -1)
    die_nbd ("nbd_get_size");
  region = (uint64_t) size / nr_streams / block * block;
  if (region == 0) {
    fprintf (stderr, "paced-streams: export too small for %" PRIu64
             " streams\n", nr_streams);
    exit (EXIT_FAILURE);
  }

  srand ((unsigned) seed);
  start = bench_now ();
  stop_time = start + seconds;
  for (s = 0; s < nr_streams; s++) {
    uint64_t reader = s / group, in_group = s % group;
    struct connection *conn = &conns[reader % nr_conns];

    if (in_group == 0)
      reader_start = start + reader * stagger +
        spread * (rand () / (RAND_MAX + 1.0));
    streams[s].base = s * region;
    streams[s].due = reader_start + in_group * period / group;
    if (streams[s].due < stop_time)
      offered += block * (1 + (uint64_t) ((stop_time - streams[s].due) /
                                          period));
    streams[s].conn = conn;
    streams[s].buf = malloc (block);
    if (streams[s].buf == NULL) {
      perror ("malloc");
      exit (EXIT_FAILURE);
    }
    conn->streams[conn->nr_streams++] = &streams[s];
  }

  for (c = 0; c < nr_conns; c++) {
    int err = pthread_create (&conns[c].thread, NULL, connection_thread,
                              &conns[c]);
    if (err != 0) {
      fprintf (stderr, "paced-streams: pthread_create: error %d\n", err);
      exit (EXIT_FAILURE);
    }
  }
  for (c = 0; c < nr_conns; c++) {
    pthread_join (conns[c].thread, NULL);
    bytes += conns[c].bytes;
    late += conns[c].late;
    latency_log_merge (&log, &conns[c].log);
  }
  bench_print_result (bytes, bench_now () - start, &log, late);
  printf ("offered=%" PRIu64 "\n", offered);

  for (c = 0; c < nr_conns; c++) {
    nbd_shutdown (conns[c].nbd, 0);
    nbd_close (conns[c].nbd);
    free (conns[c].streams);
  }
  for (s = 0; s < nr_streams; s++)
    free (streams[s].buf);
  free (streams);
  free (conns);
  latency_log_free (&log);
  return EXIT_SUCCESS;
}
