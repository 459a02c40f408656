/* engine-scale: the engine driven directly from N threads, no sockets.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* How do reads through the engine scale with threads?
 *
 *   engine-scale [--seconds T] [--threads 1,2,4,8] [--hold] [--case C]
 *                [--one-client]
 *
 * Each thread is a client of one volume (with --one-client, all the
 * threads read through one client: one connection at queue depth N,
 * whose requests nbdkit's threads serve at once, as fio's W4-qd16
 * does; its counters are then one cache line that every read
 * writes) and reads 4 KiB at random
 * offsets (or in sequence: stream), as fast as it can, for T seconds
 * (default 2), against a backend that takes no time (it fills the
 * buffer with a byte).  Four cases, each at every thread count:
 *
 *   hit     every page is in the pool (64 MiB of a 256 MiB pool, read
 *           once before): pin, copy, unpin, each under a stripe lock of
 *           the page index;
 *   miss    a 16 GiB export through a 64 MiB pool, read-ahead off:
 *           insert, evict, fetch, complete, under the engine lock
 *           around a backend call;
 *   bypass  the same export, the volume stepped aside: a lookup under
 *           a stripe lock, the backend call, and a throughput sample
 *           under the engine lock if it is free (trylock);
 *   stream  the same export with read-ahead (adaptive) and one
 *           prefetch worker thread: each thread reads its own part of
 *           it in sequence, one stream each, so most reads are first
 *           touches of a stream's read-ahead pages near its reader
 *           (served without the engine lock); once a window its mark
 *           is taken and the next window issued, and the worker reads
 *           it, inserting and evicting its pages under the lock (its
 *           time counts in --hold's share, not in ops).
 *
 * (--case runs one of them only.)  It prints one line per case and
 * thread count: operations per second
 * in all and per thread, the speed-up over one thread, and the
 * process's CPU time per operation (user and system, from
 * CLOCK_PROCESS_CPUTIME_ID): what a read costs, which the load of a
 * shared machine moves far less than it moves the rates.  On a
 * machine with fewer cores than threads the per-thread figure falls
 * by itself; the serial fraction s of Amdahl's law, fitted from the
 * one and two thread runs as s = (2 / S2 - 1), is printed too, with
 * what it predicts for 16 and 64 threads: S(n) = 1 / (s + (1 - s) / n).
 *
 * With --hold it also times how long each thread holds the engine
 * mutex (which costs two clock reads a section, so ops/s are lower;
 * measure throughput without it).  The tool is linked with
 * -Wl,--wrap for pthread_mutex_lock, _trylock and _unlock
 * (scripts/bench/build), and learns which mutex is the engine's as the
 * one adaptra_engine_get_config takes.  Each line then shows the
 * nanoseconds held per operation and the share of the run's wall time
 * that some thread held it; at one thread that share is the serial
 * fraction s of Amdahl's law, measured, and its prediction is printed
 * beside the fitted one.  (A wait on a condition variable drops the
 * mutex inside libc and is counted as held: none of these cases waits,
 * but for a miss on a page another thread is reading.)
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
  bool sequential;              /* in sequence from base, else at random */
  uint64_t base;
  uint64_t span;                /* bytes read from base */
  uint64_t seed;
  double deadline;
  uint64_t ops;
  uint64_t held_ns;             /* engine mutex held (--hold) */
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

/* --hold: the engine's mutex, once learnt, and this thread's time
 * holding it.
 */
static bool timing;
static bool one_client;         /* --one-client */
static pthread_mutex_t *engine_lock;
static bool learning;
static _Thread_local uint64_t held_since, held_ns;

extern int __real_pthread_mutex_lock (pthread_mutex_t *m);
extern int __real_pthread_mutex_trylock (pthread_mutex_t *m);
extern int __real_pthread_mutex_unlock (pthread_mutex_t *m);

int
__wrap_pthread_mutex_lock (pthread_mutex_t *m)
{
  int r = __real_pthread_mutex_lock (m);

  if (learning)
    engine_lock = m;
  if (timing && m == engine_lock)
    held_since = monotonic_ns (NULL);
  return r;
}

int
__wrap_pthread_mutex_trylock (pthread_mutex_t *m)
{
  int r = __real_pthread_mutex_trylock (m);

  if (r == 0 && timing && m == engine_lock)
    held_since = monotonic_ns (NULL);
  return r;
}

int
__wrap_pthread_mutex_unlock (pthread_mutex_t *m)
{
  if (timing && m == engine_lock)
    held_ns += monotonic_ns (NULL) - held_since;
  return __real_pthread_mutex_unlock (m);
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
  uint64_t x = r->seed | 1, next = 0;

  while (now () < r->deadline) {
    unsigned i;

    for (i = 0; i < 256; i++) {
      uint64_t page;

      if (r->sequential)
        page = next++ % (r->span >> 12);
      else {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        page = (x * UINT64_C (2685821657736338717)) % (r->span >> 12);
      }
      if (adaptra_read (r->e, r->client, NULL, buf, sizeof buf,
                        r->base + (page << 12)) != 0) {
        fprintf (stderr, "engine-scale: read failed\n");
        exit (EXIT_FAILURE);
      }
    }
    r->ops += i;
  }
  r->held_ns = held_ns;
  return NULL;
}

/* The process's CPU time so far, in seconds. */
static double
cpu_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One case at n threads: operations per second in all; *held is
 * set to the engine mutex's held time over the wall time (--hold),
 * *cpu_ns to the CPU time per operation.
 */
static double
measure (const char *what, unsigned n, double seconds, double *held,
         double *cpu_ns)
{
  const struct adaptra_backend backend = { .pread = instant_pread };
  const struct adaptra_clock clock = { .now_ns = monotonic_ns };
  struct adaptra_config cfg;
  struct adaptra_engine *e;
  struct run *runs = calloc (n, sizeof *runs);
  pthread_t *tids = calloc (n, sizeof *tids);
  bool hit = strcmp (what, "hit") == 0;
  uint64_t size = hit ? UINT64_C (64) << 20 : UINT64_C (16) << 30;
  uint64_t total = 0, held_total = 0, off;
  unsigned char *buf = malloc (1 << 20);
  double start, elapsed, cpu_start;
  void *worker_ctx = NULL;
  char why[ADAPTRA_WHY_LEN];
  int volume, c0, err;
  unsigned i;

  adaptra_config_defaults (&cfg);
  cfg.pool_bytes = hit ? UINT64_C (256) << 20 : UINT64_C (64) << 20;
  cfg.workers = 0;
  cfg.profile_workers = 0;
  cfg.mode = strcmp (what, "stream") == 0
    ? ADAPTRA_MODE_ADAPTIVE : ADAPTRA_MODE_OFF;
  cfg.bypass = strcmp (what, "bypass") == 0
    ? ADAPTRA_BYPASS_ALWAYS : ADAPTRA_BYPASS_NEVER;
  if (!runs || !tids || !buf) {
    perror ("engine-scale");
    exit (EXIT_FAILURE);
  }
  if (adaptra_engine_new (&cfg, &backend, &clock, &e, why, sizeof why)) {
    fprintf (stderr, "engine-scale: %s\n", why);
    exit (EXIT_FAILURE);
  }
  if ((err = adaptra_volume_open (e, "", size, 0, &volume)) != 0 ||
      (err = adaptra_client_open (e, volume, "warm-up", &c0)) != 0) {
    fprintf (stderr, "engine-scale: %s\n", strerror (err));
    exit (EXIT_FAILURE);
  }
  learning = true;
  adaptra_engine_get_config (e, &cfg);
  learning = false;
  if (cfg.mode == ADAPTRA_MODE_ADAPTIVE &&
      (adaptra_volume_set_contexts (e, volume, 1, &worker_ctx) != 0 ||
       adaptra_workers_start (e, 1, 0) != 0)) {
    perror ("engine-scale: workers");
    exit (EXIT_FAILURE);
  }
  for (off = 0; hit && off < size; off += 1 << 20)
    adaptra_read (e, c0, NULL, buf, 1 << 20, off);
  for (i = 0; i < n; i++) {
    runs[i] = (struct run) {
      .e = e,
      .sequential = cfg.mode == ADAPTRA_MODE_ADAPTIVE,
      .span = size, .seed = 0x9e3779b97f4a7c15 * (i + 1),
    };
    if (one_client && i > 0)
      runs[i].client = runs[0].client;
    else if ((err = adaptra_client_open (e, volume, "reader",
                                         &runs[i].client)) != 0) {
      fprintf (stderr, "engine-scale: %s\n", strerror (err));
      exit (EXIT_FAILURE);
    }
    if (runs[i].sequential) {
      runs[i].span = size / n;
      runs[i].base = i * runs[i].span;
    }
  }
  start = now ();
  cpu_start = cpu_now ();
  for (i = 0; i < n; i++) {
    runs[i].deadline = start + seconds;
    pthread_create (&tids[i], NULL, reader, &runs[i]);
  }
  for (i = 0; i < n; i++) {
    pthread_join (tids[i], NULL);
    total += runs[i].ops;
    held_total += runs[i].held_ns;
  }
  elapsed = now () - start;
  *cpu_ns = total ? (cpu_now () - cpu_start) * 1e9 / total : 0;
  adaptra_workers_stop (e);
  adaptra_engine_free (e);
  free (runs);
  free (tids);
  free (buf);
  *held = held_total / 1e9 / elapsed;
  return total / elapsed;
}

int
main (int argc, char **argv)
{
  static const char *const cases[] = { "hit", "miss", "bypass", "stream" };
  const size_t ncases = sizeof cases / sizeof cases[0];
  unsigned threads[16] = { 1, 2, 4, 8 }, nthreads = 4, t;
  size_t c, first = 0, end = ncases;
  const char *only = NULL;
  double held, held_one = 0, cpu_ns;
  double seconds = 2;
  int i;

  for (i = 1; i < argc; i++) {
    if (strcmp (argv[i], "--hold") == 0)
      timing = true;
    else if (strcmp (argv[i], "--one-client") == 0)
      one_client = true;
    else if (strcmp (argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof (argv[++i]);
    else if (strcmp (argv[i], "--case") == 0 && i + 1 < argc)
      only = argv[++i];
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
               "[--threads 1,2,4,8] [--hold] "
               "[--case hit|miss|bypass|stream] [--one-client]\n");
      return EXIT_FAILURE;
    }
  }
  if (only) {
    while (first < ncases && strcmp (only, cases[first]) != 0)
      first++;
    if (first == ncases) {
      fprintf (stderr, "engine-scale: --case %s: expected hit, miss, "
               "bypass or stream\n", only);
      return EXIT_FAILURE;
    }
    end = first + 1;
  }
  printf ("%-7s %7s %12s %12s %8s %10s", "case", "threads", "ops/s",
          "ops/s/thread", "speedup", "cpu ns/op");
  printf (timing ? " %10s %6s\n" : "\n", "held ns/op", "held");
  for (c = first; c < end; c++) {
    double one = 0, two = 0;

    for (t = 0; t < nthreads; t++) {
      double ops = measure (cases[c], threads[t], seconds, &held, &cpu_ns);

      if (threads[t] == 1) {
        one = ops;
        held_one = held;
      }
      if (threads[t] == 2)
        two = ops;
      printf ("%-7s %7u %12.0f %12.0f %8.2f %10.1f", cases[c], threads[t],
              ops, ops / threads[t], one > 0 ? ops / one : 0, cpu_ns);
      if (timing)
        printf (" %10.1f %6.3f", held * 1e9 / ops, held);
      printf ("\n");
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
    if (timing && one > 0) {
      double s = held_one;

      printf ("%-7s measured lock-held fraction %.3f at 1 thread: Amdahl "
              "predicts %.1fx at 16 threads, %.1fx at 64\n", cases[c], s,
              1 / (s + (1 - s) / 16), 1 / (s + (1 - s) / 64));
    }
  }
  return 0;
}
