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

/* Block status from the plugin: ask it for the extents of [start, end)
 * (one: the first only), pass each one it names to
 * adaptra_volume_extent, and on to the client if answer (those within
 * the client's range; they follow on from the extents passed before),
 * and set *first_end and *named_end to where the first and the last
 * extent it named end (start if none).  Returns 0, or -1 on an error,
 * which it reports.
 */
typedef int adaptra_extents_fn (void *opaque, uint64_t start, uint64_t end,
                                bool one, bool answer, uint64_t *first_end,
                                uint64_t *named_end);

/* A client asks for block status of count bytes at offset of volume:
 * its first extent only (one: NBD's REQ_ONE) or all.  Asks the plugin
 * through ask, for the client's answer and so that the map knows the
 * extents of the horizon past it: for a client that wants every
 * extent, the client's range and the horizon, in one query; for one
 * that wants one extent, the client's query as it is while the map
 * knows what lies around it, and now and then all the extents of a
 * stretch of ADAPTRA_HOLES_WALK_HORIZONS horizons (core/holes.h says
 * why).  Returns -1 if ask did, else 0.  Thread-safe; ask is called
 * without the engine's lock.
 */
extern int adaptra_volume_block_status (struct adaptra_engine *e, int volume,
                                        uint64_t offset, uint64_t count,
                                        bool one, adaptra_extents_fn *ask,
                                        void *opaque);

#endif /* ADAPTRA_PUBLIC_HOLES_H */
