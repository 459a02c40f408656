/* test-integrity.c: integrity under load: reads, writes, trims, zeroes.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Integrity under load: no read ever returns a byte the plugin does
 * not hold.
 *
 * Eight connections hammer a 256 MiB export for a bounded time with a
 * seeded mix of what real clients do: long sequential scans (forwards
 * and backwards, at many request sizes, some unaligned), scans shared
 * by all connections through one cursor (as nbdcopy spreads one scan
 * over several connections), bursts of random reads, and writes,
 * zeroes, trims, cache hints and flushes.  The test keeps a shadow
 * copy of the export and checks every byte of every read against it.
 *
 * For the expected content of a read to be defined, the export is cut
 * into 1 MiB regions, each with a reader-writer lock: a write holds its
 * regions exclusively while it is sent and applied to the shadow, and
 * a read holds them shared until it has been checked.  Nothing stops
 * the filter's background prefetches, though: a prefetch that read the
 * plugin before a write and lands in the pool after it is exactly the
 * stale data this test exists to catch.  Half of the writes therefore
 * go just ahead of where some connection last read, into windows that
 * are likely being prefetched.
 *
 * The same load runs against several servers: the memory plugin with a
 * tiny pool (constant eviction, rescue and thrashing), the file plugin
 * with large windows, read-ahead run by the readers themselves (no
 * workers), and a RAM disk whose reads return their data late
 * (lagging-plugin.c), so that writes often overtake prefetches.  Each
 * run ends with a whole-export comparison from a fresh connection and,
 * for the file plugin, with the file itself.
 *
 * ADAPTRA_TEST_SEED=N replays a run's operation sequence (thread
 * interleaving aside); ADAPTRA_TEST_SECONDS=N sets each server's load
 * time (default 16).  A failure prints the seed, the connection, the
 * operation and the offending range.
 */

#include <config.h>

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define EXPORT_SIZE (UINT64_C (256) * 1024 * 1024)
#define REGION_SHIFT 20                         /* 1 MiB lock regions */
#define NREGIONS (EXPORT_SIZE >> REGION_SHIFT)
#define MAX_IO (1024 * 1024)                    /* spans <= 2 regions */
#define CONNECTIONS 8
#define SHARED_CHUNK (128 * 1024)
#define DEFAULT_SECONDS 16

enum op_kind {
  OP_READ, OP_WRITE, OP_ZERO, OP_TRIM, OP_CACHE, OP_FLUSH, OP_KINDS
};
static const char *const op_names[OP_KINDS] = {
  "read", "write", "zero", "trim", "cache", "flush",
};

/* Shared by all connections of one run. */
struct load {
  unsigned char *shadow;
  pthread_rwlock_t region_lock[NREGIONS];
  uint64_t seed;
  const char *config;                   /* for messages */
  struct timespec deadline;
  bool can_cache, can_flush;
  uint64_t shared_cursor;               /* next chunk of the shared scan */
  uint64_t last_read_end;               /* a recent read's end, any thread */
};

struct conn {
  struct load *load;
  struct nbd_handle *nbd;
  int id;
  uint64_t rng;
  unsigned char *buf;                   /* MAX_IO */
  uint64_t ops[OP_KINDS];
  uint64_t bytes_checked;
  unsigned scans;
};

static bool
past (const struct timespec *deadline)
{
  struct timespec now;

  clock_gettime (CLOCK_MONOTONIC, &now);
  return now.tv_sec > deadline->tv_sec
    || (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

/* Lock the regions of [offset, offset + count) in ascending order, so
 * that two connections never wait for each other in a cycle.
 */
static void
lock_range (struct load *l, uint64_t offset, uint64_t count, bool exclusive)
{
  uint64_t r;

  for (r = offset >> REGION_SHIFT; r <= (offset + count - 1) >> REGION_SHIFT;
       r++) {
    if (exclusive)
      pthread_rwlock_wrlock (&l->region_lock[r]);
    else
      pthread_rwlock_rdlock (&l->region_lock[r]);
  }
}

static void
unlock_range (struct load *l, uint64_t offset, uint64_t count)
{
  uint64_t r;

  for (r = offset >> REGION_SHIFT; r <= (offset + count - 1) >> REGION_SHIFT;
       r++)
    pthread_rwlock_unlock (&l->region_lock[r]);
}

static void
fail_nbd (const struct conn *c, enum op_kind op, uint64_t offset,
          uint64_t count)
{
  fprintf (stderr, "%s: seed %" PRIu64 ", connection %d: %s of [%" PRIu64
           ", +%" PRIu64 ") failed\n", c->load->config, c->load->seed,
           c->id, op_names[op], offset, count);
  test_die_nbd (op_names[op]);
}

static void
checked_read (struct conn *c, uint64_t offset, uint64_t count,
              const char *activity)
{
  struct load *l = c->load;
  char what[160];

  lock_range (l, offset, count, false);
  if (nbd_pread (c->nbd, c->buf, count, offset, 0) == -1)
    fail_nbd (c, OP_READ, offset, count);
  snprintf (what, sizeof what,
            "%s: seed %" PRIu64 ", connection %d, op %" PRIu64 " (%s read)",
            l->config, l->seed, c->id, c->ops[OP_READ], activity);
  test_expect_bytes (what, offset, c->buf, l->shadow + offset, count);
  unlock_range (l, offset, count);
  __atomic_store_n (&l->last_read_end, offset + count, __ATOMIC_RELAXED);
  c->ops[OP_READ]++;
  c->bytes_checked += count;
}

/* A random request size: mostly the sizes clients use, sometimes odd. */
static uint64_t
request_size (struct conn *c, uint64_t limit)
{
  static const uint64_t sizes[] = {
    4096, 16384, 65536, 131072, 262144, 1048576,
  };
  uint64_t n;

  if (test_random_below (&c->rng, 4) == 0)
    n = 1 + test_random_below (&c->rng, limit);
  else
    n = sizes[test_random_below (&c->rng, sizeof sizes / sizeof sizes[0])];
  return n < limit ? n : limit;
}

static void
sequential_scan (struct conn *c)
{
  uint64_t size = request_size (c, 256 * 1024);
  uint64_t length = (1 + test_random_below (&c->rng, 8)) << 20;
  bool backward = test_random_below (&c->rng, 5) == 0;
  uint64_t pos = test_random_below (&c->rng, EXPORT_SIZE);
  uint64_t done;

  c->scans++;
  for (done = 0; done < length && !past (&c->load->deadline); done += size) {
    if (backward) {
      if (pos < size)
        break;
      pos -= size;
      checked_read (c, pos, size, "backward scan");
    }
    else {
      if (pos + size > EXPORT_SIZE)
        break;
      checked_read (c, pos, size, "scan");
      pos += size;
    }
  }
}

/* All connections advance one cursor: each reads the next chunk. */
static void
shared_scan (struct conn *c)
{
  unsigned chunks = 8 + test_random_below (&c->rng, 64);
  unsigned i;

  for (i = 0; i < chunks && !past (&c->load->deadline); i++) {
    uint64_t off = __atomic_fetch_add (&c->load->shared_cursor, SHARED_CHUNK,
                                       __ATOMIC_RELAXED) % EXPORT_SIZE;
    checked_read (c, off, SHARED_CHUNK, "shared scan");
  }
}

static void
random_reads (struct conn *c)
{
  unsigned n = 1 + test_random_below (&c->rng, 32);
  unsigned i;

  for (i = 0; i < n; i++) {
    uint64_t count = 1 + test_random_below (&c->rng, 256 * 1024);
    uint64_t off = test_random_below (&c->rng, EXPORT_SIZE - count + 1);
    checked_read (c, off, count, "random");
  }
}

/* Where to modify: anywhere, or just ahead of a recent read, where a
 * window is probably being read ahead.
 */
static uint64_t
modify_offset (struct conn *c, uint64_t count)
{
  uint64_t off;

  if (test_random_below (&c->rng, 2) == 0)
    off = __atomic_load_n (&c->load->last_read_end, __ATOMIC_RELAXED)
      + test_random_below (&c->rng, 512 * 1024);
  else
    off = test_random_below (&c->rng, EXPORT_SIZE);
  return off + count <= EXPORT_SIZE ? off : EXPORT_SIZE - count;
}

static void
modify (struct conn *c, enum op_kind op)
{
  struct load *l = c->load;
  uint64_t count = 1 + test_random_below (&c->rng, MAX_IO);
  uint64_t off = modify_offset (c, count);
  int r;

  if (op == OP_WRITE)
    test_fill_random (&c->rng, c->buf, count);
  lock_range (l, off, count, true);
  switch (op) {
  case OP_WRITE:
    r = nbd_pwrite (c->nbd, c->buf, count, off, 0);
    memcpy (l->shadow + off, c->buf, count);
    break;
  case OP_ZERO:
    r = nbd_zero (c->nbd, count, off, 0);
    memset (l->shadow + off, 0, count);
    break;
  default:
    /* Both plugins read trimmed ranges back as zeroes. */
    r = nbd_trim (c->nbd, count, off, 0);
    memset (l->shadow + off, 0, count);
    break;
  }
  if (r == -1)
    fail_nbd (c, op, off, count);
  unlock_range (l, off, count);
  c->ops[op]++;
}

static void
cache_hint (struct conn *c)
{
  uint64_t count = 1 + test_random_below (&c->rng, 4 * MAX_IO);
  uint64_t off = test_random_below (&c->rng, EXPORT_SIZE - count + 1);

  if (nbd_cache (c->nbd, count, off, 0) == -1)
    fail_nbd (c, OP_CACHE, off, count);
  c->ops[OP_CACHE]++;
}

static void *
run_connection (void *arg)
{
  struct conn *c = arg;

  while (!past (&c->load->deadline)) {
    unsigned dice = test_random_below (&c->rng, 100);

    if (dice < 30)
      sequential_scan (c);
    else if (dice < 45)
      shared_scan (c);
    else if (dice < 65)
      random_reads (c);
    else if (dice < 82)
      modify (c, OP_WRITE);
    else if (dice < 88)
      modify (c, OP_ZERO);
    else if (dice < 94)
      modify (c, OP_TRIM);
    else if (dice < 99 && c->load->can_cache)
      cache_hint (c);
    else if (c->load->can_flush) {
      if (nbd_flush (c->nbd, 0) == -1)
        fail_nbd (c, OP_FLUSH, 0, 0);
      c->ops[OP_FLUSH]++;
    }
  }
  return NULL;
}

static void
check_whole_export (struct conn *c, const char *what)
{
  uint64_t off;

  for (off = 0; off < EXPORT_SIZE; off += MAX_IO)
    checked_read (c, off, MAX_IO, what);
}

static unsigned
load_seconds (void)
{
  const char *s = getenv ("ADAPTRA_TEST_SECONDS");

  return s != NULL && atoi (s) > 0 ? atoi (s) : DEFAULT_SECONDS;
}

/* Totals over all runs, for docs/RELIABILITY.md. */
static uint64_t total_ops[OP_KINDS], total_bytes_checked;

/* One export under load: its name, the file behind it (NULL for a RAM
 * disk, which starts as zeroes and is first filled with the shadow, so
 * that stale data is never zeroes that happen to match), and its
 * shadow.
 */
struct target {
  const char *name;
  const char *file;
  unsigned char *shadow;
};

/* Run the load against one server, its connections spread over the
 * ntargets exports.  server_argv ends with the plugin and its
 * parameters; the statistics socket is added here.
 * evictions_expected: the pool is tiny, so the run must have evicted.
 * aside_midway: halfway through the load, "set bypass always" makes the
 * export step aside, whatever the plugin's speed: the pages cached
 * before are served beside the reads that go straight through, and
 * some must have.
 */
static void
run_load (const char *config, const char *dir, const struct target *targets,
          size_t ntargets, uint64_t seed, bool evictions_expected,
          bool aside_midway, const char *const *server_argv)
{
  struct test_server srv;
  struct load *loads = calloc (ntargets, sizeof *loads);
  struct conn conns[CONNECTIONS];
  pthread_t tid[CONNECTIONS];
  const char *argv[32];
  char stats_arg[128], stats_path[96];
  size_t n = 0, t;
  int64_t readahead, hits, evicted, rescued, stale, bypassed;
  uint64_t i;
  int k;

  if (loads == NULL) {
    perror ("calloc");
    exit (EXIT_FAILURE);
  }
  snprintf (stats_path, sizeof stats_path, "%s/stats.sock", dir);
  snprintf (stats_arg, sizeof stats_arg, "adaptra-stats=%s", stats_path);
  for (; *server_argv && n < 30; server_argv++)
    argv[n++] = *server_argv;
  argv[n++] = stats_arg;
  argv[n] = NULL;
  test_server_start (&srv, argv);

  for (t = 0; t < ntargets; t++) {
    struct load *l = &loads[t];

    l->shadow = targets[t].shadow;
    l->seed = seed;
    l->config = config;
    for (i = 0; i < NREGIONS; i++)
      pthread_rwlock_init (&l->region_lock[i], NULL);
  }

  for (k = 0; k < CONNECTIONS; k++) {
    const struct target *tg = &targets[k % ntargets];
    struct load *l = &loads[k % ntargets];

    conns[k] = (struct conn) {
      .load = l, .nbd = test_connect_export (&srv, tg->name), .id = k,
      .rng = seed * 1000003 + k + 1, .buf = malloc (MAX_IO),
    };
    if (conns[k].buf == NULL) {
      perror ("malloc");
      exit (EXIT_FAILURE);
    }
    if (nbd_get_size (conns[k].nbd) != (int64_t) EXPORT_SIZE) {
      fprintf (stderr, "%s: export size %" PRIi64 "\n", config,
               nbd_get_size (conns[k].nbd));
      exit (EXIT_FAILURE);
    }
    if (k >= (int) ntargets)
      continue;
    /* The first connection of each export. */
    l->can_cache = nbd_can_cache (conns[k].nbd) == 1;
    l->can_flush = nbd_can_flush (conns[k].nbd) == 1;
    for (i = 0; tg->file == NULL && i < EXPORT_SIZE; i += MAX_IO)
      if (nbd_pwrite (conns[k].nbd, tg->shadow + i, MAX_IO, i, 0) == -1)
        test_die_nbd ("filling the RAM disk");
  }

  for (t = 0; t < ntargets; t++) {
    clock_gettime (CLOCK_MONOTONIC, &loads[t].deadline);
    loads[t].deadline.tv_sec += load_seconds ();
  }
  for (k = 0; k < CONNECTIONS; k++)
    pthread_create (&tid[k], NULL, run_connection, &conns[k]);
  if (aside_midway) {
    char reply[256];
    struct timespec half = { .tv_sec = load_seconds () / 2,
                             .tv_nsec = load_seconds () % 2 * 500000000 };

    nanosleep (&half, NULL);
    if (test_control (stats_path, "set bypass always", reply,
                      sizeof reply) == -1 || strcmp (reply, "ok\n\n") != 0) {
      fprintf (stderr, "%s: set bypass always: %s\n", config, reply);
      exit (EXIT_FAILURE);
    }
  }
  for (k = 0; k < CONNECTIONS; k++)
    pthread_join (tid[k], NULL);

  for (t = 0; t < ntargets; t++)
    check_whole_export (&conns[t], "whole export");

  readahead = test_stat (stats_path, "readahead");
  hits = test_stat (stats_path, "pgreadahead_hit");
  evicted = test_stat (stats_path, "evicted");
  rescued = test_stat (stats_path, "readahead_rescue");
  stale = test_stat (stats_path, "prefetch_stale");
  bypassed = test_stat (stats_path, "bypass_requests");

  for (k = 0; k < CONNECTIONS; k++) {
    enum op_kind op;

    for (op = 0; op < OP_KINDS; op++)
      total_ops[op] += conns[k].ops[op];
    total_bytes_checked += conns[k].bytes_checked;
    if (nbd_shutdown (conns[k].nbd, 0) == -1)
      test_die_nbd ("nbd_shutdown");
    nbd_close (conns[k].nbd);
    free (conns[k].buf);
  }
  if (test_server_stop (&srv) != 0) {
    fprintf (stderr, "%s: nbdkit did not exit cleanly\n", config);
    exit (EXIT_FAILURE);
  }

  printf ("%s: readahead %" PRIi64 ", pgreadahead_hit %" PRIi64
          ", evicted %" PRIi64 ", readahead_rescue %" PRIi64
          ", prefetch_stale %" PRIi64
          ", bypass_requests %" PRIi64 "\n",
          config, readahead, hits, evicted, rescued, stale, bypassed);
  /* A run that read nothing ahead, or never evicted from a tiny pool,
   * tested nothing of what it is for.
   */
  if (readahead <= 0 || hits <= 0) {
    fprintf (stderr, "%s: no read-ahead happened\n", config);
    exit (EXIT_FAILURE);
  }
  if (evictions_expected && evicted <= 0) {
    fprintf (stderr, "%s: the tiny pool never evicted\n", config);
    exit (EXIT_FAILURE);
  }
  if (aside_midway && bypassed <= 0) {
    fprintf (stderr, "%s: no request went straight through\n", config);
    exit (EXIT_FAILURE);
  }

  for (t = 0; t < ntargets; t++) {
    const struct target *tg = &targets[t];
    int fd;
    unsigned char *disk;

    if (tg->file == NULL)
      continue;
    fd = open (tg->file, O_RDONLY);
    disk = malloc (MAX_IO);
    for (i = 0; fd != -1 && disk != NULL && i < EXPORT_SIZE; i += MAX_IO) {
      if (pread (fd, disk, MAX_IO, i) != MAX_IO)
        break;
      test_expect_bytes ("file on disk", i, disk, tg->shadow + i, MAX_IO);
    }
    if (i < EXPORT_SIZE) {
      perror (tg->file);
      exit (EXIT_FAILURE);
    }
    close (fd);
    free (disk);
  }

  for (t = 0; t < ntargets; t++)
    for (i = 0; i < NREGIONS; i++)
      pthread_rwlock_destroy (&loads[t].region_lock[i]);
  free (loads);
}

/* Write n bytes of shadow to a new file path. */
static void
write_image (const char *path, const unsigned char *shadow)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  uint64_t off;

  for (off = 0; fd != -1 && off < EXPORT_SIZE; off += MAX_IO)
    if (write (fd, shadow + off, MAX_IO) != MAX_IO)
      break;
  if (fd == -1 || off < EXPORT_SIZE) {
    perror (path);
    exit (EXIT_FAILURE);
  }
  close (fd);
}

static void
on_alarm (int sig)
{
  static const char msg[] = "test-integrity: hung: no progress in time\n";

  (void) sig;
  if (write (STDERR_FILENO, msg, sizeof msg - 1) < 0)
    _exit (2);
  _exit (EXIT_FAILURE);
}

int
main (void)
{
  unsigned char *shadow = malloc (EXPORT_SIZE);
  unsigned char *shadow2 = malloc (EXPORT_SIZE);
  const char *seed_env = getenv ("ADAPTRA_TEST_SEED");
  uint64_t seed = seed_env ? strtoull (seed_env, NULL, 0) : (uint64_t) time (NULL);
  uint64_t rng = seed | 1;
  char dir[] = "/tmp/adaptra-integrity-XXXXXX";
  const char *srcdir = getenv ("srcdir");
  /* The compiler nbdkit runs must not inherit a sanitizer preload. */
  const char *lagging_cc = "CC=env -u LD_PRELOAD cc";
  char file[64], images[64], image_a[80], image_b[80], dir_arg[80];
  char lagging_plugin[4096];
  /* The file and RAM disks here are as fast as the pool: without this,
   * adaptra would step aside and these runs would test little of
   * read-ahead.
   */
  const char *never = "adaptra-bypass=never";
  struct target one, two[2];
  enum op_kind op;

  if (shadow == NULL || shadow2 == NULL || mkdtemp (dir) == NULL) {
    perror ("setup");
    exit (EXIT_FAILURE);
  }
  snprintf (lagging_plugin, sizeof lagging_plugin,
            "%s/tests/integration/lagging-plugin.c", srcdir ? srcdir : ".");
  printf ("test-integrity: seed %" PRIu64 " (ADAPTRA_TEST_SEED=%" PRIu64
          " replays it), %u s per server\n", seed, seed, load_seconds ());
  fflush (stdout);
  /* Six runs of the load and their checks; a hang is a failure. */
  signal (SIGALRM, on_alarm);
  alarm (6 * (load_seconds () + 60) + 60);

  /* The file plugin starts from the file's random bytes. */
  test_fill_random (&rng, shadow, EXPORT_SIZE);
  snprintf (file, sizeof file, "%s/disk.img", dir);
  write_image (file, shadow);
  one = (struct target) { .name = "", .file = file, .shadow = shadow };

  run_load ("file, pool 1M", dir, &one, 1, seed, true, false,
            (const char *const[]) {
              "file", file, "adaptra-pool=1M", never, NULL });
  run_load ("file, large windows", dir, &one, 1, seed + 1, false, false,
            (const char *const[]) {
              "file", file, "adaptra-pool=128M", "adaptra-max=32M",
              "adaptra-min=1M", never, NULL });
  run_load ("file, no workers, pool 2M of 512-byte pages", dir, &one, 1,
            seed + 2, true, false,
            (const char *const[]) {
              "file", file, "adaptra-pool=2M", "adaptra-page=512",
              "adaptra-workers=0", never, NULL });

  /* Two exports of one server (file dir=), half the connections on
   * each, one pool: each export's bytes are its own, and the writes on
   * one (which in auto mode also drop the other's same-size pages)
   * never reach the other.
   */
  snprintf (images, sizeof images, "%s/images", dir);
  snprintf (image_a, sizeof image_a, "%s/a.img", images);
  snprintf (image_b, sizeof image_b, "%s/b.img", images);
  snprintf (dir_arg, sizeof dir_arg, "dir=%s", images);
  if (mkdir (images, 0700) == -1) {
    perror (images);
    exit (EXIT_FAILURE);
  }
  memcpy (shadow2, shadow, EXPORT_SIZE);
  test_fill_random (&rng, shadow2, EXPORT_SIZE / 2);
  write_image (image_a, shadow);
  write_image (image_b, shadow2);
  two[0] = (struct target) { .name = "a.img", .file = image_a,
                             .shadow = shadow };
  two[1] = (struct target) { .name = "b.img", .file = image_b,
                             .shadow = shadow2 };
  run_load ("file dir=, two exports, pool 4M", dir, two, 2, seed + 5, true,
            false,
            (const char *const[]) {
              "file", dir_arg, "adaptra-pool=4M", never, NULL });
  unlink (image_a);
  unlink (image_b);
  rmdir (images);

  one = (struct target) { .name = "", .file = NULL, .shadow = shadow };
  /* The memory plugin is as fast as the pool, where adaptra would step
   * aside by itself as soon as its trial allows, sometimes before it
   * read anything ahead: so it reads ahead until halfway through, when
   * it is told to step aside, and then serves what it cached before
   * beside what it reads straight through.
   */
  run_load ("memory, pool 1M, stepping aside", dir, &one, 1, seed + 3, true,
            true,
            (const char *const[]) {
              "memory", "256M", "adaptra-pool=1M", never, NULL });
  run_load ("lagging RAM disk, pool 8M", dir, &one, 1, seed + 4, false, false,
            (const char *const[]) {
              "cc", lagging_plugin, lagging_cc, "size=256M", "lag-us=2000",
              "adaptra-pool=8M", never, NULL });

  unlink (file);
  rmdir (dir);
  free (shadow);
  free (shadow2);
  printf ("test-integrity: %" PRIu64 " bytes checked;", total_bytes_checked);
  for (op = 0; op < OP_KINDS; op++)
    printf (" %s %" PRIu64, op_names[op], total_ops[op]);
  printf ("\ntest-integrity: ok\n");
  return 0;
}
