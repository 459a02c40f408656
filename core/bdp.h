/* bdp.h: the backend's bandwidth-delay product and speed test.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The backend's bandwidth-delay product, measured from its reads.
 * No locking: the engine samples it under its lock.
 */

#ifndef ADAPTRA_BDP_H
#define ADAPTRA_BDP_H

#include <stdbool.h>
#include <stdint.h>

/* Moving averages (weight 1/8) of a read's size n and time t, and of
 * n*n and n*t, from which a line t = latency + n / throughput is
 * fitted.
 */
struct adaptra_bdp {
  double n, t, nn, nt;
  uint64_t samples;
};

/* Record one successful backend read of bytes that took ns. */
extern void adaptra_bdp_sample (struct adaptra_bdp *m, uint64_t bytes,
                                uint64_t ns);

/* The fixed cost of one request, in ns (0 before any sample). */
extern uint64_t adaptra_bdp_latency_ns (const struct adaptra_bdp *m);

/* Streaming throughput in bytes per second (0 before any sample). */
extern uint64_t adaptra_bdp_bytes_per_sec (const struct adaptra_bdp *m);

/* latency x throughput: the bytes that must be in flight to keep the
 * backend busy.
 */
extern uint64_t adaptra_bdp_bytes (const struct adaptra_bdp *m);

/* Expected time to read bytes in one request: latency + bytes /
 * throughput (0 before any sample).
 */
extern uint64_t adaptra_bdp_fetch_ns (const struct adaptra_bdp *m,
                                      uint64_t bytes);

/* Is the backend so fast that read-ahead cannot help?  Read-ahead
 * hides a backend's latency behind a copy from the pool; where the
 * backend answers about as fast as that copy, it only adds the copy
 * (and the pool's bookkeeping).  The test is on the moving averages of
 * a read's size n and time t:
 *
 *     t <= ADAPTRA_FAST_LATENCY_NS + n / ADAPTRA_FAST_BYTES_PER_SEC
 *
 * 50 us + 1 ns a byte: a 64 KiB read within 115 us, 1 MiB within
 * 1.1 ms.  A file in the page cache through nbdkit's file plugin takes
 * 15-30 us for 64 KiB on this machine; the remote model, 5 ms; a disk
 * that seeks, milliseconds.  With hysteresis: a volume that steps
 * aside (fast) comes back to read-ahead only when t exceeds twice the
 * bound, and no volume steps aside before ADAPTRA_FAST_SAMPLES reads.
 * The averages move by 1/8 a read, so a backend that turns slow 10x
 * or more brings read-ahead back within 2-3 reads, and a slowdown of
 * 2.5x within 8.
 */
#define ADAPTRA_FAST_LATENCY_NS 50000
#define ADAPTRA_FAST_BYTES_PER_SEC UINT64_C (1000000000)
#define ADAPTRA_FAST_SAMPLES 16

extern bool adaptra_bdp_fast (const struct adaptra_bdp *m, bool was_fast);

#endif /* ADAPTRA_BDP_H */
