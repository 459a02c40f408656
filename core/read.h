/* read.h: a client's read request, and the step-aside decision.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* What the read paths (read.c) share with the backend read path
 * (prefetch.c: adaptra_fetch_then_lock, which copies a demand read's
 * pages out) and with the tunables (engine.c: a new adaptra-bypass is
 * applied to every volume at once).
 */

#ifndef ADAPTRA_READ_H
#define ADAPTRA_READ_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "minmax.h"

struct adaptra_engine;
struct adaptra_volume;

/* A client's read: its buffer and the bytes it wants, at an offset in
 * the engine's byte space (the volume's base added).
 */
struct adaptra_request {
  unsigned char *buf;
  uint64_t offset;
  uint32_t count;
};

/* True if the request wants every byte of [start, start + bytes). */
static inline bool
adaptra_request_covers (const struct adaptra_request *r, uint64_t start,
                        uint64_t bytes)
{
  return start >= r->offset && start + bytes <= r->offset + r->count;
}

/* Copy the part of page p's data (src) that the request wants. */
static inline void
adaptra_copy_out (const struct adaptra_request *r, uint64_t p, unsigned shift,
                  const unsigned char *src)
{
  uint64_t page_start = p << shift;
  uint64_t page_end = page_start + (UINT64_C (1) << shift);
  uint64_t from = max_u64 (r->offset, page_start);
  uint64_t to = min_u64 (r->offset + r->count, page_end);

  memcpy (r->buf + (from - r->offset), src + (from - page_start), to - from);
}

/* Does volume v step aside now (adaptra-bypass, else its backend's
 * speed: adaptra_bdp_fast)?  Sets the volume's flag, which the hit
 * path reads; a switch is counted and traced.  Lock held.
 */
extern bool adaptra_steps_aside (struct adaptra_engine *e,
                                 struct adaptra_volume *v);

#endif /* ADAPTRA_READ_H */
