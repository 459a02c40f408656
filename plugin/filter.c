/* filter.c: the nbdkit filter: callbacks over the engine.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The adaptra filter: nbdkit glue over the engine in core/.
 *
 * One engine serves the whole server: its pool, stream table and
 * prefetch workers are shared by every connection, because one
 * client's scan often spans several connections and several clients
 * read the same image.  The engine starts in .after_fork, once nbdkit
 * has daemonised, and stops in .cleanup.
 *
 * Each connection reads one engine volume (exports.c): its export's,
 * shared by the connections of that export name, or, where the
 * plugin's connections may see different bytes (adaptra-share), one
 * of its own.  It attaches in .prepare and detaches in .finalize, the
 * span in which its context may be used.  Reads go through the
 * engine.  Writes, zeroes and trims go straight to the plugin and then
 * invalidate the volume's copy (write-through).  A client's
 * NBD_CMD_CACHE becomes a bounded prefetch into the pool.  Block status
 * is forwarded, and the engine keeps the extents that read as zeros
 * out of read-ahead.  Everything else (flush, block_size, the can_*
 * negotiation) is nbdkit's default: forwarded to the plugin.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <assert.h>
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
#include "adaptra/holes.h"
#include "exports.h"
#include "handles.h"
#include "metrics.h"
#include "params.h"
#include "profiles.h"
#include "runas.h"
#include "server.h"

/* -D adaptra.trace=1: one debug line per read-ahead decision. */
NBDKIT_DLL_PUBLIC int adaptra_debug_trace = 0;

/* The engine's parameters, from the command line. */
static struct adaptra_config config;

/* adaptra-stats: the control socket's path (NULL: none) and mode. */
static char *stats_path;
static unsigned stats_mode;

/* adaptra-share: whose bytes a pool page holds. */
static enum exports_share share;

/* Set in .get_ready from the final thread model.  background_io: no
 * background thread may call the plugin when it serialises all
 * requests.  parallel_handles: a worker may use a connection's own
 * context while the connection does.
 */
static bool background_io = true;
static bool parallel_handles = true;

/* The engine, from .after_fork to .cleanup. */
static struct adaptra_engine *engine;
/* The threads' schedstat files (cpu_use). */
static pthread_key_t schedstat_key;
static bool schedstat_key_made;
static bool schedstat_none;     /* no key, or no file: always 0 */
static unsigned nworkers;

struct adaptra_handle {
  const char *exportname;       /* interned: lives as long as the filter */
  uint64_t size;                /* the export's size to it */
  int volume;                   /* engine volume, -1 if none */
  int client;                   /* engine client id, -1 if none */
  bool background;              /* the volume's read-ahead runs in workers */
  struct profiles_conn *profile; /* adaptra-profile: recorder, matcher */
  /* The connection's own context as the engine's reads take it: set
   * once in .prepare, since nbdkit passes every call from .prepare to
   * .finalize the same next (nbdkit-filter(3), "Next config, open and
   * close"), so that a read does not build it again: a struct handles
   * is cleared whole (its condition variable too), two `rep stos` that
   * perf showed as most of adaptra_pread's own time in 4 KiB reads.
   */
  struct handles own;
};

/* nbdkit --help: generated from adaptra_params at load.  nbdkit keeps
 * a copy of the filter struct made before .load, so the text goes into
 * this buffer, whose address the copy has.
 */
#define HELP_MAX 8192
static char help_text[HELP_MAX];

/* The filter's own parameters (ADAPTRA_PARAM_FILTER): 1 if key is one
 * and value was taken, -1 after an error, 0 for any other key.
 */
static int
filter_param (const char *key, const char *value)
{
  if (strcmp (key, "adaptra-stats") == 0) {
    if (value[0] == '\0') {
      nbdkit_error ("adaptra-stats= needs the path of a socket to create");
      return -1;
    }
    free (stats_path);
    /* After the fork nbdkit runs in "/": resolve the path now. */
    stats_path = nbdkit_absolute_path (value);
    return stats_path ? 1 : -1;
  }
  if (strcmp (key, "adaptra-profile") == 0) {
    char *path = nbdkit_absolute_path (value);
    int r = path ? profiles_set_dir (path) : -1;

    free (path);
    return r == -1 ? -1 : 1;
  }
  if (strcmp (key, "adaptra-share") == 0) {
    if (exports_share_parse (value, &share) == -1) {
      nbdkit_error ("adaptra-share=%s is not auto, export or connection",
                    value);
      return -1;
    }
    return 1;
  }
  if (strcmp (key, "adaptra-metrics") == 0)
    return metrics_config (value) == -1 ? -1 : 1;
  if (strcmp (key, "adaptra-stats-owner") == 0)
    return server_config_owner (value) == -1 ? -1 : 1;
  if (strcmp (key, "adaptra-stats-idle") == 0)
    return server_config_idle (value) == -1 ? -1 : 1;
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
    return 1;
  }
  return 0;
}

static void
adaptra_load (void)
{
  struct adaptra_strbuf help = ADAPTRA_STRBUF_INIT (HELP_MAX - 1);
  char key[64];
  size_t i;

  adaptra_config_defaults (&config);
  for (i = 0; i < adaptra_nparams; i++) {
    const struct adaptra_param *p = &adaptra_params[i];

    snprintf (key, sizeof key, "adaptra-%s", p->name);
    if (p->type == ADAPTRA_PARAM_FILTER && p->def != NULL &&
        filter_param (key, p->def) != 1)
      abort ();                 /* the table's own default */
  }
  params_help (&help);
  if (help.overflow)
    abort ();                   /* raise HELP_MAX */
  memcpy (help_text, help.data, help.len + 1);
  adaptra_strbuf_free (&help);
}

static void
adaptra_unload (void)
{
  if (schedstat_key_made)
    pthread_key_delete (schedstat_key);
  free (stats_path);
  metrics_stop ();
  params_free ();
  profiles_fini ();
}

static int
adaptra_config (nbdkit_next_config *next, nbdkit_backend *nxdata,
                const char *key, const char *value)
{
  char why[256];
  int r;

  r = filter_param (key, value);
  if (r != 0)
    return r == 1 ? 0 : -1;
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
  char why[256], quoted[512];
  int r;

  if (adaptra_config_check (&config, why, sizeof why) != 0) {
    params_quote (why, quoted, sizeof quoted);
    nbdkit_error ("%s", quoted);
    return -1;
  }
  /* The pool is allocated once the server runs, where a failure may no
   * longer reach the user: refuse what cannot fit now.
   */
  if (phys > 0 && page > 0 && config.pool_bytes > (uint64_t) phys * page) {
    snprintf (why, sizeof why, "adaptra-pool=%" PRIu64 " is more than this "
              "machine's memory (%" PRIu64 " bytes)",
              config.pool_bytes, (uint64_t) phys * page);
    params_quote (why, quoted, sizeof quoted);
    nbdkit_error ("%s", quoted);
    return -1;
  }
  /* What the server writes once it runs, as the user it runs as. */
  if (profiles_dir () &&
      runas_check_dir ("adaptra-profile", profiles_dir ()) == -1)
    return -1;
  if (stats_path) {
    char *dir = strdup (stats_path);

    if (dir == NULL) {
      nbdkit_error ("adaptra-stats: %m");
      return -1;
    }
    /* The socket's directory: it is removed from there at exit. */
    *strrchr (dir, '/') = '\0';
    r = runas_check_dir ("adaptra-stats", dir[0] ? dir : "/");
    free (dir);
    if (r == -1)
      return -1;
  }
  return next (nxdata);
}

static int
adaptra_get_ready (int thread_model)
{
  /* Background threads bypass nbdkit's request locks, so they are only
   * safe when the plugin accepts concurrent requests on distinct
   * handles (each worker has its own).
   */
  parallel_handles = thread_model >= NBDKIT_THREAD_MODEL_PARALLEL;
  if (thread_model <= NBDKIT_THREAD_MODEL_SERIALIZE_ALL_REQUESTS) {
    background_io = false;
    /* In the words nbdkit's own filters use for a weakened filter. */
    if (config.workers > 0)
      nbdkit_error ("adaptra: warning: the plugin serialises all requests, "
                    "so no read-ahead can run in the background: it runs "
                    "in the readers' threads, before their replies");
  }
  if (stats_path && server_listen (stats_path, stats_mode) == -1)
    return -1;
  return metrics_listen ();
}

static uint64_t
monotonic_ns (void *opaque)
{
  return adaptra_monotonic_ns ();
}

/* What the calling thread has had of the CPUs (struct adaptra_clock's
 * cpu_use): its CPU time from CLOCK_THREAD_CPUTIME_ID (exact for a
 * running thread), its run-queue delay and how often it was put on a
 * CPU from /proc/thread-self/schedstat's second and third fields
 * (Linux's sched_info, Documentation/scheduler/sched-stats.rst; the
 * first, its CPU time, is brought up to date only at a tick or a
 * switch).  Each thread opens the file once and keeps it
 * (schedstat_key closes it when the thread exits): a pread of it costs
 * about 1.3 us here, opening and closing it every time 10 us, the
 * clock 0.9 us.  The engine asks only around the reads it samples,
 * twice a millisecond per volume that stepped aside.  False where
 * there is no such file (not Linux, or /proc not mounted).
 */
static bool
cpu_use (void *opaque, struct adaptra_cpu_use *use)
{
  int fd;
  char buf[96];
  ssize_t n;
  unsigned long long ran, waited, slices;
  struct timespec ts;

  if (__atomic_load_n (&schedstat_none, __ATOMIC_RELAXED))
    return false;
  fd = (int) (intptr_t) pthread_getspecific (schedstat_key) - 1;
  if (fd < 0) {
    fd = open ("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      __atomic_store_n (&schedstat_none, true, __ATOMIC_RELAXED);
      return false;
    }
    if (pthread_setspecific (schedstat_key, (void *) (intptr_t) (fd + 1))) {
      close (fd);
      return false;
    }
  }
  n = pread (fd, buf, sizeof buf - 1, 0);
  if (n <= 0 || clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts) == -1)
    return false;
  buf[n] = '\0';
  if (sscanf (buf, "%llu %llu %llu", &ran, &waited, &slices) != 3)
    return false;
  use->run_ns = (uint64_t) ts.tv_sec * UINT64_C (1000000000) +
    (uint64_t) ts.tv_nsec;
  use->wait_ns = waited;
  use->slices = slices;
  return true;
}

static void
close_schedstat (void *fd)
{
  close ((int) (intptr_t) fd - 1);
}

/* One line per read-ahead decision: to nbdkit's debug log with
 * -D adaptra.trace=1, and to the statistics clients that traced on.
 */
static void
trace_line (void *opaque, const struct adaptra_trace *t)
{
  char line[ADAPTRA_TRACE_LINE_LEN];

  adaptra_trace_format (t, line, sizeof line);
  if (adaptra_debug_trace)
    nbdkit_debug ("adaptra.trace: %s", line);
  server_trace (line);
}

/* The control socket's view of the engine. */
static void
control_snapshot (void *opaque, struct adaptra_stats *s)
{
  adaptra_stats_snapshot (engine, s);
  s->backend_handles = handles_open ();
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

static size_t
control_volumes (void *opaque, struct adaptra_volume_row *rows, size_t max)
{
  return adaptra_volumes_snapshot (engine, rows, max);
}

static const struct adaptra_control_ops control_ops = {
  .snapshot = control_snapshot,
  .reset = control_reset,
  .streams = control_streams,
  .clients = control_clients,
  .volumes = control_volumes,
  .get = control_get,
  .set = control_set,
};

/* A scrape of adaptra-metrics: the socket's "metrics" reply, without
 * the empty line that ends a reply there.
 */
static void
render_metrics (struct adaptra_strbuf *out)
{
  static const char command[] = "metrics";

  adaptra_control_execute (&control_ops, command, sizeof command - 1, out);
  if (out->len > 0 && !out->overflow)
    out->data[--out->len] = '\0';
}

static enum adaptra_control_next
serve_control_line (const char *line, size_t len, struct adaptra_strbuf *out)
{
  return adaptra_control_execute (&control_ops, line, len, out);
}

static int
adaptra_after_fork (nbdkit_backend *backend)
{
  static const struct adaptra_backend engine_backend = {
    .pread = handles_pread,
  };
  static const struct adaptra_clock clock = {
    .now_ns = monotonic_ns, .cpu_use = cpu_use,
  };
  char why[ADAPTRA_WHY_LEN];
  int err;

  schedstat_key_made = pthread_key_create (&schedstat_key,
                                           close_schedstat) == 0;
  schedstat_none = !schedstat_key_made;

  /* No plugin context is opened here: the exports' contexts open with
   * their first connection (exports.c), when the export name is known.
   */
  nworkers = background_io ? config.workers : 0;
  /* Profile workers run only profiles' prefetch, through the contexts
   * lent to the workers: none without either (and no transfer slots
   * kept for them).  Over a plugin that serialises requests per handle
   * they would only queue for the workers' handles, and hold up the
   * streams' read-ahead there.
   */
  if (nworkers == 0 || !parallel_handles || profiles_dir () == NULL)
    config.profile_workers = 0;
  config.trace = trace_line;
  err = adaptra_engine_new (&config, &engine_backend, &clock, &engine,
                            why, sizeof why);
  if (err) {
    nbdkit_error ("adaptra: cannot create the engine: %s", why);
    return -1;
  }
  profiles_configure (&config, engine);
  exports_init (engine, backend, nworkers);
  if (nworkers > 0) {
    err = adaptra_workers_start (engine, nworkers, config.profile_workers);
    if (err) {
      errno = err;
      nbdkit_error ("adaptra: cannot start %u prefetch workers: %m",
                    nworkers + config.profile_workers);
      return -1;
    }
  }
  nbdkit_debug ("adaptra %s: pool %" PRIu64 " bytes, %u workers, "
                "%u profile workers, share=%s", PACKAGE_VERSION,
                config.pool_bytes, nworkers, config.profile_workers,
                exports_share_name (share));
  if (metrics_start (render_metrics) == -1)
    return -1;
  return server_start (serve_control_line);
}

static void
adaptra_cleanup (nbdkit_backend *backend)
{
  server_stop ();
  metrics_stop ();
  if (engine) {
    adaptra_workers_stop (engine);
    exports_fini ();
    adaptra_engine_free (engine);
    engine = NULL;
  }
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

  if (next (context, readonly, exportname) == -1)
    return NULL;
  h = calloc (1, sizeof *h);
  if (h == NULL) {
    nbdkit_error ("calloc: %m");
    return NULL;
  }
  h->volume = h->client = -1;
  h->exportname = nbdkit_strdup_intern (exportname);
  if (h->exportname == NULL) {
    free (h);
    return NULL;
  }
  return h;
}

/* Whether the connection with next shares pages with the other
 * connections of its export: set by adaptra-share, else shared when
 * the plugin offers multi-conn (its promise that all connections see
 * the same data) or the connection cannot write (the curl plugin of
 * nbdkit 1.32 never offers multi-conn, yet serves every read-only
 * connection the same bytes; the writes of writable connections of
 * the export, in volumes of their own, drop the range from it:
 * ADAPTRA_VOLUME_MAY_ALIAS).  Returns 1 (per connection), 0 (shared)
 * or -1.
 */
static int
per_connection (nbdkit_next *next)
{
  int multi_conn, can_write;

  switch (share) {
  case SHARE_EXPORT: return 0;
  case SHARE_CONNECTION: return 1;
  case SHARE_AUTO: break;
  }
  if ((multi_conn = next->can_multi_conn (next)) == -1 ||
      (can_write = next->can_write (next)) == -1)
    return -1;
  return !multi_conn && can_write;
}

static int
adaptra_prepare (nbdkit_next *next, void *handle, int readonly)
{
  struct adaptra_handle *h = handle;
  int64_t size;
  int own, err;
  char peer[128];

  if (engine == NULL)
    return 0;
  if ((size = next->get_size (next)) == -1 ||
      (own = per_connection (next)) == -1)
    return -1;
  h->size = size;
  handles_single (&h->own, next);
  h->volume = exports_attach (h, next, h->exportname, size, own,
                              share == SHARE_AUTO, parallel_handles,
                              &h->background);
  if (h->volume == -1)
    return 0;                   /* logged: passes through */
  describe_peer (peer, sizeof peer);
  err = adaptra_client_open (engine, h->volume, peer, &h->client);
  if (err) {
    nbdkit_error ("adaptra: cannot register client %s: %s", peer,
                  strerror (err));
    exports_detach (h, h->volume);
    h->volume = -1;
    return -1;
  }
  nbdkit_debug ("adaptra: client %d (%s) reads export \"%s\" as volume %d "
                "(%s)", h->client, peer, h->exportname, h->volume,
                own ? "its own" : "shared");
  h->profile = profiles_open (engine, h->client, h->exportname, size,
                              config.page_size);
  return 0;
}

static int
adaptra_finalize (nbdkit_next *next, void *handle)
{
  struct adaptra_handle *h = handle;

  profiles_close (h->profile);
  h->profile = NULL;
  if (h->client >= 0)
    adaptra_client_close (engine, h->client);
  if (h->volume >= 0)
    exports_detach (h, h->volume);
  h->client = h->volume = -1;
  return 0;
}

static void
adaptra_close (void *handle)
{
  free (handle);
}

/* Without workers for its volume, queued read-ahead runs in the
 * reader's thread, with its context, before the reply: otherwise it
 * would run only when a later read needed its pages, holding them
 * unevictable meanwhile.
 */
static void
run_queued_prefetch (struct adaptra_handle *h)
{
  if (!h->background)
    while (adaptra_prefetch_run_one (engine, h->volume, &h->own))
      ;
}

static int
adaptra_pread (nbdkit_next *next, void *handle,
               void *buf, uint32_t count, uint64_t offset, uint32_t flags,
               int *err)
{
  struct adaptra_handle *h = handle;
  int r;

  if (h->client < 0)
    return next->pread (next, buf, count, offset, flags, err);
  assert (h->own.next == next);
  r = adaptra_read (engine, h->client, &h->own, buf, count, offset);
  if (r == 0 && h->profile)
    profiles_read (h->profile, offset, count);
  run_queued_prefetch (h);
  if (r) {
    *err = r;
    nbdkit_error ("adaptra: pread of %" PRIu32 " bytes at %" PRIu64 ": %s",
                  count, offset, strerror (r));
    return -1;
  }
  return 0;
}

/* After a write, zero or trim, whether or not it succeeded (a failed
 * write may have changed part of the range), drop the pool's copies.
 * A connection that passes through has no volume, but other
 * connections' volumes may hold its export's bytes (it passes through
 * because the export changed size under them, or the volume table is
 * full): its writes drop them too.
 */
static int
invalidate_after (const struct adaptra_handle *h, int r, uint32_t count,
                  uint64_t offset)
{
  if (h->volume >= 0)
    adaptra_invalidate (engine, h->volume, offset, count);
  else if (engine)
    adaptra_invalidate_export (engine, h->exportname, h->size, offset,
                               count);
  return r;
}

static int
adaptra_pwrite (nbdkit_next *next, void *handle,
                const void *buf, uint32_t count, uint64_t offset,
                uint32_t flags, int *err)
{
  return invalidate_after (handle,
                           next->pwrite (next, buf, count, offset, flags, err),
                           count, offset);
}

static int
adaptra_zero (nbdkit_next *next, void *handle,
              uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  return invalidate_after (handle,
                           next->zero (next, count, offset, flags, err),
                           count, offset);
}

static int
adaptra_trim (nbdkit_next *next, void *handle,
              uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  return invalidate_after (handle,
                           next->trim (next, count, offset, flags, err),
                           count, offset);
}

/* A client's block status query, for ask_plugin. */
struct extents_query {
  nbdkit_next *next;
  const struct adaptra_handle *h;
  struct nbdkit_extents *extents;   /* the client's answer */
  uint64_t limit;                   /* the end of the client's range */
  int *err;
};

/* adaptra_extents_fn: ask the plugin, through a list of our own whose
 * extents within the client's range go to the client.
 */
static int
ask_plugin (void *opaque, uint64_t start, uint64_t end, bool one,
            bool answer, uint64_t *first_end, uint64_t *named_end)
{
  struct extents_query *q = opaque;
  struct nbdkit_extents *list = nbdkit_extents_new (start, end);
  size_t i, n;
  int r = 0;

  if (list == NULL) {
    *q->err = errno;
    return -1;
  }
  if (q->next->extents (q->next, (uint32_t) (end - start), start,
                        one ? NBDKIT_FLAG_REQ_ONE : 0, list, q->err) == -1) {
    nbdkit_extents_free (list);
    return -1;
  }
  *first_end = *named_end = start;
  n = nbdkit_extents_count (list);
  for (i = 0; i < n && r == 0; i++) {
    struct nbdkit_extent x = nbdkit_get_extent (list, i);

    adaptra_volume_extent (engine, q->h->volume, x.offset, x.length,
                           (x.type & NBDKIT_EXTENT_ZERO) != 0);
    if (i == 0)
      *first_end = x.offset + x.length;
    *named_end = x.offset + x.length;
    if (answer && x.offset < q->limit &&
        (r = nbdkit_add_extent (q->extents, x.offset, x.length,
                                x.type)) == -1)
      *q->err = errno;
  }
  nbdkit_extents_free (list);
  return r;
}

/* Block status passes through, and the engine learns from the
 * plugin's answers which extents read as zeros, which read-ahead then
 * skips (core/holes.h).  The engine decides what the plugin is asked
 * (adaptra_volume_block_status): the client's range and past it, as
 * far as a window may reach, so that it learns the extents the client
 * will step through next without a round trip of its own; a client
 * that wants one extent (qemu asks with NBD_CMD_FLAG_REQ_ONE) gets
 * one, as from the plugin.
 */
static int
adaptra_extents (nbdkit_next *next, void *handle, uint32_t count,
                 uint64_t offset, uint32_t flags,
                 struct nbdkit_extents *extents, int *err)
{
  struct adaptra_handle *h = handle;
  struct extents_query q = {
    .next = next, .h = h, .extents = extents, .limit = offset + count,
    .err = err,
  };

  if (h->volume < 0)
    return next->extents (next, count, offset, flags, extents, err);
  return adaptra_volume_block_status (engine, h->volume, offset, count,
                                      (flags & NBDKIT_FLAG_REQ_ONE) != 0,
                                      ask_plugin, &q);
}

/* Multi-conn promises that a write (and flush) on one connection is
 * seen by every other connection's next read.  With
 * adaptra-share=connection each connection has pages of its own, which
 * another connection's writes do not drop, so the promise is not made
 * whatever the plugin offers; clients then keep to one connection or
 * flush and reopen, as NBD asks of them without multi-conn.  In the
 * other modes every connection that may read the written bytes has
 * them dropped (adaptra_invalidate), and the plugin's answer stands.
 */
static int
adaptra_can_multi_conn (nbdkit_next *next, void *handle)
{
  if (share == SHARE_CONNECTION)
    return 0;
  return next->can_multi_conn (next);
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

  if (h->client >= 0) {
    adaptra_cache_hint (engine, h->client, offset, count);
    run_queued_prefetch (h);
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
  .config_help       = help_text,
  .get_ready         = adaptra_get_ready,
  .after_fork        = adaptra_after_fork,
  .cleanup           = adaptra_cleanup,
  .open              = adaptra_open,
  .prepare           = adaptra_prepare,
  .finalize          = adaptra_finalize,
  .close             = adaptra_close,
  .pread             = adaptra_pread,
  .pwrite            = adaptra_pwrite,
  .zero              = adaptra_zero,
  .trim              = adaptra_trim,
  .extents           = adaptra_extents,
  .can_multi_conn    = adaptra_can_multi_conn,
  .can_cache         = adaptra_can_cache,
  .cache             = adaptra_cache,
};

NBDKIT_REGISTER_FILTER (filter)
