/* config.h: the engine's parameters, their defaults and validation.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Engine parameters, their defaults and their validation.  The names
 * in messages are the filter's parameter names (adaptra-pool=...), so
 * the filter can print them as they are.
 */

#ifndef ADAPTRA_CONFIG_H
#define ADAPTRA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum adaptra_mode {
  ADAPTRA_MODE_ADAPTIVE,        /* the seed's methods */
  ADAPTRA_MODE_FIXED,           /* constant window (pre-seed kernel) */
  ADAPTRA_MODE_OFF,             /* no read-ahead; the pool still caches */
};

/* Whether adaptra steps aside where read-ahead cannot help: when a
 * read from the backend costs about as much as a copy from the pool
 * (adaptra_model_fast), misses go straight to the backend into the
 * client's buffer and no window is read ahead.
 */
enum adaptra_bypass {
  ADAPTRA_BYPASS_AUTO,          /* per volume, from measurements */
  ADAPTRA_BYPASS_ALWAYS,        /* never read ahead, never cache misses */
  ADAPTRA_BYPASS_NEVER,         /* always read ahead */
};

/* Limits enforced by adaptra_config_check.  A page is at least a
 * sector, the unit disk images are read in (below it a page's
 * metadata, up to 48 bytes, would rival its data), and at most the
 * seed's largest window (ADAPTRA_AUTO_MAX_FLOOR), so that the smallest
 * window, one page, is never more than the seed's largest.  Each
 * prefetch thread may hold a backend handle of its own (an HTTP or ssh
 * connection where the plugin serialises requests per handle:
 * plugin/handles.c), so adaptra-workers and adaptra-profile-workers
 * are each bounded at twice adaptra-workers' default.
 */
#define ADAPTRA_PAGE_MIN 512
#define ADAPTRA_PAGE_MAX ADAPTRA_AUTO_MAX_FLOOR
#define ADAPTRA_POOL_MIN_PAGES 64       /* fewer pages are of no use */
#define ADAPTRA_POOL_WINDOWS 4          /* pool holds this many max windows */
#define ADAPTRA_WORKERS_MAX 64
/* adaptra-stats-idle's bounds (plugin/server.h has what it is): at
 * least 3 s, so that adaptra-stat --trace, which looks at its clock
 * once a second, keeps a whole second between its keep-alives (a
 * third of the limit); at most a day, past which an abandoned client
 * would hold its slot longer than anyone watches a server, and the
 * seconds fit an int wherever they are printed.
 */
#define ADAPTRA_STATS_IDLE_SECS_MIN 3
#define ADAPTRA_STATS_IDLE_SECS_MAX 86400
/* The floor of adaptra-max=auto: the seed's constant maximum. */
#define ADAPTRA_AUTO_MAX_FLOOR (1024 * 1024)

struct adaptra_trace;              /* engine.h */

struct adaptra_config {
  uint64_t pool_bytes;          /* adaptra-pool: page data budget */
  uint32_t page_size;           /* adaptra-page: power of 2, 512..1M */
  uint64_t min_bytes;           /* adaptra-min: smallest new window */
  uint64_t max_bytes;           /* adaptra-max: largest window, 0 = auto */
  unsigned ratio;               /* adaptra-ratio: % of thrashing threshold */
  enum adaptra_mode mode;       /* adaptra-mode */
  enum adaptra_bypass bypass;   /* adaptra-bypass */
  uint64_t fixed_bytes;         /* window of mode fixed; not a parameter,
                                   so not checked: the window is at least
                                   a page and within the bounds of every
                                   window */
  uint32_t streams;             /* adaptra-streams: stream table size */
  unsigned workers;             /* adaptra-workers: prefetch threads */
  unsigned profile_workers;     /* adaptra-profile-workers: more threads
                                   that read only cache hints' prefetch
                                   (boot profiles, NBD_CMD_CACHE) */
  uint64_t profile_max_bytes;   /* adaptra-profile-max: distinct bytes a
                                   boot profile records */
  unsigned profile_seconds;     /* adaptra-profile-time: how long a
                                   boot is recorded, seconds */
  bool no_data;                 /* not a parameter: the pool keeps page
                                   metadata only and no byte is copied
                                   (adaptra-sim, which models reads) */
  /* Optional: one record per decision (engine.h: struct adaptra_trace;
   * adaptra_trace_format makes it the seed's trace line).  Called with
   * the engine lock held: it must not call the engine.
   */
  void (*trace) (void *opaque, const struct adaptra_trace *t);
  void *trace_opaque;
};

/* The window of adaptra-mode=fixed: Linux's before the seed patch. */
#define ADAPTRA_FIXED_WINDOW (128 * 1024)

/* The kinds of parameter value. */
enum adaptra_param_type {
  ADAPTRA_PARAM_SIZE,           /* a size: 256M */
  ADAPTRA_PARAM_SIZE_OR_AUTO,   /* a size, or auto (stored as 0) */
  ADAPTRA_PARAM_UNSIGNED,       /* a non-negative integer */
  ADAPTRA_PARAM_MODE,           /* enum adaptra_mode, by name */
  ADAPTRA_PARAM_BYPASS,         /* enum adaptra_bypass, by name */
  ADAPTRA_PARAM_FILTER,         /* the filter's own (a path, a user, an
                                   address): not in struct
                                   adaptra_config, parsed by the filter */
};

struct adaptra_engine;

/* What every parameter's name starts with on the command line. */
#define ADAPTRA_PARAM_PREFIX "adaptra-"
#define ADAPTRA_PARAM_PREFIX_LEN (sizeof ADAPTRA_PARAM_PREFIX - 1)

/* One parameter of the filter.  adaptra_params is the one table of
 * them all: the filter parses the command line and the control
 * socket's "set" with it, nbdkit's --help is generated from it, and a
 * test checks the README's table and the man page against that.
 */
struct adaptra_param {
  const char *name;             /* without the "adaptra-" prefix */
  const char *metavar;          /* the value's form: SIZE, N, auto|... */
  enum adaptra_param_type type;
  size_t offset;                /* of its field in struct adaptra_config */
  size_t width;                 /* the field's size, 4 or 8; 0: none */
  const char *def;              /* the default as one would type it;
                                   NULL: none (the feature is off) */
  uint64_t min, max;            /* bounds adaptra_config_check enforces
                                   (max 0: none of this simple form) */
  /* Change it in a running engine (the control socket's "set"); NULL:
   * fixed once the server runs.
   */
  int (*set) (struct adaptra_engine *e, uint64_t v, char *why, size_t len);
  const char *help;             /* one or two sentences for --help */
};

extern const struct adaptra_param adaptra_params[];
extern const size_t adaptra_nparams;

/* The parameter called name (with or without the "adaptra-" prefix),
 * or NULL.
 */
extern const struct adaptra_param *adaptra_param_find (const char *name);

/* The value of p's field in cfg, and storing v there (truncated to a
 * 4-byte field); p->width is not 0.
 */
extern uint64_t adaptra_param_get (const struct adaptra_config *cfg,
                                   const struct adaptra_param *p);
extern void adaptra_param_put (struct adaptra_config *cfg,
                               const struct adaptra_param *p, uint64_t v);

/* Fill in the defaults of adaptra_params, ADAPTRA_FIXED_WINDOW, and no
 * trace.
 */
extern void adaptra_config_defaults (struct adaptra_config *cfg);

/* The default adaptra-min for pages of page_size bytes: the larger of
 * the table's default and one page, so that adaptra-page alone is
 * valid.  Whoever sets the page without an explicit adaptra-min sets
 * min_bytes to this.
 */
extern uint64_t adaptra_config_default_min (uint64_t page_size);

/* Check every range and cross-constraint.  Returns 0, or EINVAL with
 * a one-line message in why (len bytes, always terminated) naming the
 * parameter and its value, e.g. "adaptra-page=3000 is not a power of 2";
 * the convention of engine.h.
 */
extern int adaptra_config_check (const struct adaptra_config *cfg,
                                 char *why, size_t len);

/* "adaptive", "fixed", "off". */
extern const char *adaptra_mode_name (enum adaptra_mode mode);

/* Parse a mode name; returns 0, or EINVAL if unknown. */
extern int adaptra_mode_parse (const char *name, enum adaptra_mode *mode);

/* "auto", "always", "never", and back (0, or EINVAL if unknown). */
extern const char *adaptra_bypass_name (enum adaptra_bypass bypass);
extern int adaptra_bypass_parse (const char *name,
                                 enum adaptra_bypass *bypass);

#endif /* ADAPTRA_CONFIG_H */
