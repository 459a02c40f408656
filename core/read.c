/* read.c: the read paths, cache hints and memory lent.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A client's read, a cache hint.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §3.1, §7, §9 and §11.
 *
 * One client read:
 *
 *   0. Without the lock (read_unlocked): if every page is READY and
 *      without a look-ahead mark, and is either a plain hit (read by
 *      a client before, of no stream) or a stream hit (of one live
 *      stream, the read within ADAPTRA_STREAM_LAG of its expected
 *      page), or, on a volume that stepped aside, absent: pin the
 *      present pages under their stripe locks (pool.c: one critical
 *      section per run of pages), touch each (atomically), count once
 *      per request in this thread's counter shard and the client's and
 *      stream's atomic fields, note the stream's read time, copy, read
 *      the absent runs straight from the backend into the client's
 *      buffer (aside.c), unpin; done.  Such a read would make no decision and
 *      would move its stream less than the lag, so the lock would add
 *      nothing but a serial section; it also skips the stream table's
 *      reaping, which the next locked read does.  Else nothing was
 *      done, and:
 *   1. Under the lock, ask whether the volume steps aside (aside.c);
 *      if it does not, and the client does not read ahead itself
 *      (depth.c), walk the request's pages once: the first page that
 *      is absent is a miss; the first mark taken (test and clear) is a
 *      look-ahead hit.  Make the request's single read-ahead decision
 *      (readahead.c): on the miss if there is one, else on the mark.
 *      A request that hit neither only refreshes its stream's
 *      position.
 *   2. Serve the pages in order:
 *        READY      pin a batch, copy it out without the lock, unpin;
 *                   the first client touch of a read-ahead page counts
 *                   as pgreadahead_hit, a second access (not the same
 *                   reader touching the same page again: new_access)
 *                   flags it for (delayed) activation;
 *        IN_FLIGHT  count io_block once; run the queued job holding
 *                   the page in this thread if it has not started
 *                   (unless distance costs and the head is in another
 *                   run: then the workers take it next, queue.c:
 *                   adaptra_queue_promote), else wait for it (a
 *                   queue per group of pages)
 *                   until its deadline, then read the pages itself if
 *                   the hedge credit pays (io_hedge, once a request),
 *                   else wait on for the read that holds them
 *                   (io_hedge_refused, once a deadline): hedging,
 *                   hedge.c;
 *        absent     insert the run of absent pages IN_FLIGHT (so that
 *                   nobody else reads them meanwhile) and read it from
 *                   the backend with the client's own context; on a
 *                   volume that stepped aside, read the bytes straight
 *                   into the client's buffer and cache nothing:
 *                   stepping aside, aside.c, which also decides when
 *                   a volume does (step 1 asks it first).  A client
 *                   that reads ahead itself has its misses read so
 *                   too, unless its volume keeps them (depth.h:
 *                   adaptra_keep).
 *
 * The read's files: this one has its paths (steps 0 to 2), aside.c
 * stepping aside, hedge.c a waiting reader's deadline and its own
 * read, depth.c a client's reads in flight, fetch.c every other
 * backend read, readahead.c and recognise.c the decision, pool.c the
 * pages.
 *
 * The lock is never held across backend I/O or page copies.  Reads
 * that return an error leave no pages behind.
 *
 * Why the paths without the engine lock are safe (the one statement of
 * it; other files cite this note, docs/DESIGN.md §9 has it race by
 * race).  The lock order is the engine lock, then at most one stripe
 * lock; the hit path holds one stripe lock at a time and never takes
 * the engine lock while holding one.
 *
 *   - Each page is found and pinned under its stripe lock (pool.c:
 *     adaptra_pool_pin_hits), in which the index and an indexed page's
 *     state only change with both locks held: a page is either pinned
 *     before an eviction or invalidation takes it out of the index
 *     (and is then kept, or freed by the last unpin), or missed.  A
 *     page missed here and inserted meanwhile is read from the
 *     backend, which holds the same bytes.
 *   - Everything else the hit path writes is an atomic: the client's
 *     counters and last page (the client table's chunks never move,
 *     volume.c), the counter shards, the page's touch (REFERENCED or
 *     ACTIVATE, a compare-and-swap, so one of two readers counts a
 *     read-ahead hit), and the stream's read time, hits, last touch
 *     and lowest and highest page read (stream.h).
 *   - The stream is found by id without the lock: if the table frees
 *     it and gives its slot to a new stream meanwhile (it was the
 *     least recently used one, or idle for ADAPTRA_STREAM_REAP_NS),
 *     this request's read time, last touch and hits land on the new
 *     stream, which read-ahead then takes for slightly more used than
 *     it is: a heuristic off by a read, never a byte.
 *   - A look-ahead mark set on a page while such a read copies it (a
 *     mark re-armed under congestion, readahead.c) is left for the
 *     next reader, as if it had been set just after.
 *   - A stepped-aside read's throughput sample (aside.c) is taken only
 *     if the engine lock is free (a trylock): the estimate is a moving
 *     average, which loses nothing from a skipped sample, and waiting
 *     would serialise the reads the path exists to spread.
 *
 * A write's invalidation, which the hit path may race: invalidate.c.
 *
 * A cache hint (NBD_CMD_CACHE) queues prefetch of the absent pages it
 * names, within the pool's spare pages and unless the volume is
 * congested or stepped aside, as a job of no stream.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "range.h"
#include "engine-impl.h"
#include "aside.h"
#include "hedge.h"

/* Pages pinned and copied per lock round trip, and the most a request
 * may span to be served by the lockless hit path (read_unlocked).  64
 * pages are 256 KiB at the default 4 KiB page, more than the
 * benchmark's 64 KiB reads and Linux's default 128 KiB read-ahead, so
 * such a request is one round trip; the batch is an array on the stack.
 * Much smaller, a request would take the locks several times (what the
 * lockless hit path removed); much larger, more pages stay pinned
 * through one copy, which eviction steps over (core/lru.c).
 */
#define PIN_BATCH 64

/* Frames of a demand run kept on the stack rather than malloc'd. */
#define RUN_ON_STACK 64

/* No frame can be had (all pinned or in flight): read page p through
 * without caching it, into the client's buffer if it wants the whole
 * page, else through a transfer slot.  Lock held on entry and exit,
 * dropped for the read.
 */
static int
read_uncached (struct adaptra_engine *e, struct adaptra_volume *v, void *ctx,
               const struct adaptra_request *r, uint64_t p)
{
  uint64_t start = p << e->page_shift;
  uint64_t bytes = adaptra_clamp_to_size (start,
                                          UINT64_C (1) << e->page_shift,
                                          v->base + v->size);
  bool in_client = adaptra_request_covers (r, start, bytes);
  unsigned char *slot = NULL;
  struct adaptra_stats *st;
  int err;

  assert_locked (e);
  adaptra_unlock (e);
  if (!in_client)
    slot = adaptra_bounce_get (&e->bounce, (size_t) 1 << e->page_shift);
  if (in_client || slot) {
    err = e->backend.pread (ctx, in_client ? r->buf + (start - r->offset)
                                           : slot,
                            (uint32_t) bytes, start - v->base);
    if (!err && slot) {
      memset (slot + bytes, 0, ((size_t) 1 << e->page_shift) - bytes);
      adaptra_copy_out (r, p, e->page_shift, slot);
    }
  }
  else
    err = ENOMEM;
  if (slot)
    adaptra_bounce_put (&e->bounce, slot, (size_t) 1 << e->page_shift);
  adaptra_lock (e);
  st = adaptra_stats_here (e);
  adaptra_stat_add (&st->backend_requests, 1);
  adaptra_stat_add (err ? &st->backend_errors : &st->backend_bytes,
                    err ? 1 : bytes);
  if (!err)
    __atomic_fetch_add (&v->backend_bytes, bytes, __ATOMIC_RELAXED);
  return err;
}

/* The most pages a client's read of pages [p, last) may fetch in one
 * backend read.  A run that the client's buffer covers is read into it
 * (up to ADAPTRA_REQUEST_MAX); one that begins or ends in a page the
 * client wants only part of may need a transfer slot (fetch.c), so
 * it is held to a slot, or stops before a partial last page so that
 * the whole pages go straight to the client.
 */
static uint64_t
demand_run_cap (const struct adaptra_engine *e, const struct adaptra_volume *v,
                const struct adaptra_request *r, uint64_t p, uint64_t last)
{
  const uint64_t request_max = ADAPTRA_REQUEST_MAX >> e->page_shift;
  uint64_t start = p << e->page_shift;
  uint64_t want = last - p;

  if (!adaptra_request_covers (r, start,
                               adaptra_clamp_to_size (start,
                                                      want << e->page_shift,
                                                      v->base + v->size))
      && want > e->slot_pages)
    want = start >= r->offset ? want - 1 : e->slot_pages;
  return min_u64 (want, request_max);
}

/* Read the run of absent pages from *pp (up to last) from the backend
 * into the pool and the client's buffer; advance *pp past it.  Lock
 * held on entry and exit, dropped for the read.
 */
static int
read_run (struct adaptra_engine *e, struct adaptra_client *c, void *ctx,
          uint64_t stream_id, const struct adaptra_request *r, uint64_t *pp,
          uint64_t last)
{
  struct adaptra_volume *v = c->volume;
  uint64_t p = *pp;
  uint64_t cap = demand_run_cap (e, v, r, p, last);
  /* Most misses are a few pages: spare them a malloc. */
  uint32_t small[RUN_ON_STACK];
  uint32_t *heap = cap > RUN_ON_STACK ? malloc (cap * sizeof *heap) : NULL;
  uint32_t *frames = heap ? heap : small;
  uint32_t n = 0;
  uint64_t bytes;
  int err;

  assert_locked (e);
  if (cap > RUN_ON_STACK && !heap)
    return ENOMEM;
  while (n < cap && adaptra_pool_lookup (&e->pool, p + n) == ADAPTRA_NO_FRAME) {
    uint32_t f = adaptra_pool_insert (&e->pool, p + n, stream_id,
                                      ADAPTRA_METHOD_NONE, 0);

    if (f == ADAPTRA_NO_FRAME)
      break;
    frames[n++] = f;
  }
  if (n == 0) {
    free (heap);
    *pp = p + 1;
    return read_uncached (e, v, ctx, r, p);
  }
  bytes = adaptra_clamp_to_size (p << e->page_shift,
                                 (uint64_t) n << e->page_shift,
                                 v->base + v->size);
  adaptra_unlock (e);
  err = adaptra_fetch_then_lock (e, v, ctx, p, frames, n, (uint32_t) bytes, r);
  free (heap);
  if (!err)
    __atomic_fetch_add (&c->backend_bytes, bytes, __ATOMIC_RELAXED);
  *pp = p + n;
  return err;
}

/* The pages from p (up to last, at most a request's) that are, like p,
 * absent from the pool (in_flight false), or held by a read in flight
 * (in_flight true: in the pool, not yet ready).  Lock held.
 */
static uint64_t
run_of (struct adaptra_engine *e, uint64_t p, uint64_t last, bool in_flight)
{
  const uint64_t request_max = ADAPTRA_REQUEST_MAX >> e->page_shift;
  uint64_t n = 1;

  assert_locked (e);
  for (; p + n < last && n < request_max; n++) {
    uint32_t f = adaptra_pool_lookup (&e->pool, p + n);

    if (in_flight ? f == ADAPTRA_NO_FRAME ||
        adaptra_pool_page (&e->pool, f)->state == ADAPTRA_PAGE_READY
        : f != ADAPTRA_NO_FRAME)
      break;
  }
  return n;
}

/* A volume that stepped aside, or a miss of a client that reads ahead
 * itself that its volume does not keep: read the bytes the request
 * wants of the run of absent pages from *pp (up to last) straight from
 * the backend into the client's buffer, caching nothing; advance *pp
 * past the run.  Lock held on entry and exit, dropped for the read.
 */
static int
read_direct (struct adaptra_engine *e, struct adaptra_client *c, void *ctx,
             const struct adaptra_request *r, uint64_t *pp, uint64_t last)
{
  uint64_t p = *pp, n = run_of (e, p, last, false);
  int err;

  adaptra_unlock (e);
  err = adaptra_read_aside (e, c, ctx, r, p, n);
  adaptra_lock (e);
  *pp = p + n;
  return err;
}

/* new_access (below) for pages of no stream: client c's own last
 * page.  Is the touch of pages first to last (in order, one reader,
 * one request; first == last for one page) a new access at first?
 * The pages after first are each new (a request's pages differ), so
 * a request costs one atomic exchange, which remembers last; the hit
 * path calls it without the lock.
 */
static bool
client_new_access (struct adaptra_client *c, uint64_t first, uint64_t last)
{
  return __atomic_exchange_n (&c->touched, last + 1, __ATOMIC_RELAXED) !=
    first + 1;
}

/* The same for pages of stream s read by client: the stream's last
 * page and reader.
 */
static bool
stream_new_access (struct adaptra_stream *s, int client, uint64_t first,
                   uint64_t last)
{
  return atomic_exchange_explicit (&s->touched,
                                   adaptra_stream_touch_key (client, last),
                                   memory_order_relaxed) !=
    adaptra_stream_touch_key (client, first);
}

/* The new accesses of one request's pages, counted as they are
 * touched and added to the shared counters once per request
 * (count_touches): read-ahead pages read for the first time, by the
 * method that read them ahead, in all and of the request's stream,
 * and pages read again (depth.h: adaptra_keep).
 */
struct touches {
  uint64_t hits[ADAPTRA_METHOD_COUNT];
  uint64_t all_hits, stream_hits;
  uint64_t rereads;
};

/* A new access (new_access) to the READY page in frame f, pinned, of
 * the request's stream if of_stream: touch it, and tally a read-ahead
 * page's first read as a hit, any other as a read again.  Lock held
 * or not.
 */
static void
tally_touch (struct adaptra_engine *e, struct touches *t, bool of_stream,
             uint32_t f)
{
  if (adaptra_pool_touch (&e->pool, f)) {
    t->hits[adaptra_pool_page (&e->pool, f)->method]++;
    t->all_hits++;
    t->stream_hits += of_stream;
  }
  else
    t->rereads++;
}

/* Add tally t to client c's counters, the stream s's (NULL: none
 * lives) and this thread's shard.  Lock held or not: the counters are
 * atomic.
 */
static void
count_touches (struct adaptra_engine *e, struct adaptra_client *c,
               struct adaptra_stream *s, const struct touches *t)
{
  struct adaptra_stats *st;
  unsigned m;

  if (t->all_hits) {
    st = adaptra_stats_here (e);
    for (m = 0; m < ADAPTRA_METHOD_COUNT; m++)
      if (t->hits[m])
        adaptra_stats_count_hits (st, m, t->hits[m]);
    __atomic_fetch_add (&c->readahead_hits, t->all_hits, __ATOMIC_RELAXED);
  }
  if (s && t->stream_hits)
    atomic_fetch_add_explicit (&s->hits, t->stream_hits,
                               memory_order_relaxed);
  if (t->rereads)
    __atomic_fetch_add (&c->rereads, t->rereads << e->page_shift,
                        __ATOMIC_RELAXED);
}

/* Successive touches of one page by one reader are one access, as the
 * seed counts a page accessed only when prev_index != index.  A scan
 * in 512-byte reads touches each 4 KiB page 8 times; counted as 8
 * accesses, the second would flag the page for activation, and the
 * scan would fill the active list (half the pool) and push the hot
 * pages out.  The reader is the page's stream, while it lives, with
 * the client that read it (so scans interleaved on one connection each
 * keep their own last page, and two clients reading one page make two
 * accesses); else the client.  A page read, another page, then the
 * first again is a second access: that is reuse.
 *
 * Returns true if this touch of page p (of stream id) by client is not
 * the same access as the one before, and remembers it either way.
 */
static bool
new_access (struct adaptra_engine *e, int client, uint64_t id, uint64_t p)
{
  struct adaptra_stream *s = adaptra_streams_get (&e->streams, id);
  struct adaptra_client *c;

  assert_locked (e);
  if (s)
    return stream_new_access (s, client, p, p);
  if ((c = adaptra_client_of (e, client)) == NULL)
    return true;
  return client_new_access (c, p, p);
}

/* Pin and account the READY pages from *pp on (at most PIN_BATCH), copy
 * them out without the lock, unpin them.  Lock held on entry and exit,
 * dropped for the copy.
 */
static void
copy_ready (struct adaptra_engine *e, int client,
            const struct adaptra_request *r, uint64_t *pp, uint64_t last)
{
  struct adaptra_client *c = adaptra_client_of (e, client);
  const struct adaptra_page *page;
  uint32_t batch[PIN_BATCH];
  uint64_t p = *pp;
  uint32_t n = 0, i, f;

  assert_locked (e);
  while (p + n < last && n < PIN_BATCH &&
         (f = adaptra_pool_lookup (&e->pool, p + n)) != ADAPTRA_NO_FRAME &&
         (page = adaptra_pool_page (&e->pool, f))->state ==
         ADAPTRA_PAGE_READY) {
    adaptra_pool_pin (&e->pool, f);
    if (new_access (e, client, page->stream_id, p + n)) {
      struct adaptra_stream *s = adaptra_streams_get (&e->streams,
                                                      page->stream_id);
      struct touches t = { .all_hits = 0 };

      tally_touch (e, &t, s != NULL, f);
      count_touches (e, c, s, &t);
    }
    batch[n++] = f;
  }
  adaptra_unlock (e);
  for (i = 0; adaptra_pool_has_data (&e->pool) && i < n; i++)
    adaptra_copy_out (r, p + i, e->page_shift,
                      adaptra_pool_data (&e->pool, batch[i]));
  adaptra_lock (e);
  for (i = adaptra_pool_unpin (&e->pool, batch, n); i-- > 0; )
    adaptra_pool_release (&e->pool, batch[i]);
  *pp = p + n;
}

/* Release the hit pins of frames[0..n) (ADAPTRA_NO_FRAME: none)
 * without the engine lock, taking it only to free the frames whose
 * last pin this was after a write dropped them.  Reorders frames.
 */
static void
unpin_hits (struct adaptra_engine *e, uint32_t *frames, uint32_t n)
{
  uint32_t stale = adaptra_pool_unpin (&e->pool, frames, n);

  assert_unlocked (e);
  if (stale == 0)
    return;
  adaptra_lock (e);
  while (stale-- > 0)
    adaptra_pool_release (&e->pool, frames[stale]);
  adaptra_unlock (e);
}

/* Count a read of count bytes by client c.  Lock held or not. */
static void
count_request (struct adaptra_client *c, uint32_t count)
{
  __atomic_fetch_add (&c->requests, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add (&c->bytes, count, __ATOMIC_RELAXED);
}

/* May the hit path serve this page it pinned alone?  One without a
 * look-ahead mark (so no decision), of no stream or of the request's
 * stream *stream (set here from the first page that has one): a
 * request of pages of two streams takes the lock, which advances one.
 */
static bool
hit_alone (const struct adaptra_page *page, uint64_t *stream)
{
  if (page->flags & ADAPTRA_PG_MARK)
    return false;
  if (page->stream_id == 0)
    return true;
  if (*stream == 0)
    *stream = page->stream_id;
  return page->stream_id == *stream;
}

/* *x = max (*x, v) if up, else min (*x, v), atomically. */
static void
extend_to (_Atomic uint64_t *x, uint64_t v, bool up)
{
  uint64_t old = atomic_load_explicit (x, memory_order_relaxed);

  while ((up ? v > old : v < old) &&
         !atomic_compare_exchange_weak_explicit (x, &old, v,
                                                 memory_order_relaxed,
                                                 memory_order_relaxed))
    ;
}

/* Would a read of pages span of live stream s leave its expected page
 * where it is (within ADAPTRA_STREAM_LAG)?  Lock not needed.
 */
static bool
within_lag (const struct adaptra_stream *s, struct adaptra_span span)
{
  uint64_t next = atomic_load_explicit (&s->next, memory_order_relaxed);

  return span.first + ADAPTRA_STREAM_LAG >= next &&
    span.last <= next + ADAPTRA_STREAM_LAG;
}

/* The read path without the engine lock (step 0 of the note above,
 * which says why it is safe), for the requests that need no read-ahead
 * decision: every page the request wants is either READY and without a
 * look-ahead mark (hit_alone), or, if its volume stepped aside, absent
 * (read straight from the backend, caching nothing); and if its pages
 * are a live stream's, the read is within ADAPTRA_STREAM_LAG of the
 * stream's expected page, which the locked path would move by less
 * than that.  Such a request needs only pins, the client's counters,
 * the touch, a first touch's read-ahead hit, the stream's read time
 * and last touch, the copies and the direct reads.  Anything else, or
 * a request of more than PIN_BATCH pages, returns false with nothing
 * counted or pinned, for the locked path.  Lock not held.
 */
static bool
read_unlocked (struct adaptra_engine *e, int client, void *ctx, void *buf,
               uint32_t count, uint64_t offset, int *err)
{
  struct adaptra_client *c = adaptra_client_of (e, client);
  struct adaptra_request r = { .buf = buf, .count = count };
  struct adaptra_stream *s = NULL;      /* the request's stream */
  struct touches t = { .all_hits = 0 };
  const struct adaptra_volume *v;
  struct adaptra_span span;
  struct adaptra_stats *st;
  uint32_t batch[PIN_BATCH];
  /* The first and last of the request's present pages that are its
   * stream's, and of those that are not (n: none).
   */
  uint32_t first_s, last_s = 0, first_c, last_c = 0;
  bool new_s = false, new_c = false;
  uint64_t stream = 0;
  uint32_t n, got, i, run;
  bool aside;

  assert_unlocked (e);
  if (!c)
    return false;
  v = c->volume;
  if (offset > v->size || count > v->size - offset)
    return false;
  aside = __atomic_load_n (&v->bypass, __ATOMIC_RELAXED);
  r.offset = v->base + offset;
  span = adaptra_span_of (r.offset, count, e->page_shift);
  if (span.last - span.first > PIN_BATCH)
    return false;
  n = (uint32_t) (span.last - span.first);
  got = adaptra_pool_pin_hits (&e->pool, span.first, n, batch, !aside);
  for (i = 0; i < got; i++)
    if (batch[i] != ADAPTRA_NO_FRAME &&
        !hit_alone (adaptra_pool_page (&e->pool, batch[i]), &stream))
      break;
  if (got < n || i < got ||
      (stream && (s = adaptra_streams_get (&e->streams, stream)) != NULL &&
       !within_lag (s, span))) {
    unpin_hits (e, batch, got);
    return false;
  }
  st = adaptra_stats_here (e);
  adaptra_stat_add (&st->client_requests, 1);
  adaptra_stat_add (&st->client_bytes, count);
  if (aside)
    adaptra_stat_add (&st->bypass_requests, 1);
  count_request (c, count);

  /* Which pages are new accesses: one exchange per reader (above). */
  first_s = first_c = n;
  for (i = 0; i < n; i++) {
    if (batch[i] == ADAPTRA_NO_FRAME)
      continue;
    if (s && adaptra_pool_page (&e->pool, batch[i])->stream_id == stream) {
      first_s = first_s < n ? first_s : i;
      last_s = i;
    }
    else {
      first_c = first_c < n ? first_c : i;
      last_c = i;
    }
  }
  if (first_s < n)
    new_s = stream_new_access (s, client, span.first + first_s,
                               span.first + last_s);
  if (first_c < n)
    new_c = client_new_access (c, span.first + first_c, span.first + last_c);

  /* Touch every page before copying any: a touch is an atomic
   * read-modify-write, which waits for the stores before it, and after
   * each copy it would wait for the whole page's.
   */
  for (i = 0; i < n; i++)
    if (batch[i] != ADAPTRA_NO_FRAME &&
        (i == first_s ? new_s : i == first_c ? new_c : true))
      tally_touch (e, &t, s && adaptra_pool_page (&e->pool, batch[i])
                   ->stream_id == stream, batch[i]);
  count_touches (e, c, s, &t);
  *err = 0;
  for (i = 0; i < n; i += run) {
    run = 1;
    if (batch[i] == ADAPTRA_NO_FRAME) {
      while (i + run < n && batch[i + run] == ADAPTRA_NO_FRAME)
        run++;
      if (!*err)
        *err = adaptra_read_aside (e, c, ctx, &r, span.first + i, run);
    }
    else if (adaptra_pool_has_data (&e->pool))
      adaptra_copy_out (&r, span.first + i, e->page_shift,
                        adaptra_pool_data (&e->pool, batch[i]));
  }
  if (s) {
    atomic_store_explicit (&s->atime_ns, adaptra_now (e),
                           memory_order_relaxed);
    extend_to (&s->lockless_low, span.first, false);
    extend_to (&s->lockless_high, span.last, true);
  }
  unpin_hits (e, batch, n);
  return true;
}

/* Step 1 of the read path: the request's one read-ahead decision.
 * Returns the stream id that pages read on demand should carry.  Lock
 * held.
 */
static uint64_t
decide (struct adaptra_engine *e, int client, struct adaptra_volume *v,
        struct adaptra_span span)
{
  uint32_t mark = ADAPTRA_NO_FRAME;
  uint64_t seen_stream = 0;
  struct adaptra_stream *s;
  uint64_t p;

  assert_locked (e);
  for (p = span.first; p < span.last; p++) {
    uint32_t f = adaptra_pool_lookup (&e->pool, p);

    if (f == ADAPTRA_NO_FRAME)
      return adaptra_readahead_miss (e, v, client, span.first, span.last, p);
    if (!seen_stream)
      seen_stream = adaptra_pool_page (&e->pool, f)->stream_id;
    if (mark == ADAPTRA_NO_FRAME && adaptra_pool_take_mark (&e->pool, f))
      mark = f;
  }
  if (mark != ADAPTRA_NO_FRAME) {
    adaptra_readahead_mark (e, v, client, span.first, span.last, mark);
    return 0;
  }
  s = adaptra_streams_get (&e->streams, seen_stream);
  if (s)
    adaptra_streams_advance (&e->streams, s, span.first, span.last,
                             adaptra_now (e));
  return 0;
}

/* Volume v of engine e, for rereads_total. */
struct engine_volume {
  struct adaptra_engine *e;
  const struct adaptra_volume *v;
};

/* The bytes volume ev->v's clients, open and closed, read again from
 * the pool (depth.h: adaptra_keep).  Lock held.
 */
static uint64_t
rereads_total (void *opaque)
{
  const struct engine_volume *ev = opaque;
  uint64_t total = ev->v->rereads;
  size_t i;

  for (i = 0; i < ev->e->nclients; i++) {
    const struct adaptra_client *c = adaptra_client_at (ev->e, i);

    if (c->used && c->volume == ev->v)
      total += __atomic_load_n (&c->rereads, __ATOMIC_RELAXED);
  }
  return total;
}

/* Keep a miss run of a client of volume v that reads ahead itself in
 * the pool (depth.h: adaptra_keep)?  Lock held.
 */
static bool
keep_deep_miss (struct adaptra_engine *e, struct adaptra_volume *v)
{
  struct engine_volume ev = { e, v };

  return adaptra_keep_miss (&v->keep, rereads_total, &ev);
}

/* Does client c read ahead itself, as much as read-ahead would for
 * it (depth.h)?  Its reads in flight of one run must reach the
 * backend's bandwidth-delay product (the model's bdp, model.h), at
 * least ADAPTRA_AUTO_MAX_FLOOR (the seed's read-ahead maximum, which
 * also stands in while the product is not known: a deep client's
 * first requests, the ones that show its queue, come before any read
 * has completed), and at most the largest window a stream gets now.
 * Lock held.
 */
static bool
reads_ahead_itself (struct adaptra_engine *e, struct adaptra_client *c)
{
  struct adaptra_model_estimate est;
  uint64_t window = adaptra_readahead_max_pages (e) << e->page_shift;

  adaptra_model_estimate (&e->model, adaptra_now (e), &est);
  return adaptra_depth_reads_ahead (&c->depth,
                                    min_u64 (window,
                                             max_u64 (est.bdp,
                                                      ADAPTRA_AUTO_MAX_FLOOR)));
}

/* adaptra_read when the lockless path could not serve it: between
 * the client's depth counts.
 */
static int
read_locked (struct adaptra_engine *e, int client, void *ctx, void *buf,
             uint32_t count, uint64_t offset)
{
  struct adaptra_request r = { .buf = buf, .count = count };
  struct adaptra_span span;
  struct adaptra_client *c;
  struct adaptra_volume *v;
  struct adaptra_stats *st;
  uint64_t stream_id = 0;
  bool blocked = false, hedged = false, bypass, deep = false;
  uint64_t p, from, deadline = UINT64_MAX, waits_at = UINT64_MAX;
  int err = 0;

  adaptra_lock (e);
  c = adaptra_client_of (e, client);
  if (!c || offset > c->volume->size || count > c->volume->size - offset) {
    adaptra_unlock (e);
    return EINVAL;
  }
  v = c->volume;
  r.offset = v->base + offset;
  st = adaptra_stats_here (e);
  adaptra_stat_add (&st->client_requests, 1);
  adaptra_stat_add (&st->client_bytes, count);
  count_request (c, count);
  adaptra_streams_reap_one (&e->streams, adaptra_now (e));

  span = adaptra_span_of (r.offset, count, e->page_shift);
  /* A volume that stepped aside makes no decision and caches no miss;
   * what the pool holds of it is still served.
   */
  bypass = adaptra_steps_aside (e, v);
  /* A client that reads ahead itself gets no decision either:
   * read-ahead adds no window.  Its misses are kept as any other's
   * while the volume's clients read pages again, so that they find
   * them: when 16 guests boot one image at once, each reading ahead
   * itself, a miss read straight into one guest's buffer was read
   * again from the backend for the next (5% of the boot's bytes,
   * scripts/bench/fleet).  Else, as a copy that reads every byte once,
   * they go straight into its buffer (depth.h: adaptra_keep).
   */
  if (bypass)
    adaptra_stat_add (&st->bypass_requests, 1);
  else if (!(deep = reads_ahead_itself (e, c)))
    stream_id = decide (e, client, v, span);

  p = span.first;
  while (p < span.last && !err) {
    uint32_t f = adaptra_pool_lookup (&e->pool, p);

    if (f == ADAPTRA_NO_FRAME &&
        (bypass || (deep && !keep_deep_miss (e, v))))
      err = read_direct (e, c, ctx, &r, &p, span.last);
    else if (f == ADAPTRA_NO_FRAME) {
      from = p;
      err = read_run (e, c, ctx, stream_id, &r, &p, span.last);
      /* adaptra_fetch_then_lock touched the pages it read for the client. */
      if (!err)
        new_access (e, client, stream_id, p - 1);
      if (!err && deep)
        adaptra_keep_kept (&v->keep, (p - from) << e->page_shift);
    }
    else if (adaptra_pool_page (&e->pool, f)->state == ADAPTRA_PAGE_READY)
      copy_ready (e, client, &r, &p, span.last);
    else {
      if (!blocked) {
        struct adaptra_stream *s =
          adaptra_streams_get (&e->streams,
                               adaptra_pool_page (&e->pool, f)->stream_id);

        adaptra_stat_add (&st->io_block, 1);
        if (s)
          s->late++;
        blocked = true;
      }
      if (adaptra_prefetch_steal (e, p, span.last, ctx))
        continue;
      if (p != waits_at) {
        waits_at = p;
        deadline = adaptra_hedge_deadline (e, v, p, span.last);
      }
      if (adaptra_now (e) < deadline)
        adaptra_wait (e, adaptra_wait_queue (e, p), deadline);
      else {
        uint64_t n = run_of (e, p, span.last, true);
        bool now_hedged;

        err = adaptra_read_hedged (e, c, ctx, &r, p, n, &now_hedged);
        if (now_hedged && !hedged)
          adaptra_stat_add (&st->io_hedge, 1);
        hedged |= now_hedged;
        if (now_hedged)
          p += n;
        else {
          adaptra_stat_add (&st->io_hedge_refused, 1);
          deadline = UINT64_MAX;  /* no credit: wait for the job */
        }
      }
    }
  }
  adaptra_unlock (e);
  return err;
}

int
adaptra_read (struct adaptra_engine *e, int client, void *ctx, void *buf,
              uint32_t count, uint64_t offset)
{
  struct adaptra_client *c;
  int err = 0;

  if (count == 0 || read_unlocked (e, client, ctx, buf, count, offset, &err))
    return err;
  /* Only reads that take the lock count in the client's depth: a
   * lockless hit is done in microseconds, and would cost every hit
   * the atomics; a deep client's queue shows in the reads that wait
   * (depth.h).
   */
  c = adaptra_client_of (e, client);
  if (c)
    adaptra_depth_enter (&c->depth, offset, count);
  err = read_locked (e, client, ctx, buf, count, offset);
  if (c)
    adaptra_depth_leave (&c->depth, count);
  return err;
}

void
adaptra_cache_hint (struct adaptra_engine *e, int client, uint64_t offset,
                    uint64_t count)
{
  struct adaptra_client *c;
  struct adaptra_span span;
  uint64_t spare;

  adaptra_stat_add (&e->stats.cache_hints, 1);
  adaptra_lock (e);
  c = adaptra_client_of (e, client);
  /* A volume that stepped aside has nothing to gain from a prefetch. */
  count = c && !c->volume->bypass
    ? adaptra_clamp_to_size (offset, count, c->volume->size) : 0;
  if (count > 0 && !adaptra_prefetch_congested (e, c->volume)) {
    span = adaptra_span_of (c->volume->base + offset, count, e->page_shift);
    spare = adaptra_pool_spare (&e->pool);
    if (span.last - span.first > spare)
      span.last = span.first + spare;
    adaptra_prefetch_dispatch (e, c->volume, span.first, span.last,
                               UINT64_MAX, 0, ADAPTRA_METHOD_NONE, 0);
  }
  else if (count > 0)
    adaptra_stat_add (&e->stats.io_congestion, 1);
  adaptra_unlock (e);
}

uint64_t
adaptra_cache_room (struct adaptra_engine *e, int client)
{
  struct adaptra_client *c;
  uint64_t room = 0;

  adaptra_lock (e);
  c = adaptra_client_of (e, client);
  if (c && !c->volume->bypass && !adaptra_prefetch_congested (e, c->volume))
    room = adaptra_pool_spare (&e->pool) << e->page_shift;
  adaptra_unlock (e);
  return room;
}

bool
adaptra_lend (struct adaptra_engine *e, uint64_t bytes)
{
  bool ok;

  adaptra_lock (e);
  ok = adaptra_pool_lend (&e->pool, bytes);
  adaptra_unlock (e);
  return ok;
}

void
adaptra_take_back (struct adaptra_engine *e, uint64_t bytes)
{
  adaptra_lock (e);
  adaptra_pool_take_back (&e->pool, bytes);
  adaptra_unlock (e);
}
