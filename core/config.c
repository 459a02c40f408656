/* config.c: parameter defaults and validation.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Parameter defaults and validation, shared by the filter's
 * .config_complete and the run-time "set" command.
 */

#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "adaptra/config.h"
#include "adaptra/profile.h"
#include "range.h"
#include "stream.h"

void
adaptra_config_defaults (struct adaptra_config *cfg)
{
  memset (cfg, 0, sizeof *cfg);
  cfg->pool_bytes = UINT64_C (256) * 1024 * 1024;
  cfg->page_size = 4096;
  cfg->min_bytes = 16 * 1024;
  cfg->max_bytes = 0;
  cfg->ratio = 50;
  cfg->mode = ADAPTRA_MODE_ADAPTIVE;
  cfg->fixed_bytes = 128 * 1024;
  cfg->streams = 1024;
  /* Enough for a store of 5 ms a read and 200 MiB/s either way: 20
   * chunks of 64 KiB fit under its flight limit when streams compete
   * (prefetch.c), and 800 streams of 64 KiB/s in a 64 MiB pool (the
   * seed's case 64 times faster) issue 1700 windows of a few pages a
   * second, 9 reads at once on average: with 16 workers 1.3% of their
   * reads waited for a window still queued, with 24 0.3%, with 32
   * 0.2% (adaptra-sim, docs/bench/simulator.md).  Beyond the first 4,
   * workers read only where the store's latency is 1 ms or more.
   */
  cfg->workers = 32;
  /* A boot profile's extents are short and scattered (a Debian guest's
   * boot and web workload: 1104 extents, 47 KiB on average), so
   * following one is bound by the backend's latency times the extents
   * over the threads reading them at once: its second boot took 2.36 s
   * with the 4 workers, 0.38 s with 32 threads, over a store of 5 ms a
   * read and 200 MiB/s, against 5.8 s for the first boot
   * (docs/bench/fleet.md).  32 reads of 47 KiB in flight cover that
   * store's bandwidth-delay product (1 MiB) 1.5 times; the matcher's
   * lead (8 MiB, 2 s) bounds what they may read.
   */
  cfg->profile_workers = 28;
  cfg->profile_max_bytes = ADAPTRA_PROFILE_RECORD_BYTES;
  cfg->profile_seconds = ADAPTRA_PROFILE_RECORD_SECONDS;
}

static int
reject (char *why, size_t len, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (why, len, fmt, ap);
  va_end (ap);
  return -1;
}

int
adaptra_config_check (const struct adaptra_config *cfg, char *why, size_t len)
{
  uint64_t page = cfg->page_size;

  if (adaptra_log2_exact (page) < 0)
    return reject (why, len, "adaptra-page=%" PRIu64 " is not a power of 2",
                   page);
  if (page < ADAPTRA_PAGE_MIN || page > ADAPTRA_PAGE_MAX)
    return reject (why, len,
                   "adaptra-page=%" PRIu64 " is outside %d..%d", page,
                   ADAPTRA_PAGE_MIN, ADAPTRA_PAGE_MAX);
  if (cfg->pool_bytes / page < ADAPTRA_POOL_MIN_PAGES)
    return reject (why, len,
                   "adaptra-pool=%" PRIu64 " holds fewer than %d pages "
                   "of adaptra-page=%" PRIu64,
                   cfg->pool_bytes, ADAPTRA_POOL_MIN_PAGES, page);
  if (cfg->pool_bytes / page >= UINT32_MAX)
    return reject (why, len,
                   "adaptra-pool=%" PRIu64 " has too many pages: "
                   "raise adaptra-page", cfg->pool_bytes);
  if (cfg->min_bytes < page)
    return reject (why, len,
                   "adaptra-min=%" PRIu64 " is less than adaptra-page=%"
                   PRIu64, cfg->min_bytes, page);
  if (cfg->min_bytes > cfg->pool_bytes / ADAPTRA_POOL_WINDOWS)
    return reject (why, len,
                   "adaptra-min=%" PRIu64 " is more than 1/%d of "
                   "adaptra-pool=%" PRIu64,
                   cfg->min_bytes, ADAPTRA_POOL_WINDOWS, cfg->pool_bytes);
  if (cfg->max_bytes != 0) {
    if (cfg->max_bytes < cfg->min_bytes)
      return reject (why, len,
                     "adaptra-max=%" PRIu64 " is less than adaptra-min=%"
                     PRIu64, cfg->max_bytes, cfg->min_bytes);
    if (cfg->max_bytes > cfg->pool_bytes / ADAPTRA_POOL_WINDOWS)
      return reject (why, len,
                     "adaptra-max=%" PRIu64 " is more than 1/%d of "
                     "adaptra-pool=%" PRIu64,
                     cfg->max_bytes, ADAPTRA_POOL_WINDOWS, cfg->pool_bytes);
  }
  if (cfg->ratio < 1 || cfg->ratio > 100)
    return reject (why, len, "adaptra-ratio=%u is outside 1..100",
                   cfg->ratio);
  if (cfg->mode != ADAPTRA_MODE_ADAPTIVE && cfg->mode != ADAPTRA_MODE_FIXED &&
      cfg->mode != ADAPTRA_MODE_OFF)
    return reject (why, len, "adaptra-mode=%d is not a mode", (int) cfg->mode);
  if (cfg->bypass != ADAPTRA_BYPASS_AUTO &&
      cfg->bypass != ADAPTRA_BYPASS_ALWAYS &&
      cfg->bypass != ADAPTRA_BYPASS_NEVER)
    return reject (why, len, "adaptra-bypass=%d is not auto, always or never",
                   (int) cfg->bypass);
  if (cfg->streams < 1 || cfg->streams > ADAPTRA_STREAMS_MAX)
    return reject (why, len, "adaptra-streams=%" PRIu32 " is outside 1..%d",
                   cfg->streams, ADAPTRA_STREAMS_MAX);
  if (cfg->workers > ADAPTRA_WORKERS_MAX)
    return reject (why, len, "adaptra-workers=%u is outside 0..%d",
                   cfg->workers, ADAPTRA_WORKERS_MAX);
  if (cfg->profile_workers > ADAPTRA_WORKERS_MAX)
    return reject (why, len, "adaptra-profile-workers=%u is outside 0..%d",
                   cfg->profile_workers, ADAPTRA_WORKERS_MAX);
  /* The file format counts a profile's pages (at most
   * ADAPTRA_PROFILE_PAGES_MAX), so the bound is in pages.
   */
  if (cfg->profile_max_bytes < ADAPTRA_PROFILE_BOOT_MIN_BYTES ||
      cfg->profile_max_bytes / page > ADAPTRA_PROFILE_PAGES_MAX)
    return reject (why, len, "adaptra-profile-max=%" PRIu64 " is outside "
                   "%" PRIu64 "..%" PRIu64 " (%" PRIu64 " pages of "
                   "adaptra-page=%" PRIu64 ")", cfg->profile_max_bytes,
                   ADAPTRA_PROFILE_BOOT_MIN_BYTES,
                   ADAPTRA_PROFILE_PAGES_MAX * page,
                   ADAPTRA_PROFILE_PAGES_MAX, page);
  if (cfg->profile_seconds < 1 ||
      cfg->profile_seconds > ADAPTRA_PROFILE_RECORD_SECONDS_MAX)
    return reject (why, len, "adaptra-profile-time=%u is outside 1..%d",
                   cfg->profile_seconds, ADAPTRA_PROFILE_RECORD_SECONDS_MAX);
  if (len > 0)
    why[0] = '\0';
  return 0;
}

/* The names of a parameter's values, indexed by value. */
static const char *const mode_names[] = {
  [ADAPTRA_MODE_ADAPTIVE] = "adaptive",
  [ADAPTRA_MODE_FIXED] = "fixed",
  [ADAPTRA_MODE_OFF] = "off",
};
static const char *const bypass_names[] = {
  [ADAPTRA_BYPASS_AUTO] = "auto",
  [ADAPTRA_BYPASS_ALWAYS] = "always",
  [ADAPTRA_BYPASS_NEVER] = "never",
};
#define NAME_OF(table, v) \
  ((unsigned) (v) < sizeof table / sizeof table[0] ? table[v] : "?")

/* The index of name in table (n entries), or -1. */
static int
value_of (const char *const *table, size_t n, const char *name)
{
  size_t i;

  for (i = 0; i < n; i++)
    if (strcmp (name, table[i]) == 0)
      return (int) i;
  return -1;
}

const char *
adaptra_mode_name (enum adaptra_mode mode)
{
  return NAME_OF (mode_names, mode);
}

int
adaptra_mode_parse (const char *name, enum adaptra_mode *mode)
{
  int v = value_of (mode_names, sizeof mode_names / sizeof mode_names[0],
                    name);

  if (v < 0)
    return -1;
  *mode = (enum adaptra_mode) v;
  return 0;
}

const char *
adaptra_bypass_name (enum adaptra_bypass bypass)
{
  return NAME_OF (bypass_names, bypass);
}

int
adaptra_bypass_parse (const char *name, enum adaptra_bypass *bypass)
{
  int v = value_of (bypass_names,
                    sizeof bypass_names / sizeof bypass_names[0], name);

  if (v < 0)
    return -1;
  *bypass = (enum adaptra_bypass) v;
  return 0;
}
