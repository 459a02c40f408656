/* lagging-plugin.c: a RAM disk whose reads return late.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A RAM disk whose reads take their data first and return it late.
 *
 * Built at server start by nbdkit's cc plugin:
 *
 *   nbdkit cc lagging-plugin.c size=256M lag-us=2000
 *
 * Each read copies the bytes and then sleeps lag-us microseconds before
 * returning them; writes, zeroes and trims apply at once.  A write that
 * lands during a read's sleep therefore makes that read's data stale,
 * which a real remote store does too (the data is on the wire).  With
 * the filter above, a prefetch in that position must be discarded, not
 * served: test-integrity runs its load on this plugin so that the race
 * happens often enough to catch a filter that forgets it.
 */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* Copies in and out of the disk do not overlap (no data race for
 * ThreadSanitizer); the lag comes after the copy, outside the lock.
 */
static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static unsigned char *disk;
static int64_t size = -1;
static long lag_us = 1000;

static int
lagging_config (const char *key, const char *value)
{
  if (strcmp (key, "size") == 0) {
    size = nbdkit_parse_size (value);
    return size < 0 ? -1 : 0;
  }
  if (strcmp (key, "lag-us") == 0) {
    lag_us = atol (value);
    return 0;
  }
  nbdkit_error ("unknown parameter '%s'", key);
  return -1;
}

static int
lagging_get_ready (void)
{
  if (size < 0) {
    nbdkit_error ("size= is required");
    return -1;
  }
  disk = calloc (1, size);
  if (disk == NULL) {
    nbdkit_error ("calloc: %m");
    return -1;
  }
  return 0;
}

static void *
lagging_open (int readonly)
{
  return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t
lagging_get_size (void *handle)
{
  return size;
}

static int
lagging_pread (void *handle, void *buf, uint32_t count, uint64_t offset,
               uint32_t flags)
{
  struct timespec ts = { .tv_sec = lag_us / 1000000,
                         .tv_nsec = (lag_us % 1000000) * 1000 };

  pthread_rwlock_rdlock (&lock);
  memcpy (buf, disk + offset, count);
  pthread_rwlock_unlock (&lock);
  nanosleep (&ts, NULL);
  return 0;
}

static int
lagging_pwrite (void *handle, const void *buf, uint32_t count,
                uint64_t offset, uint32_t flags)
{
  pthread_rwlock_wrlock (&lock);
  memcpy (disk + offset, buf, count);
  pthread_rwlock_unlock (&lock);
  return 0;
}

static int
lagging_zero (void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
  pthread_rwlock_wrlock (&lock);
  memset (disk + offset, 0, count);
  pthread_rwlock_unlock (&lock);
  return 0;
}

static struct nbdkit_plugin plugin = {
  .name = "lagging",
  .config = lagging_config,
  .get_ready = lagging_get_ready,
  .open = lagging_open,
  .get_size = lagging_get_size,
  .pread = lagging_pread,
  .pwrite = lagging_pwrite,
  .zero = lagging_zero,
  .trim = lagging_zero,
};

NBDKIT_REGISTER_PLUGIN (plugin)
