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
 * ours.  The engine takes the backend's product (the model's bdp,
 * model.h), at least 1 MiB and at most the largest window it would
 * give a stream (engine.c: reads_ahead_itself).  Linux made the same
 * call for the loop device: the file system above it reads ahead, so
 * the loop device caps its own.
 *
 * Only reads in flight of one run count: a client that multiplexes
 * many slow streams on one connection (a guest's processes, the
 * benchmark's paced streams) has many reads in flight too, one per
 * stream, each waiting the backend's whole latency, which read-ahead
 * hides.  Consecutive arrivals of a client reading ahead itself lie
 * close together; those of independent streams jump.
 *
 * So the engine counts each client's reads in flight that take its
 * lock (read.c; a lockless hit is done in microseconds, and would show
 * no queue), and as each arrives takes a sample: the requests and
 * bytes in flight, if the read starts within the bytes in flight of
 * where the client's previous read ended, else just its own.  It
 * keeps the peak of the samples, decaying by 1/ADAPTRA_DEPTH_DECAY an
 * arrival: a peak, not an average, since a queue shows only while its
 * reads wait.  A client whose peak exceeds one and a half requests (it
 * does read ahead) and whose bytes cover that product gets no
 * read-ahead decision; its reads then wait for the backend, and its
 * queue shows whole.  One request at a time never covers it, whatever
 * its size: that client waits for every read, which read-ahead hides.
 *
 * Once a client reads ahead itself it stays so until its peak falls
 * to one and a half requests, whatever its bytes: a hysteresis, since
 * the decision hides what it is made on.  Given read-ahead, a deep
 * client's reads are hits and its queue does not show, so the bytes
 * would soon fall under the product and read-ahead come back, hiding
 * the queue again.  Without read-ahead its queue shows whole.  A
 * client whose queue does grow shallow gets read-ahead back once the
 * peak decays: from 16 requests, within 40 reads.
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

/* The peaks' fixed point: requests in 1/ADAPTRA_DEPTH_ONE.  Whole
 * requests would not decay: under ADAPTRA_DEPTH_DECAY requests,
 * peak / ADAPTRA_DEPTH_DECAY is 0, and a peak of 2 would stay above
 * one and a half for good.  In 256ths a peak decays until under a
 * sixteenth of a request, and one and a half is exact (384).
 */
#define ADAPTRA_DEPTH_ONE 256

/* A client reads ahead itself when its peak is above this many
 * requests in flight (in 1/ADAPTRA_DEPTH_ONE): one and a half.
 */
#define ADAPTRA_DEPTH_MIN_REQUESTS (3 * ADAPTRA_DEPTH_ONE / 2)

struct adaptra_depth {
  uint64_t requests, bytes;     /* in flight now */
  uint64_t last_end;            /* where the last read to arrive ends */
  uint64_t peak_requests;       /* at arrivals, in 1/ADAPTRA_DEPTH_ONE */
  uint64_t peak_bytes;          /* at arrivals */
  bool deep;                    /* reads ahead itself (the engine's lock) */
};

/* A read of count bytes at offset arrives (counted with itself in
 * flight).
 */
extern void adaptra_depth_enter (struct adaptra_depth *d, uint64_t offset,
                                 uint32_t count);

/* That read is done. */
extern void adaptra_depth_leave (struct adaptra_depth *d, uint32_t count);

/* Does the client read ahead itself: do its own reads in flight
 * cover bytes, the most that read-ahead would keep in flight for it
 * (0: never), or did they and it still has more than one and a half
 * requests in flight?  Not thread-safe (the engine's lock).
 */
extern bool adaptra_depth_reads_ahead (struct adaptra_depth *d,
                                       uint64_t bytes);

/* A deep client's misses.  A client that reads ahead itself gets no
 * window, but its misses may still be worth keeping in the pool: 16
 * guests booting one image, each with a deep queue, read what the
 * others read a moment before (tests/unit/test-storm.c).  A copy
 * (nbdcopy, qemu-img convert) reads each byte once, and keeping its
 * misses only costs a copy of every byte into the pool, under the
 * engine lock, which makes the copy CPU-bound sooner (docs/DESIGN.md,
 * section 7, has the figure).
 *
 * So a volume keeps its deep clients' misses while its clients read
 * pages again: through a trial of ADAPTRA_KEEP_TRIAL bytes kept, and
 * after it while the bytes its clients read from the pool other than
 * a window's first read of a page (pages read again; those of cache
 * hints and profiles) are at least 1/ADAPTRA_KEEP_SHARE of the bytes
 * kept.  Otherwise it keeps one miss run in ADAPTRA_KEEP_SAMPLE, so
 * that reads again that start later show, and reads the others
 * straight into the client's buffer.  The sampled runs take the
 * volume's count of reads again (a sum over its clients) and
 * re-evaluate.  Both counts halve every ADAPTRA_KEEP_WINDOW bytes kept:
 * recent reads weigh.  64 MiB is sixteen trials: much smaller, the
 * share would rest on few reads again and flip between keeping and
 * not; much larger, a volume whose clients stopped reading pages again
 * (a boot storm over, a copy begun) would go on keeping a copy's
 * misses, a copy of every byte, for that much longer.  Not
 * thread-safe: the engine's lock.
 */
#define ADAPTRA_KEEP_TRIAL (UINT64_C (4) << 20)
#define ADAPTRA_KEEP_SHARE 16
#define ADAPTRA_KEEP_SAMPLE 64
#define ADAPTRA_KEEP_WINDOW (UINT64_C (64) << 20)

struct adaptra_keep {
  uint64_t kept;                /* bytes of deep misses kept (decayed) */
  uint64_t reread;              /* bytes read again (decayed) */
  uint64_t seen;                /* the running total of bytes read again
                                   (never falls) when last evaluated */
  uint64_t runs;                /* deep miss runs after the trial */
  bool keep;                    /* the last evaluation's answer */
};

/* Keep a deep client's run of misses in the pool?  total(opaque) is
 * the volume's running total of bytes read again, asked on the sampled
 * runs only.
 */
extern bool adaptra_keep_miss (struct adaptra_keep *k,
                               uint64_t (*total) (void *), void *opaque);

/* A deep client's miss run of bytes was kept. */
extern void adaptra_keep_kept (struct adaptra_keep *k, uint64_t bytes);

#endif /* ADAPTRA_DEPTH_H */
