/* config.c: parameter defaults and validation.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The one table of the filter's parameters (name, form, default,
 * bounds, run-time setter, help), their defaults and validation,
 * shared by the filter's .config and .config_complete, the run-time
 * "set" command, --help, and the simulator.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/config.h"
#include "adaptra/engine.h"
#include "adaptra/profile.h"
#include "range.h"
#include "stream.h"

/* Setters of a running engine, all of one shape for the table. */
static int
set_ratio (struct adaptra_engine *e, uint64_t v, char *why, size_t len)
{
  return adaptra_engine_set_ratio (e, v, why, len);
}

static int
set_mode (struct adaptra_engine *e, uint64_t v, char *why, size_t len)
{
  return adaptra_engine_set_mode (e, v, why, len);
}

static int
set_bypass (struct adaptra_engine *e, uint64_t v, char *why, size_t len)
{
  return adaptra_engine_set_bypass (e, v, why, len);
}

#define FIELD(f) \
  offsetof (struct adaptra_config, f), \
  sizeof (((struct adaptra_config *) 0)->f)
#define NO_FIELD 0, 0

const struct adaptra_param adaptra_params[] = {
  { "pool", "SIZE", ADAPTRA_PARAM_SIZE, FIELD (pool_bytes), "256M", 0, 0,
    NULL, "Memory for read-ahead data: pool pages and (1/16 of it) "
    "transfer buffers, all within it." },
  { "page", "SIZE", ADAPTRA_PARAM_SIZE, FIELD (page_size), "4K",
    ADAPTRA_PAGE_MIN, ADAPTRA_PAGE_MAX,
    NULL, "Pool page size, a power of 2." },
  { "min", "SIZE", ADAPTRA_PARAM_SIZE, FIELD (min_bytes), "16K", 0, 0,
    adaptra_engine_set_min, "Smallest window of a new stream; not given, "
    "the larger of this and adaptra-page." },
  { "max", "SIZE|auto", ADAPTRA_PARAM_SIZE_OR_AUTO, FIELD (max_bytes),
    "auto", 0, 0, adaptra_engine_set_max,
    "Largest window; auto: the larger of 1M and the backend's measured "
    "latency x throughput, at most a quarter of the pool." },
  { "ratio", "PERCENT", ADAPTRA_PARAM_UNSIGNED, FIELD (ratio), "50", 1, 100,
    set_ratio, "Share of the thrashing threshold used as the window." },
  { "mode", "adaptive|fixed|off", ADAPTRA_PARAM_MODE, FIELD (mode),
    "adaptive", 0, 0, set_mode,
    "fixed: a constant 128K window, the pre-seed logic, for comparisons; "
    "off: no read-ahead." },
  { "bypass", "auto|always|never", ADAPTRA_PARAM_BYPASS, FIELD (bypass),
    "auto", 0, 0, set_bypass,
    "Step aside for exports whose backend reads about as fast as the pool "
    "copies (auto: measured per export)." },
  { "streams", "N", ADAPTRA_PARAM_UNSIGNED, FIELD (streams), "1024",
    1, ADAPTRA_STREAMS_MAX, NULL, "Stream table size." },
  /* Enough to keep a remote store's bandwidth-delay product in flight
   * when many slow streams compete: their windows are small and many,
   * and with fewer workers readers find their window still queued
   * (the sweep: docs/bench/history/simulator.md).  A ceiling: only as
   * many read as the model of the backend rewards (core/model.h), and a
   * plugin that serialises requests opens handles for them only as
   * they read (plugin/handles.c).
   */
  { "workers", "N", ADAPTRA_PARAM_UNSIGNED, FIELD (workers), "32",
    0, ADAPTRA_WORKERS_MAX, NULL,
    "Most prefetch threads (as many read as the backend rewards); 0: "
    "readers run read-ahead themselves." },
  /* A boot profile's extents are short and scattered, so following
   * one is bound by the backend's latency times the extents over the
   * threads reading them at once, not by its bandwidth: with these
   * beside the default workers, enough reads of a typical extent are
   * in flight to cover a remote store's bandwidth-delay product (the
   * boots measured: docs/bench/fleet.md).  The matcher's lead bounds
   * what they may read.
   */
  { "profile-workers", "N", ADAPTRA_PARAM_UNSIGNED, FIELD (profile_workers),
    "28", 0, ADAPTRA_WORKERS_MAX, NULL,
    "With adaptra-profile, more prefetch threads that read only what "
    "profiles (and NBD_CMD_CACHE) prefetch." },
  /* A boot's first 256 MiB of distinct pages or first two minutes:
   * a Debian guest's boot and a workload read 50 to 100 MiB in 20 to
   * 30 s.  The size's upper bound is in pages, the file format's
   * ADAPTRA_PROFILE_PAGES_MAX, so adaptra_config_check tests it.
   */
  { "profile-max", "SIZE", ADAPTRA_PARAM_SIZE, FIELD (profile_max_bytes),
    "256M", ADAPTRA_PROFILE_BOOT_MIN_BYTES, 0, NULL,
    "With adaptra-profile, distinct bytes a boot profile records, from 1M "
    "to 2^22 pages." },
  { "profile-time", "SECONDS", ADAPTRA_PARAM_UNSIGNED,
    FIELD (profile_seconds), "120", 1, ADAPTRA_PROFILE_RECORD_SECONDS_MAX,
    NULL, "With adaptra-profile, how long a boot is recorded: the window in "
    "which an export's connections are one boot." },
  { "profile", "DIR", ADAPTRA_PARAM_FILTER, NO_FIELD, NULL, 0, 0, NULL,
    "Boot profiles: record what each export's connections read first, "
    "prefetch it for the next connections." },
  { "share", "auto|export|connection", ADAPTRA_PARAM_FILTER, NO_FIELD,
    "auto", 0, 0, NULL,
    "Whose bytes a pool page holds (auto: the export's if the plugin "
    "offers multi-conn, else the connection's)." },
  { "stats", "PATH", ADAPTRA_PARAM_FILTER, NO_FIELD, NULL, 0, 0, NULL,
    "Serve statistics and control on this unix socket (adaptra-stat(1))." },
  { "stats-mode", "MODE", ADAPTRA_PARAM_FILTER, NO_FIELD, "0600", 0, 0, NULL,
    "File mode of the socket, in octal (0660 lets the group read)." },
  { "stats-owner", "USER[:GROUP]", ADAPTRA_PARAM_FILTER, NO_FIELD, NULL,
    0, 0, NULL, "Give the socket to USER (for nbdkit -u USER -g GROUP)." },
  /* A minute: a person typing at socat is not cut off between
   * commands, and an abandoned client holds one of the socket's few
   * slots no longer (plugin/server.h).
   */
  { "stats-idle", "SECONDS", ADAPTRA_PARAM_FILTER, NO_FIELD, "60",
    ADAPTRA_STATS_IDLE_SECS_MIN, ADAPTRA_STATS_IDLE_SECS_MAX, NULL,
    "Close a socket client this many seconds after its last command." },
  { "metrics", "[ADDR:]PORT", ADAPTRA_PARAM_FILTER, NO_FIELD, NULL,
    0, 0, NULL, "Serve /metrics over HTTP for Prometheus to scrape, on ADDR "
    "(default 127.0.0.1, loopback only) and PORT." },
};
const size_t adaptra_nparams = sizeof adaptra_params / sizeof adaptra_params[0];

const struct adaptra_param *
adaptra_param_find (const char *name)
{
  size_t i;

  if (strncmp (name, ADAPTRA_PARAM_PREFIX, ADAPTRA_PARAM_PREFIX_LEN) == 0)
    name += ADAPTRA_PARAM_PREFIX_LEN;
  for (i = 0; i < adaptra_nparams; i++)
    if (strcmp (adaptra_params[i].name, name) == 0)
      return &adaptra_params[i];
  return NULL;
}

uint64_t
adaptra_param_get (const struct adaptra_config *cfg,
                   const struct adaptra_param *p)
{
  const char *field = (const char *) cfg + p->offset;
  uint32_t v32;
  uint64_t v;

  if (p->width == sizeof v32) {
    memcpy (&v32, field, sizeof v32);
    return v32;
  }
  memcpy (&v, field, sizeof v);
  return v;
}

void
adaptra_param_put (struct adaptra_config *cfg, const struct adaptra_param *p,
                   uint64_t v)
{
  char *field = (char *) cfg + p->offset;
  uint32_t v32 = (uint32_t) v;

  if (p->width == sizeof v32)
    memcpy (field, &v32, sizeof v32);
  else
    memcpy (field, &v, sizeof v);
}

/* The value of the table's own default text: a size with at most one
 * unit letter (K, M, G), a number, auto, or a mode's or bypass's name.
 * test-config checks that every default parses.
 */
static uint64_t
default_value (const struct adaptra_param *p)
{
  static const char units[] = "KMG";
  enum adaptra_mode mode;
  enum adaptra_bypass bypass;
  const char *u;
  char *end;
  uint64_t v;

  switch (p->type) {
  case ADAPTRA_PARAM_MODE:
    if (adaptra_mode_parse (p->def, &mode) != 0)
      abort ();
    return mode;
  case ADAPTRA_PARAM_BYPASS:
    if (adaptra_bypass_parse (p->def, &bypass) != 0)
      abort ();
    return bypass;
  case ADAPTRA_PARAM_SIZE_OR_AUTO:
    if (strcmp (p->def, "auto") == 0)
      return 0;
    /* fall through */
  default:
    v = strtoull (p->def, &end, 10);
    if (*end != '\0' && (u = strchr (units, *end)) != NULL)
      v <<= 10 * (u - units + 1), end++;
    if (end == p->def || *end != '\0')
      abort ();
    return v;
  }
}

void
adaptra_config_defaults (struct adaptra_config *cfg)
{
  size_t i;

  memset (cfg, 0, sizeof *cfg);
  for (i = 0; i < adaptra_nparams; i++) {
    const struct adaptra_param *p = &adaptra_params[i];

    if (p->width == 0 || p->def == NULL)
      continue;
    adaptra_param_put (cfg, p, default_value (p));
  }
  cfg->fixed_bytes = ADAPTRA_FIXED_WINDOW;
}

uint64_t
adaptra_config_default_min (uint64_t page_size)
{
  uint64_t min = default_value (adaptra_param_find ("min"));

  return page_size > min ? page_size : min;
}

static int
reject (char *why, size_t len, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (why, len, fmt, ap);
  va_end (ap);
  return EINVAL;
}

int
adaptra_config_check (const struct adaptra_config *cfg, char *why, size_t len)
{
  uint64_t page = cfg->page_size;
  size_t i;

  if (adaptra_log2_exact (page) < 0)
    return reject (why, len, "adaptra-page=%" PRIu64 " is not a power of 2",
                   page);
  for (i = 0; i < adaptra_nparams; i++) {
    const struct adaptra_param *p = &adaptra_params[i];
    uint64_t v;

    if (p->width == 0 || p->max == 0)
      continue;
    v = adaptra_param_get (cfg, p);
    if (v < p->min || v > p->max)
      return reject (why, len, "adaptra-%s=%" PRIu64 " is outside %" PRIu64
                     "..%" PRIu64, p->name, v, p->min, p->max);
  }
  if (cfg->pool_bytes / page < ADAPTRA_POOL_MIN_PAGES)
    return reject (why, len,
                   "adaptra-pool=%" PRIu64 " holds fewer than %d pages "
                   "of adaptra-page=%" PRIu64,
                   cfg->pool_bytes, ADAPTRA_POOL_MIN_PAGES, page);
  if (cfg->pool_bytes / page >= UINT32_MAX)
    return reject (why, len,
                   "adaptra-pool=%" PRIu64 " has too many pages of "
                   "adaptra-page=%" PRIu64 ": raise adaptra-page",
                   cfg->pool_bytes, page);
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
  if (cfg->mode != ADAPTRA_MODE_ADAPTIVE && cfg->mode != ADAPTRA_MODE_FIXED &&
      cfg->mode != ADAPTRA_MODE_OFF)
    return reject (why, len, "adaptra-mode=%d is not a mode", (int) cfg->mode);
  if (cfg->bypass != ADAPTRA_BYPASS_AUTO &&
      cfg->bypass != ADAPTRA_BYPASS_ALWAYS &&
      cfg->bypass != ADAPTRA_BYPASS_NEVER)
    return reject (why, len, "adaptra-bypass=%d is not auto, always or never",
                   (int) cfg->bypass);
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
    return EINVAL;
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
    return EINVAL;
  *bypass = (enum adaptra_bypass) v;
  return 0;
}
