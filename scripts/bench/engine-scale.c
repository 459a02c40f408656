/* engine-scale: the engine driven directly from N threads, no sockets.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* How do reads through the engine scale with threads?
 *
 *   engine-scale [--seconds T] [--threads 1,2,4,8] [--size SIZE]
 *
 * Each thread is a client of one volume and reads 4 KiB at random
 * offsets, as fast as it can, for T seconds (default 2), against a
 * backend that takes no time (it fills the buffer with a byte).  Three
 * cases, each at every thread count:
 *
 *   hit     every page is in the pool (64 MiB of a 256 MiB pool, read
 *           once before): pin, copy, unpin, under the engine lock;
 *   miss    a 16 GiB export through a 64 MiB pool, read-ahead off:
 *           insert, evict, fetch, complete, under the engine lock
 *           around a backend call;
 *   bypass  the same export, the volume stepped aside: a lookup under
 *           the lock, the backend call without it.
 *
 * It prints one line per case and thread count: operations per second
 * in all and per thread, and the speed-up over one thread.  On a
 * machine with fewer cores than threads the per-thread figure falls
 * by itself; the serial fraction s of Amdahl's law, fitted from the
 * one and two thread runs as s = (2 / S2 - 1), is printed too, with
 * what it predicts for 16 and 64 threads: S(n) = 1 / (s + (1 - s) / n).
 * Build: scripts/bench/build (after make).
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adaptra/engine.h"

struct run {
  struct adaptra_engine *e;
  int client;
  uint64_t span;                /* bytes read at random from 0 */
  uint64_t seed;
  double deadline;
  uint64_t ops;
};

static double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t
monotonic_ns (void *opaque)
{
  struct timespec ts;

  (void) opaque;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * UINT64_C (1000000000) + ts.tv_nsec;
}

static int
instant_pread (void *ctx, void *buf, uint32_t count, uint64_t offset)
{
  (void) ctx;
  memset (buf, (int) (offset >> 12), count);
  return 0;
}

static void *
reader (void *arg)
{
  struct run *r = arg;
  unsigned char buf[4096];
  uint64_t x = r->seed | 1;

  while (now () < r->deadline) {
    unsigned i;

    for (i = 0; i < 256; i++) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      if (adaptra_read (r->e, r->client, NULL, buf, sizeof buf,
                        ((x * UINT64_C (2685821657736338717)) % (r->span >> 12))
                        << 12) != 0) {
        fprintf (stderr, "engine-scale: read failed\n");
        exit (EXIT_FAILURE);
      }
    }
    r->ops += i;
  }
  return NULL;
}

/* One case at n threads: operations per second in all. */
static double
measure (const char *what, unsigned n, double seconds)
{
  const struct adaptra_backend backend = { .pread = instant_pread };
  const struct adaptra_clock clock = { .now_ns = monotonic_ns };
  struct adaptra_config cfg;
  struct adaptra_engine *e;
  struct run *runs = calloc (n, sizeof *runs);
  pthread_t *tids = calloc (n, sizeof *tids);
  bool hit = strcmp (what, "hit") == 0;
  uint64_t size = hit ? UINT64_C (64) << 20 : UINT64_C (16) << 30;
  uint64_t total = 0, off;
  unsigned char *buf = malloc (1 << 20);
  double start;
  int volume, c0;
  unsigned i;

  adaptra_config_defaults (&cfg);
  cfg.pool_bytes = hit ? UINT64_C (256) << 20 : UINT64_C (64) << 20;
  cfg.workers = 0;
  cfg.mode = ADAPTRA_MODE_OFF;
  cfg.bypass = strcmp (what, "bypass") == 0
    ? ADAPTRA_BYPASS_ALWAYS : ADAPTRA_BYPASS_NEVER;
  e = adaptra_engine_new (&cfg, &backend, &clock);
  if (!e || !runs || !tids || !buf ||
      (volume = adaptra_volume_open (e, "", size, 0)) < 0 ||
      (c0 = adaptra_client_open (e, volume, "warm-up")) < 0) {
    perror ("engine-scale");
    exit (EXIT_FAILURE);
  }
  for (off = 0; hit && off < size; off += 1 << 20)
    adaptra_read (e, c0, NULL, buf, 1 << 20, off);
  for (i = 0; i < n; i++) {
    runs[i] = (struct run) {
      .e = e, .client = adaptra_client_open (e, volume, "reader"),
      .span = size, .seed = 0x9e3779b97f4a7c15 * (i + 1),
    };
  }
  start = now ();
  for (i = 0; i < n; i++) {
    runs[i].deadline = start + seconds;
    pthread_create (&tids[i], NULL, reader, &runs[i]);
  }
  for (i = 0; i < n; i++) {
    pthread_join (tids[i], NULL);
    total += runs[i].ops;
  }
  adaptra_engine_free (e);
  free (runs);
  free (tids);
  free (buf);
  return total / (now () - start);
}

int
main (int argc, char **argv)
{
  static const char *const cases[] = { "hit", "miss", "bypass" };
  unsigned threads[16] = { 1, 2, 4, 8 }, nthreads = 4, c, t;
  double seconds = 2;
  int i;

  for (i = 1; i < argc; i++) {
    if (strcmp (argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof (argv[++i]);
    else if (strcmp (argv[i], "--threads") == 0 && i + 1 < argc) {
      char *p = argv[++i];

      for (nthreads = 0; *p && nthreads < 16; nthreads++) {
        threads[nthreads] = (unsigned) strtoul (p, &p, 10);
        if (*p == ',')
          p++;
      }
    }
    else {
      fprintf (stderr, "usage: engine-scale [--seconds T] "
               "[--threads 1,2,4,8]\n");
      return EXIT_FAILURE;
    }
  }
  printf ("%-7s %7s %12s %12s %8s\n", "case", "threads", "ops/s",
          "ops/s/thread", "speedup");
  for (c = 0; c < 3; c++) {
    double one = 0, two = 0;

    for (t = 0; t < nthreads; t++) {
      double ops = measure (cases[c], threads[t], seconds);

      if (threads[t] == 1)
        one = ops;
      if (threads[t] == 2)
        two = ops;
      printf ("%-7s %7u %12.0f %12.0f %8.2f\n", cases[c], threads[t], ops,
              ops / threads[t], one > 0 ? ops / one : 0);
      fflush (stdout);
    }
    if (one > 0 && two > 0) {
      double s = 2 / (two / one) - 1;

      if (s < 0)
        s = 0;
      if (s > 1)
        s = 1;
      printf ("%-7s serial fraction %.3f: Amdahl predicts %.1fx at 16 "
              "threads, %.1fx at 64\n", cases[c], s,
              1 / (s + (1 - s) / 16), 1 / (s + (1 - s) / 64));
    }
  }
  return 0;
}
