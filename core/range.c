/* range.c: byte ranges and the pool pages they cover.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include "range.h"

struct adaptra_span
adaptra_span_of (uint64_t offset, uint64_t count, unsigned page_shift)
{
  struct adaptra_span s;
  uint64_t page_mask = (UINT64_C (1) << page_shift) - 1;

  s.first = offset >> page_shift;
  if (count == 0)
    s.last = s.first;
  else
    s.last = (offset + count + page_mask) >> page_shift;
  return s;
}

uint64_t
adaptra_pages_in (uint64_t size, unsigned page_shift)
{
  uint64_t page_mask = (UINT64_C (1) << page_shift) - 1;

  /* Written so that a size near UINT64_MAX cannot overflow. */
  return (size >> page_shift) + ((size & page_mask) != 0);
}

uint64_t
adaptra_clamp_to_size (uint64_t offset, uint64_t count, uint64_t size)
{
  if (offset >= size)
    return 0;
  if (count > size - offset)
    return size - offset;
  return count;
}

int
adaptra_log2_exact (uint64_t v)
{
  int n = 0;

  if (v == 0 || (v & (v - 1)) != 0)
    return -1;
  while (v > 1) {
    v >>= 1;
    n++;
  }
  return n;
}
