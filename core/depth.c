/* depth.c: a client's own reads in flight, and whether they are enough.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* See depth.h. */

#include <config.h>

#include "depth.h"

static uint64_t
load (const uint64_t *x)
{
  return __atomic_load_n (x, __ATOMIC_RELAXED);
}

/* The peak *peak, decayed, or sample if that is higher. */
static void
move (uint64_t *peak, uint64_t sample)
{
  uint64_t p = load (peak);

  p -= p / ADAPTRA_DEPTH_DECAY;
  __atomic_store_n (peak, sample > p ? sample : p, __ATOMIC_RELAXED);
}

void
adaptra_depth_enter (struct adaptra_depth *d, uint64_t offset,
                     uint32_t count)
{
  uint64_t n = __atomic_add_fetch (&d->requests, 1, __ATOMIC_RELAXED);
  uint64_t bytes = __atomic_add_fetch (&d->bytes, count, __ATOMIC_RELAXED);
  uint64_t prev = __atomic_exchange_n (&d->last_end, offset + count,
                                       __ATOMIC_RELAXED);
  bool near = offset <= prev + bytes && prev <= offset + bytes;

  move (&d->peak_requests, (near ? n : 1) * ADAPTRA_DEPTH_ONE);
  move (&d->peak_bytes, near ? bytes : count);
}

void
adaptra_depth_leave (struct adaptra_depth *d, uint32_t count)
{
  __atomic_sub_fetch (&d->requests, 1, __ATOMIC_RELAXED);
  __atomic_sub_fetch (&d->bytes, count, __ATOMIC_RELAXED);
}

bool
adaptra_depth_reads_ahead (struct adaptra_depth *d, uint64_t bytes)
{
  if (load (&d->peak_requests) <= ADAPTRA_DEPTH_MIN_REQUESTS)
    d->deep = false;
  else if (bytes > 0 && load (&d->peak_bytes) >= bytes)
    d->deep = true;
  return d->deep;
}

bool
adaptra_keep_miss (struct adaptra_keep *k, uint64_t (*total) (void *),
                   void *opaque)
{
  uint64_t t;

  if (k->kept < ADAPTRA_KEEP_TRIAL)
    return true;
  if (k->runs++ % ADAPTRA_KEEP_SAMPLE != 0)
    return k->keep;
  t = total (opaque);
  k->reread += t - k->seen;
  k->seen = t;
  k->keep = k->reread * ADAPTRA_KEEP_SHARE >= k->kept;
  return true;
}

void
adaptra_keep_kept (struct adaptra_keep *k, uint64_t bytes)
{
  k->kept += bytes;
  if (k->kept >= ADAPTRA_KEEP_WINDOW) {
    k->kept /= 2;
    k->reread /= 2;
  }
}
