/* minmax.h: the smaller and the larger of two page counts or offsets,
 * and how far one is above the other.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Functions rather than macros (nbdkit's common/include/minmax.h uses
 * typeof macros): every count and offset in the engine is a uint64_t,
 * and a function evaluates its arguments once and converts narrower
 * ones the same way at every use.
 */

#ifndef ADAPTRA_MINMAX_H
#define ADAPTRA_MINMAX_H

#include <stdint.h>

static inline uint64_t
min_u64 (uint64_t a, uint64_t b)
{
  return a < b ? a : b;
}

static inline uint64_t
max_u64 (uint64_t a, uint64_t b)
{
  return a > b ? a : b;
}

/* a - b, or 0 when b is not below a: how far a count or offset is
 * above another, or the room left below a floor (max_u64 (sub_sat_u64
 * (p, n), floor): n pages back from p, but not past floor).
 */
static inline uint64_t
sub_sat_u64 (uint64_t a, uint64_t b)
{
  return a > b ? a - b : 0;
}

#endif /* ADAPTRA_MINMAX_H */
