/* cacheline.h: the cache line that keeps fields apart.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Fields that different threads write (the pool's stripe locks, the
 * per-thread shards of the counters, snapshot.h) each start a line of
 * their own, so that one thread's writes do not take the line from
 * under another's.  64 bytes is the cache line of x86-64 and of most
 * arm64 cores.
 */

#ifndef ADAPTRA_CACHELINE_H
#define ADAPTRA_CACHELINE_H

#define ADAPTRA_CACHE_LINE 64

#endif /* ADAPTRA_CACHELINE_H */
