/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The adaptra filter: nbdkit glue over the engine in core/.
 *
 * For now every request passes through to the plugin unchanged.  The
 * data callbacks that the read-ahead engine will hook (pread, pwrite,
 * zero, trim, cache) are written out; everything else (flush, extents,
 * block_size and the can_* negotiation) is left to nbdkit's default,
 * which forwards it to the layer below.  No .thread_model callback: the
 * filter adds no locking of its own, so the final thread model is the
 * plugin's (nbdkit takes the minimum over the layers).
 */

#include <config.h>

#include <stdint.h>

#include <nbdkit-filter.h>

static int
adaptra_pread (nbdkit_next *next, void *handle,
               void *buf, uint32_t count, uint64_t offset, uint32_t flags,
               int *err)
{
  return next->pread (next, buf, count, offset, flags, err);
}

static int
adaptra_pwrite (nbdkit_next *next, void *handle,
                const void *buf, uint32_t count, uint64_t offset,
                uint32_t flags, int *err)
{
  return next->pwrite (next, buf, count, offset, flags, err);
}

static int
adaptra_zero (nbdkit_next *next, void *handle,
              uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  return next->zero (next, count, offset, flags, err);
}

static int
adaptra_trim (nbdkit_next *next, void *handle,
              uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  return next->trim (next, count, offset, flags, err);
}

static int
adaptra_cache (nbdkit_next *next, void *handle,
               uint32_t count, uint64_t offset, uint32_t flags, int *err)
{
  return next->cache (next, count, offset, flags, err);
}

static struct nbdkit_filter filter = {
  .name              = "adaptra",
  .longname          = "nbdkit adaptive read-ahead filter",
  .pread             = adaptra_pread,
  .pwrite            = adaptra_pwrite,
  .zero              = adaptra_zero,
  .trim              = adaptra_trim,
  .cache             = adaptra_cache,
};

NBDKIT_REGISTER_FILTER (filter)
