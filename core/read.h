/* read.h: a client's read request.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* What the read paths (read.c) share with the backend read path
 * (fetch.c: adaptra_fetch_then_lock, which copies a demand read's
 * pages out) and with the reads straight into a client's buffer
 * (aside.c, hedge.c).
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

/* The bytes request r wants of pages [p, p + n) (pages of 2^shift
 * bytes), which must overlap it.
 */
static inline uint64_t
adaptra_request_bytes (const struct adaptra_request *r, uint64_t p,
                       uint64_t n, unsigned shift)
{
  return min_u64 ((p + n) << shift, r->offset + r->count) -
    max_u64 (p << shift, r->offset);
}

#endif /* ADAPTRA_READ_H */
