/* hash.h: Fibonacci hashing of page numbers into a power-of-two table.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The pool's page index (pool.c) and the stream table's position hash
 * (stream.c) both hash runs of consecutive numbers: pages of a window,
 * granules of a scan.  Multiplying by 2^64 / phi and keeping the top
 * bits (Knuth, The Art of Computer Programming, vol. 3, 6.4) spreads
 * such runs evenly: 2^b consecutive keys land at most two to a bucket
 * of 2^b (tests/unit/test-hash.c).  The low bits of the key alone
 * would spread a run too, but put keys a table's size apart in one
 * bucket: the same page of every volume (2^38 pages apart at 4 KiB).
 */

#ifndef ADAPTRA_HASH_H
#define ADAPTRA_HASH_H

#include <assert.h>
#include <stdint.h>

/* The bucket of key in a table of 2^bits buckets, 1 <= bits <= 32. */
static inline uint32_t
adaptra_hash_fib (uint64_t key, unsigned bits)
{
  assert (bits >= 1 && bits <= 32);
  return (uint32_t) ((key * UINT64_C (0x9E3779B97F4A7C15)) >> (64 - bits));
}

#endif /* ADAPTRA_HASH_H */
