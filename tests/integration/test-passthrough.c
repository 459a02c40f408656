/* test-passthrough.c: bytes through the filter equal the plugin's.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Bytes through the filter equal the plugin's.
 *
 * For the memory and file plugins: two connections at once, each
 * owning half of the export, issue a seeded random mix of reads,
 * writes, zeroes and trims at unaligned offsets and sizes, checking
 * every read against a shadow copy kept here.  Then each connection
 * reads the other's half, and for the file plugin the whole export is
 * also compared with the file itself, which is what the plugin holds.
 */

#include <config.h>

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define EXPORT_SIZE (8 * 1024 * 1024 + 777)  /* odd size: partial last page */
#define MAX_IO (96 * 1024)
#define OPS_PER_CONNECTION 400

struct worker {
  struct nbd_handle *nbd;
  unsigned char *shadow;        /* the whole export's expected bytes */
  uint64_t lo, hi;              /* this worker's region [lo, hi) */
  uint64_t seed;
  unsigned reads, writes, zeroes, trims;
};

static void
read_and_check (struct nbd_handle *nbd, const unsigned char *shadow,
                uint64_t offset, size_t count, const char *what)
{
  static __thread unsigned char buf[MAX_IO];

  if (nbd_pread (nbd, buf, count, offset, 0) == -1)
    test_die_nbd (what);
  test_expect_bytes (what, offset, buf, shadow + offset, count);
}

static void *
run_worker (void *arg)
{
  struct worker *w = arg;
  uint64_t rng = w->seed;
  unsigned char data[MAX_IO];
  int i;

  for (i = 0; i < OPS_PER_CONNECTION; i++) {
    uint64_t count = 1 + test_random_below (&rng, MAX_IO);
    uint64_t offset;
    unsigned op = test_random_below (&rng, 10);

    if (count > w->hi - w->lo)
      count = w->hi - w->lo;
    offset = w->lo + test_random_below (&rng, w->hi - w->lo - count + 1);

    if (op < 5) {                       /* 50% reads */
      read_and_check (w->nbd, w->shadow, offset, count, "pread");
      w->reads++;
    }
    else if (op < 8) {                  /* 30% writes */
      test_fill_random (&rng, data, count);
      if (nbd_pwrite (w->nbd, data, count, offset, 0) == -1)
        test_die_nbd ("pwrite");
      memcpy (w->shadow + offset, data, count);
      w->writes++;
    }
    else if (op < 9) {                  /* 10% zeroes */
      if (nbd_zero (w->nbd, count, offset, 0) == -1)
        test_die_nbd ("zero");
      memset (w->shadow + offset, 0, count);
      w->zeroes++;
    }
    else {                              /* 10% trims */
      /* Both plugins under test read trimmed ranges back as zeroes
       * (memory deallocates; file punches a hole, or writes zeroes
       * where holes are not supported).
       */
      if (nbd_trim (w->nbd, count, offset, 0) == -1)
        test_die_nbd ("trim");
      memset (w->shadow + offset, 0, count);
      w->trims++;
    }
  }
  return NULL;
}

static void
check_whole_export (struct nbd_handle *nbd, const unsigned char *shadow,
                    const char *what)
{
  uint64_t off;

  for (off = 0; off < EXPORT_SIZE; off += MAX_IO) {
    size_t n = EXPORT_SIZE - off < MAX_IO ? EXPORT_SIZE - off : MAX_IO;
    read_and_check (nbd, shadow, off, n, what);
  }
}

static void
exercise (const char *const *server_argv, unsigned char *shadow,
          const char *file, uint64_t seed)
{
  struct test_server srv;
  struct worker w[2];
  pthread_t tid[2];
  int i;

  test_server_start (&srv, server_argv);
  for (i = 0; i < 2; i++) {
    w[i] = (struct worker) {
      .nbd = test_connect (&srv),
      .shadow = shadow,
      .lo = i == 0 ? 0 : EXPORT_SIZE / 2,
      .hi = i == 0 ? EXPORT_SIZE / 2 : EXPORT_SIZE,
      .seed = seed + i,
    };
    if (nbd_get_size (w[i].nbd) != EXPORT_SIZE) {
      fprintf (stderr, "export size %" PRIi64 ", expected %d\n",
               nbd_get_size (w[i].nbd), EXPORT_SIZE);
      exit (EXIT_FAILURE);
    }
  }
  for (i = 0; i < 2; i++)
    pthread_create (&tid[i], NULL, run_worker, &w[i]);
  for (i = 0; i < 2; i++)
    pthread_join (tid[i], NULL);

  /* Each connection now reads what the other one wrote. */
  check_whole_export (w[0].nbd, shadow, "connection 0, whole export");
  check_whole_export (w[1].nbd, shadow, "connection 1, whole export");

  for (i = 0; i < 2; i++) {
    printf ("%s: connection %d: %u reads, %u writes, %u zeroes, %u trims\n",
            server_argv[0], i, w[i].reads, w[i].writes, w[i].zeroes,
            w[i].trims);
    if (nbd_shutdown (w[i].nbd, 0) == -1)
      test_die_nbd ("nbd_shutdown");
    nbd_close (w[i].nbd);
  }
  if (test_server_stop (&srv) != 0) {
    fprintf (stderr, "nbdkit did not exit cleanly\n");
    exit (EXIT_FAILURE);
  }

  /* What the file plugin holds is the file: it must match too. */
  if (file != NULL) {
    unsigned char *disk = malloc (EXPORT_SIZE);
    int fd = open (file, O_RDONLY);

    if (disk == NULL || fd == -1
        || pread (fd, disk, EXPORT_SIZE, 0) != EXPORT_SIZE) {
      perror (file);
      exit (EXIT_FAILURE);
    }
    test_expect_bytes ("file on disk", 0, disk, shadow, EXPORT_SIZE);
    close (fd);
    free (disk);
  }
}

int
main (void)
{
  unsigned char *shadow = calloc (1, EXPORT_SIZE);
  char dir[] = "/tmp/adaptra-passthrough-XXXXXX";
  char file[64], size_arg[32];
  uint64_t rng = 0x5eed0001;
  int fd;

  if (shadow == NULL || mkdtemp (dir) == NULL) {
    perror ("setup");
    exit (EXIT_FAILURE);
  }

  /* memory plugin: starts as zeroes. */
  snprintf (size_arg, sizeof size_arg, "size=%d", EXPORT_SIZE);
  exercise ((const char *const[]) { "memory", size_arg, NULL },
            shadow, NULL, 1);

  /* file plugin: starts as random bytes. */
  snprintf (file, sizeof file, "%s/disk.img", dir);
  test_fill_random (&rng, shadow, EXPORT_SIZE);
  fd = open (file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd == -1 || write (fd, shadow, EXPORT_SIZE) != EXPORT_SIZE) {
    perror (file);
    exit (EXIT_FAILURE);
  }
  close (fd);
  exercise ((const char *const[]) { "file", file, NULL }, shadow, file, 3);

  unlink (file);
  rmdir (dir);
  free (shadow);
  printf ("test-passthrough: ok\n");
  return 0;
}
