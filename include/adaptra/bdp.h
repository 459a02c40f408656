/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The backend's bandwidth-delay product, measured from its reads.
 * No locking: the engine samples it under its lock.
 */

#ifndef ADAPTRA_BDP_H
#define ADAPTRA_BDP_H

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

#endif /* ADAPTRA_BDP_H */
