/* counter-filter.c: a filter counting backend reads, for the benchmark.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The benchmark's counter: an nbdkit filter placed directly above the
 * backend model, so it sees exactly what the stack under test asks of
 * the backend.
 *
 *   nbdkit --filter=STACK... --filter=.../nbdkit-counter-filter.so \
 *          --filter=MODEL... file IMG counter-file=/abs/path
 *
 * It counts read requests and bytes, NBD_CMD_CACHE requests and bytes
 * (prefetch hints that the models pass down at no cost), the peak
 * number of reads in flight at once, and the bytes read of 4 KiB pages
 * read before (reread_bytes: a stack whose cache holds everything
 * should read each page once).  It writes these counters plus
 * the server process's CPU time and peak RSS, one "key value" pair
 * per line, to counter-file whenever a connection opens or closes and
 * again at unload.  The file is written to a temporary name and renamed, so a
 * reader never sees half of it.
 *
 * Why at every close: filters above may keep working after their
 * client has gone (nbdkit's readahead drains its queue of cache
 * requests in .close, which can take seconds under the cache filter),
 * and nbdkit 1.32 can crash when SIGTERM arrives in that window.
 * .close runs outer-to-inner, so when this filter's .close sees no
 * client connection left, every layer above has finished.  The file
 * then says "open_connections 0"; scripts/bench/run waits for that
 * before it stops the server, and still has the counters if shutdown
 * crashes.
 *
 * Only client connections count: a filter above may open contexts of
 * its own (adaptra's prefetch context lives until .cleanup).  Such a
 * context is opened outside any client connection, where
 * nbdkit_peer_pid fails (logging one "no connection in this thread"
 * error); a client on the benchmark's unix socket has a peer pid.
 *
 * nbdkit's stats filter could count too, but it writes a text report
 * meant for people; this one writes exactly what scripts/bench/run
 * parses and adds the process's own resource usage, measured from the
 * inside so that the client's CPU time is never mixed in.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <nbdkit-filter.h>

/* counter-file: where the counters go at unload (absolute path). */
static char *counter_file;

static atomic_uint_fast64_t reads;        /* pread requests */
static atomic_uint_fast64_t read_bytes;   /* bytes asked by preads */
static atomic_uint_fast64_t caches;       /* cache requests */
static atomic_uint_fast64_t cache_bytes;  /* bytes asked by caches */
static atomic_int_fast64_t in_flight;     /* preads running now */
static atomic_int_fast64_t peak_in_flight;/* maximum of in_flight */
static atomic_int_fast64_t connections;   /* client connections open */
static atomic_uint_fast64_t reread_bytes; /* bytes of pages read before */

/* The pages read so far, a bit each, grown as reads go further. */
#define SEEN_PAGE 4096
static unsigned char *seen;
static size_t seen_len;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

/* Handles that tell a client connection from a filter's own context. */
static int client_handle, context_handle;

/* Serialises writers of counter-file. */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

static int
counter_config (nbdkit_next_config *next, nbdkit_backend *nxdata,
                const char *key, const char *value)
{
  if (strcmp (key, "counter-file") == 0) {
    free (counter_file);
    counter_file = nbdkit_absolute_path (value);
    return counter_file == NULL ? -1 : 0;
  }
  return next (nxdata, key, value);
}

#define counter_config_help \
  "counter-file=PATH    Write backend read counters here at unload."

static void
raise_peak (int_fast64_t now)
{
  int_fast64_t peak = atomic_load (&peak_in_flight);

  while (now > peak &&
         !atomic_compare_exchange_weak (&peak_in_flight, &peak, now))
    ;
}

/* Count the bytes of [offset, offset + count) in pages read before,
 * and mark its pages read.
 */
static void
count_rereads (uint32_t count, uint64_t offset)
{
  uint64_t p, first = offset / SEEN_PAGE, last, end = offset + count, again = 0;

  if (count == 0)
    return;
  last = (end - 1) / SEEN_PAGE;
  pthread_mutex_lock (&seen_lock);
  if (last / 8 >= seen_len) {
    size_t len = seen_len * 2 > last / 8 + 1 ? seen_len * 2 : last / 8 + 1;
    unsigned char *grown = realloc (seen, len);

    if (!grown) {
      pthread_mutex_unlock (&seen_lock);
      return;
    }
    memset (grown + seen_len, 0, len - seen_len);
    seen = grown;
    seen_len = len;
  }
  for (p = first; p <= last; p++) {
    uint64_t lo = p * SEEN_PAGE > offset ? p * SEEN_PAGE : offset;
    uint64_t hi = (p + 1) * SEEN_PAGE < end ? (p + 1) * SEEN_PAGE : end;

    if (seen[p / 8] & (1u << (p % 8)))
      again += hi - lo;
    seen[p / 8] |= 1u << (p % 8);
  }
  pthread_mutex_unlock (&seen_lock);
  atomic_fetch_add (&reread_bytes, again);
}

static int
counter_pread (nbdkit_next *next, void *handle, void *buf, uint32_t count,
               uint64_t offset, uint32_t flags, int *err)
{
  int r;

  atomic_fetch_add (&reads, 1);
  atomic_fetch_add (&read_bytes, count);
  count_rereads (count, offset);
  raise_peak (atomic_fetch_add (&in_flight, 1) + 1);
  r = next->pread (next, buf, count, offset, flags, err);
  atomic_fetch_sub (&in_flight, 1);
  return r;
}

static int
counter_cache (nbdkit_next *next, void *handle, uint32_t count,
               uint64_t offset, uint32_t flags, int *err)
{
  atomic_fetch_add (&caches, 1);
  atomic_fetch_add (&cache_bytes, count);
  return next->cache (next, count, offset, flags, err);
}

static double
timeval_seconds (struct timeval tv)
{
  return tv.tv_sec + tv.tv_usec / 1e6;
}

/* Write every counter to counter-file (if set). */
static void
write_counters (void)
{
  struct rusage usage;
  char *tmp = NULL;
  FILE *fp;

  if (counter_file == NULL)
    return;
  if (getrusage (RUSAGE_SELF, &usage) == -1)
    memset (&usage, 0, sizeof usage);
  pthread_mutex_lock (&write_lock);
  if (asprintf (&tmp, "%s.tmp", counter_file) == -1 ||
      (fp = fopen (tmp, "w")) == NULL) {
    nbdkit_error ("counter: cannot write %s: %m", counter_file);
    goto out;
  }
  fprintf (fp,
           "reads %" PRIuFAST64 "\n"
           "read_bytes %" PRIuFAST64 "\n"
           "reread_bytes %" PRIuFAST64 "\n"
           "caches %" PRIuFAST64 "\n"
           "cache_bytes %" PRIuFAST64 "\n"
           "peak_in_flight %" PRIdFAST64 "\n"
           "open_connections %" PRIdFAST64 "\n"
           "cpu_user_s %.3f\n"
           "cpu_sys_s %.3f\n"
           "maxrss_kib %ld\n",
           atomic_load (&reads), atomic_load (&read_bytes),
           atomic_load (&reread_bytes),
           atomic_load (&caches), atomic_load (&cache_bytes),
           atomic_load (&peak_in_flight), atomic_load (&connections),
           timeval_seconds (usage.ru_utime),
           timeval_seconds (usage.ru_stime),
           usage.ru_maxrss);
  if (fclose (fp) == EOF || rename (tmp, counter_file) == -1)
    nbdkit_error ("counter: cannot write %s: %m", counter_file);
 out:
  pthread_mutex_unlock (&write_lock);
  free (tmp);
}

static void *
counter_open (nbdkit_next_open *next, nbdkit_context *context,
              int readonly, const char *exportname, int is_tls)
{
  if (next (context, readonly, exportname) == -1)
    return NULL;
  if (nbdkit_peer_pid () == -1)
    return &context_handle;
  atomic_fetch_add (&connections, 1);
  /* Written at open too, so the file never shows a stale 0 from an
   * earlier connection (fio's probe) while the workload's are open.
   */
  write_counters ();
  return &client_handle;
}

static void
counter_close (void *handle)
{
  if (handle != &client_handle)
    return;
  atomic_fetch_sub (&connections, 1);
  write_counters ();
}

static void
counter_unload (void)
{
  write_counters ();
  free (counter_file);
  free (seen);
}

static struct nbdkit_filter filter = {
  .name              = "counter",
  .longname          = "adaptra benchmark backend counter",
  .unload            = counter_unload,
  .config            = counter_config,
  .config_help       = counter_config_help,
  .open              = counter_open,
  .close             = counter_close,
  .pread             = counter_pread,
  .cache             = counter_cache,
};

NBDKIT_REGISTER_FILTER (filter)
