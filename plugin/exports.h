/* The filter's exports: which engine volume a connection reads, and
 * the prefetch contexts opened for each shared export.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#ifndef ADAPTRA_EXPORTS_H
#define ADAPTRA_EXPORTS_H

#include <stdint.h>

#include <nbdkit-filter.h>

#include "adaptra/engine.h"

/* Shared exports without connections whose volumes (and pages) are
 * kept for a client that comes back; past this many, the one idle
 * longest is closed.  It serves the client that opens an image again
 * soon (qemu-img info, then the guest; a guest rebooted), of which a
 * server has a handful at once, and bounds what a client walking
 * through export names makes the server keep: slots of the engine's
 * ADAPTRA_VOLUMES_MAX, 2.4 KiB of volume state each (struct
 * adaptra_volume), rows of "exports", and volumes that every write
 * scans under the engine lock (adaptra_invalidate).  Far below it a
 * server with more images than that in turn loses a returning
 * client's pages; far above it a walk through names makes every write
 * scan that many volumes, and near ADAPTRA_VOLUMES_MAX it would fill
 * the table and new connections would pass through.  No run chose
 * 64: d3328d2, which brought the bound, records no measurement.
 */
#define EXPORTS_IDLE_MAX 64

/* adaptra-share: whose bytes a pool page holds. */
enum exports_share {
  SHARE_AUTO,                   /* export if the plugin offers multi-conn,
                                   else connection; names may alias */
  SHARE_EXPORT,                 /* every connection of an export name */
  SHARE_CONNECTION,             /* each connection alone */
};

/* Parse "auto", "export" or "connection"; returns 0, or -1. */
extern int exports_share_parse (const char *value, enum exports_share *share);
extern const char *exports_share_name (enum exports_share share);

/* Set up for engine e with n workers (0: prefetch runs in the
 * readers' threads); shared contexts are opened from backend.
 */
extern void exports_init (struct adaptra_engine *e, nbdkit_backend *backend,
                          unsigned n);

/* The volume that connection owner, with context next, of export name
 * and size bytes, reads: that export's shared volume (created on its
 * first connection, kept after its last while it is one of the
 * EXPORTS_IDLE_MAX idle most recently), or with per_connection a
 * volume of its own.  When parallel (the plugin takes parallel
 * requests on one handle) the connection lends the workers next until
 * it detaches; else a shared export gets one shared context per
 * worker while it has connections, and a per-connection volume none.
 * may_alias: see ADAPTRA_VOLUME_MAY_ALIAS.  Sets *background when the
 * workers read the volume ahead (else the connection runs its
 * read-ahead itself).  Returns the volume id, or -1 when this
 * connection cannot use the engine (logged; it then passes through).
 */
extern int exports_attach (const void *owner, nbdkit_next *next,
                           const char *name, uint64_t size,
                           bool per_connection, bool may_alias,
                           bool parallel, bool *background);

/* Connection owner is done with volume (its engine client is closed):
 * the workers stop using what it lent, and a per-connection volume is
 * closed.  A shared volume's pages stay in the pool for the next
 * connection, unless more than EXPORTS_IDLE_MAX shared volumes are now
 * idle: the one idle longest is closed.  Waits for the volume's
 * running prefetch without blocking other exports' attach and detach.
 */
extern void exports_detach (const void *owner, int volume);

/* Close every context and forget every export (all connections are
 * gone).
 */
extern void exports_fini (void);

#endif /* ADAPTRA_EXPORTS_H */
