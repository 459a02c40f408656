/* queue.c: the prefetch queue: fair order, budgets, split, steal.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The order and the operations of queue.h.  Terms: docs/DESIGN.md §6.
 *
 * Why budgets, not one fixed round.  Fair order interleaves streams,
 * and on a backend that seeks (the benchmark's disk model: one head,
 * 0.5-8 ms a seek, nothing when a read continues the previous one)
 * every switch costs a seek, and interleaved streams (W3) lose much of
 * the disk's bandwidth unless a stream's chunks go out together in
 * rounds in page order.  On a latency-bound backend the same rounds
 * cost the tail: a queued chunk waits up to a round longer than in tag
 * order, which shows in W2's p99.  The model knows which backend it
 * is, so the round is its budget.
 *
 * Why batches as well.  Rounds in page order help only where the
 * queue holds a stream's chunks at once.  Windows come in pieces as
 * readers reach their marks, and a reader that catches up steals the
 * head of its job: with rounds alone each piece and each stolen job's
 * rest waited its turn, and the disk's head switched stream about
 * every other read.  Four workers reading one window's pieces at once
 * reached the one head out of order, a seek each; so where distance
 * costs a window is one job.
 *
 * Why the sweep wraps (C-SCAN) and does not turn (LOOK).  A turning
 * sweep spares the wrap's long seek, but reads the stream at an end
 * twice in a row and then leaves it two sweeps without a turn, and the
 * pool must hold what that stream's reader reads meanwhile: in
 * adaptra-sim on the disk model, 32 streams of 2 MiB/s in a 64 MiB
 * pool read 13% less.  Eight interleaved streams (W3) read no more
 * either: their windows come just in time, and a worker taking a job
 * finds mostly one or two streams' windows queued.
 */

#include <config.h>

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine-impl.h"
#include "queue.h"
#include "range.h"
#include "stream.h"

void
adaptra_queue_init (struct adaptra_queue *q, unsigned page_shift,
                    struct adaptra_streams *streams)
{
  memset (q, 0, sizeof *q);
  q->page_shift = page_shift;
  q->streams = streams;
  q->budget = ADAPTRA_MODEL_BUDGET;
}

/* The stream table's entry for a job of stream, whose queued_last and
 * queued_jobs index the queue; NULL for stream 0 (cache hints and
 * profiles), without a table, and for a stream that has left the
 * table, whose last job the queue's own index finds (last_of).  With
 * 10000 streams a walk of the queue on every enqueue held the lock for
 * 105 us a read-ahead decision.
 */
static struct adaptra_stream *
indexed_stream (const struct adaptra_queue *q, uint64_t stream)
{
  return stream && q->streams ? adaptra_streams_get (q->streams, stream)
    : NULL;
}

/* The last queued job of stream (NULL: none), by the index of each
 * stream's last job.
 */
static struct adaptra_job *
last_of (const struct adaptra_queue *q, uint64_t stream)
{
  struct treap_node *n = treap_floor (&q->last, stream, 0);

  return n && n->major == stream
    ? treap_entry (n, struct adaptra_job, by_stream) : NULL;
}

/* The last queued job of stream, whose table entry is s (NULL: not
 * indexed), or NULL if none is queued.
 */
static struct adaptra_job *
stream_last (const struct adaptra_queue *q, const struct adaptra_stream *s,
             uint64_t stream)
{
  if (s)
    return s->queued_jobs > 0 ? s->queued_last : NULL;
  return last_of (q, stream);
}

/* Does job a go before job b of another stream?  By round, then by
 * page within a round.
 */
static bool
goes_before (const struct adaptra_job *a, const struct adaptra_job *b)
{
  return a->round != b->round ? a->round < b->round : a->first < b->first;
}

/* Are neighbours a and b (NULL: none) out of fair order?  A stream's
 * jobs follow its last, and cache hints (stream 0) are scattered, so
 * the queue is not always in fair order; unordered counts these pairs,
 * and adaptra_queue_add trusts the order index only when there are
 * none.
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
link_after (struct adaptra_queue *q, struct adaptra_job *prev,
            struct adaptra_job *before, struct adaptra_job *job)
{
  struct adaptra_job *next = prev ? prev->next : q->head;

  q->unordered = q->unordered + unordered (prev, job) +
    unordered (job, next) - unordered (prev, next);
  job->prev = prev;
  job->next = next;
  if (prev)
    prev->next = job;
  else
    q->head = job;
  if (next)
    next->prev = job;
  else
    q->tail = job;
  treap_insert (&q->pages, &job->by_page, 0, job->first);
  treap_insert (&q->order, &job->by_order, job->round, job->first);
  job->stream_prev = before;
  job->stream_next = before ? before->stream_next : NULL;
  if (before)
    before->stream_next = job;
  if (job->stream_next)
    job->stream_next->stream_prev = job;
  else {
    if (before)
      treap_remove (&q->last, &before->by_stream);
    treap_insert (&q->last, &job->by_stream, job->stream, 0);
  }
}

/* Take job out of the queue and its indexes. */
static void
unlink_job (struct adaptra_queue *q, struct adaptra_job *job)
{
  struct adaptra_job *prev = job->prev, *next = job->next;

  q->unordered = q->unordered + unordered (prev, next) -
    unordered (prev, job) - unordered (job, next);
  if (prev)
    prev->next = next;
  else
    q->head = next;
  if (next)
    next->prev = prev;
  else
    q->tail = prev;
  treap_remove (&q->pages, &job->by_page);
  treap_remove (&q->order, &job->by_order);
  if (job->wait_page != ADAPTRA_QUEUE_NO_PAGE)
    treap_remove (&q->waits, &job->by_wait);
  if (job->stream_prev)
    job->stream_prev->stream_next = job->stream_next;
  if (job->stream_next)
    job->stream_next->stream_prev = job->stream_prev;
  else {
    treap_remove (&q->last, &job->by_stream);
    if (job->stream_prev)
      treap_insert (&q->last, &job->stream_prev->by_stream, job->stream, 0);
  }
}

/* Where a walk from last (NULL: the head) puts job, in a queue in fair
 * order: behind last if job goes before last (every job after last
 * goes after it), else before the first job it goes before.
 */
static struct adaptra_job *
in_order (const struct adaptra_queue *q, struct adaptra_job *last,
          const struct adaptra_job *job)
{
  struct treap_node *n;

  if (last && goes_before (job, last))
    return last;
  n = treap_ceil (&q->order, job->round, job->first);
  return n ? treap_entry (n, struct adaptra_job, by_order)->prev : q->tail;
}

void
adaptra_queue_add (struct adaptra_queue *q, struct adaptra_job *job)
{
  struct adaptra_stream *s = indexed_stream (q, job->stream);
  struct adaptra_job *last = stream_last (q, s, job->stream);
  struct adaptra_job *prev = last, *at;
  uint64_t finish = last ? last->tag + last->bytes : 0;

  job->tag = finish > q->vtime ? finish : q->vtime;
  job->round = job->tag / q->budget;
  job->wait_page = ADAPTRA_QUEUE_NO_PAGE;
  assert (last == last_of (q, job->stream));
  /* Behind its stream's queued jobs, and then behind every job that
   * it does not go before.
   */
  if (q->tail && !goes_before (job, q->tail))
    prev = q->tail;
  else if (q->unordered == 0)
    prev = in_order (q, last, job);
  else
    for (at = last ? last->next : q->head; at && !goes_before (job, at);
         at = at->next)
      prev = at;
  link_after (q, prev, last, job);
  if (s) {
    bool had = adaptra_stream_has_jobs (s);

    s->queued_last = job;
    s->queued_jobs++;
    adaptra_stream_jobs (q->streams, s, had);
  }
  q->queued_bytes += (uint64_t) job->npages << q->page_shift;
}

struct adaptra_job *
adaptra_queue_find (const struct adaptra_queue *q, uint64_t page,
                    struct adaptra_job **prev)
{
  struct treap_node *n = treap_floor (&q->pages, 0, page);
  struct adaptra_job *job;

  *prev = NULL;
  if (!n)
    return NULL;
  /* Queued jobs hold disjoint pages: the one that starts last at or
   * below page is the only one that may hold it.
   */
  job = treap_entry (n, struct adaptra_job, by_page);
  if (page - job->first >= job->npages)
    return NULL;
  *prev = job->prev;
  return job;
}

void
adaptra_queue_take (struct adaptra_queue *q, struct adaptra_job *prev,
                    struct adaptra_job *job, enum adaptra_queue_take how,
                    uint64_t now)
{
  struct adaptra_stream *s = indexed_stream (q, job->stream);

  assert (prev == job->prev);
  if (how == ADAPTRA_TAKE_IN_ORDER && job->tag > q->vtime)
    q->vtime = job->tag;
  if (how != ADAPTRA_TAKE_DROPPED) {
    if (job->first != q->near)
      q->turn_at = now;
    q->batch = job->first == q->near ? q->batch + job->bytes : job->bytes;
    q->near = job->first + job->npages;
    q->near_window = job->window;
  }
  unlink_job (q, job);
  /* Jobs leave mostly from the front, so the stream's last leaves last;
   * a steal or a dropped queue may take it first, and the index has the
   * new last.
   */
  if (s && s->queued_jobs > 0) {
    bool had = adaptra_stream_has_jobs (s);

    if (--s->queued_jobs > 0 && s->queued_last == job)
      s->queued_last = last_of (q, job->stream);
    adaptra_stream_jobs (q->streams, s, had);
  }
  q->queued_bytes -= (uint64_t) job->npages << q->page_shift;
}

/* The queued job that the reader who has waited longest waits for,
 * NULL if none waits.
 */
static struct adaptra_job *
oldest_wait (const struct adaptra_queue *q)
{
  struct treap_node *n = treap_ceil (&q->waits, 0, 0);

  return n ? treap_entry (n, struct adaptra_job, by_wait) : NULL;
}

/* Is the run at near over at now, a reader waiting?  A turn is bounded
 * in time as well as in bytes: while a reader waits, a run ends once it
 * has lasted turn_ns since its first job was taken (BFQ expires a
 * queue that overruns its budget's timeout; mq-deadline serves a
 * request whose expiry passed before it goes on with a batch).  The
 * bytes alone did not bound it: a run goes on past its budget to its
 * window's end, and a reader that another's wait turned away stole its
 * own job at once and started a run of its own, which went before the
 * waiting one.  On the disk model four streams on four connections
 * (beside's U-4conn) left a reader waiting 300-400 ms while the other
 * three took six turns each.  A turn's time is the least that still
 * lets a run read its budget, so that seeks keep their share of the
 * head's time (ADAPTRA_MODEL_SEEK_TURN).
 */
static bool
turn_over (const struct adaptra_queue *q, uint64_t now)
{
  return q->turn_ns > 0 && now - q->turn_at >= q->turn_ns &&
    q->waits.root != NULL;
}

/* A batch ends at a budget, so that a stream whose windows keep coming
 * cannot hold the head: then the queue's head, in fair order, goes.
 * But not in the middle of a window (BFQ, likewise, does not expire a
 * queue in the middle of a request): the window's rest would cost a
 * seek of its own later, and on the disk model a budget the model
 * measured short (its bandwidth and seek estimates are noisy there)
 * cut every other window in two.
 */
struct adaptra_job *
adaptra_queue_batch (const struct adaptra_queue *q, uint64_t now,
                     struct adaptra_job **prev)
{
  struct adaptra_job *job;
  struct treap_node *first, *n;
  uint64_t from;

  *prev = NULL;
  if (!q->head)
    return NULL;
  if (q->seeks && !turn_over (q, now)) {
    job = adaptra_queue_find (q, q->near, prev);
    if (job && job->first == q->near &&
        (q->batch < q->budget || job->window == q->near_window))
      return job;
  }
  /* A reader waits for it: next even if the model no longer sees
   * seeks, not behind the whole queue in fair order.
   */
  if ((job = oldest_wait (q)) != NULL) {
    *prev = job->prev;
    return job;
  }
  if (!q->seeks)
    return NULL;
  /* Up the sweep, within the round the fair order serves (its first
   * job's), past near and past the jobs of that round that continue
   * it one after another: they continue the run that did its budget,
   * and go in their stream's next turn.  The first job past them
   * instead would skip the stream's next pages, read them out of
   * order later, and give the stream a second turn in the round.
   */
  first = treap_ceil (&q->order, 0, 0);
  from = q->near;
  while ((n = treap_ceil (&q->order, first->major, from)) != NULL &&
         n->major == first->major && n->minor == from)
    from += treap_entry (n, struct adaptra_job, by_order)->npages;
  if (!n || n->major != first->major)
    return NULL;
  job = treap_entry (n, struct adaptra_job, by_order);
  *prev = job->prev;
  return job;
}

/* Keep the pages of queued job up to the end of a reader's request for
 * page to last (at least page) in it, and queue the rest behind it
 * (adaptra_queue_split): what a reader steals, or waits for.
 */
static void
split_at_request (struct adaptra_queue *q, struct adaptra_job *job,
                  uint64_t page, uint64_t last)
{
  adaptra_queue_split (q, job, (last > page ? last : page + 1) - job->first);
}

/* A reader's steal goes to the head at once, behind the reads in
 * flight, and the batch then goes on from it: the run it cut in two
 * costs a seek more for its rest.  A reader of many interleaved
 * streams on a disk reaches one stream's window while another's is
 * being read (the head serves one stream at a time, the reader wants
 * every one in turn), so steals cut most runs.  Waiting for the run
 * to end costs that reader a run's read; the head keeps reading all
 * the while, and a reader that is late is waiting for the head anyway
 * (BFQ, likewise, lets the queue in service finish its budget).
 *
 * Readers that wait go in the order they began to wait (waits): one
 * that stole while another waited started a run of its own ahead of
 * the waiting one.  A reader waits for its request's pages only: its
 * turn's first read is theirs, and the rest continues the run behind
 * it.  Waiting for the whole job, a reader waited for a turn's read
 * (job_max, a budget) before its first page came: on the disk model
 * U-4conn's p99 was 87 ms so, against 79 (medians of four runs each,
 * alternating).
 */
bool
adaptra_queue_promote (struct adaptra_queue *q, struct adaptra_job *job,
                       uint64_t page, uint64_t last, uint64_t now)
{
  struct adaptra_job *run, *prev;

  if (job->wait_page != ADAPTRA_QUEUE_NO_PAGE)
    return true;
  if (!q->seeks)
    return false;
  run = adaptra_queue_batch (q, now, &prev);
  if (run == job ||
      (q->waits.root == NULL && (!run || run->first != q->near)))
    return false;
  split_at_request (q, job, page, last);
  job->wait_page = page;
  job->waited_at = now;
  treap_insert (&q->waits, &job->by_wait, now, job->first);
  return true;
}

/* A smaller rest than ADAPTRA_JOB_MIN would cost a worker one more
 * backend request (a latency: 5 ms on the remote model) to spare the
 * reader at most the transfer of 256 KiB (1.3 ms at 200 MB/s).  Under
 * 10000 streams of 16 KiB/s that catch up with their windows,
 * splitting every steal doubled the backend requests, and the four
 * workers, bound by latency in 20 KiB jobs, fell behind for good:
 * adaptra-sim's hit rate went from 75% to 4% in the first minute.
 */
struct adaptra_job *
adaptra_queue_split (struct adaptra_queue *q, struct adaptra_job *job,
                     uint64_t n)
{
  struct adaptra_job *rest;
  struct adaptra_stream *s;
  uint32_t left;

  if (n >= job->npages ||
      ((uint64_t) (job->npages - n) << q->page_shift) < ADAPTRA_JOB_MIN)
    return NULL;
  left = job->npages - (uint32_t) n;
  rest = malloc (sizeof *rest + left * sizeof rest->frames[0]);
  if (!rest)
    return NULL;
  *rest = *job;
  rest->first = job->first + n;
  rest->npages = left;
  rest->bytes = job->bytes - (uint32_t) (n << q->page_shift);
  memcpy (rest->frames, job->frames + n, left * sizeof rest->frames[0]);
  job->npages = (uint32_t) n;
  job->bytes = (uint32_t) (n << q->page_shift);
  /* A reader's wait goes with the part that holds its page. */
  rest->wait_page = ADAPTRA_QUEUE_NO_PAGE;
  if (job->wait_page != ADAPTRA_QUEUE_NO_PAGE &&
      job->wait_page >= rest->first) {
    treap_remove (&q->waits, &job->by_wait);
    rest->wait_page = job->wait_page;
    job->wait_page = ADAPTRA_QUEUE_NO_PAGE;
    treap_insert (&q->waits, &rest->by_wait, rest->waited_at, rest->first);
  }
  link_after (q, job, job, rest);
  if ((s = indexed_stream (q, job->stream)) != NULL) {
    s->queued_jobs++;
    if (s->queued_last == job)
      s->queued_last = rest;
  }
  return rest;
}

/* A job taken to be read, a thread's or adaptra-sim's worker's, has
 * left the queue (adaptra_queue_take): only jobs not started count.
 */
bool
adaptra_queue_contended (const struct adaptra_queue *q, uint64_t stream)
{
  const struct adaptra_job *job;

  for (job = q->head; job; job = job->next)
    if (job->stream != stream)
      return true;
  return false;
}

/* The engine's side of the queue: windows become jobs (dispatch), the
 * congestion limit, steals and drops.  Lock held in each.
 */

void
adaptra_prefetch_account (struct adaptra_engine *e, struct adaptra_volume *v,
                          int64_t n)
{
  if (v->flight_bytes == 0 && n > 0)
    e->volumes_in_flight++;
  v->flight_bytes += n;
  e->flight_bytes += n;
  if (v->flight_bytes == 0 && n < 0)
    e->volumes_in_flight--;
}

/* How many ways a window of n pages is split.  Not at all where no
 * latency hides (adaptra_latency_unhidden) and the window is what one
 * read carries (e->slot_pages: a lone stream's there, readahead.c), or
 * where distance costs and streams compete: reads in parallel hide no
 * latency at one head or at the CPUs, and the pieces of one window
 * read at once reach a disk's head out of order, a seek each.  Where
 * distance costs and one stream alone has a window larger than a
 * read, the head is busy with its pieces while its reader waits for
 * the first.  Where latency-bound, into as many jobs as one stream may
 * have read at once (ADAPTRA_MODEL_STREAM_READS; while streams
 * compete, the chunks are smaller anyway); elsewhere the reads in
 * flight the backend rewards, ADAPTRA_MODEL_DEPTH where it is
 * latency-bound without a limit.  There every worker still reads
 * (flight_open), for many streams' small windows, not for one window
 * in 16 pieces: a curl plugin 2 ms away read a scan's 64 MiB in 258
 * ranged GETs so, against at most 256 in 4 pieces.  At most one a
 * worker.  Lock held.
 */
static unsigned
parallel_workers (const struct adaptra_engine *e,
                  const struct adaptra_model_estimate *est, uint64_t n,
                  bool contended)
{
  unsigned ways = (est->seeks && contended) ||
    (n <= e->slot_pages && adaptra_latency_unhidden (est)) ? 1
    : est->limit != UINT64_MAX ? ADAPTRA_MODEL_STREAM_READS
    : est->depth ? est->depth : ADAPTRA_MODEL_DEPTH;

  return e->nworkers < ways ? e->nworkers : ways;
}

/* How a window is cut into jobs (job_pages): share, the most pages of
 * a job; first, the most of its first (the ramp, below, where less
 * than share); and where it ramps, its ways-th job takes the rest, up
 * to most pages (the split's hard bound).
 */
struct split {
  uint32_t share, first, most;
  unsigned ways;
};

/* How a window of n pages of stream is cut into jobs (*sp): the most
 * of its first job (below; as large as the others for a cache
 * hint, which no reader follows, without workers, where readers split
 * what they steal, and where distance costs: pieces read at once reach
 * a disk's head out of order, each a seek).  Split so that every
 * worker that reads at once gets a share and the window arrives in
 * about one backend latency, but not below the model's job_min (a
 * serialising backend prefers fewer, larger requests, and one stream
 * needs no more than a few in flight) nor above
 * the model's job_max and ADAPTRA_REQUEST_MAX, or its chunk for the
 * streams sharing the backend (adaptra_model_chunk) while other
 * streams' prefetch is queued.  The chunk is a power of two where
 * latency-bound, because a window starts where a request ended, so a
 * client's aligned requests of a power of two up to the chunk each lie
 * in one chunk.  Also sets the queue's budget (goes_before).
 */
static void
job_pages (struct adaptra_engine *e, uint64_t n, uint64_t stream,
           struct split *sp)
{
  struct adaptra_model_estimate est;
  uint64_t floor, ceiling, share;
  unsigned ways;
  bool contended = adaptra_queue_contended (&e->queue, stream);

  adaptra_model_estimate (&e->model, adaptra_now (e), &est);
  floor = est.job_min >> e->page_shift;
  e->queue.budget = est.budget;
  e->queue.seeks = est.seeks;
  e->queue.turn_ns = est.turn_ns;
  ceiling = (contended
             ? adaptra_model_chunk (&est, adaptra_streams_sharing
                                    (&e->streams,
                                     adaptra_streams_get (&e->streams,
                                                          stream)))
             : min_u64 (est.job_max, ADAPTRA_REQUEST_MAX)) >> e->page_shift;
  ways = parallel_workers (e, &est, n, contended);
  share = ways > 1 ? (n + ways - 1) / ways : n;

  if (share < floor)
    share = floor;
  if (share > ceiling)
    share = ceiling;
  if (share == 0)
    share = 1;
  sp->share = (uint32_t) share;
  sp->most = (uint32_t) max_u64 (ceiling, share);
  sp->ways = ways;
  sp->first = stream == 0 || e->nworkers == 0 || est.seeks
    ? (uint32_t) share
    : (uint32_t) min_u64 (share, max_u64 (max_u64 (est.chunk, est.bdp)
                                          >> e->page_shift, 1));
}

/* Queue job if it has pages (its bytes clamped to its volume's end),
 * count it in flight and wake (or start) a worker, else free it.
 * Returns NULL.
 */
static struct adaptra_job *
close_job (struct adaptra_engine *e, struct adaptra_job *job)
{
  struct adaptra_volume *v;
  uint64_t bytes;

  if (!job || job->npages == 0) {
    free (job);
    return NULL;
  }
  v = job->volume;
  bytes = (uint64_t) job->npages << e->page_shift;
  job->bytes = (uint32_t) adaptra_clamp_to_size (job->first << e->page_shift,
                                                 bytes, v->base + v->size);
  adaptra_queue_add (&e->queue, job);
  adaptra_prefetch_account (e, v, (int64_t) bytes);
  adaptra_workers_job_queued (e, job->stream == 0);
  return NULL;
}

/* A job's read lands straight in its frames when they are consecutive
 * in the arena, and otherwise in a transfer slot
 * (adaptra_fetch_then_lock).  So a job may grow past a slot only while
 * its frames stay consecutive:
 * a frame elsewhere then starts the next job, and a job that is not
 * consecutive ends at a slot's size.
 *
 * A stream's window's jobs ramp up: the first is at most the model's
 * chunk or its bandwidth-delay product, whichever is larger (a read
 * smaller than the product takes about a latency anyway), each next
 * one at most the pages queued before it, up to the split's size.  A
 * worker that has started a job cannot be stolen from, so the reader
 * that reaches a window waits for the whole job that holds its next
 * page: when the window's first job was a quarter of it and shared
 * the backend with the other three, a sequential reader stalled for
 * most of that quarter each time its window doubled.  The job it
 * waits for now takes at most about two latencies, and each later one
 * is about as large as what the reader still has to read before it.
 * But a window costs no more jobs than the ways it is split (the
 * stream's reads at once, ADAPTRA_MODEL_STREAM_READS): its last job
 * takes the rest of it, up to the split's hard bound.  One more job
 * than a stream may have read at once waited for the first to end, a
 * round trip, and the window's tail arrived a latency late: a window of
 * four shares of which the first was a quarter went out in six jobs.
 * Where the product is larger than the split (a backend far faster
 * than its latency: a sparse image's copy over 2 ms) nothing changes:
 * smaller reads would take as long, and only add requests.
 */
uint64_t
adaptra_prefetch_dispatch (struct adaptra_engine *e, struct adaptra_volume *v,
                           uint64_t start, uint64_t end, uint64_t mark,
                           uint64_t stream_id, unsigned method, unsigned flags)
{
  struct split sp;
  struct adaptra_job *job = NULL;
  uint32_t room = 0;
  bool consecutive = true;
  uint64_t p, inserted = 0;
  unsigned jobs = 0;

  assert_locked (e);
  if (end > v->end_page)
    end = v->end_page;
  if (start >= end)
    return 0;
  job_pages (e, end - start, stream_id, &sp);
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
      room = (uint32_t) min_u64 (end - p,
                                 sp.first < sp.share && ++jobs >= sp.ways
                                 ? sp.most
                                 : min_u64 (sp.share,
                                            max_u64 (sp.first, inserted)));
      job = malloc (sizeof *job + room * sizeof job->frames[0]);
      if (!job) {
        adaptra_pool_drop (&e->pool, f);
        break;
      }
      job->volume = v;
      job->stream = stream_id;
      job->first = p;
      job->window = end;
      job->npages = 0;
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

/* The congestion limit's time: half a second of the backend's
 * bandwidth.  A second's worth was right at the line fit's rate, which
 * on a remote store read by many slow streams is about half the link's
 * (9 MB/s of 20); at the model's bandwidth, the link's own, a second's
 * worth let 1000 streams of 16 KiB/s (adaptra-sim, remote:5ms:20M,
 * 600 s) queue so long that their hits fell from 99.3% to 98.5%.
 */
#define CONGESTION_NS 500000000.0

bool
adaptra_prefetch_congested (const struct adaptra_engine *e,
                            const struct adaptra_volume *v)
{
  /* At least an eighth of the pool, or four maximal windows, may be in
   * flight; never more than half of it, nor (unless four windows need
   * it) more than the backend moves in CONGESTION_NS at the model's
   * bandwidth: more only queues, and every demand read waits behind
   * the queue.  An eighth of an 8G pool is 1 GiB, 5 s of a 200 MiB/s
   * store; with it, adaptra-sim's 10000 streams of 16 KiB/s had a p99
   * read latency of 2 s, with a second's worth 60 ms.
   */
  uint64_t pool = e->cfg.pool_bytes;
  uint64_t four = adaptra_readahead_max_pages (e) << (e->page_shift + 2);
  uint64_t limit = four > pool / 8 ? four : pool / 8;
  struct adaptra_model_estimate est;
  uint64_t second;
  unsigned sharing = e->volumes_in_flight + (v->flight_bytes == 0);

  assert_locked (e);
  adaptra_model_estimate (&e->model, adaptra_now (e), &est);
  second = (uint64_t) ((double) est.bandwidth * CONGESTION_NS / 1e9);
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

/* Take job (after prev in the queue) to run it, in fair order (a
 * worker) or out of turn (a reader's steal).  Lock held.
 */
void
adaptra_prefetch_take (struct adaptra_engine *e, struct adaptra_job *prev,
                       struct adaptra_job *job, bool in_order)
{
  assert_locked (e);
  adaptra_queue_take (&e->queue, prev, job,
                      in_order ? ADAPTRA_TAKE_IN_ORDER : ADAPTRA_TAKE_STOLEN,
                      adaptra_now (e));
  job->volume->running++;
}

bool
adaptra_prefetch_steal (struct adaptra_engine *e, uint64_t page,
                        uint64_t last, void *ctx)
{
  struct adaptra_job *job, *prev;

  assert_locked (e);
  /* Page numbers are unique across volumes: the job holding page is
   * of the reader's volume, and the reader's ctx sees its bytes.
   */
  job = adaptra_queue_find (&e->queue, page, &prev);
  if (!job)
    return false;
  /* Workers take the job when the run ends (a thread is woken, in
   * case none is reading; adaptra-sim's take it as threads would);
   * without workers the reader reads it.
   */
  if (adaptra_workers_take_jobs (e) && job->volume->nctx > 0 &&
      adaptra_queue_promote (&e->queue, job, page, last, adaptra_now (e))) {
    pthread_cond_signal (&e->job_queued);
    return false;
  }
  /* The reader runs what it waits for; a worker reads the rest. */
  split_at_request (&e->queue, job, page, last);
  adaptra_prefetch_take (e, prev, job, false);
  adaptra_unlock (e);
  adaptra_fetch_job_then_lock (e, ctx, job, false, false);
  return true;
}

void
adaptra_prefetch_drop_queue (struct adaptra_engine *e,
                             const struct adaptra_volume *v)
{
  struct adaptra_job *job = e->queue.head, *prev = NULL;

  assert_locked (e);
  while (job) {
    struct adaptra_job *next = job->next;
    uint32_t i;

    if (v && job->volume != v) {
      prev = job;
      job = next;
      continue;
    }
    adaptra_queue_take (&e->queue, prev, job, ADAPTRA_TAKE_DROPPED, 0);
    for (i = 0; i < job->npages; i++)
      adaptra_pool_drop (&e->pool, job->frames[i]);
    adaptra_prefetch_account (e, job->volume,
                -(int64_t) ((uint64_t) job->npages << e->page_shift));
    adaptra_wake (e, job->first, job->npages);
    free (job);
    job = next;
  }
}

