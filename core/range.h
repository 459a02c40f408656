/* range.h: byte ranges and the pool pages they cover.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Byte ranges and the pool pages they cover.
 *
 * NBD requests are byte ranges at any 1-byte alignment, the pool works
 * in fixed pages of 2^page_shift bytes.  Every module converts between
 * the two through these helpers, so that rounding and end-of-export
 * clamping are decided in one place.
 */

#ifndef ADAPTRA_RANGE_H
#define ADAPTRA_RANGE_H

#include <stdint.h>

/* The pages [first, last) that a byte range touches. */
struct adaptra_span {
  uint64_t first;               /* first page touched */
  uint64_t last;                /* one past the last page touched */
};

/* Pages touched by the bytes [offset, offset + count).  count == 0
 * gives an empty span (first == last).  The caller guarantees that
 * offset + count does not overflow.
 */
extern struct adaptra_span adaptra_span_of (uint64_t offset, uint64_t count,
                                            unsigned page_shift);

/* Number of pages an export of size bytes holds, counting a partial
 * last page as a page.
 */
extern uint64_t adaptra_pages_in (uint64_t size, unsigned page_shift);

/* How many of the count bytes starting at offset lie inside an export
 * of size bytes: count itself when the range fits, fewer when it
 * crosses the end, 0 when offset is at or past the end.  Backend calls
 * must never reach past the end (nbdkit asserts on them), so every
 * prefetch is clamped with this.
 */
extern uint64_t adaptra_clamp_to_size (uint64_t offset, uint64_t count,
                                       uint64_t size);

/* log2 of a power of two; -1 when v is 0 or not a power of two. */
extern int adaptra_log2_exact (uint64_t v);

#endif /* ADAPTRA_RANGE_H */
