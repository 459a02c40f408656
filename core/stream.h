/* stream.h: a stream's read-ahead state and the stream table.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The stream table: the per-stream read-ahead state of the seed's
 * file_ra_state, kept pool-wide (not per connection) in a fixed table.
 * Like the pool, it does no locking: call it with the engine lock held.
 * The one exception is the read path's stream hit (core/read.c:
 * read_unlocked), which reads a stream's id and expected page and
 * writes its hits, last read time and last touched page without the
 * lock: those fields are atomic, and a stream's other fields and the
 * table's lists are the lock's alone.
 */

#ifndef ADAPTRA_STREAM_H
#define ADAPTRA_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ilist.h"

struct adaptra_job;

/* Pages on either side of a stream's expected position that still
 * count as that stream (reordering tolerance), and the granule of the
 * position hash: a lookup probes three granules, the expected
 * position's and its neighbours, which cover the tolerance either side
 * because the two are one number.  256 pages (1 MiB at 4 KiB).  Much
 * smaller, a client's reads that arrive out of order (several in
 * flight) would start new streams; much larger, two streams reading
 * near each other would be taken for one, and each granule's chain
 * would hold more streams to compare.
 */
#define ADAPTRA_STREAM_GRANULE_SHIFT 8
#define ADAPTRA_STREAM_TOLERANCE (UINT64_C (1) << ADAPTRA_STREAM_GRANULE_SHIFT)

/* A stream idle for 10 minutes is reaped.  Slow streams must keep
 * their state between reads: the seed's case, 1 KB/s read in 4 KiB
 * requests, reads once every 4 s, and its windows of 10-20 pages in a
 * crowded pool last 40-80 s; 10 minutes covers a window of 150 pages
 * at that rate.  Below that, a stream leaves the table only under
 * pressure: a new stream takes the least recently used slot, and the
 * stream it pushed out resumes from the state its look-ahead mark page
 * carries (core/recognise.c: adaptra_recognise_resume).
 */
#define ADAPTRA_STREAM_REAP_NS (UINT64_C (600) * 1000000000)

/* How far from its expected page a stream's read may be and still be
 * served without the engine lock, which leaves the stream's expected
 * page (next) and its place in the position hash as they are, and
 * notes the read in lockless_low and lockless_high: half of
 * ADAPTRA_STREAM_TOLERANCE, so that the position hash, probed a
 * granule either side, still finds the stream within half its
 * tolerance of its reader, and a sequential reader in 4 KiB requests
 * takes the lock once in 128 reads (64 KiB: once in 8).
 */
#define ADAPTRA_STREAM_LAG (ADAPTRA_STREAM_TOLERANCE / 2)

/* The run lengths read-ahead learns from (adaptra_streams_run_bound):
 * the table remembers the ADAPTRA_STREAM_RECENT streams it started
 * last.  A stream's run is over when ADAPTRA_RUN_LATER streams of its
 * volume started after its reader last read it, and its reader has
 * been gone ADAPTRA_RUN_IDLE times as long as it read (from the
 * stream's start to its last read).  Streams interleaved on one
 * connection (W3: 8 of them, read round-robin) are each read again
 * before more than the others started, and after a round of theirs at
 * most: none is taken for over.  A bound is the length by which
 * ADAPTRA_RUN_SHARE percent of the runs that got as far as the stream
 * asking had ended, and needs ADAPTRA_RUN_ENDED_MIN of them over, so
 * that one or two streams taken for over while their reader was away
 * cannot cut a window.
 */
#define ADAPTRA_STREAM_RECENT 32
#define ADAPTRA_RUN_LATER 16
#define ADAPTRA_RUN_IDLE 16
#define ADAPTRA_RUN_ENDED_MIN 4
#define ADAPTRA_RUN_SHARE 75

/* Largest table: ids keep the slot in their low
 * ADAPTRA_STREAM_SLOT_BITS bits, and the sequence in the 48 above
 * them (stream.c).
 */
#define ADAPTRA_STREAM_SLOT_BITS 16
#define ADAPTRA_STREAMS_MAX (1u << ADAPTRA_STREAM_SLOT_BITS)

struct adaptra_stream {
  /* Read without the engine lock (written under it, atomically). */
  _Atomic uint64_t id;          /* (sequence << ADAPTRA_STREAM_SLOT_BITS)
                                   | slot; 0 when free */
  _Atomic uint64_t next;        /* page the stream is expected to read
                                   next */
  /* Written without the engine lock too, by the stream hits. */
  _Atomic uint64_t atime_ns;    /* last read */
  _Atomic uint64_t hits;        /* its read-ahead pages read since the
                                   window was issued */
  /* The lowest first page and the highest end of its reads served
   * without the lock (UINT64_MAX and 0: none): its reader's position
   * beyond next (adaptra_stream_position).
   */
  _Atomic uint64_t lockless_low, lockless_high;
  /* The last of its pages a reader touched and that reader's client,
   * as one key (adaptra_stream_touch_key; 0: none): the next touch of
   * the same page by the same reader is the same access
   * (core/read.c).
   */
  _Atomic uint64_t touched;

  /* The engine lock's. */
  int client;                   /* client that started it */
  int volume;                   /* volume it reads (set by its user) */
  uint8_t method;               /* method of the current window */
  bool backward;                /* descending offsets */
  /* The current window is [ra_index, readahead_index); its look-ahead
   * mark is on page mark_index (readahead_index when it has none, or
   * ra_index backward); reader_index is the page the reader was at when
   * the window was issued (the miss, or the previous mark): the state
   * method measures the stream's advance from there.
   */
  uint64_t ra_index, readahead_index, mark_index, reader_index;
  /* Where its run began: the first page its reader read, as far as
   * the pool showed when the stream started (set by its user;
   * forward streams only).  Its run so far is origin to its
   * position; birth_ns is when it started.
   */
  uint64_t origin, birth_ns;
  uint64_t age;                 /* pool aging clock when it was issued */
  uint64_t issue_ns;            /* time the window was issued */
  uint64_t lost;                /* its pages evicted unread since then */
  /* The state method's interval before the current one (s and g;
   * prev_shift 0: none) and, where a turn at the backend costs a
   * seek, the stream's share of T (0: adaptra-ratio; core/window.h).
   */
  uint64_t prev_shift, prev_global_shift;
  unsigned share;
  uint64_t cap;                 /* its own window cap (max=auto), pages */
  /* The last state window its own T proposed where turns at the
   * backend cost seeks, counted in its client's sum (struct
   * adaptra_proposals); 0: none.
   */
  uint64_t proposal;
  uint32_t late;                /* reads that waited for its read-ahead */
  /* Its jobs in the prefetch queue, and the last of them (queue.c:
   * the fair queue's tags follow a stream's last job).
   */
  struct adaptra_job *queued_last;
  uint32_t queued_jobs;
  uint32_t running_jobs;        /* of them, workers read now (workers.c) */

  /* Links: recency list of used slots (or free list: next only), and
   * the chain of its position-hash bucket (bucket: ILIST_NONE when on
   * none).
   */
  struct ilist_link lru;
  struct ilist_link hash;
  uint32_t bucket;
};

/* Where stream s's reader is: next, or the position its reads without
 * the lock reached from there (at most ADAPTRA_STREAM_LAG on; a value
 * further is a read that found the slot's previous stream, ignored).
 * Lock held.
 */
static inline uint64_t
adaptra_stream_position (const struct adaptra_stream *s)
{
  uint64_t next = s->next, low = s->lockless_low, high = s->lockless_high;

  if (s->backward)
    return low < next && low + ADAPTRA_STREAM_LAG >= next ? low : next;
  return high > next && high <= next + ADAPTRA_STREAM_LAG ? high : next;
}

/* The key of client's touch of page p, for adaptra_stream.touched:
 * exact for pages below 2^48 and clients below 2^16 (a 1 EiB export in
 * 4 KiB pages, 65536 connections); beyond, two touches may share a key,
 * and a touch then counts as the same access as another reader's: a
 * read-ahead hit or an activation is not counted.
 */
static inline uint64_t
adaptra_stream_touch_key (int client, uint64_t p)
{
  return ((uint64_t) (uint32_t) client << 48) ^ (p + 1);
}

/* The state windows a client's streams last proposed
 * (adaptra_streams_propose): their sum and how many.  Kept as streams
 * propose and leave, so that their mean costs no walk of the table.
 */
struct adaptra_proposals {
  uint64_t sum;
  uint32_t n;
};

struct adaptra_streams {
  struct adaptra_stream *slots;
  uint32_t nslots;
  struct ilist *buckets;        /* position hash chains */
  unsigned bucket_bits;
  struct ilist lru;             /* used slots, most recently used first */
  uint32_t free_head;
  /* Makes ids of reused slots differ.  48 bits of it fit an id: at a
   * million new streams a second it wraps after 8.9 years, so a page
   * never names a later stream that took its stream's slot.
   */
  uint64_t sequence;
  /* Streams in the table with prefetch queued or being read
   * (queued_jobs + running_jobs > 0), kept by adaptra_stream_jobs so
   * that the streams sharing the backend (adaptra_streams_sharing: the
   * late cap, readahead.c; the chunk, queue.c) cost no walk of a
   * table of up to ADAPTRA_STREAMS_MAX streams.
   */
  uint32_t with_jobs;
  /* By client id (0 to nproposals - 1), its streams' proposals; grown
   * as a client's first stream proposes (a few bytes a connection,
   * beside the pool).  A stream is the table's, not its connection's:
   * a closed client's streams count until they leave, for the client
   * that takes its id too, as their client field names it.
   */
  struct adaptra_proposals *proposals;
  size_t nproposals;
  /* The ids of the last ADAPTRA_STREAM_RECENT streams started, the
   * next to be replaced at recent_next.
   */
  uint64_t recent[ADAPTRA_STREAM_RECENT];
  uint32_t recent_next;
};

/* Does s have prefetch queued or being read? */
static inline bool
adaptra_stream_has_jobs (const struct adaptra_stream *s)
{
  return s->queued_jobs + s->running_jobs > 0;
}

/* Streams that share the backend now: s (of table t, or NULL) and those
 * with prefetch queued or being read, by t's count of them.
 */
static inline uint64_t
adaptra_streams_sharing (const struct adaptra_streams *t,
                         const struct adaptra_stream *s)
{
  return 1 + (uint64_t) t->with_jobs - (s && adaptra_stream_has_jobs (s));
}

/* s, a stream of table t, had jobs queued or being read
 * (adaptra_stream_has_jobs) before its counts changed, or not
 * (had): keep t's count of such streams.  Lock held.
 */
static inline void
adaptra_stream_jobs (struct adaptra_streams *t,
                     const struct adaptra_stream *s, bool had)
{
  t->with_jobs += (uint32_t) adaptra_stream_has_jobs (s) - (uint32_t) had;
}

/* A table of nslots (1..ADAPTRA_STREAMS_MAX) streams.  Returns 0, or -1
 * with errno set.
 */
extern int adaptra_streams_init (struct adaptra_streams *t, uint32_t nslots);
extern void adaptra_streams_fini (struct adaptra_streams *t);

/* The stream with this id, or NULL if it was reaped or reused. */
extern struct adaptra_stream *adaptra_streams_get (struct adaptra_streams *t,
                                                   uint64_t id);

/* The most recently used stream whose expected position is within
 * ADAPTRA_STREAM_TOLERANCE pages of page, or NULL.  O(streams near
 * page): three hash chains.
 */
extern struct adaptra_stream *adaptra_streams_find (struct adaptra_streams *t,
                                                    uint64_t page);

/* Start a stream for client, expecting page next.  Frees streams idle
 * for ADAPTRA_STREAM_REAP_NS first; when the table is full, reuses the
 * least recently used one.  Never NULL.  The new stream is zeroed
 * apart from id, client, next and atime_ns.
 */
extern struct adaptra_stream *adaptra_streams_new (struct adaptra_streams *t,
                                                   int client, uint64_t next,
                                                   uint64_t now_ns);

/* The stream read pages [first, last): make it the most recently used
 * and move its expected page on to last (first, for a backward
 * stream).  A reordered read behind that position does not move it
 * back.
 */
extern void adaptra_streams_advance (struct adaptra_streams *t,
                                     struct adaptra_stream *s,
                                     uint64_t first, uint64_t last,
                                     uint64_t now_ns);

/* How far past its origin forward stream s may read ahead, in pages,
 * when its run reaches reach pages (its reader's request included):
 * of the recently started streams of its volume
 * (ADAPTRA_STREAM_RECENT) that got as far, the length by which
 * ADAPTRA_RUN_SHARE percent had ended (over at now_ns:
 * ADAPTRA_RUN_LATER, ADAPTRA_RUN_IDLE; those not over count only once
 * they went further); or UINT64_MAX (no bound) when fewer than
 * ADAPTRA_RUN_ENDED_MIN of them are over or that share never ended.
 * The bound is at least reach.  O(ADAPTRA_STREAM_RECENT).  Lock held.
 */
extern uint64_t adaptra_streams_run_bound (const struct adaptra_streams *t,
                                           const struct adaptra_stream *s,
                                           uint64_t reach, uint64_t now_ns);

/* Free the least recently used stream if it has been idle for
 * ADAPTRA_STREAM_REAP_NS.  O(1); called once per request that takes
 * the engine lock (read.c: read_locked), so idle streams drain
 * without a timer.  Returns true if one was freed.
 */
extern bool adaptra_streams_reap_one (struct adaptra_streams *t,
                                      uint64_t now_ns);

/* Stream s of table t proposes a state window of pages (> 0): it
 * replaces s's last proposal in its client's sum.  Returns the mean
 * of the client's streams' last proposals, s's new one included, or
 * pages itself when s has no client (client < 0) or the table could
 * not grow to hold its client (the proposal is then not kept).
 */
extern uint64_t adaptra_streams_propose (struct adaptra_streams *t,
                                         struct adaptra_stream *s,
                                         uint64_t pages);

/* Free a stream now (its proposal leaves its client's sum). */
extern void adaptra_streams_free (struct adaptra_streams *t,
                                  struct adaptra_stream *s);

/* Number of used streams. */
static inline uint32_t
adaptra_streams_count (const struct adaptra_streams *t)
{
  return t->lru.len;
}

/* Iteration over used streams, most recently used first: start with
 * first, continue with after; NULL at the end.
 */
extern struct adaptra_stream *adaptra_streams_first (struct adaptra_streams *t);
extern struct adaptra_stream *adaptra_streams_after (struct adaptra_streams *t,
                                                     struct adaptra_stream *s);

#endif /* ADAPTRA_STREAM_H */
