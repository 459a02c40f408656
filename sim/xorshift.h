/* xorshift.h: the simulator's and the tests' pseudo-random numbers.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* xorshift64* (S. Vigna, "An experimental exploration of Marsaglia's
 * xorshift generators, scrambled", ACM TOMS 42(4), 2016): Marsaglia's
 * three shifts of a 64-bit state, then a multiply that scrambles the
 * low bits.  adaptra-sim draws its random workloads from it and the
 * integration tests their data and request sizes (tests/integration/
 * harness.c), so both are the same on every run and every machine for
 * a seed.  Not for anything that must be unpredictable.  A state of 0
 * stays 0: seed with anything else.
 */

#ifndef ADAPTRA_XORSHIFT_H
#define ADAPTRA_XORSHIFT_H

#include <stdint.h>

/* The next number from *state, which it advances. */
static inline uint64_t
sim_random (uint64_t *state)
{
  uint64_t x = *state;

  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * UINT64_C (0x2545F4914F6CDD1D);
}

#endif /* ADAPTRA_XORSHIFT_H */
