/* hedge.h: a waiting reader's deadline, and its own read after it.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Hedging (hedge.c, its design note says when and at what cost): the
 * locked read path (read.c) asks how long a reader may wait for pages
 * a started read holds, and once that deadline passed, has it read
 * them itself if the hedge credit pays.  Engine lock held.
 */

#ifndef ADAPTRA_HEDGE_H
#define ADAPTRA_HEDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "read.h"

struct adaptra_engine;
struct adaptra_volume;
struct adaptra_client;

/* The deadline of a reader of volume v that waits for page p, held
 * by a read already started, and wants pages [p, last): on the
 * engine's clock, UINT64_MAX for none (no hedging: the backend is not
 * latency-bound, or its model has no rate yet).  Lock held.
 */
extern uint64_t adaptra_hedge_deadline (struct adaptra_engine *e,
                                        const struct adaptra_volume *v,
                                        uint64_t p, uint64_t last);

/* A reader's wait for pages [p, p + n), all held by reads in flight,
 * passed its deadline: if the credit affords it, read the bytes
 * request r wants of them straight into the client's buffer and set
 * *hedged; else do nothing and clear *hedged.  Returns 0 or the
 * backend's error.  Lock held on entry and exit, dropped for the
 * read.
 */
extern int adaptra_read_hedged (struct adaptra_engine *e,
                                struct adaptra_client *c, void *ctx,
                                const struct adaptra_request *r,
                                uint64_t p, uint64_t n, bool *hedged);

#endif /* ADAPTRA_HEDGE_H */
