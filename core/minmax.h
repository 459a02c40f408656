/* minmax.h: the smaller and the larger of two page counts or offsets.
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

#endif /* ADAPTRA_MINMAX_H */
