/* prefetch.c: the job queue, the workers and the backend read.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Prefetch: the job queue, the workers and the one backend read path.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §6.
 *
 * A read-ahead window becomes jobs at once, under the engine lock: its
 * absent pages are inserted IN_FLIGHT, each run of consecutive pages
 * becomes jobs, one per worker or, while it competes with other
 * streams, of at most a chunk (below), in page order, queued in fair
 * order (below).  Inserting before reading is what
 * de-duplicates: any later reader or window finds the pages present,
 * so the same page is never fetched twice concurrently, and a reader
 * that needs one waits for it instead of reading it again.
 *
 *   window --dispatch--> [IN_FLIGHT pages] + chunks --fair queue--> worker
 *                                                  \              |
 *                         reader needing a page ----+ steal       | pread
 *                                                                 v
 *                            complete: READY, or discarded if STALE
 *
 * Workers are pthreads with their own backend context each (a plugin
 * that serialises requests gets one request per context, so more
 * workers mean more parallel requests).  Workers for hints only
 * (adaptra-profile-workers, after the adaptra-workers ones) take only
 * cache hints' jobs, which is how boot profiles prefetch: a profile's
 * short, scattered extents need many reads at once to hide the
 * backend's latency, where streams' windows fill its bandwidth with a
 * few large ones (may_run).  Demand reads never queue:
 * the client's thread reads its own misses, and a reader that needs a
 * page of a job still queued takes the part of that job it wants
 * (up to the end of its request) and runs it itself, so a demand read
 * never waits behind prefetch.  Prefetch in turn yields: no new window
 * starts while queued and running prefetch exceeds the congestion
 * limit.
 *
 * Fair tails.  When the backend's bandwidth, not its latency, limits
 * many streams, each reader catches up with its own read-ahead and
 * waits for pages in flight; what it waits for is the job holding
 * them.  A window used to go out as one job per worker (a 2 MiB window,
 * four 512 KiB reads), queued FIFO, and a reader that stole one ran
 * all of it.  On the benchmark's W2 (16 streams, remote model: 5 ms a
 * read, 200 MiB/s) the clients' p99 was 35 to 40 ms against 7 to 9 ms
 * without the filter (docs/bench/fair-tails.md).  So, four changes,
 * after which it is 15 ms at the same 198 MiB/s:
 *
 *   - Chunks: while other streams' prefetch is queued, no job is
 *     larger than a sixteenth of the backend's bandwidth-delay product
 *     (chunk_bytes: 64 KiB on the remote model), issued in page
 *     order, so a window's pages become ready front first while its
 *     tail is still on the way.  A window that competes with nothing
 *     is still split per worker only: in 1 MiB chunks W1 (one stream)
 *     lost 4% of its 200 MiB/s (median of 11 runs, up to 13%).
 *   - Start-time fair queueing (Goyal, Vin and Cheng, SIGCOMM 1996)
 *     across streams: a job's start tag is the finish tag (start +
 *     bytes) of its stream's last queued job, or the virtual time (the
 *     tag of the last job a worker took) if none is queued; the queue
 *     is kept in tag order.  A stream's chunks stay in order, and a
 *     stream with a huge window queued takes its share, not the
 *     backend: another stream's next chunk goes ahead of the rest of
 *     the huge window.
 *   - A reader steals only what it waits for: the pages of the queued
 *     job up to the end of its request.  Its wait is one small backend
 *     read, as without the filter; the rest of the job, if at least
 *     ADAPTRA_JOB_MIN (split), stays in its place for a worker.
 *   - The flight limit (flight.h): workers start a job only while the
 *     bytes being read are under 5/4 of the measured bandwidth-delay
 *     product, so the link holds about ten chunks, not everything
 *     the workers took; the rest waits here, where a reader steals
 *     what it needs.  Without it W2's reads took 25 ms instead of 5.
 *
 * Rounds in page order.  Fair order interleaves streams, and on a
 * backend that seeks (the benchmark's disk model: one head, 0.5-8 ms a
 * seek, nothing when a read continues the previous one) every switch
 * costs a seek: 8 streams interleaved on one connection (W3) fell from
 * 105 to 67 MiB/s when the fair queue came in.  So the queue is in
 * rounds of ROUND_BYTES of start tag, and within a round in page order
 * (a stream's own jobs keep their order), as an elevator sweeps: the
 * streams are visited across the disk in one direction, and a stream's
 * parts in a round follow each other without a seek.  W3 on the disk
 * model: 70 MiB/s in strict tag order, 88 with 1 MiB rounds, 96 with
 * 4 MiB (two 15 s runs each, side by side).  A queued job waits at most
 * one round longer than in tag order (a reader that needs a queued
 * page steals it anyway): on the remote model W2's p99 went from 33 to
 * 38 ms at the same 200 MiB/s ("Rounds in page order" in
 * docs/bench/beside-the-matrix.md).
 *
 * A failed prefetch drops its pages; readers waiting for them wake,
 * find them absent and read them themselves, so the error reaches no
 * client.  A write that lands while a job is reading flags the job's
 * pages STALE (pool.c), and the completion discards them.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "range.h"
#include "engine-impl.h"

/* The smallest and largest chunk a window is split into (chunk_bytes). */
#define CHUNK_MIN (64 * 1024)
#define CHUNK_MAX (1024 * 1024)

/* The fair queue's round, in bytes of start tag: within a round, jobs
 * go in page order (above).
 */
#define ROUND_BYTES (4 * CHUNK_MAX)

/* Add (or take, with a negative n) n bytes to the prefetch in flight of
 * v and of the engine.
 */
static void
add_flight (struct adaptra_engine *e, struct adaptra_volume *v, int64_t n)
{
  if (v->flight_bytes == 0 && n > 0)
    e->volumes_in_flight++;
  v->flight_bytes += n;
  e->flight_bytes += n;
  if (v->flight_bytes == 0 && n < 0)
    e->volumes_in_flight--;
}

/* The stream table's entry for a job of stream, whose queued_last and
 * queued_jobs index the queue; NULL for stream 0 (cache hints and
 * profiles) and for a stream that has left the table, whose last job
 * the queue's own index finds (last_of).  With 10000 streams a walk of
 * the queue on every enqueue held the lock for 105 us a read-ahead
 * decision (docs/bench/simulator.md).
 */
static struct adaptra_stream *
indexed_stream (struct adaptra_engine *e, uint64_t stream)
{
  return stream ? adaptra_streams_get (&e->streams, stream) : NULL;
}

/* The last queued job of stream (NULL: none), by the index of each
 * stream's last job.
 */
static struct adaptra_job *
last_of (const struct adaptra_engine *e, uint64_t stream)
{
  struct treap_node *n = treap_floor (&e->queue_streams, stream, 0);

  return n && n->major == stream
    ? treap_entry (n, struct adaptra_job, by_stream) : NULL;
}

/* The last queued job of stream, whose table entry is s (NULL: not
 * indexed), or NULL if none is queued.  Lock held.
 */
static struct adaptra_job *
stream_last (struct adaptra_engine *e, const struct adaptra_stream *s,
             uint64_t stream)
{
  if (s)
    return s->queued_jobs > 0 ? s->queued_last : NULL;
  return last_of (e, stream);
}

/* Does job a go before job b of another stream?  By round (ROUND_BYTES
 * of start tag), then by page within a round (above).
 */
static uint64_t
round_of (const struct adaptra_job *job)
{
  return job->tag / ROUND_BYTES;
}

static bool
goes_before (const struct adaptra_job *a, const struct adaptra_job *b)
{
  uint64_t round_a = round_of (a), round_b = round_of (b);

  return round_a != round_b ? round_a < round_b : a->first < b->first;
}

/* The queue's indexes.  A walk of the queue costs its length, which
 * grows with the streams (tens of thousands of jobs with 100,000
 * streams, where the walks were 90% of adaptra-sim's time), so the
 * jobs are also indexed: by first page (the job holding a page), by
 * fair order (where a job goes), and each stream's last job, with its
 * stream's jobs linked in queue order so that the next last is at hand
 * when the last leaves.  They answer what the walks would; a job's
 * tag, first page and stream never change while it is queued.
 */

/* Are neighbours a and b (NULL: none) out of fair order?  A stream's
 * jobs follow its last, and cache hints (stream 0) are scattered, so
 * the queue is not always in fair order; queue_unordered counts these
 * pairs, and enqueue trusts the order index only when there are none.
 */
static size_t
unordered (const struct adaptra_job *a, const struct adaptra_job *b)
{
  return a && b && !goes_before (a, b);
}

/* Link job into the queue after prev (NULL: at the head), and among
 * its stream's jobs after before (NULL: none), and index it.
 */
static void
link_after (struct adaptra_engine *e, struct adaptra_job *prev,
            struct adaptra_job *before, struct adaptra_job *job)
{
  struct adaptra_job *next = prev ? prev->next : e->queue_head;

  e->queue_unordered = e->queue_unordered + unordered (prev, job) +
    unordered (job, next) - unordered (prev, next);
  job->prev = prev;
  job->next = next;
  if (prev)
    prev->next = job;
  else
    e->queue_head = job;
  if (next)
    next->prev = job;
  else
    e->queue_tail = job;
  treap_insert (&e->queue_pages, &job->by_page, 0, job->first);
  treap_insert (&e->queue_order, &job->by_order, round_of (job), job->first);
  job->stream_prev = before;
  job->stream_next = before ? before->stream_next : NULL;
  if (before)
    before->stream_next = job;
  if (job->stream_next)
    job->stream_next->stream_prev = job;
  else {
    if (before)
      treap_remove (&e->queue_streams, &before->by_stream);
    treap_insert (&e->queue_streams, &job->by_stream, job->stream, 0);
  }
}

/* Take job out of the queue and its indexes. */
static void
unlink_job (struct adaptra_engine *e, struct adaptra_job *job)
{
  struct adaptra_job *prev = job->prev, *next = job->next;

  e->queue_unordered = e->queue_unordered + unordered (prev, next) -
    unordered (prev, job) - unordered (job, next);
  if (prev)
    prev->next = next;
  else
    e->queue_head = next;
  if (next)
    next->prev = prev;
  else
    e->queue_tail = prev;
  treap_remove (&e->queue_pages, &job->by_page);
  treap_remove (&e->queue_order, &job->by_order);
  if (job->stream_prev)
    job->stream_prev->stream_next = job->stream_next;
  if (job->stream_next)
    job->stream_next->stream_prev = job->stream_prev;
  else {
    treap_remove (&e->queue_streams, &job->by_stream);
    if (job->stream_prev)
      treap_insert (&e->queue_streams, &job->stream_prev->by_stream,
                    job->stream, 0);
  }
}

/* Where a walk from last (NULL: the head) puts job, in a queue in fair
 * order: behind last if job goes before last (every job after last
 * goes after it), else before the first job it goes before.
 */
static struct adaptra_job *
in_order (struct adaptra_engine *e, struct adaptra_job *last,
          const struct adaptra_job *job)
{
  struct treap_node *n;

  if (last && goes_before (job, last))
    return last;
  n = treap_ceil (&e->queue_order, round_of (job), job->first);
  return n ? treap_entry (n, struct adaptra_job, by_order)->prev
    : e->queue_tail;
}

/* Queue job in fair order: behind its stream's queued jobs, with the
 * start tag that follows them (start-time fair queueing, above), and
 * then behind every job that it does not go before.
 */
static void
enqueue (struct adaptra_engine *e, struct adaptra_job *job)
{
  struct adaptra_volume *v = job->volume;
  uint64_t bytes = (uint64_t) job->npages << e->page_shift;
  struct adaptra_stream *s = indexed_stream (e, job->stream);
  struct adaptra_job *last = stream_last (e, s, job->stream);
  struct adaptra_job *prev = last;
  struct adaptra_job **at = last ? &last->next : &e->queue_head;
  uint64_t finish = last ? last->tag + last->bytes : 0;

  job->bytes = (uint32_t) adaptra_clamp_to_size (job->first << e->page_shift,
                                                 bytes, v->base + v->size);
  job->tag = finish > e->queue_vtime ? finish : e->queue_vtime;
  assert (last == last_of (e, job->stream));
  if (e->queue_tail && !goes_before (job, e->queue_tail))
    prev = e->queue_tail;
  else if (e->queue_unordered == 0)
    prev = in_order (e, last, job);
  else
    while (*at && !goes_before (job, *at)) {
      prev = *at;
      at = &prev->next;
    }
  link_after (e, prev, last, job);
  if (s) {
    s->queued_last = job;
    s->queued_jobs++;
  }
  e->queued_bytes += bytes;
  add_flight (e, v, (int64_t) bytes);
  pthread_cond_signal (&e->job_queued);
  if (job->stream == 0)
    pthread_cond_signal (&e->hint_queued);
}

static struct adaptra_job *
dequeue (struct adaptra_engine *e, struct adaptra_job *prev,
         struct adaptra_job *job)
{
  struct adaptra_stream *s = indexed_stream (e, job->stream);

  assert (prev == job->prev);
  unlink_job (e, job);
  /* Jobs leave mostly from the front, so the stream's last leaves last;
   * a steal or a dropped queue may take it first, and the index has the
   * new last.
   */
  if (s && s->queued_jobs > 0 && --s->queued_jobs > 0 &&
      s->queued_last == job)
    s->queued_last = last_of (e, job->stream);
  if (job->started_ns == ADAPTRA_NOT_STARTED)
    e->queued_bytes -= (uint64_t) job->npages << e->page_shift;
  return job;
}

/* The largest prefetch job while streams compete, in bytes: a
 * sixteenth of the backend's bandwidth-delay product (flight.h),
 * within [CHUNK_MIN, CHUNK_MAX], rounded down to a power of two; where
 * the workers have no flight limit (not measured yet, or a backend
 * that does not hide latency in parallel reads) the product of bdp.c's
 * fitted line, within [ADAPTRA_JOB_MIN, CHUNK_MAX].  The flight limit
 * keeps about twenty of them in flight, so a reader that catches up
 * with its read-ahead waits for about its own request, as it would
 * without the filter, not for a larger read sharing the link with the
 * others.  A power of two, because a window starts where a request
 * ended, so a client's aligned requests of a power of two up to the
 * chunk each lie in one chunk; an eighth of the remote model's product
 * was about 115 KiB, and a 64 KiB read straddled two chunks half the
 * time, the second often still queued.  On W2 (remote model, 3 runs
 * each, alternating; no filter 9.0 ms): p99 20.3 ms with an eighth,
 * 20.6 ms with a quarter rounded (128 KiB), 12.0 ms with a sixteenth
 * rounded (64 KiB), at 198-200 MiB/s each, 10% more CPU.
 */
static uint64_t
chunk_bytes (const struct adaptra_engine *e,
             const struct adaptra_flight_estimate *est)
{
  uint64_t fit, chunk = est->bdp / 16;

  if (est->limit == UINT64_MAX) {
    fit = adaptra_bdp_bytes (&e->bdp);
    return fit < ADAPTRA_JOB_MIN ? ADAPTRA_JOB_MIN
      : fit < CHUNK_MAX ? fit : CHUNK_MAX;
  }
  chunk = chunk < CHUNK_MIN ? CHUNK_MIN : chunk < CHUNK_MAX ? chunk : CHUNK_MAX;
  return UINT64_C (1) << (63 - __builtin_clzll (chunk));
}

/* Has a stream other than stream prefetch queued?  (Not counting a
 * job adaptra-sim's workers started, which stays queued until its read
 * completes where a thread's leaves the queue.)  Lock held.
 */
static bool
contended (const struct adaptra_engine *e, uint64_t stream)
{
  const struct adaptra_job *job;

  for (job = e->queue_head; job; job = job->next)
    if (job->stream != stream && job->started_ns == ADAPTRA_NOT_STARTED)
      return true;
  return false;
}

/* How many ways a window is split: one a worker under a flight limit
 * (whose chunks are small anyway while streams compete), else
 * ADAPTRA_UNLIMITED_WORKERS at most, as before the limit.  Without a
 * limit, a slow backend still has every worker reading (flight_open),
 * for many streams' small windows, not for one window in 16 pieces: a
 * curl plugin 2 ms away read a scan's 64 MiB in 258 ranged GETs so,
 * against at most 256 in 4 pieces.  Lock held.
 */
static unsigned
parallel_workers (const struct adaptra_engine *e,
                  const struct adaptra_flight_estimate *est)
{
  if (est->limit != UINT64_MAX)
    return e->nworkers;
  return e->nworkers < ADAPTRA_UNLIMITED_WORKERS ? e->nworkers
    : ADAPTRA_UNLIMITED_WORKERS;
}

/* Pages per job for a window of n pages of stream: split so that every
 * worker that reads at once gets a share and the window arrives in about one backend
 * latency, but not below ADAPTRA_JOB_MIN bytes (a serialising backend
 * prefers fewer, larger requests) nor above ADAPTRA_REQUEST_MAX, or a
 * chunk (chunk_bytes) while other streams' prefetch is queued.
 */
static uint32_t
job_pages (const struct adaptra_engine *e, uint64_t n, uint64_t stream)
{
  struct adaptra_flight_estimate est;
  uint64_t floor = ADAPTRA_JOB_MIN >> e->page_shift;
  uint64_t ceiling, share;
  unsigned ways;

  adaptra_flight_estimate (&e->flight, adaptra_now (e), &est);
  ceiling = (contended (e, stream) ? chunk_bytes (e, &est)
             : ADAPTRA_REQUEST_MAX) >> e->page_shift;
  ways = parallel_workers (e, &est);
  share = ways > 1 ? (n + ways - 1) / ways : n;

  if (share < floor)
    share = floor;
  if (share > ceiling)
    share = ceiling;
  return share > 0 ? (uint32_t) share : 1;
}

/* Queue job if it has pages, else free it.  Returns NULL. */
static struct adaptra_job *
close_job (struct adaptra_engine *e, struct adaptra_job *job)
{
  if (job && job->npages > 0)
    enqueue (e, job);
  else
    free (job);
  return NULL;
}

/* A job's read lands straight in its frames when they are consecutive
 * in the arena, and otherwise in a transfer slot
 * (adaptra_fetch_then_lock).  So a job may grow past a slot only while
 * its frames stay consecutive:
 * a frame elsewhere then starts the next job, and a job that is not
 * consecutive ends at a slot's size.
 */
uint64_t
adaptra_prefetch_dispatch (struct adaptra_engine *e, struct adaptra_volume *v,
                           uint64_t start, uint64_t end, uint64_t mark,
                           uint64_t stream_id, unsigned method, unsigned flags)
{
  uint32_t job_max;
  struct adaptra_job *job = NULL;
  uint32_t room = 0;
  bool consecutive = true;
  uint64_t p, inserted = 0;

  assert_locked (e);
  if (end > v->end_page)
    end = v->end_page;
  if (start >= end)
    return 0;
  job_max = job_pages (e, end - start, stream_id);
  for (p = start; p < end; p++) {
    uint32_t f;

    if (adaptra_pool_lookup (&e->pool, p) != ADAPTRA_NO_FRAME) {
      /* Present already: the run (and its job) ends here. */
      job = close_job (e, job);
      continue;
    }
    f = adaptra_pool_insert (&e->pool, p, stream_id, method,
                             flags | (p == mark ? ADAPTRA_PG_MARK : 0));
    if (f == ADAPTRA_NO_FRAME)
      break;
    if (job && f != job->frames[job->npages - 1] + 1) {
      if (job->npages >= e->slot_pages)
        job = close_job (e, job);
      else
        consecutive = false;
    }
    if (!job) {
      room = end - p < job_max ? (uint32_t) (end - p) : job_max;
      job = malloc (sizeof *job + room * sizeof job->frames[0]);
      if (!job) {
        adaptra_pool_drop (&e->pool, f);
        break;
      }
      job->volume = v;
      job->stream = stream_id;
      job->first = p;
      job->npages = 0;
      job->started_ns = ADAPTRA_NOT_STARTED;
      consecutive = true;
    }
    job->frames[job->npages++] = f;
    inserted++;
    if (job->npages == room || (!consecutive && job->npages == e->slot_pages))
      job = close_job (e, job);
  }
  close_job (e, job);
  return inserted;
}

bool
adaptra_prefetch_congested (const struct adaptra_engine *e,
                            const struct adaptra_volume *v)
{
  /* At least an eighth of the pool, or four maximal windows, may be in
   * flight; never more than half of it, nor (unless four windows need
   * it) more than the backend moves in a second by its measured
   * throughput: more only queues, and every demand read waits behind
   * the queue.  An eighth of an 8G pool is 1 GiB, 5 s of a 200 MiB/s
   * store; with it, adaptra-sim's 10000 streams of 16 KiB/s had a p99
   * read latency of 2 s, with a second's worth 60 ms.
   */
  uint64_t pool = e->cfg.pool_bytes;
  uint64_t four = adaptra_readahead_max_pages (e) << (e->page_shift + 2);
  uint64_t limit = four > pool / 8 ? four : pool / 8;
  uint64_t second = adaptra_bdp_bytes_per_sec (&e->bdp);
  unsigned sharing = e->volumes_in_flight + (v->flight_bytes == 0);

  assert_locked (e);
  if (limit > pool / 2)
    limit = pool / 2;
  if (second > 0 && (second > four ? second : four) < limit)
    limit = second > four ? second : four;
  if (e->flight_bytes <= limit)
    return false;
  /* Over the limit, a volume below its share of it (the limit split
   * between the volumes with prefetch in flight, itself included) may
   * still start a window, so that one export's scan cannot take every
   * window from another export's streams; never past twice the limit
   * nor half the pool.  With one volume this is the plain limit.
   */
  if (e->flight_bytes > 2 * limit || e->flight_bytes > pool / 2)
    return true;
  return v->flight_bytes >= limit / sharing;
}

/* Where a read of n pages from first lands.  Frames consecutive in the
 * arena take it directly (likely: the free list hands frames out in
 * address order, and eviction frees a stream's pages in the order it
 * read them); so does the client's buffer when the client wants every
 * byte read (*in_client).  Anything else goes through a transfer slot
 * (*slot, which the caller puts back).
 */
static unsigned char *
fetch_target (struct adaptra_engine *e, uint64_t first,
              const uint32_t *frames, uint32_t n, uint32_t bytes,
              const struct adaptra_request *demand, void **slot,
              bool *in_client)
{
  uint64_t start = first << e->page_shift;
  uint32_t i;

  *slot = NULL;
  *in_client = false;
  if (!adaptra_pool_has_data (&e->pool))
    return NULL;                /* no data: the backend models the read */
  for (i = 1; i < n && frames[i] == frames[0] + i; i++)
    ;
  if (i == n)
    return adaptra_pool_data (&e->pool, frames[0]);
  if (demand && adaptra_request_covers (demand, start, bytes)) {
    *in_client = true;
    return demand->buf + (start - demand->offset);
  }
  assert (n <= e->slot_pages);
  *slot = adaptra_bounce_get (&e->bounce, (size_t) n << e->page_shift);
  return *slot;
}

/* Fill the frames from buf, where a read of bytes (fewer than n pages
 * at the end of the export) landed; the rest of the last page is
 * zero.  buf may be the frames' own data.
 */
static void
fill_frames (struct adaptra_engine *e, const uint32_t *frames, uint32_t n,
             uint32_t bytes, const unsigned char *buf)
{
  const size_t page = (size_t) 1 << e->page_shift;
  uint32_t i;

  for (i = 0; i < n; i++) {
    unsigned char *data = adaptra_pool_data (&e->pool, frames[i]);
    size_t at = (size_t) i * page;
    size_t have = bytes > at ? bytes - at : 0;

    if (have > page)
      have = page;
    if (data != buf + at)
      memcpy (data, buf + at, have);
    memset (data + have, 0, page - have);
  }
}

int
adaptra_fetch_then_lock (struct adaptra_engine *e, struct adaptra_volume *v,
               void *ctx, uint64_t first, const uint32_t *frames, uint32_t n,
               uint32_t bytes, const struct adaptra_request *demand,
               uint64_t started_ns)
{
  const uint64_t offset = (first << e->page_shift) - v->base;
  void *slot;
  bool in_client;
  unsigned char *buf = fetch_target (e, first, frames, n, bytes, demand,
                                     &slot, &in_client);
  struct adaptra_flight_estimate est;
  uint64_t t0 = 0, t1 = 0;
  uint32_t i;
  int err;

  assert_unlocked (e);
  if (!buf && adaptra_pool_has_data (&e->pool))
    err = ENOMEM;
  else {
    adaptra_flight_start (&e->flight, bytes);
    t0 = started_ns != ADAPTRA_NOT_STARTED ? started_ns : adaptra_now (e);
    err = e->backend.pread (ctx, buf, bytes, offset);
    t1 = adaptra_now (e);
    adaptra_flight_end (&e->flight, bytes);
  }
  if (!err && buf) {
    /* The frames are ours while IN_FLIGHT: fill them without the lock. */
    fill_frames (e, frames, n, bytes, buf);
    if (demand && !in_client)
      for (i = 0; i < n; i++)
        adaptra_copy_out (demand, first + i, e->page_shift,
                          adaptra_pool_data (&e->pool, frames[i]));
  }
  if (slot)
    adaptra_bounce_put (&e->bounce, slot, (size_t) n << e->page_shift);

  adaptra_lock (e);
  adaptra_stat_add (&e->stats.backend_requests, 1);
  if (!err) {
    adaptra_stat_add (&e->stats.backend_bytes, bytes);
    __atomic_fetch_add (&v->backend_bytes, bytes, __ATOMIC_RELAXED);
    adaptra_bdp_sample (&v->bdp, bytes, t1 - t0);
    adaptra_bdp_sample (&e->bdp, bytes, t1 - t0);
    adaptra_flight_sample (&e->flight, bytes, t0, t1);
    for (i = 0; i < n; i++) {
      if (!adaptra_pool_complete (&e->pool, frames[i])) {
        if (!demand)
          adaptra_stat_add (&e->stats.prefetch_stale, 1);
      }
      else if (demand)
        adaptra_pool_touch (&e->pool, frames[i]);
    }
  }
  else {
    adaptra_stat_add (&e->stats.backend_errors, 1);
    if (!demand)
      adaptra_stat_add (&e->stats.prefetch_failed, 1);
    for (i = 0; i < n; i++)
      adaptra_pool_drop (&e->pool, frames[i]);
  }
  if (!demand)
    add_flight (e, v, -(int64_t) ((uint64_t) n << e->page_shift));
  adaptra_wake (e, first, n);
  /* Room in flight again: a worker held back (worker_main) may start;
   * and once the backend's latency is known to be one parallel reads
   * hide, the workers parked until then (they wait only while
   * flight_slow is false, so its turning true is the one wake-up).
   */
  if (e->queue_head)
    pthread_cond_signal (&e->job_queued);
  adaptra_flight_estimate (&e->flight, adaptra_now (e), &est);
  if (est.slow && !e->flight_slow)
    pthread_cond_broadcast (&e->flight_on);
  e->flight_slow = est.slow;
  return err;
}

/* Run a dequeued job of volume v with ctx.  Called without the lock;
 * returns with it held (adaptra_fetch_then_lock).  The volume counts it as running meanwhile,
 * so that adaptra_volume_set_contexts and adaptra_volume_close can
 * wait for it.
 */
static void
run_job_then_lock (struct adaptra_engine *e, void *ctx, struct adaptra_job *job)
{
  struct adaptra_volume *v = job->volume;

  assert_unlocked (e);
  adaptra_fetch_then_lock (e, v, ctx, job->first, job->frames, job->npages,
                           job->bytes, NULL, job->started_ns);
  free (job);
  if (--v->running == 0)
    pthread_cond_broadcast (&e->job_done);
}

/* Take job (after prev in the queue) to run it.  Lock held. */
static struct adaptra_job *
take (struct adaptra_engine *e, struct adaptra_job *prev,
      struct adaptra_job *job)
{
  assert_locked (e);
  dequeue (e, prev, job);
  job->volume->running++;
  return job;
}

/* Take job (after prev) as the queue's next in fair order: virtual
 * time advances to its start tag.  Lock held.
 */
static struct adaptra_job *
take_next (struct adaptra_engine *e, struct adaptra_job *prev,
           struct adaptra_job *job)
{
  assert_locked (e);
  if (job->tag > e->queue_vtime)
    e->queue_vtime = job->tag;
  return take (e, prev, job);
}

/* Keep the first n pages in queued job and queue the rest as a job of
 * its own right behind it, with its tag, if the rest is at least
 * ADAPTRA_JOB_MIN and memory allows; else job stays whole.  A smaller
 * rest would cost a worker one more backend request (a latency: 5 ms
 * on the remote model) to spare the reader at most the transfer of
 * 256 KiB (1.3 ms at 200 MB/s).  Under 10000 streams of 16 KiB/s that
 * catch up with their windows, splitting every steal doubled the
 * backend requests, and the four workers, bound by latency in 20 KiB
 * jobs, fell behind for good: adaptra-sim's hit rate went from 75% to
 * 4% in the first minute.  Lock held.
 */
static void
split (struct adaptra_engine *e, struct adaptra_job *job, uint64_t n)
{
  struct adaptra_job *rest;
  struct adaptra_stream *s;
  uint32_t left;

  assert_locked (e);
  if (n >= job->npages ||
      ((uint64_t) (job->npages - n) << e->page_shift) < ADAPTRA_JOB_MIN)
    return;
  left = job->npages - (uint32_t) n;
  rest = malloc (sizeof *rest + left * sizeof rest->frames[0]);
  if (!rest)
    return;
  *rest = *job;
  rest->first = job->first + n;
  rest->npages = left;
  rest->bytes = job->bytes - (uint32_t) (n << e->page_shift);
  memcpy (rest->frames, job->frames + n, left * sizeof rest->frames[0]);
  job->npages = (uint32_t) n;
  job->bytes = (uint32_t) (n << e->page_shift);
  link_after (e, job, job, rest);
  if ((s = indexed_stream (e, job->stream)) != NULL) {
    s->queued_jobs++;
    if (s->queued_last == job)
      s->queued_last = rest;
  }
}

/* The queued job with the largest first page at or below page, or
 * NULL.  Queued jobs hold disjoint pages, so the job holding page, if
 * any, is this one.  Lock held.
 */
static struct adaptra_job *
queued_at (struct adaptra_engine *e, uint64_t page)
{
  struct treap_node *n = treap_floor (&e->queue_pages, 0, page);

  return n ? treap_entry (n, struct adaptra_job, by_page) : NULL;
}

/* Does job lie in [offset, offset + count) of volume v? */
static bool
within (const struct adaptra_engine *e, const struct adaptra_job *job,
        const struct adaptra_volume *v, uint64_t offset, uint64_t count)
{
  uint64_t from = (job->first << e->page_shift) - v->base;

  return job->volume == v && from >= offset && from - offset < count &&
    job->bytes <= count - (from - offset);
}

/* The first job in queue order that lies in [offset, offset + count)
 * of v, by walking the queue.  Lock held.
 */
static struct adaptra_job *
walk_within (struct adaptra_engine *e, const struct adaptra_volume *v,
             uint64_t offset, uint64_t count)
{
  struct adaptra_job *job;

  for (job = e->queue_head; job; job = job->next)
    if (within (e, job, v, offset, count))
      return job;
  return NULL;
}

/* The same, by the index where the range lies in the volume: it finds
 * the jobs that start in the range, and only if more than one lies
 * there does the queue's order choose, by the walk.  adaptra-sim's
 * workers ask for one job's range, which holds at most what a reader
 * left of that job: with 100,000 streams the walk was most of its
 * time.  Lock held.
 */
static struct adaptra_job *
first_within (struct adaptra_engine *e, const struct adaptra_volume *v,
              uint64_t offset, uint64_t count)
{
  const uint64_t page = UINT64_C (1) << e->page_shift;
  struct adaptra_job *job, *found = NULL;
  struct treap_node *n;
  uint64_t lo, hi;

  if (count > v->size || offset > v->size - count)
    return walk_within (e, v, offset, count);
  lo = (v->base + offset + page - 1) >> e->page_shift;
  hi = (v->base + offset + count + page - 1) >> e->page_shift;
  for (n = treap_ceil (&e->queue_pages, 0, lo); n && n->minor < hi;
       n = treap_ceil (&e->queue_pages, 0, n->minor + 1)) {
    job = treap_entry (n, struct adaptra_job, by_page);
    if (!within (e, job, v, offset, count))
      continue;
    if (found)
      return walk_within (e, v, offset, count);
    found = job;
  }
  return found;
}

bool
adaptra_prefetch_steal (struct adaptra_engine *e, uint64_t page,
                        uint64_t last, void *ctx)
{
  struct adaptra_job *job = queued_at (e, page);

  assert_locked (e);
  /* Page numbers are unique across volumes: the job holding page is
   * of the reader's volume, and the reader's ctx sees its bytes.
   */
  if (!job || page - job->first >= job->npages)
    return false;
  /* The reader runs what it waits for; a worker reads the rest. */
  split (e, job, (last > page ? last : page + 1) - job->first);
  take (e, job->prev, job);
  adaptra_unlock (e);
  run_job_then_lock (e, ctx, job);
  return true;
}

bool
adaptra_prefetch_run_within (struct adaptra_engine *e, int volume,
                             uint64_t offset, uint64_t count, void *ctx)
{
  struct adaptra_volume *v;
  struct adaptra_job *job = NULL;

  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (v)
    job = first_within (e, v, offset, count);
  if (job == NULL) {
    adaptra_unlock (e);
    return false;
  }
  take_next (e, job->prev, job);
  adaptra_unlock (e);
  run_job_then_lock (e, ctx, job);
  adaptra_unlock (e);
  return true;
}

bool
adaptra_prefetch_run_one (struct adaptra_engine *e, int volume, void *ctx)
{
  return adaptra_prefetch_run_within (e, volume, 0, UINT64_MAX, ctx);
}

bool
adaptra_prefetch_peek (struct adaptra_engine *e, size_t k, uint64_t *offset,
                       uint32_t *count)
{
  struct adaptra_job *job;

  adaptra_lock (e);
  for (job = e->queue_head; job && k > 0; job = job->next)
    k--;
  if (job) {
    *offset = (job->first << e->page_shift) - job->volume->base;
    *count = job->bytes;
  }
  adaptra_unlock (e);
  return job != NULL;
}

bool
adaptra_prefetch_started (struct adaptra_engine *e, size_t k)
{
  struct adaptra_job *job;

  adaptra_lock (e);
  for (job = e->queue_head; job && k > 0; job = job->next)
    k--;
  if (job && job->started_ns == ADAPTRA_NOT_STARTED)
    e->queued_bytes -= (uint64_t) job->npages << e->page_shift;
  if (job)
    job->started_ns = adaptra_now (e);
  adaptra_unlock (e);
  return job != NULL;
}

void
adaptra_prefetch_drop_queue (struct adaptra_engine *e,
                             const struct adaptra_volume *v)
{
  struct adaptra_job *job = e->queue_head, *prev = NULL;

  assert_locked (e);
  while (job) {
    struct adaptra_job *next = job->next;
    uint32_t i;

    if (v && job->volume != v) {
      prev = job;
      job = next;
      continue;
    }
    dequeue (e, prev, job);
    for (i = 0; i < job->npages; i++)
      adaptra_pool_drop (&e->pool, job->frames[i]);
    add_flight (e, job->volume,
                -(int64_t) ((uint64_t) job->npages << e->page_shift));
    adaptra_wake (e, job->first, job->npages);
    free (job);
    job = next;
  }
}

/* May a prefetch job start while running bytes are being read from
 * the backend, busy of them by workers?  Under a flight limit, while
 * the bytes are under it or none are; without one, on a backend whose
 * latency parallel reads hide (flight.h: many slow streams, whose
 * windows are a few pages, need many reads at once), always; else
 * while fewer than ADAPTRA_UNLIMITED_WORKERS jobs are.  Lock held.
 */
static bool
flight_open (struct adaptra_engine *e, uint64_t running, unsigned busy)
{
  struct adaptra_flight_estimate est;

  assert_locked (e);
  adaptra_flight_estimate (&e->flight, adaptra_now (e), &est);
  if (est.limit != UINT64_MAX)
    return running == 0 || running < est.limit;
  return est.slow || busy < ADAPTRA_UNLIMITED_WORKERS;
}

bool
adaptra_prefetch_may_start (struct adaptra_engine *e, uint64_t running,
                            unsigned busy)
{
  bool open;

  adaptra_lock (e);
  open = flight_open (e, running, busy);
  adaptra_unlock (e);
  return open;
}

/* May worker w run job?  Its volume must have contexts, and a worker
 * for hints only takes a cache hint's job (of no stream): a boot
 * profile's extents are short and scattered, so following one is
 * bound by latency and wants many reads at once, where the windows of
 * streams, large and sequential, fill the backend's bandwidth with
 * adaptra-workers reads (DESIGN.md §8).
 */
static bool
may_run (const struct adaptra_worker *w, const struct adaptra_job *job)
{
  return job->volume->nctx > 0 && (!w->hints_only || job->stream == 0);
}

/* The first queued job (in fair order) that worker w may run, and the
 * one before it; NULL if none, or if the backend has its fill of
 * prefetch in flight (a worker of hints only does not ask: a boot
 * profile's reads are small and bound by latency, DESIGN.md §8).
 * Lock held.
 */
static struct adaptra_job *
next_for_worker (struct adaptra_engine *e, const struct adaptra_worker *w,
                 struct adaptra_job **prev)
{
  struct adaptra_job *job;

  *prev = NULL;
  if (!w->hints_only &&
      !flight_open (e, adaptra_flight_running (&e->flight), e->workers_busy))
    return NULL;
  for (job = e->queue_head; job && !may_run (w, job);
       *prev = job, job = job->next)
    ;
  return job;
}

/* Is worker w parked?  Until the backend is known to have a latency
 * that parallel reads hide (flight.h), only the first
 * ADAPTRA_UNLIMITED_WORKERS read (engine-impl.h); the others wait on
 * flight_on, where the wake-ups meant for readers of jobs do not reach
 * them.  Lock held.
 */
static bool
parked (const struct adaptra_engine *e, const struct adaptra_worker *w)
{
  return !w->hints_only && w->index >= ADAPTRA_UNLIMITED_WORKERS &&
    !e->flight_slow;
}

static void *
worker_main (void *arg)
{
  struct adaptra_worker *w = arg;
  struct adaptra_engine *e = w->e;

  adaptra_lock (e);
  for (;;) {
    struct adaptra_job *job, *prev;
    void *ctx;

    job = prev = NULL;
    while (!e->stopping &&
           (parked (e, w) || (job = next_for_worker (e, w, &prev)) == NULL))
      adaptra_wait (e, parked (e, w) ? &e->flight_on
                    : w->hints_only ? &e->hint_queued : &e->job_queued);
    if (e->stopping)
      break;
    take_next (e, prev, job);
    e->workers_busy += !w->hints_only;
    /* Valid until the job ends: adaptra_volume_set_contexts waits. */
    ctx = job->volume->ctxs[w->index % job->volume->nctx];
    adaptra_unlock (e);
    run_job_then_lock (e, ctx, job);
    e->workers_busy -= !w->hints_only;
  }
  adaptra_unlock (e);
  return NULL;
}

/* Stop and join the first n workers.  Lock not held. */
static void
join_workers (struct adaptra_engine *e, unsigned n)
{
  unsigned i;

  adaptra_lock (e);
  e->stopping = true;
  pthread_cond_broadcast (&e->job_queued);
  pthread_cond_broadcast (&e->flight_on);
  pthread_cond_broadcast (&e->hint_queued);
  adaptra_unlock (e);
  for (i = 0; i < n; i++)
    pthread_join (e->workers[i].thread, NULL);
  adaptra_lock (e);
  e->stopping = false;
  adaptra_unlock (e);
}

int
adaptra_workers_start (struct adaptra_engine *e, unsigned n, unsigned hints)
{
  unsigned i;
  int err;

  if (e->workers)
    return EBUSY;
  if (n + hints == 0)
    return 0;
  e->workers = calloc (n + hints, sizeof *e->workers);
  if (!e->workers)
    return ENOMEM;
  for (i = 0; i < n + hints; i++) {
    e->workers[i].e = e;
    e->workers[i].index = i;
    e->workers[i].hints_only = i >= n;
    err = pthread_create (&e->workers[i].thread, NULL, worker_main,
                          &e->workers[i]);
    if (err) {
      join_workers (e, i);
      free (e->workers);
      e->workers = NULL;
      return err;
    }
  }
  adaptra_lock (e);
  e->nworkers = n;
  e->nhint_workers = hints;
  adaptra_unlock (e);
  return 0;
}

int
adaptra_workers_simulate (struct adaptra_engine *e, unsigned n)
{
  if (e->workers)
    return EBUSY;
  adaptra_lock (e);
  e->nworkers = n;
  adaptra_unlock (e);
  return 0;
}

void
adaptra_workers_stop (struct adaptra_engine *e)
{
  if (!e->workers)
    return;
  join_workers (e, e->nworkers + e->nhint_workers);
  free (e->workers);
  e->workers = NULL;
  adaptra_lock (e);
  e->nworkers = e->nhint_workers = 0;
  adaptra_prefetch_drop_queue (e, NULL);
  adaptra_unlock (e);
}
