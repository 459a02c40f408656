/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The adaptra filter: nbdkit glue over the engine in core/.
 *
 * One engine serves the whole server: its pool, stream table and
 * prefetch workers are shared by every connection, because one
 * client's scan often spans several connections and several clients
 * read the same image.  The engine starts in .after_fork, once nbdkit
 * has daemonised, with one backend context per prefetch worker opened
 * on the default export; it stops in .cleanup.
 *
 * Reads of the default export go through the engine.  Writes, zeroes
 * and trims go straight to the plugin and then invalidate the pool
 * (write-through), from any export.  A client's NBD_CMD_CACHE becomes
 * a bounded prefetch into the pool.  Everything else (flush, extents,
 * block_size, the can_* negotiation) is nbdkit's default: forwarded to
 * the plugin.  Connections to another export name, or seeing another
 * size than the workers' context, pass straight through.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <nbdkit-filter.h>

#include "adaptra/control.h"
#include "adaptra/engine.h"
#include "params.h"
#include "server.h"

/* -D adaptra.trace=1: one debug line per read-ahead decision. */
NBDKIT_DLL_PUBLIC int adaptra_debug_trace = 0;

/* The engine's parameters, from the command line. */
static struct adaptra_config config;

/* adaptra-stats: the control socket's path (NULL: none) and mode. */
static char *stats_path;
static unsigned stats_mode = 0600;

/* Set in .get_ready: false when the plugin serialises all requests, so
 * no background thread may call it.
 */
static bool background_io = true;

/* The engine and the workers' backend contexts, from .after_fork to
 * .cleanup.
 */
static struct adaptra_engine *engine;
static nbdkit_next **worker_next;
static unsigned nworkers;

struct adaptra_handle {
  int client;                   /* engine client id, -1 if none */
  bool engaged;                 /* reads go through the engine */
};

static void
adaptra_load (void)
{
  adaptra_config_defaults (&config);
}

static void
adaptra_unload (void)
{
  free (stats_path);
}

static int
adaptra_config (nbdkit_next_config *next, nbdkit_backend *nxdata,
                const char *key, const char *value)
{
  char why[256];
  int r;

  if (strcmp (key, "adaptra-stats") == 0) {
    if (value[0] == '\0') {
      nbdkit_error ("adaptra-stats= needs the path of a socket to create");
      return -1;
    }
    free (stats_path);
    /* After the fork nbdkit runs in "/": resolve the path now. */
    stats_path = nbdkit_absolute_path (value);
    return stats_path ? 0 : -1;
  }
  if (strcmp (key, "adaptra-stats-owner") == 0)
    return server_config_owner (value);
  if (strcmp (key, "adaptra-stats-mode") == 0) {
    char *end;
    unsigned long mode;

    errno = 0;
    mode = strtoul (value, &end, 8);
    if (errno || *value == '\0' || *end != '\0' || mode > 0777) {
      nbdkit_error ("adaptra-stats-mode=%s is not an octal file mode "
                    "(0000..0777)", value);
      return -1;
    }
    stats_mode = mode;
    return 0;
  }
  r = params_parse (&config, key, value, why, sizeof why);
  if (r == -1) {
    nbdkit_error ("%s", why);
    return -1;
  }
  if (r == 1)
    return 0;
  return next (nxdata, key, value);
}

static int
adaptra_config_complete (nbdkit_next_config_complete *next,
                         nbdkit_backend *nxdata)
{
  long phys = sysconf (_SC_PHYS_PAGES), page = sysconf (_SC_PAGESIZE);
  char why[256];

  if (adaptra_config_check (&config, why, sizeof why) == -1) {
    nbdkit_error ("%s", why);
    return -1;
  }
  /* The pool is allocated once the server runs, where a failure may no
   * longer reach the user: refuse what cannot fit now.
   */
  if (phys > 0 && page > 0 && config.pool_bytes > (uint64_t) phys * page) {
    nbdkit_error ("adaptra-pool=%" PRIu64 " is more than this machine's "
                  "memory (%" PRIu64 " bytes)",
                  config.pool_bytes, (uint64_t) phys * page);
    return -1;
  }
  return next (nxdata);
}

#define adaptra_config_help \
  params_config_help \
  "adaptra-stats=PATH       Serve statistics and control on this unix\n" \
  "                         socket (see adaptra-stat(1)).\n" \
  "adaptra-stats-mode=MODE  File mode of the socket (default 0600).\n" \
  "adaptra-stats-owner=USER[:GROUP]\n" \
  "                         Give the socket to USER (with nbdkit -u).\n"

static int
adaptra_get_ready (int thread_model)
{
  /* Background threads bypass nbdkit's request locks, so they are only
   * safe when the plugin accepts concurrent requests on distinct
   * handles (each worker has its own).
   */
  if (thread_model <= NBDKIT_THREAD_MODEL_SERIALIZE_ALL_REQUESTS) {
    background_io = false;
    nbdkit_debug ("adaptra: the plugin serialises all requests: "
                  "read-ahead runs in the readers' own threads");
  }
  if (stats_path && server_listen (stats_path, stats_mode) == -1)
    return -1;
  return 0;
}

/* The engine's view of the backend: a pread on a nbdkit context. */
static int
backend_pread (void *ctx, void *buf, uint32_t count, uint64_t offset)
{
  nbdkit_next *next = ctx;
  int err = 0;

  if (next->pread (next, buf, count, offset, 0, &err) == -1)
    return err ? err : EIO;
  return 0;
}

static uint64_t
monotonic_ns (void *opaque)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * UINT64_C (1000000000) + ts.tv_nsec;
}

/* One line per read-ahead decision: to nbdkit's debug log with
 * -D adaptra.trace=1, and to the statistics clients that traced on.
 */
static void
trace_line (void *opaque, const char *line)
{
  if (adaptra_debug_trace)
    nbdkit_debug ("adaptra.trace: %s", line);
  server_trace (line);
}

/* Open and prepare one backend context for a prefetch worker. */
static nbdkit_next *
open_worker_context (nbdkit_backend *backend)
{
  nbdkit_next *next = nbdkit_next_context_open (backend, 1, "", 1);

  if (next == NULL)
    return NULL;
  if (next->prepare (next) == -1 || next->get_size (next) == -1) {
    next->finalize (next);
    nbdkit_next_context_close (next);
    return NULL;
  }
  return next;
}

static void
close_worker_contexts (void)
{
  unsigned i;

  for (i = 0; i < nworkers; i++) {
    worker_next[i]->finalize (worker_next[i]);
    nbdkit_next_context_close (worker_next[i]);
  }
  free (worker_next);
  worker_next = NULL;
  nworkers = 0;
}

/* The control socket's view of the engine. */
static void
control_snapshot (void *opaque, struct adaptra_stats *s)
{
  adaptra_stats_snapshot (engine, s);
}

static void
control_reset (void *opaque)
{
  adaptra_stats_reset (engine);
}

static size_t
control_streams (void *opaque, struct adaptra_stream_row *rows, size_t max)
{
  return adaptra_streams_snapshot (engine, rows, max);
}

static size_t
control_clients (void *opaque, struct adaptra_client_row *rows, size_t max)
{
  return adaptra_clients_snapshot (engine, rows, max);
}

static int
control_get (void *opaque, const char *name, struct adaptra_strbuf *out,
             char *why, size_t len)
{
  return params_get (engine, name, out, why, len);
}

static int
control_set (void *opaque, const char *name, const char *value,
             char *why, size_t len)
{
  return params_set_runtime (engine, name, value, why, len);
}

static const struct adaptra_control_ops control_ops = {
  .snapshot = control_snapshot,
  .reset = control_reset,
  .streams = control_streams,
  .clients = control_clients,
  .get = control_get,
  .set = control_set,
};

static enum adaptra_control_next
serve_control_line (const char *line, size_t len, struct adaptra_strbuf *out)
{
  return adaptra_control_execute (&control_ops, line, len, out);
}

static int
adaptra_after_fork (nbdkit_backend *backend)
{
  static const struct adaptra_backend engine_backend = {
    .pread = backend_pread,
  };
  static const struct adaptra_clock clock = { .now_ns = monotonic_ns };
  nbdkit_next *probe;
  int64_t size;
  unsigned i;
  int err;

  /* The export size comes from a context of our own: no client may be
   * connected yet.
   */
  probe = open_worker_context (backend);
  if (probe == NULL)
    return -1;
  size = probe->get_size (probe);
  nworkers = background_io ? config.workers : 0;
  worker_next = calloc (nworkers ? nworkers : 1, sizeof *worker_next);
  if (worker_next == NULL) {
    nbdkit_error ("calloc: %m");
    return -1;
  }
  /* Each worker has a context of its own, so that plugins which
   * serialise requests per handle (curl, ssh) still run one request
   * per worker at once.
   */
  for (i = 0; i < nworkers; i++) {
    worker_next[i] = i == 0 ? probe : open_worker_context (backend);
    if (worker_next[i] == NULL) {
      nworkers = i;
      close_worker_contexts ();
      return -1;
    }
  }
  if (nworkers == 0) {
    probe->finalize (probe);
    nbdkit_next_context_close (probe);
  }

  config.export_size = size;
  config.trace = trace_line;
  engine = adaptra_engine_new (&config, &engine_backend, &clock);
  if (engine == NULL) {
    nbdkit_error ("adaptra: cannot create the engine with adaptra-pool=%"
                  PRIu64 ": %m", config.pool_bytes);
    close_worker_contexts ();
    return -1;
  }
  if (nworkers > 0) {
    err = adaptra_workers_start (engine, nworkers, (void **) worker_next);
    if (err) {
      errno = err;
      nbdkit_error ("adaptra: cannot start %u prefetch workers: %m",
                    nworkers);
      return -1;
    }
  }
  nbdkit_debug ("adaptra: export %" PRIi64 " bytes, pool %" PRIu64
                " bytes, %u workers", size, config.pool_bytes, nworkers);
  return server_start (serve_control_line);
}

static void
adaptra_cleanup (nbdkit_backend *backend)
{
  server_stop ();
  if (engine) {
    adaptra_workers_stop (engine);
    adaptra_engine_free (engine);
    engine = NULL;
  }
  close_worker_contexts ();
}

/* A name for the peer of the current connection: "unix:pid=N",
 * "1.2.3.4:5678" or "[::1]:5678".
 */
static void
describe_peer (char *buf, size_t len)
{
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char addr[INET6_ADDRSTRLEN] = "?";

  snprintf (buf, len, "unknown");
  if (nbdkit_peer_name ((struct sockaddr *) &ss, &sl) == -1)
    return;
  switch (ss.ss_family) {
  case AF_UNIX:
    snprintf (buf, len, "unix:pid=%" PRIi64, nbdkit_peer_pid ());
    break;
  case AF_INET:
    inet_ntop (AF_INET, &((struct sockaddr_in *) &ss)->sin_addr,
               addr, sizeof addr);
    snprintf (buf, len, "%s:%u", addr,
              ntohs (((struct sockaddr_in *) &ss)->sin_port));
    break;
  case AF_INET6:
    inet_ntop (AF_INET6, &((struct sockaddr_in6 *) &ss)->sin6_addr,
               addr, sizeof addr);
    snprintf (buf, len, "[%s]:%u", addr,
              ntohs (((struct sockaddr_in6 *) &ss)->sin6_port));
    break;
  }
}

static void *
adaptra_open (nbdkit_next_open *next, nbdkit_context *context,
              int readonly, const char *exportname, int is_tls)
{
  struct adaptra_handle *h;
  char peer[128];

  if (next (context, readonly, exportname) == -1)
    return NULL;
  h = calloc (1, sizeof *h);
  if (h == NULL) {
    nbdkit_error ("calloc: %m");
    return NULL;
  }
  h->client = -1;
  /* The workers prefetch from the default export only. */
  if (engine == NULL || exportname[0] != '\0')
    return h;
  describe_peer (peer, sizeof peer);
  h->client = adaptra_client_open (engine, peer);
  if (h->client == -1) {
    nbdkit_error ("adaptra: cannot register client %s: %m", peer);
    free (h);
    return NULL;
  }
  h->engaged = true;
  return h;
}

static int
adaptra_prepare (nbdkit_next *next, void *handle, int readonly)
{
  struct adaptra_handle *h = handle;
  int64_t size;

  if (!h->engaged)
    return 0;
  size = next->get_size (next);
  if (size == -1)
    return -1;
  /* A plugin may serve another size to a later connection (a file that
   * grew): this connection then bypasses a pool sized for the old one.
   */
  if ((uint64_t) size != config.export_size) {
    nbdkit_debug ("adaptra: connection sees size %" PRIi64 ", engine has %"
                  PRIu64 ": passing it through", size, config.export_size);
    h->engaged = false;
  }
  return 0;
}

static void
adaptra_close (void *handle)
{
  struct adaptra_handle *h = handle;

  if (h->client >= 0)
    adaptra_client_close (engine, h->client);
  free (h);
}

/* Without workers, queued read-ahead runs in the reader's thread, with
 * its context, before the reply: otherwise it would run only when a
 * later read needed its pages, holding them unevictable meanwhile.
 */
static void
run_queued_prefetch (nbdkit_next *next)
{
  if (nworkers == 0)
    while (adaptra_prefetch_run_one (engine, next))
      ;
}

static int
adaptra_pread (nbdkit_next *next, void *handle,
               void *buf, uint32_t count, uint64_t offset, uint32_t flags,
               int *err)
{
  struct adaptra_handle *h = handle;
  int r;

  if (!h->engaged)
    return next->pread (next, buf, count, offset, flags, err);
  r = adaptra_read (engine, h->client, next, buf, count, offset);
  run_queued_prefetch (next);
  if (r) {
    *err = r;
    nbdkit_error ("adaptra: pread of %" PRIu32 " bytes at %" PRIu64 ": %s",
                  count, offset, strerror (r));
    return -1;
  }
  return 0;
}

/* After a write, zero or trim, whether or not it succeeded (a failed
 * write may have changed part of the range), drop the pool's copy.
 */
static int
invalidate_after (int r, uint32_t count, uint64_t offset)
{
  if (engine)
    adaptra_invalidate (engine, offset, count);
  return r;
}

static int
adaptra_pwrite (nbdkit_next *next, void *handle,
                const void *buf, uint32_t count, uint64_t offset,
                uint32_t flags, int *err)
{
  return invalidate_after (next->pwrite (next, buf, count, offset, flags, err),
                           count, offset);
}

static int
adaptra_zero (nbdkit_next *next, void *handle,
              uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  return invalidate_after (next->zero (next, count, offset, flags, err),
                           count, offset);
}

static int
adaptra_trim (nbdkit_next *next, void *handle,
              uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  return invalidate_after (next->trim (next, count, offset, flags, err),
                           count, offset);
}

/* NBD_CMD_CACHE is a hint: the engine prefetches into its own pool. */
static int
adaptra_can_cache (nbdkit_next *next, void *handle)
{
  return NBDKIT_CACHE_NATIVE;
}

static int
adaptra_cache (nbdkit_next *next, void *handle,
               uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  struct adaptra_handle *h = handle;

  if (h->engaged) {
    adaptra_cache_hint (engine, h->client, offset, count);
    run_queued_prefetch (next);
  }
  return 0;
}

static struct nbdkit_filter filter = {
  .name              = "adaptra",
  .longname          = "nbdkit adaptive read-ahead filter",
  .load              = adaptra_load,
  .unload            = adaptra_unload,
  .config            = adaptra_config,
  .config_complete   = adaptra_config_complete,
  .config_help       = adaptra_config_help,
  .get_ready         = adaptra_get_ready,
  .after_fork        = adaptra_after_fork,
  .cleanup           = adaptra_cleanup,
  .open              = adaptra_open,
  .prepare           = adaptra_prepare,
  .close             = adaptra_close,
  .pread             = adaptra_pread,
  .pwrite            = adaptra_pwrite,
  .zero              = adaptra_zero,
  .trim              = adaptra_trim,
  .can_cache         = adaptra_can_cache,
  .cache             = adaptra_cache,
};

NBDKIT_REGISTER_FILTER (filter)
