/* Boot profiles in the filter: record what a connection reads first,
 * prefetch along the export's profile for the next one.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A guest that boots from an image reads nearly the same pages in
 * nearly the same order every time, much of it scattered (kernel,
 * libraries, configuration) where no read-ahead window helps.  With
 * adaptra-profile=DIR each connection records the order of its first
 * touches (profile/recorder.c: the first RECORD_BYTES or RECORD_SECONDS of
 * it), merged at its end into DIR/<export>.profile so that pages seen
 * in several boots win; and each new connection to the export follows
 * the profile, prefetching ahead of the client through the engine's
 * cache hints (adaptra_cache_hint), backing off when its reads stop
 * matching.  A profile only decides what to prefetch: every byte still
 * comes from the pool, kept coherent with writes, or the plugin.
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

/* What one connection records: a boot's first two minutes, or its
 * first 256 MiB of distinct pages, whichever ends first.
 */
#define RECORD_BYTES (UINT64_C (256) * 1024 * 1024)
#define RECORD_SECONDS 120

/* Ranges asked of the matcher per read. */
#define RANGES 16

struct profiles_conn {
  pthread_mutex_t lock;         /* nbdkit reads a connection in parallel */
  struct adaptra_engine *e;
  int client;
  char path[PATH_MAX];
  struct adaptra_profile_key key;
  char *identity;
  struct adaptra_recorder *recorder;  /* NULL once its budget is spent
                                         and saved */
  bool recording;
  struct adaptra_matcher *matcher;    /* NULL without a profile */
  struct adaptra_matcher_counters told; /* counted in the stats so far */
};

static char *dir;

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

void
profiles_fini (void)
{
  free (dir);
  dir = NULL;
}

static uint64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * UINT64_C (1000000000) + ts.tv_nsec;
}

struct profiles_conn *
profiles_open (struct adaptra_engine *e, int client, const char *name,
               uint64_t size, uint32_t page_size)
{
  struct profiles_conn *pc;
  struct adaptra_profile *p;
  struct adaptra_matcher_config mcfg;
  char file[ADAPTRA_PROFILE_NAME_MAX], why[256];

  if (dir == NULL || (pc = calloc (1, sizeof *pc)) == NULL)
    return NULL;
  pthread_mutex_init (&pc->lock, NULL);
  pc->e = e;
  pc->client = client;
  pc->identity = strdup (name);
  pc->key = (struct adaptra_profile_key) {
    .identity = pc->identity, .page_size = page_size, .export_size = size,
  };
  if (pc->identity == NULL ||
      adaptra_profile_file_name (name, size, file, sizeof file) == -1 ||
      snprintf (pc->path, sizeof pc->path, "%s/%s", dir, file)
      >= (int) sizeof pc->path) {
    profiles_close (pc);
    return NULL;
  }
  pc->recorder = adaptra_recorder_new (&pc->key, RECORD_BYTES / page_size,
                                       RECORD_SECONDS * UINT64_C (1000000000),
                                       now_ns ());
  pc->recording = pc->recorder != NULL;
  p = adaptra_profile_load (pc->path, &pc->key, why, sizeof why);
  if (p == NULL && errno != ENOENT)
    nbdkit_error ("adaptra: warning: profile %s ignored: %s", pc->path, why);
  if (p) {
    adaptra_matcher_defaults (&mcfg);
    pc->matcher = adaptra_matcher_new (p, &mcfg);
    nbdkit_debug ("adaptra: export \"%s\": following profile %s (%" PRIu64
                  " pages, %" PRIu32 " boots)", name, pc->path, p->pages,
                  p->boots);
    adaptra_profile_free (p);
  }
  return pc;
}

/* Merge the recording into the export's profile on disk.  Lock held. */
static void
save (struct profiles_conn *pc)
{
  struct adaptra_profile *fresh, *old, *merged;
  char why[256];

  if (pc->recorder == NULL || adaptra_recorder_pages (pc->recorder) == 0)
    return;
  fresh = adaptra_recorder_profile (pc->recorder);
  old = adaptra_profile_load (pc->path, &pc->key, why, sizeof why);
  merged = fresh ? adaptra_profile_merge (old, fresh,
                                          RECORD_BYTES / pc->key.page_size)
                 : NULL;
  if (merged == NULL)
    nbdkit_error ("adaptra: warning: profile %s not saved: out of memory",
                  pc->path);
  else if (adaptra_profile_save (merged, pc->path, why, sizeof why) == -1)
    nbdkit_error ("adaptra: warning: profile %s not saved: %s", pc->path,
                  why);
  adaptra_profile_free (merged);
  adaptra_profile_free (old);
  adaptra_profile_free (fresh);
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
  uint64_t t = now_ns (), room;
  size_t n, i;

  pthread_mutex_lock (&pc->lock);
  if (pc->recording &&
      !adaptra_recorder_read (pc->recorder, offset, count, t)) {
    /* The budget is spent: save now, not at the end of a long run. */
    save (pc);
    adaptra_recorder_free (pc->recorder);
    pc->recorder = NULL;
    pc->recording = false;
  }
  if (pc->matcher) {
    adaptra_matcher_read (pc->matcher, offset, count, t);
    do {
      room = adaptra_cache_room (pc->e, pc->client);
      n = adaptra_matcher_next (pc->matcher, t, room, ranges, RANGES);
      for (i = 0; i < n; i++)
        adaptra_cache_hint (pc->e, pc->client, ranges[i].offset,
                            ranges[i].count);
    } while (n == RANGES);
    tell (pc, false);
  }
  pthread_mutex_unlock (&pc->lock);
}

void
profiles_close (struct profiles_conn *pc)
{
  if (pc == NULL)
    return;
  pthread_mutex_lock (&pc->lock);
  save (pc);
  tell (pc, true);
  pthread_mutex_unlock (&pc->lock);
  adaptra_recorder_free (pc->recorder);
  adaptra_matcher_free (pc->matcher);
  free (pc->identity);
  pthread_mutex_destroy (&pc->lock);
  free (pc);
}
