/* holes.h: a volume's map of the extents that read as zeros.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A client that copies a sparse image (nbdcopy, qemu-img convert)
 * asks the server which extents read as zeros (NBD block status) and
 * never reads them: it writes zeros or a hole on its side instead.  A
 * read-ahead window that crosses such an extent would read bytes that
 * nobody reads.  The map remembers, per volume, the extents that the
 * plugin said read as zeros (NBDKIT_EXTENT_ZERO, holes or not), and
 * read-ahead skips every page that lies wholly inside one.
 *
 * The map only ever costs read-ahead, never correctness: a page it
 * calls zero is not prefetched, and a client that reads it anyway
 * reads it from the backend as any miss.  So whatever the map cannot
 * hold (more than ADAPTRA_HOLES_MAX extents, no memory) it forgets,
 * and what it does not know reads as data, as without it.  A write,
 * zero or trim forgets its range (adaptra_invalidate): the bytes there
 * are data until the plugin says otherwise.
 *
 * Offsets are bytes of the volume.  Not thread-safe: the engine calls
 * it under its lock.
 */

#ifndef ADAPTRA_HOLES_H
#define ADAPTRA_HOLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most zero extents remembered per volume: 1 MiB of map.  A 2 GiB
 * image with 64 KiB extents of data between holes has 16384.
 */
#define ADAPTRA_HOLES_MAX 65536

/* How many of a stream's largest windows lie ahead of its reader at
 * most: its window and the next, which the look-ahead mark in it
 * starts.  The filter asks the plugin for block status that far past
 * each query of a client (adaptra_holes_horizon).
 */
#define ADAPTRA_HOLES_HORIZON_WINDOWS 2

/* A client that asks for one extent at a time (NBD's REQ_ONE) asks
 * from where it is to the image's end: qemu does, once per extent to
 * size a copy and once more as it copies.  Asking the plugin for every
 * extent of that range walks the rest of the image at each step:
 * qemu-img convert of the benchmark's sparse 2 GiB image (325 extents)
 * made the file plugin name 105950 extents for its 650 queries, 650
 * without adaptra, and each query took 4-6 times as long.  So for such
 * a client the engine keeps the range whose every extent the plugin
 * named last (known_start, known_end): a query that starts in it goes
 * to the plugin as the client asked, and when the map does not know
 * the horizon past the extent answered, or the query starts outside
 * the range, the plugin is asked for every extent of this many
 * horizons.  Each stretch of the image is walked about once, and the
 * plugin is asked once more each horizon or so
 * (adaptra_volume_block_status; 704 queries naming 1352 extents for
 * that copy).
 */
#define ADAPTRA_HOLES_WALK_HORIZONS 2

/* NBD lengths are 32-bit: the most bytes one query of the plugin may
 * cover.
 */
#define ADAPTRA_HOLES_QUERY_MAX UINT32_MAX

/* One zero extent: bytes [start, end). */
struct adaptra_hole {
  uint64_t start, end;
};

/* The zero extents of one volume, sorted, disjoint and never touching
 * (touching ones are merged).  All zero: empty.
 */
struct adaptra_holes {
  struct adaptra_hole *h;
  size_t n, cap;
  uint64_t known_start, known_end;  /* the last range whose every extent
                                       the plugin named, or empty */
};

/* Free the map's memory; it is empty after. */
extern void adaptra_holes_free (struct adaptra_holes *m);

/* The plugin says bytes [start, end) read as zeros (zero) or hold
 * data (!zero): the latest word wins over what the map held there.
 * Never fails: what cannot be recorded is forgotten (see above).
 */
extern void adaptra_holes_set (struct adaptra_holes *m, uint64_t start,
                               uint64_t end, bool zero);

/* Pages of 2^shift bytes of a volume of size bytes (the last one may
 * be short): the first run of pages in [from, to) none of which lies
 * wholly in a zero extent, as [*first, *last).  Returns false when
 * every page of [from, to) is zero.  Page numbers count from the
 * volume's byte 0.
 */
extern bool adaptra_holes_data_run (const struct adaptra_holes *m,
                                    unsigned shift, uint64_t size,
                                    uint64_t from, uint64_t to,
                                    uint64_t *first, uint64_t *last);

/* The engine's side (holes.c). */
struct adaptra_engine;
struct adaptra_volume;

/* The same as adaptra_holes_data_run for the engine's pages [from, to)
 * of volume v (pages of the engine's byte space, v's base included).
 * Lock held.
 */
extern bool adaptra_volume_data_run (const struct adaptra_engine *e,
                                     const struct adaptra_volume *v,
                                     uint64_t from, uint64_t to,
                                     uint64_t *first, uint64_t *last);

#endif /* ADAPTRA_HOLES_H */
