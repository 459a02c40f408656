/* stream.c: the pool-wide stream table.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The stream table.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §2 and §3.2.
 *
 * NBD has no files.  One logical scan arrives over several connections
 * (nbdcopy, fio, nbd-client -C) and out of order (16-64 requests in
 * flight), and one connection carries several interleaved scans.  So
 * streams are kept in one table per engine and found by position, not
 * by connection:
 *
 *   - A read that touches a look-ahead mark finds its stream through
 *     the page's stream id: O(1).
 *   - A miss first looks at the page just before it in the pool: the
 *     pages a stream reads (ahead or on demand) carry its id, so a
 *     stream that is reordered within its window is found there.
 *   - Otherwise the position hash below finds a stream whose expected
 *     next page is within ADAPTRA_STREAM_TOLERANCE of the read.  Each
 *     stream sits in the chain of the granule
 *     (2^ADAPTRA_STREAM_GRANULE_SHIFT pages) holding its expected
 *     page, so a lookup walks three short chains.
 *
 * Streams are created only on sequential evidence (core/recognise.c):
 * a random read never takes a slot, so a random scan cannot flush the
 * table.  A stream leaves the table when a new one needs its slot and
 * it is the least recently used, or after ADAPTRA_STREAM_REAP_NS (10
 * minutes) idle: every request that takes the engine lock frees the
 * least recently used stream if it has been idle that long (a hit
 * without the lock leaves it to the next one).  (zfetch reaps after
 * 2 s, which restarts a stream reading every 2.5 s at every window.)
 * A stream that left is not lost for good: its look-ahead mark page
 * carries its window size and age, from which the state method
 * resumes it, and the context method picks it up from the pages it
 * left in the pool.
 *
 * Ids are (sequence << ADAPTRA_STREAM_SLOT_BITS) | slot with a 48-bit
 * sequence, so a page stamped with the id of a slot that was since
 * reused does not resolve to the new stream within any realistic
 * uptime.
 */

#include <config.h>

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "stream.h"

#define NONE ILIST_NONE

/* Where the two links of each slot are. */
#define LRU(t) ILIST_ARRAY ((t)->slots, lru)
#define HASH(t) ILIST_ARRAY ((t)->slots, hash)

static uint32_t
slot_of (const struct adaptra_streams *t, const struct adaptra_stream *s)
{
  return (uint32_t) (s - t->slots);
}

static uint32_t
bucket_of (const struct adaptra_streams *t, uint64_t granule)
{
  return adaptra_hash_fib (granule, t->bucket_bits);
}

static void
hash_remove (struct adaptra_streams *t, struct adaptra_stream *s)
{
  if (s->bucket == NONE)
    return;
  ilist_unlink (&t->buckets[s->bucket], HASH (t), slot_of (t, s));
  s->bucket = NONE;
}

static void
hash_insert (struct adaptra_streams *t, struct adaptra_stream *s)
{
  uint32_t b = bucket_of (t, s->next >> ADAPTRA_STREAM_GRANULE_SHIFT);

  s->bucket = b;
  ilist_push_head (&t->buckets[b], HASH (t), slot_of (t, s));
}

int
adaptra_streams_init (struct adaptra_streams *t, uint32_t nslots)
{
  uint32_t i;

  memset (t, 0, sizeof *t);
  if (nslots == 0 || nslots > ADAPTRA_STREAMS_MAX) {
    errno = EINVAL;
    return -1;
  }
  t->bucket_bits = 1;
  while ((UINT32_C (1) << t->bucket_bits) < nslots)
    t->bucket_bits++;
  t->slots = calloc (nslots, sizeof *t->slots);
  t->buckets = malloc (sizeof *t->buckets << t->bucket_bits);
  if (!t->slots || !t->buckets) {
    adaptra_streams_fini (t);
    errno = ENOMEM;
    return -1;
  }
  for (i = 0; i < UINT32_C (1) << t->bucket_bits; i++)
    ilist_init (&t->buckets[i]);
  t->nslots = nslots;
  ilist_init (&t->lru);
  t->free_head = NONE;
  for (i = nslots; i-- > 0; ) {
    t->slots[i].bucket = NONE;
    t->slots[i].lru.next = t->free_head;
    t->free_head = i;
  }
  return 0;
}

void
adaptra_streams_fini (struct adaptra_streams *t)
{
  free (t->slots);
  free (t->buckets);
  free (t->proposals);
  t->slots = NULL;
  t->buckets = NULL;
  t->proposals = NULL;
  t->nproposals = 0;
}

/* The live stream of id, or NULL (stream.h: adaptra_streams_get). */
static const struct adaptra_stream *
live_stream (const struct adaptra_streams *t, uint64_t id)
{
  uint32_t i = (uint32_t) (id & (ADAPTRA_STREAMS_MAX - 1));

  if (id == 0 || i >= t->nslots || t->slots[i].id != id)
    return NULL;
  return &t->slots[i];
}

struct adaptra_stream *
adaptra_streams_get (struct adaptra_streams *t, uint64_t id)
{
  return (struct adaptra_stream *) live_stream (t, id);
}

struct adaptra_stream *
adaptra_streams_find (struct adaptra_streams *t, uint64_t page)
{
  uint64_t g = page >> ADAPTRA_STREAM_GRANULE_SHIFT;
  struct adaptra_stream *best = NULL;
  uint32_t seen[3];
  unsigned nseen = 0, k;
  int d;

  for (d = -1; d <= 1; d++) {
    uint32_t b, i;

    if (d < 0 && g == 0)
      continue;
    /* Neighbouring granules may share a bucket: walk each chain once. */
    b = bucket_of (t, g + d);
    for (k = 0; k < nseen && seen[k] != b; k++)
      ;
    if (k < nseen)
      continue;
    seen[nseen++] = b;
    for (i = t->buckets[b].head; i != NONE; i = t->slots[i].hash.next) {
      struct adaptra_stream *s = &t->slots[i];
      uint64_t at = adaptra_stream_position (s);
      uint64_t dist = at > page ? at - page : page - at;

      if (dist <= ADAPTRA_STREAM_TOLERANCE &&
          (!best || s->atime_ns > best->atime_ns))
        best = s;
    }
  }
  return best;
}

void
adaptra_streams_free (struct adaptra_streams *t, struct adaptra_stream *s)
{
  /* Its jobs, if any, no longer count: they find no stream (the id
   * goes) when they leave the queue or end.
   */
  t->with_jobs -= adaptra_stream_has_jobs (s);
  if (s->proposal > 0) {
    t->proposals[s->client].sum -= s->proposal;
    t->proposals[s->client].n--;
  }
  hash_remove (t, s);
  ilist_unlink (&t->lru, LRU (t), slot_of (t, s));
  s->id = 0;
  s->lru.next = t->free_head;
  t->free_head = slot_of (t, s);
}

/* Make t's proposals hold client ids up to client: twice as many as
 * before, or client + 1.  Returns false on no memory.
 */
static bool
proposals_hold (struct adaptra_streams *t, size_t client)
{
  struct adaptra_proposals *p;
  size_t n;

  if (client < t->nproposals)
    return true;
  n = client + 1 > 2 * t->nproposals ? client + 1 : 2 * t->nproposals;
  p = realloc (t->proposals, n * sizeof *p);
  if (!p)
    return false;
  memset (p + t->nproposals, 0, (n - t->nproposals) * sizeof *p);
  t->proposals = p;
  t->nproposals = n;
  return true;
}

uint64_t
adaptra_streams_propose (struct adaptra_streams *t, struct adaptra_stream *s,
                         uint64_t pages)
{
  struct adaptra_proposals *c;

  if (s->client < 0 || !proposals_hold (t, (size_t) s->client))
    return pages;
  c = &t->proposals[s->client];
  if (s->proposal > 0)
    c->sum -= s->proposal;
  else
    c->n++;
  s->proposal = pages;
  c->sum += pages;
  return c->sum / c->n;
}

bool
adaptra_streams_reap_one (struct adaptra_streams *t, uint64_t now_ns)
{
  struct adaptra_stream *s;
  uint64_t atime;

  if (t->lru.tail == NONE)
    return false;
  s = &t->slots[t->lru.tail];
  atime = s->atime_ns;
  /* A stream hit without the lock may have read it after now_ns was
   * sampled.  Such hits do not move it up the list either, so a stream
   * idle past the limit may wait behind one they keep fresh until that
   * one's next read under the lock (a few requests: ADAPTRA_STREAM_LAG).
   */
  if (atime >= now_ns || now_ns - atime < ADAPTRA_STREAM_REAP_NS)
    return false;
  adaptra_streams_free (t, s);
  return true;
}

struct adaptra_stream *
adaptra_streams_new (struct adaptra_streams *t, int client, uint64_t next,
                     uint64_t now_ns)
{
  struct adaptra_stream *s;
  uint32_t i;

  while (adaptra_streams_reap_one (t, now_ns))
    ;
  if (t->free_head == NONE)
    adaptra_streams_free (t, &t->slots[t->lru.tail]);
  i = t->free_head;
  s = &t->slots[i];
  t->free_head = s->lru.next;

  /* The atomic fields one by one: a stream hit that found this slot's
   * last stream may still write them (core/read.c: read_unlocked).
   */
  memset ((char *) s + offsetof (struct adaptra_stream, client), 0,
          sizeof *s - offsetof (struct adaptra_stream, client));
  s->hits = 0;
  s->touched = 0;
  s->lockless_low = UINT64_MAX;
  s->lockless_high = 0;
  /* Sequence 0 would give slot 0 the id 0, which means "none". */
  t->sequence = (t->sequence + 1) &
    ((UINT64_C (1) << (64 - ADAPTRA_STREAM_SLOT_BITS)) - 1);
  if (t->sequence == 0)
    t->sequence = 1;
  s->id = (t->sequence << ADAPTRA_STREAM_SLOT_BITS) | i;
  s->client = client;
  s->next = next;
  s->atime_ns = now_ns;
  s->birth_ns = now_ns;
  s->bucket = NONE;
  ilist_push_head (&t->lru, LRU (t), i);
  hash_insert (t, s);
  t->recent[t->recent_next] = s->id;
  t->recent_next = (t->recent_next + 1) % ADAPTRA_STREAM_RECENT;
  return s;
}

/* Has stream r's reader been gone ADAPTRA_RUN_IDLE times as long as
 * it read, from the stream's start to its last read?  A stream not
 * read since it started has not shown how long it takes.
 */
static bool
gone (const struct adaptra_stream *r, uint64_t now_ns)
{
  uint64_t atime = r->atime_ns;

  return atime > r->birth_ns && now_ns > atime &&
    (now_ns - atime) / ADAPTRA_RUN_IDLE > atime - r->birth_ns;
}

/* Runs over: the read-ahead a stream still wants is what the runs
 * before it read.
 *
 * A stream that stops leaves its last window unread, and the state
 * method has doubled that window at every mark: on runs that stop at
 * random places, about as much is read ahead for nothing as the run
 * read.  The seed's thrashing threshold bounds a window from the
 * pool's side (how long pages live there); here the other end bounds
 * it: how far the volume's recent streams read before they stopped.
 * A stream whose run is reach pages long so far is compared with the
 * recent runs that got as far: if enough of them are over, the
 * length by which most of them (ADAPTRA_RUN_SHARE percent, the runs
 * still going counted once they went further) had ended is as far as
 * this one is likely to go, and its windows stop there.  If it goes
 * on, its next read misses, and it is compared with the runs that got
 * that far: fewer, and with fewer of them over its windows grow as
 * before.  A run longer than most recent ones pays a wait or two for
 * it; a share rather than the longest keeps one odd run (a run that
 * began next to pages another left in the pool, and so counts them)
 * from lifting the bound for every run after it.
 *
 * The table sees a stream only when its reader reads, so over is a
 * guess: ADAPTRA_RUN_LATER streams of the volume started since its
 * reader last read it (births in the ring are in time order, newest
 * last), and it has been gone ADAPTRA_RUN_IDLE times as long as it
 * read (gone).  Slow streams started together, each read once every
 * few seconds (W5, the seed's 800 readers), see many streams start
 * between two of their reads, but not that long a pause: without
 * the second test, their first reads were taken for runs over, and
 * the windows of the streams after them cut to as much (adaptra-sim,
 * 800 streams of 1 KB/s in 4 KiB reads, 64 MiB pool, 60 s: 79% of
 * the reads served at once against 85%).
 */
uint64_t
adaptra_streams_run_bound (const struct adaptra_streams *t,
                           const struct adaptra_stream *s, uint64_t reach,
                           uint64_t now_ns)
{
  const struct adaptra_stream *r[ADAPTRA_STREAM_RECENT];
  uint64_t ended[ADAPTRA_STREAM_RECENT], going[ADAPTRA_STREAM_RECENT];
  uint64_t later_birth = UINT64_MAX;
  unsigned n = 0, nended = 0, ngoing = 0, k, j;

  /* The volume's recent streams, newest first. */
  for (k = ADAPTRA_STREAM_RECENT; k > 0; k--) {
    const struct adaptra_stream *q =
      live_stream (t, t->recent[(t->recent_next + k - 1) %
                                ADAPTRA_STREAM_RECENT]);

    if (q == NULL || q->volume != s->volume)
      continue;
    r[n++] = q;
    /* Over: last read before the ADAPTRA_RUN_LATER-th newest started. */
    if (n == ADAPTRA_RUN_LATER)
      later_birth = r[n - 1]->birth_ns;
  }
  /* The lengths of the runs that got this far: over (sorted), or
   * still going.
   */
  for (k = 0; k < n; k++) {
    uint64_t at = adaptra_stream_position (r[k]);
    uint64_t len = at > r[k]->origin ? at - r[k]->origin : 0;

    if (r[k] == s || r[k]->backward || len < reach)
      continue;
    if (k < ADAPTRA_RUN_LATER || r[k]->atime_ns >= later_birth ||
        !gone (r[k], now_ns)) {
      going[ngoing++] = len;
      continue;
    }
    for (j = nended++; j > 0 && ended[j - 1] > len; j--)
      ended[j] = ended[j - 1];
    ended[j] = len;
  }
  if (nended < ADAPTRA_RUN_ENDED_MIN)
    return UINT64_MAX;
  /* The shortest length by which ADAPTRA_RUN_SHARE percent of them
   * ended, counting the runs still going only once they went further.
   */
  for (k = 0; k < nended; k++) {
    uint64_t beyond = 0;

    if (k + 1 < nended && ended[k + 1] == ended[k])
      continue;                 /* count all runs of this length */
    for (j = 0; j < ngoing; j++)
      beyond += going[j] > ended[k];
    if (100 * (uint64_t) (k + 1) >=
        (uint64_t) ADAPTRA_RUN_SHARE * (nended + beyond))
      return ended[k];
  }
  return UINT64_MAX;
}

void
adaptra_streams_advance (struct adaptra_streams *t, struct adaptra_stream *s,
                         uint64_t first, uint64_t last, uint64_t now_ns)
{
  uint64_t next = s->backward ? first : last;

  s->atime_ns = now_ns;
  if (t->lru.head != slot_of (t, s)) {
    ilist_unlink (&t->lru, LRU (t), slot_of (t, s));
    ilist_push_head (&t->lru, LRU (t), slot_of (t, s));
  }
  if (s->backward ? next >= s->next : next <= s->next)
    return;
  if (s->next >> ADAPTRA_STREAM_GRANULE_SHIFT !=
      next >> ADAPTRA_STREAM_GRANULE_SHIFT) {
    hash_remove (t, s);
    s->next = next;
    hash_insert (t, s);
  }
  else
    s->next = next;
}

struct adaptra_stream *
adaptra_streams_first (struct adaptra_streams *t)
{
  return t->lru.head == NONE ? NULL : &t->slots[t->lru.head];
}

struct adaptra_stream *
adaptra_streams_after (struct adaptra_streams *t, struct adaptra_stream *s)
{
  return s->lru.next == NONE ? NULL : &t->slots[s->lru.next];
}
