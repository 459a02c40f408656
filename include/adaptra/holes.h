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

/* How far past the end of a client's block status query read-ahead
 * may reach: the largest windows a stream may have ahead of its
 * reader (core/holes.h: ADAPTRA_HOLES_HORIZON_WINDOWS), and a client
 * that asks block status reads within what it asked.  The filter asks
 * the plugin that much further, so that the map knows the holes there
 * before a window crosses them: nbdcopy asks 128 MiB at a time, and
 * windows past the end of one such range read data that the next
 * answer called zeros.  Thread-safe.
 */
extern uint64_t adaptra_holes_horizon (struct adaptra_engine *e);

#endif /* ADAPTRA_PUBLIC_HOLES_H */
