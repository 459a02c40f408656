/* aside.h: stepping aside, a read straight to the backend.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Stepping aside (aside.c, its design note says when and how): the
 * decision that a volume serves its misses straight from the backend,
 * which the read paths (read.c) and the tunables (engine.c: a new
 * adaptra-bypass is applied to every volume at once) ask, and the
 * read straight into a client's buffer, which the read paths and a
 * hedged read (hedge.c) make.
 */

#ifndef ADAPTRA_ASIDE_H
#define ADAPTRA_ASIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "read.h"

struct adaptra_engine;
struct adaptra_volume;
struct adaptra_client;

/* Does volume v step aside now (adaptra-bypass, else its backend's
 * speed: adaptra_model_fast, once its read-ahead has served where
 * streams read)?  Sets the volume's flag, which the hit
 * path reads; a switch is counted and traced.  Lock held.
 */
extern bool adaptra_steps_aside (struct adaptra_engine *e,
                                 struct adaptra_volume *v);

/* Client c's read of the bytes request r wants of pages [p, p + n)
 * straight from the backend into its buffer, counted (the client's
 * direct and backend bytes, this thread's counter shard); returns 0
 * or the backend's error.  Caches nothing, feeds no model.  Lock not
 * held.
 */
extern int adaptra_read_straight (struct adaptra_engine *e,
                                  struct adaptra_client *c, void *ctx,
                                  const struct adaptra_request *r,
                                  uint64_t p, uint64_t n);

/* Client c's read of the absent pages [p, p + n) of request r on a
 * volume that stepped aside (or a miss not kept, read.c:
 * read_direct): adaptra_read_straight, and now and then a throughput
 * sample of it for the models and the step-aside decision.  Returns
 * 0 or the backend's error.  Lock not held.
 */
extern int adaptra_read_aside (struct adaptra_engine *e,
                               struct adaptra_client *c, void *ctx,
                               const struct adaptra_request *r,
                               uint64_t p, uint64_t n);

#endif /* ADAPTRA_ASIDE_H */
