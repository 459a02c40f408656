/* holes.h: what the plugin says of a volume's extents, for read-ahead.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The filter passes the plugin's block status answers to the engine,
 * which keeps, per volume, the extents that read as zeros and skips
 * them in read-ahead windows (core/holes.h says why and how).
 */

#ifndef ADAPTRA_PUBLIC_HOLES_H
#define ADAPTRA_PUBLIC_HOLES_H

#include <stdbool.h>
#include <stdint.h>

struct adaptra_engine;

/* The plugin says bytes [offset, offset + count) of volume read as
 * zeros (zero) or may hold data (!zero).  Clamped to the volume; a
 * volume that is not open is ignored.  Thread-safe.
 */
extern void adaptra_volume_extent (struct adaptra_engine *e, int volume,
                                   uint64_t offset, uint64_t count,
                                   bool zero);

#endif /* ADAPTRA_PUBLIC_HOLES_H */
