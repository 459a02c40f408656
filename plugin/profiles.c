/* Boot profiles in the filter: record what a connection reads first,
 * prefetch along the export's profile for the next one.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A guest that boots from an image reads nearly the same pages in
 * nearly the same order every time, much of it scattered (kernel,
 * libraries, configuration) where no read-ahead window helps.  With
 * adaptra-profile=DIR each boot records the order of its first
 * touches (profile/recorder.c: the first adaptra-profile-max bytes or
 * adaptra-profile-time seconds of it), merged at its end into the
 * export's file in DIR (adaptra_profile_file_name: its name, a hash
 * of it and its size) so that pages seen in several boots win; and
 * each new connection to the export follows the profile, prefetching
 * ahead of the client through the engine's cache hints
 * (adaptra_cache_hint), backing off when its reads stop matching.  A
 * profile only decides what to prefetch: every byte still comes from
 * the pool, kept coherent with writes, or the plugin.
 *
 * A boot is the export's connections that start while its recording
 * runs: the first connection opens it, later ones within
 * adaptra-profile-time join it, and it is merged once, when its
 * recording ends (budget spent) or its last connection closes,
 * whichever comes first.  So a guest over several connections is one
 * boot, and a probe (qemu-img info) that comes and goes alone is a
 * boot of its own, too small to merge (adaptra_profile_is_boot).  The
 * merge holds the profile's lock file (adaptra_profile_update), so
 * concurrent boots, in this server or others on a shared directory,
 * each count.  Recorders and matchers hold at most a sixteenth of
 * adaptra-pool together (ADAPTRA_PROFILE_MEMORY_SHARE), inside it:
 * what they allocate the engine's pool lends (adaptra_lend), evicting
 * pages to give their memory back, so that memory does not grow with
 * the connections recording.  A recorder stops recording, a
 * connection does not follow a profile, when that budget has no room.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nbdkit-filter.h>

#include "adaptra/profile.h"
#include "profiles.h"

/* Ranges asked of the matcher per read. */
#define RANGES 16

/* The export's connections within one recording window. */
struct boot {
  struct boot *next;            /* in boots, while connections join */
  pthread_mutex_t lock;         /* its connections read in parallel */
  char path[PATH_MAX];
  struct adaptra_profile_key key;
  char *identity;
  unsigned conns;               /* connections in it */
  uint64_t deadline_ns;         /* connections may join before it */
  struct adaptra_recorder *recorder;  /* NULL once merged */
};

/* A connection: its boot and its matcher. */
struct profiles_conn {
  pthread_mutex_t lock;         /* nbdkit reads a connection in parallel */
  struct adaptra_engine *e;
  int client;
  struct boot *boot;
  struct adaptra_matcher *matcher;    /* NULL without a profile */
  uint64_t matcher_bytes;       /* charged to memory for it */
  struct adaptra_matcher_counters told; /* counted in the stats so far */
};

static char *dir;
/* From profiles_configure, before the first connection. */
static uint64_t record_bytes, record_ns;
static struct adaptra_profile_memory memory;

/* Boots still recording, that a new connection may join. */
static pthread_mutex_t boots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct boot *boots;

int
profiles_set_dir (const char *path)
{
  struct stat st;

  if (stat (path, &st) == -1 || !S_ISDIR (st.st_mode)) {
    nbdkit_error ("adaptra-profile=%s is not a directory", path);
    return -1;
  }
  if (access (path, W_OK | X_OK) == -1) {
    nbdkit_error ("adaptra-profile=%s: cannot write profiles there: %m",
                  path);
    return -1;
  }
  free (dir);
  dir = strdup (path);
  return dir ? 0 : -1;
}

const char *
profiles_dir (void)
{
  return dir;
}

static bool
pool_lends (void *e, uint64_t bytes)
{
  return adaptra_lend (e, bytes);
}

static void
pool_takes_back (void *e, uint64_t bytes)
{
  adaptra_take_back (e, bytes);
}

void
profiles_configure (const struct adaptra_config *cfg,
                    struct adaptra_engine *e)
{
  record_bytes = cfg->profile_max_bytes;
  record_ns = cfg->profile_seconds * UINT64_C (1000000000);
  memory.limit = cfg->pool_bytes / ADAPTRA_PROFILE_MEMORY_SHARE;
  memory.source_take = pool_lends;
  memory.source_give = pool_takes_back;
  memory.source = e;
}

void
profiles_fini (void)
{
  free (dir);
  dir = NULL;
}

/* Merge the boot's recording r (taken from it under its lock, so
 * that this happens once) into the export's profile.  No lock held:
 * the profile's lock file may make it wait.
 */
static void
merge (struct boot *b, struct adaptra_recorder *r)
{
  struct adaptra_profile *fresh;
  char why[256];

  if (r == NULL)
    return;
  fresh = adaptra_recorder_profile (r);
  adaptra_recorder_free (r);
  if (fresh == NULL)
    nbdkit_error ("adaptra: warning: profile %s not saved: out of memory",
                  b->path);
  else if (!adaptra_profile_is_boot (fresh))
    nbdkit_debug ("adaptra: profile %s: a session of %" PRIu64 " pages is "
                  "a probe, not a boot: not merged", b->path, fresh->pages);
  else if (adaptra_profile_update (b->path, fresh,
                                   record_bytes / b->key.page_size,
                                   why, sizeof why) == -1)
    nbdkit_error ("adaptra: warning: profile %s not saved: %s", b->path,
                  why);
  adaptra_profile_free (fresh);
}

/* Stop new connections joining b.  boots_lock held. */
static void
unlist (struct boot *b)
{
  struct boot **pp;

  for (pp = &boots; *pp; pp = &(*pp)->next)
    if (*pp == b) {
      *pp = b->next;
      break;
    }
  b->next = NULL;
}

static void
boot_free (struct boot *b)
{
  adaptra_recorder_free (b->recorder);
  free (b->identity);
  pthread_mutex_destroy (&b->lock);
  free (b);
}

/* Take the boot's recording, once.  NULL if it was taken. */
static struct adaptra_recorder *
take_recording (struct boot *b)
{
  struct adaptra_recorder *r;

  pthread_mutex_lock (&b->lock);
  r = b->recorder;
  b->recorder = NULL;
  pthread_mutex_unlock (&b->lock);
  return r;
}

/* The boot a connection to path starting at t belongs to: the
 * export's boot still recording, or a new one.  NULL without memory.
 */
static struct boot *
boot_join (const char *path, const char *name, uint64_t size,
           uint32_t page_size, uint64_t t)
{
  struct boot *b;

  pthread_mutex_lock (&boots_lock);
  for (b = boots; b; b = b->next)
    if (strcmp (b->path, path) == 0)
      break;
  if (b && t >= b->deadline_ns) {
    /* Its window has passed: its recording ends at its next read or
     * its last connection's close.
     */
    unlist (b);
    b = NULL;
  }
  if (b == NULL && (b = calloc (1, sizeof *b)) != NULL) {
    pthread_mutex_init (&b->lock, NULL);
    snprintf (b->path, sizeof b->path, "%s", path);
    b->identity = strdup (name);
    b->key = (struct adaptra_profile_key) {
      .identity = b->identity, .page_size = page_size, .export_size = size,
    };
    b->deadline_ns = t + record_ns;
    b->recorder = b->identity == NULL ? NULL
      : adaptra_recorder_new (&b->key, record_bytes / page_size, record_ns,
                              t, &memory);
    if (b->recorder == NULL) {
      nbdkit_debug ("adaptra: profile %s: no recorder (out of memory or "
                    "of the recorders' budget)", path);
      boot_free (b);
      b = NULL;
    }
    else {
      b->next = boots;
      boots = b;
    }
  }
  if (b)
    b->conns++;
  pthread_mutex_unlock (&boots_lock);
  return b;
}

/* A connection leaves its boot: the last one merges and frees it. */
static void
boot_leave (struct boot *b)
{
  bool last;

  pthread_mutex_lock (&boots_lock);
  last = --b->conns == 0;
  if (last)
    unlist (b);
  pthread_mutex_unlock (&boots_lock);
  if (last) {
    merge (b, take_recording (b));
    boot_free (b);
  }
}

/* Record a read of the boot; once the recording ends, merge it and
 * let no more connections join.
 */
static void
boot_read (struct boot *b, uint64_t offset, uint32_t count, uint64_t t)
{
  struct adaptra_recorder *ended = NULL;

  pthread_mutex_lock (&b->lock);
  if (b->recorder != NULL &&
      !adaptra_recorder_read (b->recorder, offset, count, t)) {
    ended = b->recorder;
    b->recorder = NULL;
  }
  pthread_mutex_unlock (&b->lock);
  if (ended) {
    pthread_mutex_lock (&boots_lock);
    unlist (b);
    pthread_mutex_unlock (&boots_lock);
    /* The budget is spent: merge now, not at the end of a long run. */
    merge (b, ended);
  }
}

struct profiles_conn *
profiles_open (struct adaptra_engine *e, int client, const char *name,
               uint64_t size, uint32_t page_size)
{
  struct profiles_conn *pc;
  struct adaptra_profile *p;
  struct adaptra_profile_key key = {
    .identity = name, .page_size = page_size, .export_size = size,
  };
  struct adaptra_matcher_config mcfg;
  char file[ADAPTRA_PROFILE_NAME_MAX], path[PATH_MAX], why[256];

  if (dir == NULL ||
      adaptra_profile_file_name (name, size, file, sizeof file) == -1 ||
      snprintf (path, sizeof path, "%s/%s", dir, file) >= (int) sizeof path ||
      (pc = calloc (1, sizeof *pc)) == NULL)
    return NULL;
  pthread_mutex_init (&pc->lock, NULL);
  pc->e = e;
  pc->client = client;
  pc->boot = boot_join (path, name, size, page_size, adaptra_monotonic_ns ());
  /* Each connection loads the file afresh: a profile another server
   * merged into a shared directory is followed from the next one.
   */
  p = adaptra_profile_load (path, &key, why, sizeof why);
  if (p == NULL && errno != ENOENT)
    nbdkit_error ("adaptra: warning: profile %s ignored: %s", path, why);
  if (p && adaptra_profile_memory_take (&memory,
                                        adaptra_matcher_bytes (p))) {
    pc->matcher_bytes = adaptra_matcher_bytes (p);
    adaptra_matcher_defaults (&mcfg);
    pc->matcher = adaptra_matcher_new (p, &mcfg);
    nbdkit_debug ("adaptra: export \"%s\": following profile %s (%" PRIu64
                  " pages, %" PRIu32 " boots)", name, path, p->pages,
                  p->boots);
  }
  else if (p)
    nbdkit_debug ("adaptra: export \"%s\": not following profile %s: the "
                  "profiles' memory budget is spent", name, path);
  adaptra_profile_free (p);
  if (pc->boot == NULL && pc->matcher == NULL) {
    profiles_close (pc);
    return NULL;
  }
  return pc;
}

/* Count in the statistics what the matcher did since the last time;
 * at the end (final) its pending pages are wasted.  Lock held.
 */
static void
tell (struct profiles_conn *pc, bool final)
{
  struct adaptra_matcher_counters c;

  if (pc->matcher == NULL)
    return;
  adaptra_matcher_counters (pc->matcher, &c);
  if (final)
    c.wasted += c.pending;
  adaptra_stats_add_profile (pc->e, c.proposed - pc->told.proposed,
                             c.hit - pc->told.hit,
                             c.wasted - pc->told.wasted);
  pc->told = c;
}

void
profiles_read (struct profiles_conn *pc, uint64_t offset, uint32_t count)
{
  struct adaptra_profile_range ranges[RANGES];
  uint64_t t = adaptra_monotonic_ns (), room;
  size_t n, i;

  if (pc->boot)
    boot_read (pc->boot, offset, count, t);
  if (pc->matcher == NULL)
    return;
  pthread_mutex_lock (&pc->lock);
  adaptra_matcher_read (pc->matcher, offset, count, t);
  do {
    room = adaptra_cache_room (pc->e, pc->client);
    n = adaptra_matcher_next (pc->matcher, t, room, ranges, RANGES);
    for (i = 0; i < n; i++)
      adaptra_cache_hint (pc->e, pc->client, ranges[i].offset,
                          ranges[i].count);
  } while (n == RANGES);
  tell (pc, false);
  pthread_mutex_unlock (&pc->lock);
}

void
profiles_close (struct profiles_conn *pc)
{
  if (pc == NULL)
    return;
  pthread_mutex_lock (&pc->lock);
  tell (pc, true);
  pthread_mutex_unlock (&pc->lock);
  if (pc->boot)
    boot_leave (pc->boot);
  adaptra_matcher_free (pc->matcher);
  adaptra_profile_memory_give (&memory, pc->matcher_bytes);
  pthread_mutex_destroy (&pc->lock);
  free (pc);
}
