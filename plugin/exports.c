/* The filter's exports: which engine volume a connection reads, and
 * the prefetch contexts opened for each shared export.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A pool page may only be served to a connection that would have
 * read the same bytes from the plugin.  So every connection reads an
 * engine volume (engine.h), and the question "whose bytes?" becomes
 * "which volume?":
 *
 *   connection --open("vm1.img")--> export "vm1.img" --> volume 3 (shared)
 *   connection --open("vm1.img")--> export "vm1.img" ----^
 *   connection --open("vm2.img")--> export "vm2.img" --> volume 4 (shared)
 *   connection (tmpdisk) ------------------------------> volume 5 (its own)
 *
 * A shared volume belongs to an export name and outlives its
 * connections: a client that reconnects (qemu-img info, then the
 * guest) finds the pages it left.
 *
 * The workers read a volume ahead only through contexts that are sure
 * to see its bytes.  nbdkit 1.32 offers two kinds, and neither fits
 * every case:
 *
 *   - a connection's own context, which the workers may use while the
 *     connection lives, as nbdkit's scan filter does, when the plugin
 *     takes parallel requests on one handle (file, memory, nbd,
 *     tmpdisk: every plugin here that serves several exports or
 *     private disks).  Each connection of a volume lends its own; the
 *     workers stop using it before the connection finalizes.
 *
 *   - a shared context: it outlives connections but cannot tell the
 *     plugin which connection or export it serves.  A plugin that
 *     asks for the export name in it gets NULL ("no connection in
 *     this thread"; the file plugin with dir= then crashes the
 *     server), and one that gives every connection a private disk
 *     would give it one more.  So only the default export ("") of a
 *     plugin that serialises requests per handle (curl, ssh, which
 *     serve one export) gets these: a set of them (handles.h), one
 *     read each, opened as the workers read and closed when idle, at
 *     most one per worker, so that the plugin still runs one request
 *     per handle at once.
 *
 * (A third kind, a context opened for one connection, aborts nbdkit
 * 1.32 when opened anywhere but the connection's .open.)  A volume
 * left with no context (a per-connection volume of a serialising
 * plugin, or a plugin that serialises all requests) is read ahead by
 * its readers, in their own threads.
 *
 * One lock guards the table, and nothing that waits for the backend
 * runs under it: a connection that goes waits for its volume's
 * running prefetch (before its context may be closed) after dropping
 * it, with its export marked busy, so that only connections of the
 * same export wait for it (they would change the same set of
 * contexts).  Closing a volume waits for its running prefetch too, so
 * volumes are closed outside the lock, once out of the table.
 *
 * A shared volume outlives its connections, but not without bound:
 * at most EXPORTS_IDLE_MAX of them without connections are kept, and
 * the one idle longest is closed, with its pages, when one more goes
 * idle.  So a client that walks through export names (any name is
 * valid for many plugins) cannot fill the engine's volume table; only
 * ADAPTRA_VOLUMES_MAX connections at once with distinct names could,
 * and the ones past that pass through.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exports.h"
#include "handles.h"

/* Handles lent to a volume (handles.h): a connection's own context, or
 * the set of shared contexts the export itself lends, opened as the
 * workers read.
 */
struct lent {
  struct handles *h;
  const void *owner;
};

struct export {
  char *name;                   /* NULL for a per-connection volume */
  int volume;
  uint64_t size;
  unsigned connections;
  struct lent *lent;            /* the contexts its connections lend */
  size_t nlent;
  bool busy;                    /* its contexts are being taken back
                                   outside the lock: wait on changed */
  uint64_t idle_since;          /* when it lost its last connection, in
                                   detaches */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct adaptra_engine *engine;
static nbdkit_backend *backend;
static unsigned nworkers;
static struct export **table;   /* entries never move: busy ones are */
static size_t ntable;           /* used outside the lock */
static uint64_t detaches;

int
exports_share_parse (const char *value, enum exports_share *share)
{
  if (strcmp (value, "auto") == 0)
    *share = SHARE_AUTO;
  else if (strcmp (value, "export") == 0)
    *share = SHARE_EXPORT;
  else if (strcmp (value, "connection") == 0)
    *share = SHARE_CONNECTION;
  else
    return -1;
  return 0;
}

const char *
exports_share_name (enum exports_share share)
{
  switch (share) {
  case SHARE_EXPORT: return "export";
  case SHARE_CONNECTION: return "connection";
  case SHARE_AUTO: break;
  }
  return "auto";
}

void
exports_init (struct adaptra_engine *e, nbdkit_backend *b, unsigned n)
{
  engine = e;
  backend = b;
  nworkers = n;
}

/* The entry of a shared export name or of a volume, or NULL.  Lock
 * held.
 */
static struct export *
find (const char *name, int volume)
{
  size_t i;

  for (i = 0; i < ntable; i++)
    if (name ? table[i]->name && strcmp (table[i]->name, name) == 0
             : table[i]->volume == volume)
      return table[i];
  return NULL;
}

/* find, once the entry found is not busy.  Lock held, dropped while
 * waiting.
 */
static struct export *
find_idle (const char *name, int volume)
{
  struct export *x;

  while ((x = find (name, volume)) != NULL && x->busy)
    pthread_cond_wait (&changed, &lock);
  return x;
}

/* Free lent handles h, which no worker uses any more. */
static void
release (struct handles *h)
{
  if (h->next)
    free (h);
  else
    handles_free_set (h);
}

/* Hand export x's lent contexts to the workers.  Returns 0, or -1
 * (ENOMEM) with the workers' set unchanged.  With the lock held, or
 * while x is busy or out of the table (nobody else changes x->lent).
 * When it takes a context away, it waits for the volume's running
 * prefetch: never with the lock held.
 */
static int
publish (struct export *x)
{
  void **ctxs = calloc (x->nlent ? x->nlent : 1, sizeof *ctxs);
  size_t i;
  int err;

  if (ctxs == NULL)
    return -1;
  for (i = 0; i < x->nlent; i++)
    ctxs[i] = x->lent[i].h;
  err = adaptra_volume_set_contexts (engine, x->volume, x->nlent, ctxs);
  free (ctxs);
  return err ? -1 : 0;
}

/* owner lends x contexts: next itself if not NULL, else a set of up to
 * n opened on x's export as the workers read (none now: nothing in the
 * client's handshake).  Returns true if the workers read x ahead now.
 * Lock held; x is not busy.
 */
static bool
lend (struct export *x, const void *owner, nbdkit_next *next, unsigned n)
{
  struct lent *more;
  struct handles *h = NULL;

  if (n == 0 ||
      (more = realloc (x->lent, (x->nlent + 1) * sizeof *more)) == NULL)
    return x->nlent > 0;
  x->lent = more;
  if (next && (h = calloc (1, sizeof *h)) != NULL)
    handles_single (h, next);
  else if (!next)
    h = handles_new_set (backend, x->name, x->size, n);
  if (h) {
    x->lent[x->nlent++] = (struct lent) { .h = h, .owner = owner };
    if (publish (x) == 0)
      return true;
    x->nlent--;
    release (h);
  }
  nbdkit_debug ("adaptra: export \"%s\": cannot lend it a prefetch "
                "context", x->name ? x->name : "");
  return x->nlent > 0;
}

/* Take back from x what owner lent it, and with all also what x lent
 * itself: those entries move past x->nlent, where they stay until
 * x->lent next grows.  Returns how many.  Lock held; x is not busy.
 */
static size_t
take_back (struct export *x, const void *owner, bool all)
{
  size_t i, kept = 0, n = x->nlent;
  struct lent t;

  for (i = 0; i < n; i++)
    if (x->lent[i].owner != owner && !(all && x->lent[i].owner == x)) {
      t = x->lent[kept];
      x->lent[kept++] = x->lent[i];
      x->lent[i] = t;
    }
  x->nlent = kept;
  return n - kept;
}

/* The workers stop using the ngone handles past x->nlent, which are
 * then freed (a set's contexts closed).  Lock not held: this waits
 * for x's running prefetch; x is busy or out of the table.
 */
static void
withdraw (struct export *x, size_t ngone)
{
  size_t i;

  /* Without memory for the smaller set, stop the workers using any. */
  if (publish (x) == -1)
    adaptra_volume_set_contexts (engine, x->volume, 0, NULL);
  for (i = x->nlent; i < x->nlent + ngone; i++)
    release (x->lent[i].h);
}

/* A new table entry for volume (name is copied unless NULL), or NULL.
 * Lock held.
 */
static struct export *
add (const char *name, int volume, uint64_t size)
{
  struct export **t = realloc (table, (ntable + 1) * sizeof *t);
  struct export *x;

  if (t == NULL)
    return NULL;
  table = t;
  x = calloc (1, sizeof *x);
  if (x == NULL || (name && (x->name = strdup (name)) == NULL)) {
    free (x);
    return NULL;
  }
  x->volume = volume;
  x->size = size;
  table[ntable++] = x;
  return x;
}

/* Take x out of the table: nobody finds it any more.  Lock held. */
static void
unlist (struct export *x)
{
  size_t i;

  for (i = 0; table[i] != x; i++)
    ;
  table[i] = table[--ntable];
}

/* Close x's volume (waiting for its running prefetch) and free x,
 * which is out of the table and lends nothing.  Lock not held.
 */
static void
destroy (struct export *x)
{
  if (x == NULL)
    return;
  adaptra_volume_close (engine, x->volume);
  free (x->lent);
  free (x->name);
  free (x);
}

/* If more than EXPORTS_IDLE_MAX shared exports have no connection,
 * the one idle longest that is not busy, out of the table, for the
 * caller to destroy; else NULL.  Lock held.
 */
static struct export *
over_idle_bound (void)
{
  struct export *oldest = NULL;
  size_t i, idle = 0;

  for (i = 0; i < ntable; i++) {
    struct export *x = table[i];

    if (x->name && x->connections == 0) {
      idle++;
      if (!x->busy && (oldest == NULL || x->idle_since < oldest->idle_since))
        oldest = x;
    }
  }
  if (idle <= EXPORTS_IDLE_MAX || oldest == NULL)
    return NULL;
  nbdkit_debug ("adaptra: export \"%s\": more than %d exports without "
                "connections: closing its volume %d, the one idle longest",
                oldest->name, EXPORTS_IDLE_MAX, oldest->volume);
  unlist (oldest);
  return oldest;
}

/* Say once, as nbdkit's own filters say it, that read-ahead of a
 * named export, or of a connection's own volume, runs in the readers'
 * threads for a plugin that serialises requests per handle, and what
 * the user can do about it.  A connection has a volume of its own in
 * adaptra-share=auto (may_alias) only because it may write: served
 * read-only (-r), the export's connections share one volume, which
 * the workers read ahead in the background.
 */
static void
warn_no_background (bool per_connection, bool may_alias)
{
  static bool warned;

  if (warned)
    return;
  warned = true;
  nbdkit_error ("adaptra: warning: the plugin serialises requests, and "
                "nbdkit 1.32 opens background contexts only on the default "
                "export of plugins that see the same bytes on every "
                "connection: read-ahead of %s runs in the readers' threads%s",
                !per_connection ? "named exports"
                : may_alias ? "writable connections"
                : "connections with bytes of their own",
                per_connection && may_alias
                ? "; serve the export read-only (nbdkit -r) to read it "
                "ahead in the background" : "");
}

static int
open_volume (const char *name, uint64_t size, unsigned flags)
{
  int v = -1;
  int err = adaptra_volume_open (engine, name, size, flags, &v);

  if (err)
    nbdkit_debug ("adaptra: export \"%s\" (%" PRIu64 " bytes) passes "
                  "through: %s", name, size, strerror (err));
  return v;
}

int
exports_attach (const void *owner, nbdkit_next *next, const char *name,
                uint64_t size, bool per_connection, bool may_alias,
                bool parallel, bool *background)
{
  unsigned flags = may_alias ? ADAPTRA_VOLUME_MAY_ALIAS : 0;
  struct export *x = NULL, *resized = NULL;
  int v = -1;

  pthread_mutex_lock (&lock);
  if (per_connection) {
    v = open_volume (name, size, flags | ADAPTRA_VOLUME_PER_CONNECTION);
    if (v >= 0 && (x = add (NULL, v, size)) == NULL)
      adaptra_volume_close (engine, v);
  }
  else {
    x = find_idle (name, -1);
    /* An export that changed size (an image replaced while no client
     * was connected) starts afresh; one still read at its old size
     * leaves the newcomer to pass through.
     */
    if (x && x->size != size && x->connections == 0) {
      unlist (x);
      resized = x;
      x = NULL;
    }
    if (x && x->size != size) {
      nbdkit_debug ("adaptra: export \"%s\" is %" PRIu64 " bytes to this "
                    "connection, %" PRIu64 " to others: passing it through",
                    name, size, x->size);
      x = NULL;
    }
    else if (x == NULL && (v = open_volume (name, size, flags)) >= 0 &&
             (x = add (name, v, size)) == NULL)
      adaptra_volume_close (engine, v);
  }
  v = -1;
  if (x && !parallel && nworkers > 0 && (per_connection || name[0] != '\0'))
    warn_no_background (per_connection, may_alias);
  if (x) {
    x->connections++;
    if (parallel)
      lend (x, owner, next, nworkers > 0);
    else if (!per_connection && x->connections == 1 && name[0] == '\0')
      lend (x, x, NULL, nworkers);
    *background = x->nlent > 0;
    v = x->volume;
  }
  pthread_mutex_unlock (&lock);
  destroy (resized);
  return v;
}

void
exports_detach (const void *owner, int volume)
{
  struct export *x, *gone = NULL, *evicted = NULL;
  size_t ngone;
  bool busy = false;

  pthread_mutex_lock (&lock);
  x = find_idle (NULL, volume);
  if (x == NULL) {
    pthread_mutex_unlock (&lock);
    return;
  }
  x->connections--;
  ngone = take_back (x, owner, x->connections == 0);
  if (x->connections == 0 && x->name == NULL) {
    unlist (x);
    gone = x;
  }
  else {
    busy = x->busy = ngone > 0;
    if (x->connections == 0) {
      x->idle_since = ++detaches;
      evicted = over_idle_bound ();
    }
  }
  pthread_mutex_unlock (&lock);

  if (ngone > 0)
    withdraw (x, ngone);
  destroy (gone);
  destroy (evicted);
  if (busy) {
    /* x may be the one to go now: none could while all were busy. */
    pthread_mutex_lock (&lock);
    x->busy = false;
    pthread_cond_broadcast (&changed);
    evicted = over_idle_bound ();
    pthread_mutex_unlock (&lock);
    destroy (evicted);
  }
}

void
exports_fini (void)
{
  struct export *x;

  for (;;) {
    pthread_mutex_lock (&lock);
    x = ntable > 0 ? table[ntable - 1] : NULL;
    if (x)
      unlist (x);
    pthread_mutex_unlock (&lock);
    if (x == NULL)
      break;
    destroy (x);                /* no connection: it lends nothing */
  }
  pthread_mutex_lock (&lock);
  free (table);
  table = NULL;
  pthread_mutex_unlock (&lock);
  handles_fini ();
}
