/* flight.h: how many bytes of prefetch the backend takes at once.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Flight control: the prefetch workers start a job only while the
 * bytes being read from the backend are under a limit, so that a
 * saturated backend does not queue reads it cannot serve yet.
 *
 * Why.  A backend's link moves R bytes a second, and a read spends a
 * fixed time L on the way (200 MiB/s and 5 ms on the benchmark's
 * remote model).  R x L bytes in flight keep it busy (its
 * bandwidth-delay product, 1 MiB there); every byte more waits in a
 * queue at the link, and so does every read behind it: a client's own
 * read, and the prefetch a client has caught up with.  With four
 * workers each reading up to 1 MiB, 16 streams (W2) kept about 5 MiB
 * in flight, reads took 25 ms instead of 5, and the clients' p99 was
 * 40 ms against 11 ms without the filter.  Kept at 5/4 of R x L, in
 * pieces of a sixteenth of it (prefetch.c), p99 is 12 ms at the same
 * 200 MiB/s.  The idea is TCP congestion control's, as BBR does it
 * (Cardwell et al., "BBR: congestion-based congestion control", ACM
 * Queue 14(5), 2016): measure the bottleneck's rate and the path's
 * latency, and keep their product in flight.
 *
 *   R      the most bytes the backend delivered in one slot of
 *          ADAPTRA_FLIGHT_SLOT_NS of the last second, a second's worth
 *   L      the fastest read of the last ADAPTRA_FLIGHT_LATENCY_NS, of n
 *          bytes in t, less its transfer: t - min (n / R, t / 2)
 *   limit  5/4 x R x L; none if L is under ADAPTRA_FLIGHT_LATENCY_MIN
 *          or R x L under ADAPTRA_FLIGHT_MIN
 *
 *      workers --start while running < limit--> backend --+
 *         ^                                                |
 *         +---- R: bytes done a slot; L: fastest read -------+
 *
 * Where demand does not fill the link, R is what it asked for, and
 * the limit lets 5/4 of it be in flight: if the link can take more,
 * the next slots deliver more and R grows, by up to a quarter a slot.
 * With nothing delivered in the last second (at start, after an idle
 * spell) there is no limit.  A client's own reads count in running
 * but are never held back: the limit is for prefetch.
 *
 * No locking: the engine samples and asks under its lock, except for
 * running, which is atomic (readers add to it without the lock).
 */

#ifndef ADAPTRA_FLIGHT_H
#define ADAPTRA_FLIGHT_H

#include <stdbool.h>
#include <stdint.h>

/* Delivery is counted in slots of 100 ms: at 200 MiB/s, 20 MiB in
 * 80 or more reads, so that one read more or less is a few percent,
 * and a burst the backend lets through after an idle moment (the
 * remote model's token bucket holds 10 MiB) at most half a slot.  R
 * is the largest of the slots of the last second that are over.
 */
#define ADAPTRA_FLIGHT_SLOT_NS UINT64_C (100000000)
#define ADAPTRA_FLIGHT_WINDOW_SLOTS 10

/* A read is counted in the slot it completes in.  It reports when it
 * returns, up to a latency after others that completed later (and
 * adaptra-sim books client reads ahead of time), so a slot is over
 * only when reads complete two slots later, and the ring keeps two
 * slots more than the window.
 */
#define ADAPTRA_FLIGHT_SLOTS (ADAPTRA_FLIGHT_WINDOW_SLOTS + 2)

/* limit = 5/4 x R x L: a quarter over the product covers jitter in L
 * and the gap between a read's end and the next start.  On W2 with
 * the limit fixed at these multiples of 1 MiB, p99: 13.8 ms at 1x,
 * 14.4 at 5/4, 16.9 at 8/5, 18.2 at 2x (one 10 s run each).
 */
#define ADAPTRA_FLIGHT_GAIN_NUM 5
#define ADAPTRA_FLIGHT_GAIN_DEN 4

/* No limit where L is under a millisecond or R x L under 512 KiB (two
 * of the smallest jobs a window is split into alone, ADAPTRA_JOB_MIN):
 * there the backend's latency is not what reads in parallel hide, its
 * reads queue behind a disk's head or the CPUs, and chunks of an
 * eighth of the product would only multiply the seeks.  The disk model
 * of the benchmark reads on without a seek where a read continues the
 * last (its fastest reads take no latency at all) and queues the
 * others behind its one head: held to such a limit in small chunks, 8
 * streams on one connection (W3) fell from 96 to 46 MiB/s, and with a
 * limit whenever L was over 1 ms, to 73.  The page cache is far under
 * 1 ms.  Without a limit the chunks stay those of bdp.c's fitted line,
 * at least 256 KiB, and 4 workers read at once (prefetch.c).
 */
#define ADAPTRA_FLIGHT_LATENCY_MIN UINT64_C (1000000)
#define ADAPTRA_FLIGHT_MIN (512 * 1024)

/* L is the least over ten buckets of a second each: long enough to
 * keep an unloaded read's time through a busy spell, short enough to
 * follow a backend that slows down.  A bucket holds its second's
 * fastest read; its transfer is taken off when L is asked for, at the
 * R known then (the first slots' R is low, and would take off more
 * than the transfer).
 */
#define ADAPTRA_FLIGHT_LATENCY_NS UINT64_C (10000000000)
#define ADAPTRA_FLIGHT_BUCKETS 10

struct adaptra_flight_bucket {
  uint64_t id;                  /* completion time / a second, + 1 */
  uint64_t fastest_ns;          /* its fastest read's time */
  uint64_t fastest_bytes;       /* and size */
};

struct adaptra_flight_slot {
  uint64_t id;                  /* completion time / SLOT_NS, + 1 */
  uint64_t bytes;               /* of the reads that completed in it */
};

struct adaptra_flight {
  uint64_t running;             /* bytes being read now (atomic) */
  uint64_t newest;              /* the latest slot id seen */
  struct adaptra_flight_slot slot[ADAPTRA_FLIGHT_SLOTS];
  struct adaptra_flight_bucket bucket[ADAPTRA_FLIGHT_BUCKETS];
};

/* A backend read of bytes starts, or ends: running moves.  Atomic,
 * no lock needed.
 */
extern void adaptra_flight_start (struct adaptra_flight *f, uint64_t bytes);
extern void adaptra_flight_end (struct adaptra_flight *f, uint64_t bytes);

/* Bytes being read now. */
extern uint64_t adaptra_flight_running (const struct adaptra_flight *f);

/* Record a successful read of bytes from t0 to t1 (ns). */
extern void adaptra_flight_sample (struct adaptra_flight *f, uint64_t bytes,
                                   uint64_t t0, uint64_t t1);

/* What the samples say at a time, all of it from one pass over the
 * slots and one over the buckets: the engine asks for several of these
 * at each decision, each of which would scan both again.
 */
struct adaptra_flight_estimate {
  uint64_t rate;                /* R, bytes a second; 0: nothing was
                                   delivered in the last second */
  uint64_t latency_ns;          /* L; 0: no read completed in the
                                   window */
  uint64_t bdp;                 /* R x L, the bytes in flight that keep
                                   the backend busy; 0: not known */
  uint64_t limit;               /* 5/4 x R x L; UINT64_MAX: none (R or
                                   L not known, L under
                                   ADAPTRA_FLIGHT_LATENCY_MIN or R x L
                                   under ADAPTRA_FLIGHT_MIN) */
  bool slow;                    /* L known and at least
                                   ADAPTRA_FLIGHT_LATENCY_MIN: a backend
                                   whose latency reads in parallel hide,
                                   a remote store, not the page cache */
};

extern void adaptra_flight_estimate (const struct adaptra_flight *f,
                                     uint64_t now,
                                     struct adaptra_flight_estimate *est);

/* R alone (the estimate's rate), at time now. */
extern uint64_t adaptra_flight_rate (const struct adaptra_flight *f,
                                     uint64_t now);

#endif /* ADAPTRA_FLIGHT_H */
