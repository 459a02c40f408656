/* interleave.c: workload W3: streams interleaved on one connection.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Workload W3: several sequential streams interleaved round-robin on
 * ONE NBD connection, the pattern of `diff a b` or of a guest reading
 * a few files at once through one disk.
 *
 *   interleave [--streams N] [--block SIZE] [--depth D] [--seconds T] URI
 *
 * The export is cut into N equal regions and stream k reads region k
 * from its start in BLOCK-sized reads.  Requests are issued in strict
 * round-robin order (stream 0, 1, ..., N-1, 0, ...), with at most D in
 * flight (default 1: a synchronous reader).  A stream that reaches the
 * end of its region starts over at the region's start.  The tool stops
 * issuing after T seconds and prints the bench_print_result line.
 *
 * Pair it with a server, e.g.:
 *   nbdkit -U - file IMG --run 'interleave --streams 8 "$uri"'
 */

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <libnbd.h>

#include "benchlib.h"

/* One request slot: at most DEPTH of them are in flight. */
struct slot {
  char *buf;                    /* BLOCK bytes */
  double started;               /* bench_now () at issue */
  bool busy;                    /* a request is in flight */
  struct latency_log *log;      /* where the completion goes */
  uint64_t *bytes_done;         /* completed bytes, shared */
  uint64_t block;               /* bytes of this request */
};

static int
slot_complete (void *opaque, int *error)
{
  struct slot *slot = opaque;

  if (*error != 0) {
    fprintf (stderr, "interleave: read failed: errno %d\n", *error);
    exit (EXIT_FAILURE);
  }
  latency_log_add (slot->log, bench_now () - slot->started);
  *slot->bytes_done += slot->block;
  slot->busy = false;
  return 1;                     /* retire the command */
}

static void
usage (void)
{
  fprintf (stderr,
           "usage: interleave [--streams N] [--block SIZE] [--depth D] "
           "[--seconds T] URI\n");
  exit (EXIT_FAILURE);
}

int
main (int argc, char *argv[])
{
  static const struct option longopts[] = {
    { "streams", required_argument, NULL, 's' },
    { "block",   required_argument, NULL, 'b' },
    { "depth",   required_argument, NULL, 'd' },
    { "seconds", required_argument, NULL, 't' },
    { NULL, 0, NULL, 0 }
  };
  uint64_t streams = 8, block = 65536, depth = 1, region, bytes_done = 0;
  uint64_t *position, next_stream = 0;
  double seconds = 10, start, stop;
  struct latency_log log = { 0 };
  struct nbd_handle *nbd;
  struct slot *slots;
  int64_t size;
  uint64_t i;
  int c;

  while ((c = getopt_long (argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 's':
      if (bench_parse_size ("--streams", optarg, &streams) == -1)
        usage ();
      break;
    case 'b':
      if (bench_parse_size ("--block", optarg, &block) == -1)
        usage ();
      break;
    case 'd':
      if (bench_parse_size ("--depth", optarg, &depth) == -1)
        usage ();
      break;
    case 't':
      if (bench_parse_number ("--seconds", optarg, &seconds) == -1)
        usage ();
      break;
    default:
      usage ();
    }
  }
  if (optind != argc - 1 || streams == 0 || block == 0 || depth == 0)
    usage ();

  nbd = nbd_create ();
  if (nbd == NULL || nbd_connect_uri (nbd, argv[optind]) == -1) {
    fprintf (stderr, "interleave: %s\n", nbd_get_error ());
    exit (EXIT_FAILURE);
  }
  size = nbd_get_size (nbd);
  if (size == -1) {
    fprintf (stderr, "interleave: %s\n", nbd_get_error ());
    exit (EXIT_FAILURE);
  }
  region = (uint64_t) size / streams / block * block;
  if (region == 0) {
    fprintf (stderr, "interleave: export too small for %" PRIu64
             " streams of %" PRIu64 "-byte reads\n", streams, block);
    exit (EXIT_FAILURE);
  }

  position = calloc (streams, sizeof *position);
  slots = calloc (depth, sizeof *slots);
  if (position == NULL || slots == NULL) {
    perror ("calloc");
    exit (EXIT_FAILURE);
  }
  for (i = 0; i < depth; i++) {
    slots[i].buf = malloc (block);
    if (slots[i].buf == NULL) {
      perror ("malloc");
      exit (EXIT_FAILURE);
    }
    slots[i].log = &log;
    slots[i].bytes_done = &bytes_done;
    slots[i].block = block;
  }

  start = bench_now ();
  stop = start + seconds;
  for (;;) {
    bool issuing = bench_now () < stop, any_busy = false;

    for (i = 0; i < depth; i++) {
      struct slot *slot = &slots[i];
      nbd_completion_callback done = { .callback = slot_complete,
                                       .user_data = slot };
      uint64_t k, offset;

      if (!slot->busy && issuing) {
        k = next_stream;
        next_stream = (next_stream + 1) % streams;
        offset = k * region + position[k];
        position[k] = (position[k] + block) % region;
        slot->busy = true;
        slot->started = bench_now ();
        if (nbd_aio_pread (nbd, slot->buf, block, offset, done, 0) == -1) {
          fprintf (stderr, "interleave: %s\n", nbd_get_error ());
          exit (EXIT_FAILURE);
        }
      }
      any_busy |= slot->busy;
    }
    if (!any_busy)
      break;
    if (nbd_poll (nbd, -1) == -1) {
      fprintf (stderr, "interleave: %s\n", nbd_get_error ());
      exit (EXIT_FAILURE);
    }
  }
  bench_print_result (bytes_done, bench_now () - start, &log, 0);

  nbd_shutdown (nbd, 0);
  nbd_close (nbd);
  for (i = 0; i < depth; i++)
    free (slots[i].buf);
  free (slots);
  free (position);
  latency_log_free (&log);
  return EXIT_SUCCESS;
}
