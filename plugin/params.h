/* params.h: the filter's parameters and the tunable ones' names.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine's parameters, as given on the nbdkit command line
 * (adaptra-pool=256M) and, for the tunable ones, at run time over the
 * control socket ("set ratio 30").  One table drives both, so a value
 * is parsed and validated the same way wherever it comes from.
 */

#ifndef ADAPTRA_PARAMS_H
#define ADAPTRA_PARAMS_H

#include <stddef.h>

#include "adaptra/config.h"
#include "adaptra/engine.h"
#include "adaptra/strbuf.h"

/* The --help lines of the engine's parameters. */
#define params_config_help \
  "adaptra-pool=SIZE        Memory for read-ahead data (default 256M).\n" \
  "adaptra-page=SIZE        Pool page size, power of 2 (default 4K).\n" \
  "adaptra-min=SIZE         Smallest new window (default 16K).\n" \
  "adaptra-max=SIZE|auto    Largest window (default auto: latency x\n" \
  "                         bandwidth of the backend, at least 1M).\n" \
  "adaptra-ratio=PERCENT    Share of the thrashing threshold used as\n" \
  "                         the window, 1..100 (default 50).\n" \
  "adaptra-mode=MODE        adaptive, fixed (legacy 128K window) or off.\n" \
  "adaptra-bypass=auto|always|never\n" \
  "                         Step aside where the backend is as fast as\n" \
  "                         the pool (default auto: measured per export).\n" \
  "adaptra-streams=N        Stream table size (default 1024).\n" \
  "adaptra-workers=N        Prefetch threads (default 4).\n" \
  "adaptra-profile-workers=N\n" \
  "                         More threads that read only what a boot\n" \
  "                         profile prefetches (default 28).\n" \
  "adaptra-profile-max=SIZE Distinct bytes a boot profile records\n" \
  "                         (default 256M, 1M .. 2^22 pages).\n" \
  "adaptra-profile-time=SECONDS\n" \
  "                         How long a boot is recorded, and the window\n" \
  "                         in which an export's connections are one\n" \
  "                         boot (default 120, 1..3600).\n"

/* If key is one of the engine's parameters, parse value into cfg and
 * return 1, or return -1 with a one-line message naming key and value
 * in why.  Returns 0 for any other key.  Cross-parameter checks are
 * adaptra_config_check's.
 */
extern int params_parse (struct adaptra_config *cfg, const char *key,
                         const char *value, char *why, size_t len);

/* Copy the refusal why to out (len bytes, always terminated), with
 * each "adaptra-NAME=NUMBER" of a parameter given on the command line
 * written as the user typed it ("adaptra-page=3K", not 3072).
 */
extern void params_quote (const char *why, char *out, size_t len);

/* Forget what params_parse kept. */
extern void params_free (void);

/* Change a tunable of a running engine: name is "ratio", "min", "max",
 * "mode" or "bypass" (or the same with the "adaptra-" prefix).  Returns 0, or
 * -1 with the reason in why (unknown or fixed parameter, bad value).
 */
extern int params_set_runtime (struct adaptra_engine *e, const char *name,
                               const char *value, char *why, size_t len);

/* Append "NAME VALUE\n" for parameter name of a running engine (any
 * parameter, tunable or not), or "NAME VALUE\n" lines for all of them
 * when name is NULL.  Returns 0, or -1 with the reason in why.
 */
extern int params_get (struct adaptra_engine *e, const char *name,
                       struct adaptra_strbuf *out, char *why, size_t len);

#endif /* ADAPTRA_PARAMS_H */
