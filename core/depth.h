/* depth.h: a client's own reads in flight, and whether they are enough.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Some clients read ahead themselves: nbdcopy keeps 64 requests in
 * flight on each connection, qemu-img convert 8 of 2 MiB, a guest
 * with a deep queue its own read-ahead.  When a client's own reads in
 * flight already cover the backend's bandwidth-delay product, the
 * backend is kept busy without us: a window of ours would only read
 * what the client asks for anyway a moment later, or past where it
 * stops (the end of a data extent), and make its requests wait behind
 * ours.  Linux made the same call for the loop device: the file
 * system above it reads ahead, so the loop device caps its own.
 *
 * So the engine counts each client's reads in flight (from entering
 * adaptra_read to leaving it) and keeps, as each read arrives, the
 * peak of the requests and of the bytes in flight, decaying by
 * 1/ADAPTRA_DEPTH_DECAY an arrival.  A peak, not an average: while
 * read-ahead serves a deep client from the pool, each of its reads is
 * done in microseconds and few are in flight at any moment, but they
 * still arrive several at once.  A client whose peak exceeds one
 * request (it does read ahead) and whose bytes cover the
 * bandwidth-delay product gets no read-ahead decision; its reads then
 * wait for the backend, and its queue shows whole.  One request at a
 * time never covers it, whatever its size: that client waits for
 * every read, which read-ahead hides.  A client whose queue grows
 * shallow gets read-ahead back once the peak decays below one and a
 * half requests: from 16, within 40 reads.
 *
 * Lock-free: every field is read and written with relaxed atomics.
 * Two reads that arrive together may lose one sample of the peak,
 * which the next sets again.
 */

#ifndef ADAPTRA_DEPTH_H
#define ADAPTRA_DEPTH_H

#include <stdbool.h>
#include <stdint.h>

/* The peaks lose 1/N of themselves at each arrival. */
#define ADAPTRA_DEPTH_DECAY 16

/* The peaks' fixed point: requests in 1/ADAPTRA_DEPTH_ONE. */
#define ADAPTRA_DEPTH_ONE 256

/* A client reads ahead itself when its peak is above this many
 * requests in flight (in 1/ADAPTRA_DEPTH_ONE): one and a half.
 */
#define ADAPTRA_DEPTH_MIN_REQUESTS (3 * ADAPTRA_DEPTH_ONE / 2)

struct adaptra_depth {
  uint64_t requests, bytes;     /* in flight now */
  uint64_t peak_requests;       /* at arrivals, in 1/ADAPTRA_DEPTH_ONE */
  uint64_t peak_bytes;          /* at arrivals */
};

/* A read of count bytes arrives (counted with itself in flight). */
extern void adaptra_depth_enter (struct adaptra_depth *d, uint32_t count);

/* That read is done. */
extern void adaptra_depth_leave (struct adaptra_depth *d, uint32_t count);

/* Do the client's own reads in flight cover bdp_bytes, the backend's
 * bandwidth-delay product (0: not known yet, never covered)?
 */
extern bool adaptra_depth_covers (const struct adaptra_depth *d,
                                  uint64_t bdp_bytes);

#endif /* ADAPTRA_DEPTH_H */
