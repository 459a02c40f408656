/* Boot profiles in the filter: record what a connection reads first,
 * prefetch along the export's profile for the next one.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#ifndef ADAPTRA_PROFILES_H
#define ADAPTRA_PROFILES_H

#include <stdint.h>

#include "adaptra/config.h"
#include "adaptra/engine.h"

/* A connection's recorder and matcher. */
struct profiles_conn;

/* adaptra-profile=DIR (made absolute by the caller); checks that it is
 * a directory nbdkit can write.  Returns 0, or -1 with a message.
 */
extern int profiles_set_dir (const char *dir);
extern const char *profiles_dir (void);

/* Take adaptra-profile-max, adaptra-profile-time and the recorders'
 * memory budget (a share of adaptra-pool, lent by e's pool) from the
 * checked config e was made with.
 */
extern void profiles_configure (const struct adaptra_config *cfg,
                                struct adaptra_engine *e);

/* Forget the directory (at unload). */
extern void profiles_fini (void);

/* The connection that reads export name (size bytes, pool pages of
 * page_size) as engine client: join the export's boot being recorded
 * (or start one), and load the export's profile to prefetch along.
 * NULL without adaptra-profile (or without memory: logged).
 */
extern struct profiles_conn *profiles_open (struct adaptra_engine *e,
                                            int client, const char *name,
                                            uint64_t size,
                                            uint32_t page_size);

/* The connection read [offset, offset + count): record it, follow the
 * profile, queue what it proposes.  Thread-safe per connection.
 */
extern void profiles_read (struct profiles_conn *pc, uint64_t offset,
                           uint32_t count);

/* The connection ends: count what the profile fetched; the last
 * connection of a boot merges its recording into the export's profile
 * (under the profile's lock, saved atomically).
 */
extern void profiles_close (struct profiles_conn *pc);

#endif /* ADAPTRA_PROFILES_H */
