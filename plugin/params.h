/* params.h: the filter's parameters and the tunable ones' names.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine's parameters, as given on the nbdkit command line
 * (adaptra-pool=256M) and, for the tunable ones, at run time over the
 * control socket ("set ratio 30").  One table, adaptra_params
 * (core/config.c), drives both and --help, so a value is parsed and
 * validated the same way wherever it comes from.  The filter's own
 * parameters (ADAPTRA_PARAM_FILTER) are in the table too, for --help
 * and the defaults, but the filter parses them.
 */

#ifndef ADAPTRA_PARAMS_H
#define ADAPTRA_PARAMS_H

#include <stddef.h>

#include "adaptra/config.h"
#include "adaptra/engine.h"
#include "adaptra/strbuf.h"

/* Append nbdkit's --help text for every parameter of adaptra_params:
 * per parameter a line "adaptra-NAME=FORM (default DEFAULT)", then its
 * help, bounds and whether it can be set at run time, indented.
 */
extern void params_help (struct adaptra_strbuf *out);

/* If key is one of the engine's parameters, parse value into cfg and
 * return 1, or return -1 with a one-line message naming key and value
 * in why.  Returns 0 for any other key, the filter's own included.
 * Cross-parameter checks are adaptra_config_check's.
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

/* Change a tunable of a running engine: name is a parameter of
 * adaptra_params with a setter (with or without ADAPTRA_PARAM_PREFIX).
 * Returns 0, or -1 with the reason in why (unknown or fixed parameter,
 * bad value).
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
