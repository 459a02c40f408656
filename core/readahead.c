/* readahead.c: the read-ahead decision on a miss or a mark.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The read-ahead decision: which stream a read belongs to, which
 * method sizes its window, and where the window goes.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §3.1 and §3.2 (the
 * events, stream and method).
 *
 * As in the seed, read-ahead is consulted only on two events, once per
 * client request (read.c finds them):
 *
 *   miss  the request needs a page that is not in the pool.
 *         Synchronous: the reader reads what it needs itself, the rest
 *         of the window goes to the prefetch workers.
 *   mark  the request touched a page carrying the look-ahead mark.
 *         Asynchronous: the stream's next window is queued and the
 *         reader does not wait for it.
 *
 * A fully cached region therefore costs no decisions at all.
 *
 * On a miss the stream is looked for by evidence that its reader is
 * the one reading: the stream id of the page just before the miss, if
 * a reader got there (read by a client or on demand; this also catches
 * reordered requests inside a window), or of the page just above the
 * request for a backward stream.  A stream whose expected position is
 * near (stream.c) counts only with the pool's history behind the read
 * as well: at a high rate of random reads, many land next to some
 * stream's window by chance.  A known
 * forward stream continues with the state method (or the fixed
 * window), a backward one with a doubled backward window, unless a
 * window already holds every page it would read ahead (another reader
 * of the same pages issued it): then the reader follows that window's
 * stream and issues nothing (covering, follow).  Without a stream:
 *
 *   page 0                    initial method, a new stream
 *   the client's previous     initial method from both requests
 *   read just before          (adaptive mode: adjacent_read), a new
 *                             stream at its second read; or follow
 *   one of its latest lone    a trail of two requests past it, a new
 *   reads just before         stream at its second read; or follow
 *   history behind > 2x req   context / accelerated context (the pages
 *                             before the miss were read, or are the
 *                             request's own, and are still here), a
 *                             new stream; or, if a window holds the
 *                             pages ahead, follow its stream
 *   history above > 2x req    a backward stream
 *   otherwise                 random: read as is, counted as
 *                             readrandom; no stream, unless its client's
 *                             lone reads start runs: then a trail of two
 *                             requests past it, a new stream (trail).  A
 *                             random scan can never grow a window.
 *
 * Requiring more history than the request (Linux 2013, "make context
 * readahead more conservative", asks for more than one request; we ask
 * for more than two) keeps random readers from starting streams.
 *
 * The window is clamped to [adaptra-min, the effective max], where the
 * max is adaptra-max, or with auto the larger of 1 MiB and the
 * backend's bandwidth-delay product, and always at most half of the
 * pool's inactive plus free pages.  The look-ahead is at least the
 * pages the reader consumes while the backend fetches a window, so a
 * steady reader does not catch up with its read-ahead.
 *
 * A decision is data, as in Linux's mm/readahead.c: what happened is a
 * struct event (miss or mark, volume, client, the request's pages, the
 * reader's page), and each case below is a commented block that fills
 * a struct placement (stream, method, window, mark) and hands it to
 * issue (), the one place a window is recorded and dispatched.
 * Forward windows are sized by size_forward, which asks the window
 * policy for the mode (window.c) and otherwise uses the case's method.
 */

#include <config.h>

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>

#include "minmax.h"
#include "range.h"
#include "window.h"
#include "engine-impl.h"

#define NO_MARK UINT64_MAX

/* How far back the history scans look (history_behind, history_above),
 * in maximal windows.  The context window is the history times the
 * ratio, clamped to the max (window.c: adaptra_window_context), so
 * history past max * 100 / ratio pages changes no window while the
 * scan costs a lookup a page: four windows give a maximal window at
 * ratios down to 25% (the default, 50%, needs two).
 */
#define HISTORY_WINDOWS 4

/* A stream starts away from page 0 when the pages a client read just
 * before (or after, backward) the request outnumber EVIDENCE times the
 * request: four adjacent reads of the same size.  A random reader
 * that reads a fraction d of the export triggers that on a fraction
 * d^3 of its reads; 1% of a disk read at random gives one false
 * stream per million reads.
 */
#define EVIDENCE 2

/* A lone read (a miss that starts no stream) of a client whose lone
 * reads are often followed by the next page gets a trail: a window of
 * TRAIL_REQUESTS times its request right past it (trail below).  The
 * client's score goes up by one for each lone read whose next page a
 * client then read, down by one for each it did not, between 0 and
 * LONE_RUNS_MAX; a trail needs LONE_RUNS_MIN.  A lone read whose next
 * page was in the pool already is not scored.
 */
#define TRAIL_REQUESTS 2
#define LONE_RUNS_MIN 2
#define LONE_RUNS_MAX (2 * LONE_RUNS_MIN)

/* How far past a stream's window a miss may land (requests that
 * overtook others) and still belong to it, in pages.  Tight, so that
 * random reads that land near a window do not drive its stream (a
 * position match needs the pool's history besides: stream_of_miss):
 * 16 pages of 4 KiB (the default page) are one request of 64 KiB, the
 * benchmark's sequential readers' size, that overtook the one before it.
 */
#define POSITION_SLACK 16

uint64_t
adaptra_readahead_max_pages (const struct adaptra_engine *e)
{
  unsigned shift = e->page_shift;
  uint64_t floor = ADAPTRA_AUTO_MAX_FLOOR >> shift;
  struct adaptra_model_estimate est;

  assert_locked (e);
  adaptra_model_estimate (&e->model, adaptra_now (e), &est);
  return adaptra_window_max (e->cfg.max_bytes >> shift, floor ? floor : 1,
                             est.bdp >> shift, adaptra_pool_spare (&e->pool));
}

uint64_t
adaptra_readahead_cap_pages (struct adaptra_engine *e)
{
  uint64_t cap = adaptra_readahead_max_pages (e);
  uint64_t spare = adaptra_pool_spare (&e->pool);
  struct adaptra_stream *s;

  assert_locked (e);
  if (e->cfg.max_bytes != 0)
    return cap;
  for (s = adaptra_streams_first (&e->streams); s;
       s = adaptra_streams_after (&e->streams, s))
    if (s->cap > cap)
      cap = min_u64 (s->cap, spare);
  return cap;
}

/* The legacy window in pages: at least one, whatever the page size. */
static uint64_t
fixed_pages (const struct adaptra_engine *e)
{
  uint64_t n = e->cfg.fixed_bytes >> e->page_shift;

  return n ? n : 1;
}

/* The bounds of a decision on an event whose request is req pages.
 * With adaptra-max=auto the ceiling is never below the request: a
 * reader of larger requests than the auto max (its 1 MiB floor where
 * the backend's product is less) reads past any window at every
 * request, so each of its requests missed, and the window issued then
 * was behind it again at its next; Linux's on-demand read-ahead raises
 * its maximum to the request likewise.  Three guests reading one
 * golden image in 2 MiB requests, 2 ms from the backend, missed at 20
 * to 47 of their 96 reads in one run of three, 1 to 8 with it.  The pool's
 * spare still bounds it.
 */
static void
bounds_of (const struct adaptra_engine *e, uint64_t req,
           struct adaptra_window_bounds *b)
{
  uint64_t min = e->cfg.min_bytes >> e->page_shift;

  b->max = adaptra_readahead_max_pages (e);
  if (e->cfg.max_bytes == 0 && req > b->max)
    b->max = min_u64 (req, adaptra_pool_spare (&e->pool));
  b->min = min_u64 (min, b->max);
  b->ratio = e->cfg.ratio;
  b->lead = 0;
  b->fixed = e->cfg.mode == ADAPTRA_MODE_FIXED ? fixed_pages (e) : 0;
}

/* Pages the stream reads while the backend fetches a window of
 * window pages, by the model's estimate est at now: the look-ahead
 * that hides the backend's latency.
 */
static uint64_t
lead_pages (const struct adaptra_engine *e, const struct adaptra_stream *s,
            const struct adaptra_model_estimate *est,
            uint64_t consumed, uint64_t window, uint64_t now)
{
  uint64_t dt = now - s->issue_ns;
  double fetch_ns, pages;

  if (dt == 0 || consumed == 0)
    return 0;
  fetch_ns = (double) adaptra_model_fetch_ns (est, window << e->page_shift);
  pages = fetch_ns * (double) consumed / (double) dt;
  return (uint64_t) pages + 1;
}

/* What happened: the input of one decision.  read.c finds it, once
 * per request (what Linux's struct readahead_control and the
 * arguments of its ondemand_readahead say of a request).
 */
struct event {
  enum { EVENT_MISS, EVENT_MARK } what;
  const struct adaptra_volume *v;  /* the volume read */
  int client;                      /* the client reading */
  uint64_t first, last;            /* the request's pages [first, last) */
  uint64_t reader;                 /* the page decided on: the first
                                      absent one, or the mark taken */
};

/* Where a decision puts a window: its output, filled by one case of
 * the decision and handed to issue () (Linux's file_ra_state start,
 * size and async_size, here with the mark as a page).
 */
struct placement {
  struct adaptra_stream *s;     /* the stream it is for */
  unsigned method;              /* enum adaptra_method that sized it */
  uint64_t start, end;          /* the window: pages [start, end) */
  uint64_t mark;                /* its look-ahead mark, NO_MARK: none */
  bool at_eof;                  /* it reaches the volume's edge */
};

/* Hand the tracer the decision of kind on ev, placed at pl, which
 * inserted or moved n pages (engine.h: struct adaptra_trace).
 */
static void
trace (struct adaptra_engine *e, enum adaptra_trace_kind kind,
       const struct event *ev, const struct placement *pl, uint64_t n)
{
  struct adaptra_trace t = {
    .kind = kind,
    .event = {
      .what = ev->what == EVENT_MISS ? ADAPTRA_EVENT_MISS : ADAPTRA_EVENT_MARK,
      .volume = ev->v->id, .client = ev->client,
      .first = ev->first, .last = ev->last, .reader = ev->reader,
    },
    .placement = {
      .stream = pl->s->id, .client = pl->s->client, .method = pl->method,
      .start = pl->start, .end = pl->end,
      .mark = pl->mark == NO_MARK ? ADAPTRA_NO_MARK : pl->mark,
      .at_eof = pl->at_eof,
    },
    .pages = n,
  };

  if (e->cfg.trace)
    e->cfg.trace (e->cfg.trace_opaque, &t);
}

/* Put s's window size and age in its mark page f, a page of the
 * window that stream id issued (s itself, or the stream s resumed
 * from), so that s can resume from them if it leaves the table before
 * its reader gets there (resume below).
 */
static void
carry_state (struct adaptra_engine *e, const struct adaptra_stream *s,
             uint64_t id, uint32_t f)
{
  adaptra_pool_mark_state (&e->pool, f, id,
                           s->readahead_index - s->ra_index, s->age);
}

/* Would a job queued now wait longer for a worker than a backend
 * read takes: the queue's bytes not yet started, at the backend's
 * measured throughput, take longer than its latency?
 */
static bool
queue_slow (const struct adaptra_engine *e)
{
  struct adaptra_model_estimate est;

  adaptra_model_estimate (&e->model, adaptra_now (e), &est);
  return est.bandwidth > 0 &&
    (double) e->queue.queued_bytes * 1e9 / (double) est.bandwidth >
    (double) est.latency_ns;
}

/* Dispatch the pages [from, pl->end) of window pl that the plugin
 * did not say read as zeros (holes.h): a client that copies a sparse
 * image skips those, so reading them ahead reads bytes nobody wants.
 * The mark, *mark (NO_MARK: none), goes on the first page dispatched
 * at or past it: a mark on a zero page, which no reader would take,
 * or among the reader's own pages before from, moves to the next page
 * dispatched, or goes when none is.  *mark is left at the page that
 * carries it, or NO_MARK.  Returns the pages inserted.
 */
static uint64_t
dispatch_data (struct adaptra_engine *e, const struct adaptra_volume *cv,
               uint64_t from, const struct placement *pl, uint64_t *mark)
{
  /* The volume is the stream's: its pages, its jobs.  Dispatch only
   * counts and queues on it.
   */
  struct adaptra_volume *v = (struct adaptra_volume *) cv;
  uint64_t first, last, inserted = 0, want = *mark;

  *mark = NO_MARK;
  while (adaptra_volume_data_run (e, v, from, pl->end, &first, &last)) {
    if (want != NO_MARK && want < last && *mark == NO_MARK)
      *mark = max_u64 (want, first);
    inserted += adaptra_prefetch_dispatch (e, v, first, last, *mark,
                                           pl->s->id, pl->method,
                                           ADAPTRA_PG_READAHEAD);
    from = last;
  }
  return inserted;
}

/* The first page of window pl to dispatch.  A miss's reader reads the
 * pages from the miss to the end of its request itself: a window that
 * starts at the miss is prefetched past them, unless the window would
 * wait in the queue longer than a backend read takes (queue_slow;
 * adaptive mode).  Then it is queued from the miss, the reader's own
 * pages with it, and the reader, who waits for the backend anyway,
 * finds its first page in that job and runs it
 * (adaptra_prefetch_steal), the whole job when less than
 * ADAPTRA_JOB_MIN would be left past its request: one backend request
 * reads the request and the window, as Linux's synchronous read-ahead
 * does.  On the remote model (5 ms, 200 MB/s) that is 0.6 ms more for
 * the reader for 32 pages, and a 5 ms request less for a worker.  The
 * workers are what a ramp of many new streams runs short of: 4 of
 * them carry about 700 requests a second at 5 ms, and 10000 streams
 * starting within 10 s issue 1000 first windows a second, which
 * waited behind 1 to 2 s of queue (adaptra-sim --pool 8G --workload
 * streams:10000:16K:16K).  Fixed mode keeps them apart, as the legacy
 * kernel did.
 */
static uint64_t
first_dispatched (const struct adaptra_engine *e, const struct event *ev,
                  const struct placement *pl)
{
  if (ev->what == EVENT_MISS && pl->start == ev->reader &&
      (e->cfg.mode != ADAPTRA_MODE_ADAPTIVE || !queue_slow (e)))
    return max_u64 (ev->last, pl->start);
  return pl->start;
}

/* The frame of page p when it is in the pool and stream id read it,
 * or ADAPTRA_NO_FRAME.
 */
static uint32_t
stream_page (struct adaptra_engine *e, uint64_t p, uint64_t id)
{
  uint32_t f = adaptra_pool_lookup (&e->pool, p);

  if (f != ADAPTRA_NO_FRAME &&
      adaptra_pool_page (&e->pool, f)->stream_id == id)
    return f;
  return ADAPTRA_NO_FRAME;
}

/* Settle where the mark of window pl goes; returns whether it is
 * early.
 *
 * A mark inside the window (or none) stays as it is: it is dispatched
 * with the window's pages.  A mark before the window (a look-ahead
 * longer than the window: lone_window) is early: it stays on its page
 * when that page is one of an earlier window of pl's stream, in the
 * pool, that the reader has still to read (past the request of ev,
 * whose pages it has looked at already), for issue () to mark;
 * otherwise it moves to the window's first page.  Either way pl->mark
 * is then the page that carries the window's look-ahead.
 */
static bool
early_mark (struct adaptra_engine *e, const struct event *ev,
            struct placement *pl)
{
  if (pl->mark == NO_MARK || pl->mark >= pl->start)
    return false;
  if (pl->mark >= ev->last &&
      stream_page (e, pl->mark, pl->s->id) != ADAPTRA_NO_FRAME)
    return true;
  pl->mark = pl->start;
  return false;
}

/* Issue the window pl: record it as its stream's current one and
 * dispatch its pages.  Every window of every case goes through here.
 * Its mark is settled first (early_mark): an early one is set on its
 * page in an earlier window once the window is dispatched, without a
 * mark of its own; any other goes with the window's pages
 * (dispatch_data).  The early page is looked up again after the
 * dispatch: the dispatch may have evicted it to make room for the
 * window, and its frame may hold one of the window's pages by then,
 * which the mark must not land on (the reader would take it a window
 * too late, as the stream's state).  The look-ahead then goes with
 * the page, as a mark on any evicted page does.  pl->mark ends as the
 * page that carries it (NO_MARK: none), where a forward stream's
 * state goes (carry_state), and the tracer sees it.
 */
static void
issue (struct adaptra_engine *e, const struct event *ev, struct placement *pl)
{
  struct adaptra_stream *s = pl->s;
  uint64_t from = first_dispatched (e, ev, pl);
  bool early = early_mark (e, ev, pl);
  uint64_t inserted;
  uint32_t f;                   /* the frame of the page pl->mark */

  s->method = (uint8_t) pl->method;
  s->reader_index = ev->reader;
  s->ra_index = pl->start;
  s->readahead_index = pl->end;
  s->mark_index = pl->mark != NO_MARK ? pl->mark
    : s->backward ? pl->start : pl->end;
  s->age = adaptra_pool_clock (&e->pool);
  s->issue_ns = adaptra_now (e);
  s->lost = 0;
  s->hits = 0;
  e->last_window_stream = s->id;

  if (early) {
    uint64_t none = NO_MARK;

    inserted = dispatch_data (e, ev->v, from, pl, &none);
    f = stream_page (e, pl->mark, s->id);
    if (f != ADAPTRA_NO_FRAME)
      adaptra_pool_set_mark (&e->pool, f);
    else
      pl->mark = NO_MARK;
  }
  else {
    inserted = dispatch_data (e, ev->v, from, pl, &pl->mark);
    f = pl->mark != NO_MARK ? adaptra_pool_lookup (&e->pool, pl->mark)
      : ADAPTRA_NO_FRAME;
  }
  if (f != ADAPTRA_NO_FRAME && !s->backward)
    carry_state (e, s, s->id, f);
  adaptra_stats_count_window (&e->stats, pl->method, inserted, pl->at_eof);
  trace (e, ADAPTRA_TRACE_WINDOW, ev, pl, inserted);
}

/* The page past which forward stream s reads nothing ahead for now
 * (stream.c: adaptra_streams_run_bound): its origin plus the length
 * by which most of the volume's recent runs that got as far as s
 * will have read once ev's request is in had ended; or UINT64_MAX.
 *
 * Not on a volume whose map knows zero extents (holes.h): its client
 * asked for block status, and copies each data extent whole, so its
 * runs end at the holes, where its windows stop already (dispatch_data,
 * trail_pages); recent extents' lengths would only cut a longer one
 * short, a wait more for each.
 */
static uint64_t
run_end (struct adaptra_engine *e, const struct event *ev,
         const struct adaptra_stream *s)
{
  uint64_t bound;

  if (s->backward || ev->last <= s->origin || ev->v->holes.n > 0)
    return UINT64_MAX;
  bound = adaptra_streams_run_bound (&e->streams, s, ev->last - s->origin,
                                     adaptra_now (e));
  return bound == UINT64_MAX ? bound : s->origin + bound;
}

/* Place forward window w at page start, fitted to the volume's end
 * and to where the volume's recent runs ended (run_end): a window
 * that would read past that is cut there, keeping its mark within
 * it, and none is issued when the reader's request already reaches
 * it.  Returns false when there is nothing to issue.
 */
static bool
place_forward (struct adaptra_engine *e, const struct event *ev,
               struct placement *pl, uint64_t start, struct adaptra_window w)
{
  uint64_t end;

  if (w.ra == 0)
    return false;
  if (e->cfg.mode == ADAPTRA_MODE_ADAPTIVE &&
      (end = run_end (e, ev, pl->s)) < start + w.ra) {
    adaptra_stats_count_cut (&e->stats, start + w.ra - max_u64 (start, end));
    if (end <= max_u64 (start, ev->last))
      return false;
    w.ra = end - start;
    w.la = min_u64 (w.la, w.ra);
  }
  if (!adaptra_window_fit_eof (start, ev->v->end_page,
                               pl->method == ADAPTRA_METHOD_CONTEXTA, &w,
                               &pl->at_eof)) {
    adaptra_stat_add (&e->stats.readahead_end, 1);
    return false;
  }
  pl->start = start;
  pl->end = start + w.ra;
  pl->mark = w.la ? start + w.ra - min_u64 (w.la, start + w.ra) : NO_MARK;
  return true;
}

/* Place backward window w to end (exclusive) at page end, cut at the
 * volume's first page.  Returns false when it would be empty.
 */
static bool
place_backward (struct adaptra_engine *e, const struct event *ev,
                struct placement *pl, uint64_t end, struct adaptra_window w)
{
  const uint64_t zero = ev->v->first_page;

  if (end == zero) {
    adaptra_stat_add (&e->stats.readahead_end, 1);
    return false;
  }
  pl->method = ADAPTRA_METHOD_BACKWARD;
  pl->start = max_u64 (sub_sat_u64 (end, w.ra), zero);
  pl->end = end;
  pl->mark = pl->start > zero && w.la > 0 ? pl->start + w.la : NO_MARK;
  pl->at_eof = pl->start == zero;
  return true;
}

/* With adaptra-max=auto, a stream whose reader had to wait for its
 * read-ahead (the window arrived late: the backend's latency is more
 * than the window covers) doubles its own cap, zfetch style, beyond the
 * bandwidth-delay estimate; the pool bound still applies.  The
 * estimate alone cannot see the parallelism a backend offers.
 *
 * Where the model says the backend is latency-bound (model.h), the
 * cap stops at LATE_CAP_BDPS times what the
 * backend delivered a latency in the last second (R x L there).  A
 * cap so far ahead of what arrives does not make the window come
 * sooner: a reader still late is waiting for bandwidth.  And R follows
 * the windows of a latency-bound reader (each doubling delivers about
 * twice as much a latency), so the ceiling does not hold such a reader
 * back.  Without it a guest's batch job (scripts/bench/traces, trace
 * B), reading faster than the remote model delivers, doubled its cap
 * to a quarter of the pool, and the 64 MiB window past its stream's
 * end was read for nothing in one run of two: 50 MiB more from the
 * backend.  The streams that share the link (adaptra_streams_sharing: those
 * with prefetch queued or being read; the table also holds streams
 * that ended, as a copy's extents) share that ceiling, one stream
 * alone has all of it, and a cap raised before, when the model
 * allowed more, comes down to it: sixteen readers sharing the remote
 * model's link (W2) are each late for bandwidth at every window, their
 * caps doubled to 8 x R x L each and their windows grew to what the
 * pool allowed (about 1.5 MiB each), read ahead of every reader at any
 * stop (2.5% more than the readers read in 3 s; 1.3% at the shared
 * ceiling).  The disk model seeks and is not latency-bound, and the
 * bandwidth is not known until a slot of reads is over (model.h):
 * there the ceiling is the pool's alone.
 *
 * Where the recent reads took more than LATE_SLOW_READS times the
 * least latency (their transfer, or their wait behind others at a busy
 * link, is most of their time), parallel reads hide little: the
 * ceiling is LATE_SLOW_CAP_BDPS products, the window the reader is in
 * and the next one.  More ahead of a reader that waits for bandwidth
 * only queues in front of its next page, and a backend that serves
 * waiting reads in any order (nbdkit's rate filter) finishes the job
 * holding that page up to the extra bytes' transfer later: at 8
 * products a lone reader as fast as the remote model's link, 128 KiB
 * reads 4 deep, saw a p99 of 14-16 ms against no filter's 6.5 ms.
 * Reads that take their latency alone keep LATE_CAP_BDPS: there R
 * follows the windows.
 */
#define LATE_CAP_BDPS 8
#define LATE_SLOW_READS 2
#define LATE_SLOW_CAP_BDPS 2

static void
raise_cap (struct adaptra_engine *e, struct adaptra_stream *s,
           const struct adaptra_model_estimate *est,
           struct adaptra_window_bounds *b)
{
  uint64_t spare = adaptra_pool_spare (&e->pool);
  uint64_t ceiling = (e->cfg.pool_bytes / ADAPTRA_POOL_WINDOWS)
    >> e->page_shift;

  /* Nothing to raise or bring down. */
  if (e->cfg.max_bytes != 0 || (s->late == 0 && s->cap <= b->max))
    return;
  if (est->latency_bound && est->bdp > 0) {
    uint64_t bdps = est->read_ns > LATE_SLOW_READS * est->latency_ns
      ? LATE_SLOW_CAP_BDPS : LATE_CAP_BDPS;

    ceiling = min_u64 (ceiling,
                       max_u64 (b->max, bdps * est->bdp /
                                adaptra_streams_sharing (&e->streams, s) >> e->page_shift));
  }
  if (s->late > 0) {
    s->cap = 2 * max_u64 (s->cap, b->max);
    s->late = 0;
  }
  s->cap = min_u64 (s->cap, ceiling);
  if (s->cap > b->max)
    b->max = min_u64 (s->cap, spare);
}

/* A lone stream on a backend with no latency that reads in parallel
 * hide (adaptra_latency_unhidden: a disk's head, the page cache's
 * CPUs) needs no more read ahead than keeps the backend busy: its
 * reader, faster than the backend, waits for bandwidth whatever the
 * window, and every page read ahead when it stops was read for
 * nothing.  Nor can reads in parallel hide anything there, and the
 * pieces of one window read at once reach a disk's head out of order,
 * a seek each.  So its window is one read of the model's chunk (a
 * read's fixed cost at the transfer rate, within
 * ADAPTRA_MODEL_CHUNK_FLOOR and _MAX: what makes that cost small;
 * where the model sees seeks, its budget), at most what one read
 * carries (e->slot_pages, the most of a job whose frames are
 * scattered: queue.c), dispatched as one job.  With windows grown to
 * a quarter of the pool (16 MiB on the disk model), in four pieces
 * read at once, a lone 64 KiB reader at the disk model waited up to
 * 100 ms at every window (a piece that reached the head after the
 * other three), and the 16-32 MiB read ahead when a run of 3 s
 * stopped were 4% of its bytes.  An adaptra-max the user set is kept,
 * as raise_cap keeps it.
 *
 * Its look-ahead (the pages from its mark to the end of its window,
 * la; b->lead) is at least the window: the next window is queued when
 * the reader enters this one, behind it at the head, and a reader
 * that catches up waits for at most the window it needs.  Whether
 * that keeps the head busy depends on the host: the next window
 * reaches the head only once the reader has woken up from its wait,
 * read the window before and taken the mark, and a worker has woken
 * up in turn; the head meanwhile serves what was queued.  A window of
 * 256 KiB is 1.7 ms at 150 MiB/s, and a 64 KiB reader on two busy
 * CPUs took 0.75 ms for that chain and often more: the disk model's
 * head stood idle about 120 times in 8 s (2-3% of its time).  So the
 * look-ahead follows the host, as TCP's window follows the path
 * (additive increase): when the reader, which waited for its
 * read-ahead since the stream's last decision, takes a mark and finds
 * nothing of its volume queued or being read (the head ran dry while
 * the reader was on its way), the look-ahead grows by a window, up to
 * the stream's effective max (adaptra_readahead_max_pages: 1 MiB on
 * the disk model, 6.7 ms of its head).  It never shrinks while the
 * stream lasts, as a slow spell of the host comes back: the stream's
 * last window carries it, as the pages from its mark to its end,
 * where its mark is on its first page or before it (other windows'
 * marks lie inside them, and they carry none: a window's worth).  A
 * reader slower than the backend never waits, and a reader that runs
 * the jobs itself (no workers) leaves none queued: neither grows it.
 *
 * A look-ahead longer than the window puts the mark on a page of an
 * earlier window (issue).  It grows without two jobs going out
 * together, whose pieces would race to the head: the window that
 * grows it is that much longer (one read still, at most
 * e->slot_pages), so that the mark after it is again a window past
 * the reader.
 *
 * Lone: no other stream has prefetch queued or being read
 * (adaptra_streams_sharing), and the window issued last was its own.  Streams
 * that take turns at a seeking disk (several readers, or one reader
 * of interleaved streams) each find the others' jobs done now and
 * then; their windows stay the runs that the model's budget sizes.
 * waited: s's reader waited for its read-ahead since its last
 * decision.  Returns whether s is such a stream: then b's max (the
 * window) and lead (the look-ahead, which may be longer) are set.
 */
static bool
lone_window (struct adaptra_engine *e, const struct event *ev,
             const struct adaptra_stream *s, bool waited,
             const struct adaptra_model_estimate *est,
             struct adaptra_window_bounds *b)
{
  uint64_t window, lead, grown;

  if (e->cfg.max_bytes != 0 || e->last_window_stream != s->id ||
      adaptra_streams_sharing (&e->streams, s) > 1)
    return false;
  if (!adaptra_latency_unhidden (est))
    return false;
  window = min_u64 (b->max,
                    min_u64 (max_u64 (est->chunk >> e->page_shift, 1),
                             e->slot_pages));
  lead = s->mark_index <= s->ra_index
    ? max_u64 (s->readahead_index - s->mark_index, window) : window;
  grown = ev->what == EVENT_MARK && waited && ev->v->flight_bytes == 0 &&
    adaptra_workers_take_jobs (e) ? lead + window : lead;
  grown = min_u64 (grown, max_u64 (adaptra_readahead_max_pages (e), window));
  b->max = min_u64 (b->max, min_u64 (window + sub_sat_u64 (grown, lead),
                                     e->slot_pages));
  b->lead = grown;
  return true;
}

/* Rescue the n pages of s from the reader's page: they would be
 * evicted before the reader gets there.
 */
static void
rescue (struct adaptra_engine *e, const struct event *ev,
        struct adaptra_stream *s, uint64_t n)
{
  struct placement pl = {
    .s = s, .start = ev->reader, .end = ev->reader + n, .mark = NO_MARK,
  };
  uint64_t moved = adaptra_pool_rescue (&e->pool, ev->reader, n);

  adaptra_stat_add (&e->stats.readahead_rescue, 1);
  adaptra_stat_add (&e->stats.pgreadahead_rescue, moved);
  trace (e, ADAPTRA_TRACE_RESCUE, ev, &pl, moved);
}

/* Pages of s's window still ahead of the reader: on a mark, from the
 * mark to the window's end.  A miss counts none: they were lost.
 */
static uint64_t
ahead_of_reader (const struct event *ev, const struct adaptra_stream *s)
{
  if (ev->what == EVENT_MISS || s->readahead_index <= ev->reader)
    return 0;
  return s->readahead_index - ev->reader;
}

/* The state method's inputs for stream s with the reader at index.
 * Where the model sees seeks (seeks), T is measured over the stream's
 * last two intervals and the window takes the stream's own share of
 * it (state_share); elsewhere over one, at adaptra-ratio.
 */
static struct adaptra_state_input
state_input (const struct adaptra_engine *e, const struct adaptra_stream *s,
             uint64_t index, uint64_t la_old, bool seeks)
{
  struct adaptra_state_input in = { .share = e->cfg.ratio };

  in.stream_shift = index > s->reader_index ? index - s->reader_index : 1;
  in.global_size = adaptra_pool_reclaimable (&e->pool);
  in.global_shift = adaptra_pool_clock (&e->pool) - s->age;
  in.ra_old = s->readahead_index - s->ra_index;
  in.la_old = la_old;
  in.lost = s->lost;
  if (seeks) {
    in.prev_shift = s->prev_shift;
    in.prev_global_shift = s->prev_global_shift;
    if (s->share > 0)
      in.share = s->share;
  }
  return in;
}

/* After stream s's state window sized from in: keep its interval for
 * the next estimate (kept wherever, so that a stream whose model
 * turns to seeks has one at once) and step its share of T
 * (adaptra_window_share; 0, adaptra-ratio, where no seeks).
 * At each turn at a seeking backend one window is read, so a window
 * twice as large halves the turns and the seeks between them
 * (eight streams at the disk model: the seeks were 15% of the head's
 * time at adaptra-ratio's 50%); adaptra-ratio is the seed's share, a
 * margin for T's noise, and a T steadied over two intervals needs
 * less of one while the stream loses no page.  Elsewhere a larger
 * window pays nothing (no seeks to save) but holds pages longer: the
 * stream keeps the seed's one interval and share.
 */
static void
state_share (struct adaptra_stream *s, const struct adaptra_state_input *in,
             unsigned ratio, bool seeks)
{
  s->prev_shift = in->stream_shift;
  s->prev_global_shift = in->global_shift;
  s->share = seeks ? adaptra_window_share (in->share, ratio, in->lost) : 0;
}

/* The state method's window *w for known stream pl->s.  Returns false
 * when the stream rescued its pages ahead or found no room instead.
 */
static bool
state_window (struct adaptra_engine *e, const struct event *ev,
              struct adaptra_window_bounds *b, struct placement *pl,
              struct adaptra_window *w)
{
  struct adaptra_stream *s = pl->s;
  uint64_t la_old = ahead_of_reader (ev, s);
  uint64_t now = adaptra_now (e);
  struct adaptra_model_estimate est;
  struct adaptra_state_input in;
  struct adaptra_state_decision d;
  bool waited = s->late > 0, lone;

  /* One estimate for every part of the decision. */
  adaptra_model_estimate (&e->model, now, &est);
  in = state_input (e, s, ev->reader, la_old, est.seeks);

  raise_cap (e, s, &est, b);
  lone = lone_window (e, ev, s, waited, &est, b);
  if (!lone)
    b->lead = min_u64 (lead_pages (e, s, &est, in.stream_shift, in.ra_old,
                                   now), b->max);
  d = adaptra_window_state (&in, b);
  switch (d.action) {
  case ADAPTRA_STATE_RESCUE:
    rescue (e, ev, s, la_old);
    return false;
  case ADAPTRA_STATE_NONE:
    adaptra_stat_add (&e->stats.readahead_shrink, 1);
    return false;
  case ADAPTRA_STATE_WINDOW:
    break;
  }
  state_share (s, &in, b->ratio, est.seeks);
  *w = d.window;
  /* A lone stream's look-ahead may be longer than its window. */
  if (lone)
    w->la = b->lead;
  return true;
}

/* A window issued on a miss starts at the miss, and the reader reads
 * req pages it needs itself: size the read-ahead beyond them.
 */
static struct adaptra_window
beyond (struct adaptra_window w, uint64_t req)
{
  w.ra += req;
  return w;
}

/* Size the forward window *w of stream pl->s with the method its case
 * asks for in pl->method: INITIAL (a new stream at its volume's first
 * page or at its client's second adjacent read, history the pages read
 * behind it), CONTEXT (a new stream with history pages read just
 * behind the reader) or STATE (a known stream).  The mode is the window
 * policy's (adaptra_window_fixed_mode): asked here, for every forward window;
 * in fixed mode it decides the window and the method whatever was
 * asked, and no adaptive method is consulted.  pl->method ends as the
 * method that sized *w.  Returns false when there is no window.
 */
static bool
size_forward (struct adaptra_engine *e, const struct event *ev,
              struct adaptra_window_bounds *b, uint64_t history,
              struct placement *pl, struct adaptra_window *w)
{
  const uint64_t req = ev->last - ev->reader;

  if (adaptra_window_fixed_mode (b, w, &pl->method))
    return true;
  switch (pl->method) {
  case ADAPTRA_METHOD_INITIAL:
    /* Four times what the stream has read: at the volume's first page
     * its request (history 0), at its second read (adjacent_read) the
     * request before it too.  The mark half way then leaves its
     * reader two requests' worth more to read while its next window
     * is queued and read: when many streams start at once the queue
     * holds 1 to 2 s of throughput, and 10000 streams reading a 16
     * KiB request a second (adaptra-sim --pool 8G --workload
     * streams:10000:16K:16K) had 2 s of look-ahead at their first
     * mark with four times the one request, and most waited at their
     * tenth read: 98.93% of the reads over 600 s served at once,
     * 99.22% with both requests.
     */
    *w = adaptra_window_initial (req + min_u64 (history, req), b);
    return true;
  case ADAPTRA_METHOD_CONTEXT:
    *w = beyond (adaptra_window_context (ev->reader - ev->v->first_page,
                                         history, b, &pl->method), req);
    return true;
  default:
    assert (pl->method == ADAPTRA_METHOD_STATE);
    return state_window (e, ev, b, pl, w);
  }
}

/* A new stream of the event's volume for its client (a full table
 * gives up its least recently used one: stream.c), expecting page next,
 * its run begun at page origin (the first page of the client's reads
 * the pool shows it made just before: run_end measures the run from
 * there).
 */
static struct adaptra_stream *
new_stream (struct adaptra_engine *e, const struct event *ev, uint64_t next,
            uint64_t origin)
{
  struct adaptra_client *c = adaptra_client_of (e, ev->client);
  struct adaptra_stream *s;

  s = adaptra_streams_new (&e->streams, ev->client, next, adaptra_now (e));
  s->volume = ev->v->id;
  s->origin = origin;
  if (c)
    c->streams_started++;
  return s;
}

/* Does page p name stream s's reader?  It must hold a page of s that a
 * reader got to: read by a client, or read on demand.  A read-ahead
 * page nobody has read yet proves nothing.
 */
static bool
read_by_stream (const struct adaptra_engine *e, uint64_t p, uint64_t *id)
{
  uint32_t f = adaptra_pool_lookup (&e->pool, p);

  if (f == ADAPTRA_NO_FRAME ||
      (adaptra_pool_page (&e->pool, f)->flags & ADAPTRA_PG_READAHEAD))
    return false;
  *id = adaptra_pool_page (&e->pool, f)->stream_id;
  return *id != 0;
}

/* The stream the miss ev belongs to, found by evidence that its reader
 * is the one reading: the page before the miss for a forward stream
 * (or any page of this request before it, which the request itself
 * reads), the page just above the request for a backward one.  Returns
 * NULL if there is none; sets *near to a stream whose position alone
 * is close (see below).
 */
static struct adaptra_stream *
stream_of_miss (struct adaptra_engine *e, const struct event *ev,
                struct adaptra_stream **near)
{
  const struct adaptra_volume *v = ev->v;
  struct adaptra_stream *s = NULL;
  uint64_t id;
  uint32_t f;

  /* Pages outside v are another volume's, and name none of its
   * streams.
   */
  *near = NULL;
  if (ev->reader > ev->first) {
    f = adaptra_pool_lookup (&e->pool, ev->reader - 1);
    s = adaptra_streams_get (&e->streams,
                             adaptra_pool_page (&e->pool, f)->stream_id);
  }
  else if (ev->reader > v->first_page &&
           read_by_stream (e, ev->reader - 1, &id))
    s = adaptra_streams_get (&e->streams, id);
  if (s && !s->backward)
    return s;
  if (ev->last < v->end_page && read_by_stream (e, ev->last, &id) &&
      (s = adaptra_streams_get (&e->streams, id)) != NULL && s->backward)
    return s;

  /* Position alone: a forward stream's request that overtook the one
   * before it (its page before is not read yet), or whose pages were
   * evicted; a backward stream's read that ends at or below its last
   * read and not far below its window.  Not a miss just past a forward
   * window: its reader reads through the window, so the page before it
   * would be there.  Such a read is the stream's only as likely as a
   * random read landing there, which at a high rate of random reads is
   * often: unless the pool shows that a client read the pages behind
   * it (history, as for a new stream), it is no more the stream's than
   * any read without a stream, and goes the same way (start_stream).
   * The stream's next read, if it is the stream's, has its evidence.
   */
  s = adaptra_streams_find (&e->streams, ev->reader);
  if (s && s->volume != v->id)
    s = NULL;
  if (s && !s->backward &&
      ev->reader > adaptra_stream_position (s) + POSITION_SLACK)
    s = NULL;
  if (s && s->backward &&
      (ev->last > adaptra_stream_position (s) + 1 ||
       ev->last + POSITION_SLACK < s->ra_index))
    s = NULL;
  *near = s;
  return NULL;
}

/* Pages a client read just behind a forward read at index, and just
 * above a backward one ending at last: the history that shows a
 * sequential reader where no stream says so.
 */
static uint64_t
history_behind (const struct adaptra_engine *e,
                const struct adaptra_volume *v, uint64_t index,
                const struct adaptra_window_bounds *b)
{
  uint64_t max = min_u64 (HISTORY_WINDOWS * b->max, index - v->first_page);

  return adaptra_pool_history (&e->pool, index, max, true);
}

static uint64_t
history_above (const struct adaptra_engine *e, const struct adaptra_volume *v,
               uint64_t last, const struct adaptra_window_bounds *b)
{
  uint64_t max = min_u64 (HISTORY_WINDOWS * b->max, v->end_page - last);

  return adaptra_pool_run_from (&e->pool, last, max, true);
}

/* Does forward stream s's window hold every page a window issued on
 * miss ev would read ahead, from the first page past the request to
 * s's window's end (present: in the pool or in flight), s having lost
 * none of its pages to eviction?
 */
static bool
holds_ahead (const struct adaptra_engine *e, const struct event *ev,
             const struct adaptra_stream *s)
{
  uint64_t n;

  if (s->backward || s->lost > 0 || ev->last < s->ra_index ||
      ev->last >= s->readahead_index)
    return false;
  n = s->readahead_index - ev->last;
  return adaptra_pool_run_from (&e->pool, ev->last, n, false) == n;
}

/* The stream whose window holds the pages miss ev would read ahead
 * (holds_ahead): s, the miss's own stream if it has one, or the
 * stream of the first page past the request; else NULL.
 *
 * Readers that follow the same pages (a boot storm: W8, 16 guests
 * replaying one boot at once) reach a miss together.  The first one
 * to decide issues a window past its request and reads the request's
 * absent pages itself, but not at once: it first waits for, or copies,
 * the pages before them, without the lock.  Each reader that decided
 * meanwhile found the same pages absent, and its miss restarted the
 * window, the state method doubling it each time: 2.3x the unique
 * bytes in W8 with 16 guests (up to 17500 pages read ahead and never
 * read in one run, against about 3000 for one guest).  Such a
 * miss says nothing new about the stream, whose window is all there:
 * the reader follows it (follow).  A stream that lost pages does not:
 * their eviction is what its next window must answer (the state
 * method halves it).
 */
static struct adaptra_stream *
covering (struct adaptra_engine *e, const struct event *ev,
          struct adaptra_stream *s)
{
  uint32_t f;

  if (s && holds_ahead (e, ev, s))
    return s;
  f = ev->last < ev->v->end_page
    ? adaptra_pool_lookup (&e->pool, ev->last) : ADAPTRA_NO_FRAME;
  if (f == ADAPTRA_NO_FRAME)
    return NULL;
  s = adaptra_streams_get (&e->streams,
                           adaptra_pool_page (&e->pool, f)->stream_id);
  return s && holds_ahead (e, ev, s) ? s : NULL;
}

/* Miss ev follows stream s, whose window covers what ev would read
 * ahead (covering): no window, and the reader reads its own pages as
 * s's, so that the first to reach s's mark, whoever it is, issues s's
 * next window.  Returns s.
 */
static struct adaptra_stream *
follow (struct adaptra_engine *e, const struct event *ev,
        struct adaptra_stream *s)
{
  struct placement pl = {
    .s = s, .start = s->ra_index, .end = s->readahead_index,
    .mark = NO_MARK,
  };

  adaptra_stat_add (&e->stats.readahead_follow, 1);
  trace (e, ADAPTRA_TRACE_FOLLOW, ev, &pl, 0);
  adaptra_streams_advance (&e->streams, s, ev->first, ev->last,
                           adaptra_now (e));
  return s;
}

/* Does miss ev continue its client's previous read (Linux's prev_pos
 * rule): the request starts at the miss, right after the last page
 * the client touched outside a live stream, or after one of its
 * latest ADAPTRA_CLIENT_LONE_ENDS lone reads (remember_lone), and that
 * page is still read in the pool (h, the history behind the miss, is
 * not empty)?  AFTER_LAST, AFTER_LONE or NOT_ADJACENT.
 * Adaptive mode only: fixed mode keeps the seed's evidence, as the
 * legacy kernel it stands for did not start a window on the second
 * read of a scan either.
 *
 * The history rule alone starts a stream away from page 0 at its
 * fourth read, the first three waiting for the backend: 10000 streams
 * started within 10 s (adaptra-sim --pool 8G --workload
 * streams:10000:16K:16K) cost 40000 waits before any read-ahead, two
 * thirds of what 99% of reads served at once allows over 600 s.  Two
 * adjacent reads of one client start a stream here, at the second.
 * A random reader lands right after its own previous read on a
 * fraction 1/N of its reads (N the requests its span holds).
 * Streams interleaved on one connection (a `diff` of two files, a
 * guest reading a few files through one disk) are not adjacent read
 * to read, but each one's second read is right after its lone first:
 * with the last read alone, each of 8 streams interleaved at 64 KiB
 * over a 5 ms backend started at its fourth read and waited again at
 * its fifth, the link idle for the first 0.2 s (W3).  A boot
 * interleaves many runs of two or three reads too: such a second read
 * gets a trail (start_stream), not four times both requests, which
 * read 11% more of a boot's trace (the gate's T-boot-web) for nothing.
 */
enum adjacency { NOT_ADJACENT, AFTER_LAST, AFTER_LONE };

static enum adjacency
adjacent_read (struct adaptra_engine *e, const struct event *ev, uint64_t h)
{
  struct adaptra_client *c;
  unsigned i;

  if (e->cfg.mode != ADAPTRA_MODE_ADAPTIVE || ev->reader != ev->first ||
      h == 0 || (c = adaptra_client_of (e, ev->client)) == NULL)
    return NOT_ADJACENT;
  if (__atomic_load_n (&c->touched, __ATOMIC_RELAXED) == ev->first)
    return AFTER_LAST;
  for (i = 0; i < ADAPTRA_CLIENT_LONE_ENDS; i++)
    if (c->lone_ends[i] == ev->first)
      return AFTER_LONE;
  return NOT_ADJACENT;
}

/* Remember lone read ev, a miss that found no stream, among its
 * client's latest (adjacent_read): the page right after it.
 */
static void
remember_lone (struct adaptra_engine *e, const struct event *ev)
{
  struct adaptra_client *c = adaptra_client_of (e, ev->client);

  if (c == NULL)
    return;
  c->lone_ends[c->lone_end_next] = ev->last;
  c->lone_end_next = (c->lone_end_next + 1) % ADAPTRA_CLIENT_LONE_ENDS;
}

/* One step of a client's score of its lone reads (lone_runs,
 * lone_follows): up to LONE_RUNS_MAX when they did what the score
 * counts (up), else down to 0.
 */
static void
score_lone (uint32_t *score, bool up)
{
  if (up)
    *score = *score < LONE_RUNS_MAX ? *score + 1 : LONE_RUNS_MAX;
  else if (*score > 0)
    (*score)--;
}

/* Score read ev of a client, a miss with little history behind it,
 * right after one of the client's latest lone reads (after_lone: up,
 * to LONE_RUNS_MAX) or after none (down, to 0), and say whether its
 * reads continue its lone reads often enough (LONE_RUNS_MIN) for this
 * one to start a stream.  A random reader lands right after one of
 * its latest lone reads by chance (volume.h: ADAPTRA_CLIENT_LONE_ENDS),
 * between reads that land after none: its score stays under the
 * minimum and its chance read stays random.  Streams interleaved on
 * one connection continue them read after read: after the first
 * round, the first stream's second read raises the score, and every
 * other stream's starts it.
 */
static bool
lone_reads_continue (struct adaptra_engine *e, const struct event *ev,
                     bool after_lone)
{
  struct adaptra_client *c = adaptra_client_of (e, ev->client);

  if (c == NULL)
    return false;
  score_lone (&c->lone_follows, after_lone);
  return after_lone && c->lone_follows >= LONE_RUNS_MIN;
}

/* Did a client read page p (present, and not a read-ahead page nobody
 * has read yet)?
 */
static bool
read_by_client (const struct adaptra_engine *e, uint64_t p)
{
  uint32_t f = adaptra_pool_lookup (&e->pool, p);

  return f != ADAPTRA_NO_FRAME &&
    !(adaptra_pool_page (&e->pool, f)->flags & ADAPTRA_PG_READAHEAD);
}

/* Does request ev start a data run: does it begin the volume, or
 * follow a page that the plugin's block status calls zero?
 */
static bool
starts_data_run (const struct adaptra_engine *e, const struct event *ev)
{
  uint64_t first, last;

  return ev->first == ev->v->first_page ||
    !adaptra_volume_data_run (e, ev->v, ev->first - 1, ev->first, &first,
                              &last);
}

/* The trail's pages past lone read ev of client c: TRAIL_REQUESTS
 * times its request; or, for a client that reads one request at a
 * time (depth.h: its peak of reads in flight), when the read starts
 * a data run (starts_data_run) that the plugin's block status ends
 * within max pages (holes.h), the run to its end: a client that asked
 * for block status and reads a run's first page copies the run whole.
 * A trail of two requests there made each data extent of a sparse
 * image's copy a stream of its own that ramped up from two requests,
 * its reader waiting for the backend at every doubling.  A client
 * with reads of its own in flight (qemu-img convert) reads the run
 * ahead itself, and a trail over it only puts its requests behind
 * the trail's jobs.  What the map does not know reads as data, so a
 * guest that never asks block status, or a run longer than max,
 * keeps the two requests.
 */
static uint64_t
trail_pages (const struct adaptra_engine *e, struct adaptra_client *c,
             const struct event *ev, uint64_t max)
{
  uint64_t n = TRAIL_REQUESTS * (ev->last - ev->reader), first, last;

  if (__atomic_load_n (&c->depth.peak_requests, __ATOMIC_RELAXED) <=
      ADAPTRA_DEPTH_MIN_REQUESTS &&
      starts_data_run (e, ev) &&
      adaptra_volume_data_run (e, ev->v, ev->last, ev->last + max, &first,
                               &last) &&
      first == ev->last && last < ev->last + max && last - first > n)
    n = last - first;
  return n;
}

/* Issue the trail of read ev of client c (trail_pages): a new stream
 * whose run began at page origin, its window right past the read, its
 * mark on its first page; unless another reader's trail or window
 * holds the pages: then ev follows that window's stream.  Returns the
 * stream.
 */
static struct adaptra_stream *
issue_trail (struct adaptra_engine *e, const struct event *ev,
             struct adaptra_window_bounds *b, struct adaptra_client *c,
             uint64_t origin)
{
  struct placement pl;
  struct adaptra_window w;

  if ((pl.s = covering (e, ev, NULL)) != NULL)
    return follow (e, ev, pl.s);
  pl.s = new_stream (e, ev, ev->last, origin);
  pl.method = ADAPTRA_METHOD_INITIAL;
  w.ra = min_u64 (trail_pages (e, c, ev, b->max), b->max);
  w.la = w.ra;
  if (place_forward (e, ev, &pl, ev->last, w))
    issue (e, ev, &pl);
  return pl.s;
}

/* Lone read ev, a miss that found no stream: score whether its
 * client's previous lone read was followed by the next page, and when
 * the client's lone reads start runs (LONE_RUNS_MIN), issue the trail:
 * a window of TRAIL_REQUESTS times the request right past it, its
 * mark on its first page, for a new stream.  Returns that stream, or
 * NULL.  Adaptive mode only, as adjacent_read.
 *
 * A cold boot reads many short runs, each begun by a read that no
 * stream could have foreseen (Linux's ondemand_readahead reads a lone
 * read as is too).  Without the trail the run's second read, adjacent
 * to the first, misses as well and starts a stream of four times both
 * requests (adjacent_read), and that window, four requests past a
 * run that often ends at its second or third read, is mostly read for
 * nothing.  With the trail the second read takes the trail's mark
 * instead, and the stream goes on by the state method from a window
 * of TRAIL_REQUESTS requests: the run pays one miss, and its windows
 * grow from what it read.  The score keeps a random reader, whose
 * next page is rarely read, from trailing.  docs/bench/fleet.md has
 * the figures on a boot's trace and a random workload.
 */
static struct adaptra_stream *
trail (struct adaptra_engine *e, const struct event *ev,
       struct adaptra_window_bounds *b, const struct adaptra_stream *near)
{
  struct adaptra_client *c = adaptra_client_of (e, ev->client);

  if (c == NULL || e->cfg.mode != ADAPTRA_MODE_ADAPTIVE)
    return NULL;
  if (c->lone_next != 0) {
    score_lone (&c->lone_runs, read_by_client (e, c->lone_next - 1));
  }
  /* A next page already in the pool says nothing of whether the client
   * goes on past this read: that read is not scored.
   */
  c->lone_next = ev->last < ev->v->end_page &&
    adaptra_pool_lookup (&e->pool, ev->last) == ADAPTRA_NO_FRAME
    ? ev->last + 1 : 0;
  /* Not next to a stream's window either: there the read is more
   * likely a stream's stray request than a run of its own.
   */
  if (c->lone_runs < LONE_RUNS_MIN || near != NULL)
    return NULL;
  return issue_trail (e, ev, b, c, ev->first);
}

/* A miss with no stream (near: a stream whose window it is next to,
 * stream_of_miss): start one if its client's previous read was just
 * before it (the initial method, as at page 0) or the pool shows
 * sequential history (the context method); else it is a random read,
 * maybe with a trail.
 */
static struct adaptra_stream *
start_stream (struct adaptra_engine *e, const struct event *ev,
              struct adaptra_window_bounds *b,
              const struct adaptra_stream *near)
{
  const struct adaptra_volume *v = ev->v;
  const uint64_t req = ev->last - ev->reader;
  struct placement pl;
  struct adaptra_window w;
  enum adjacency adjacent;
  uint64_t h;

  /* The volume's first page: a new stream, sized from the request
   * (initial method).
   */
  if (ev->reader == v->first_page) {
    pl.s = new_stream (e, ev, ev->last, v->first_page);
    pl.method = ADAPTRA_METHOD_INITIAL;
    if (size_forward (e, ev, b, 0, &pl, &w) &&
        place_forward (e, ev, &pl, ev->reader, w))
      issue (e, ev, &pl);
    return pl.s;
  }

  /* Pages a client read just behind the miss, more than EVIDENCE
   * requests of them: a new stream, sized from that history (context
   * method, accelerated when the history reaches the first page).
   * The request's own pages before the miss are the reader's too,
   * although it has not copied them yet (as on a mark: resume): the
   * history runs from the request's first page.  Counted from the
   * miss, a reader whose request ran past the end of a window found
   * none, and its miss was random: adaptra-sim --pool 8G --workload
   * streams:10000:16K:16K, 10000 of them in the first 15 s, one a
   * stream whose first window ended inside a request.
   */
  h = history_behind (e, v, ev->first, b) + (ev->reader - ev->first);
  adjacent = adjacent_read (e, ev, h);
  /* Right after one of its client's latest lone reads, with other
   * reads between, where its reads lately did so too: the second read
   * of one of several runs, as a boot reads (often two or three reads
   * long) or streams interleaved on one connection: a new stream with
   * its trail, rather than four times both requests.
   */
  if (h <= EVIDENCE * req && adjacent != AFTER_LAST &&
      lone_reads_continue (e, ev, adjacent == AFTER_LONE))
    return issue_trail (e, ev, b, adaptra_client_of (e, ev->client),
                        ev->reader - h);
  if (h > EVIDENCE * req || adjacent == AFTER_LAST) {
    /* Unless a window holds the pages ahead: a reader of its stream. */
    if ((pl.s = covering (e, ev, NULL)) != NULL)
      return follow (e, ev, pl.s);
    pl.s = new_stream (e, ev, ev->last, ev->reader - h);
    pl.method = adjacent == AFTER_LAST ? ADAPTRA_METHOD_INITIAL
                                       : ADAPTRA_METHOD_CONTEXT;
    if (size_forward (e, ev, b, h, &pl, &w) &&
        place_forward (e, ev, &pl, ev->reader, w))
      issue (e, ev, &pl);
    return pl.s;
  }

  /* The same above the request: a new backward stream, its window
   * below the request.
   */
  h = history_above (e, v, ev->last, b);
  if (h > EVIDENCE * (ev->last - ev->first)) {
    pl.s = new_stream (e, ev, ev->first, ev->first);
    pl.s->backward = true;
    if (place_backward (e, ev, &pl, ev->first,
                        adaptra_window_backward (ev->last - ev->first, 0, b)))
      issue (e, ev, &pl);
    return pl.s;
  }

  /* Anything else is random: no stream, and a window only as the
   * trail of a client whose lone reads start runs.
   */
  adaptra_stat_add (&e->stats.readrandom, 1);
  adaptra_stat_add (&e->stats.pgreadrandom, req);
  remember_lone (e, ev);
  return trail (e, ev, b, near);
}

uint64_t
adaptra_readahead_miss (struct adaptra_engine *e,
                        const struct adaptra_volume *v, int client,
                        uint64_t first, uint64_t last, uint64_t index)
{
  const struct event ev = {
    .what = EVENT_MISS, .v = v, .client = client,
    .first = first, .last = last, .reader = index,
  };
  struct adaptra_window_bounds b;
  struct adaptra_stream *near, *cover;
  struct placement pl;
  struct adaptra_window w;

  assert_locked (e);
  if (index > v->first_page)
    adaptra_stat_add (&e->stats.cache_miss, 1);
  if (e->cfg.mode == ADAPTRA_MODE_OFF)
    return 0;
  bounds_of (e, last - first, &b);
  if (b.max == 0)
    return 0;                   /* memory tight: demand only */

  pl.s = stream_of_miss (e, &ev, &near);
  if (!pl.s && near &&
      (near->backward
       ? history_above (e, v, last, &b) > EVIDENCE * (last - first)
       : history_behind (e, v, index, &b) > EVIDENCE * (last - index)))
    pl.s = near;
  if (!pl.s) {
    struct adaptra_stream *s = start_stream (e, &ev, &b, near);

    return s ? s->id : 0;
  }

  /* A known backward stream: its next window below the request, twice
   * the larger of the request and its last window.
   */
  if (pl.s->backward) {
    w = adaptra_window_backward (last - first, pl.s->readahead_index -
                                 pl.s->ra_index, &b);
    if (place_backward (e, &ev, &pl, first, w))
      issue (e, &ev, &pl);
    adaptra_streams_advance (&e->streams, pl.s, first, last, adaptra_now (e));
    return pl.s->id;
  }

  /* A known forward stream missed.  Behind its window: an unrelated
   * read near it, which must not drag the stream back.
   */
  if (index < pl.s->ra_index) {
    /* Within a window's length behind: a request of this stream that
     * arrived late.  Read it for the stream, issue nothing.
     */
    if (pl.s->ra_index - index <= pl.s->readahead_index - pl.s->ra_index)
      return pl.s->id;
    adaptra_stat_add (&e->stats.readrandom, 1);
    adaptra_stat_add (&e->stats.pgreadrandom, last - index);
    return 0;
  }

  /* Another window (its own, issued by another reader of the same
   * pages, or another stream's) holds what a window here would read
   * ahead: follow it.
   */
  if ((cover = covering (e, &ev, pl.s)) != NULL)
    return follow (e, &ev, cover)->id;

  /* Inside or past its window: the window ran out (no mark was
   * reached, or it ended at a hole) or its pages were evicted or
   * dropped, so restart the window at the miss (state method), beyond
   * the pages the reader reads itself.
   */
  pl.method = ADAPTRA_METHOD_STATE;
  if (size_forward (e, &ev, &b, 0, &pl, &w) &&
      place_forward (e, &ev, &pl, index, beyond (w, last - index)))
    issue (e, &ev, &pl);
  adaptra_streams_advance (&e->streams, pl.s, first, last, adaptra_now (e));
  return pl.s->id;
}

/* Is the request of the mark event ev from s's own reader?  The seed's
 * test: more than half the pages from the previous mark to this one
 * were read since the window was issued (in any order, so reordered
 * requests pass), or the request itself is as large as a window.  A
 * read that merely lands on the mark is not the reader.
 */
static bool
reader_of (const struct adaptra_stream *s, const struct event *ev,
           const struct adaptra_window_bounds *b)
{
  /* Forward the mark is above the reader's page, backward below it. */
  uint64_t interval = s->mark_index > s->reader_index
    ? s->mark_index - s->reader_index : s->reader_index - s->mark_index;
  uint64_t req = ev->last - ev->first;

  if (interval == 0)
    interval = 1;

  return (s->hits + req) * 2 > interval || req >= b->max;
}

/* Re-arm a look-ahead mark further on when the backend is congested,
 * so that the stream tries again shortly instead of losing its async
 * trigger.  The new mark goes on a page of the same window: one that
 * carries window, the stream id of the mark just taken.  That is s's
 * own id, or, when s was resumed from that mark (a new stream with a
 * new id), the id of the stream that issued the window; the new mark
 * keeps that id and the state, so that a reader who comes back after
 * s left the table resumes from it in turn.  Asking for s's own id,
 * a resumed stream never found a page: its deferred window lost its
 * mark, and its reader read on to the window's end, a miss.  With
 * 10000 streams in the default 1024 slots every mark is a resume
 * (adaptra-sim --pool 8G --workload streams:10000:16K:16K, 120 s:
 * 5896 such misses from 60 to 120 s).
 */
static void
rearm (struct adaptra_engine *e, const struct event *ev,
       const struct adaptra_stream *s, uint64_t window)
{
  uint64_t p = ev->reader + max_u64 (ahead_of_reader (ev, s) / 2, 1);
  uint32_t f;

  if (s->backward || p >= s->readahead_index)
    return;
  f = stream_page (e, p, window);
  if (f != ADAPTRA_NO_FRAME) {
    adaptra_pool_set_mark (&e->pool, f);
    carry_state (e, s, window, f);
  }
}

/* A forward stream's mark was taken, and the stream has left the table
 * (pushed out by newer streams, or idle for 10 minutes).  The pages a
 * client read behind the mark are the evidence that its reader is
 * back; without such history the read that landed here is not the
 * stream's (a random read into a window that a finished scan left
 * behind), and starts nothing.
 *
 * With the window size and age that the mark page carries, the stream
 * resumes where it was: a new stream takes them, the reader's advance
 * since the window was issued is taken as the window's size (the
 * marks of successive state windows are about a window apart), and the
 * state method goes on; the stream is returned.  This is the seed's
 * stateless (context) path on a mark, and like it, it rescues the
 * pages ahead when they would be evicted before the reader gets there
 * (the state method's test, on the carried age).  Every forward mark
 * carries that state (issue, rearm); a backward window's mark does not
 * (the reader moves away from the pages above it), and starts nothing.
 */
static struct adaptra_stream *
resume (struct adaptra_engine *e, const struct event *ev, uint32_t f,
        struct adaptra_window_bounds *b)
{
  const struct adaptra_volume *v = ev->v;
  const struct adaptra_page *page = adaptra_pool_page (&e->pool, f);
  uint64_t index = page->page_no;
  uint64_t window = page->window;
  uint64_t room = v->end_page - index;
  uint64_t ahead = adaptra_pool_run_from (&e->pool, index,
                                          min_u64 (max_u64 (window, b->max),
                                                   room),
                                          false);
  /* The request's own pages before the mark are the reader's too,
   * although it has not copied them yet: count the history from the
   * request's first page.
   */
  uint64_t h = history_behind (e, v, ev->first, b) + (index - ev->first);
  struct adaptra_stream *s;
  uint64_t now;

  if (window == 0 || h <= EVIDENCE * (ev->last - ev->first))
    return NULL;
  s = new_stream (e, ev, ev->last, index - h);
  s->method = page->method;
  s->readahead_index = index + ahead;
  s->ra_index = max_u64 (sub_sat_u64 (s->readahead_index, window),
                         v->first_page);
  s->mark_index = index;
  s->reader_index = max_u64 (sub_sat_u64 (index, window), v->first_page);
  /* The clock's low 32 bits: it moved on less than 2^32 ticks, or the
   * window's pages would be long gone.
   */
  now = adaptra_pool_clock (&e->pool);
  s->age = now - (uint32_t) ((uint32_t) now - page->age);
  s->issue_ns = adaptra_now (e);
  adaptra_stat_add (&e->stats.streams_resumed, 1);
  return s;
}

void
adaptra_readahead_mark (struct adaptra_engine *e,
                        const struct adaptra_volume *v, int client,
                        uint64_t first, uint64_t last, uint32_t f)
{
  const struct adaptra_page *page = adaptra_pool_page (&e->pool, f);
  const struct event ev = {
    .what = EVENT_MARK, .v = v, .client = client,
    .first = first, .last = last, .reader = page->page_no,
  };
  struct adaptra_window_bounds b;
  struct placement pl;
  struct adaptra_window w;
  bool resumed = false;

  assert_locked (e);
  adaptra_stats_count_return (&e->stats, page->method);
  pl.s = adaptra_streams_get (&e->streams, page->stream_id);
  if (e->cfg.mode == ADAPTRA_MODE_OFF)
    return;
  bounds_of (e, last - first, &b);
  if (b.max == 0)
    return;
  if (!pl.s) {
    if ((pl.s = resume (e, &ev, f, &b)) == NULL)
      return;
    resumed = true;
  }

  /* A backward stream's reader reached the mark: its next window below
   * the current one, unless the backend is congested.
   */
  if (pl.s->backward) {
    if (!reader_of (pl.s, &ev, &b))
      return;
    if (adaptra_prefetch_congested (e, v))
      adaptra_stat_add (&e->stats.io_congestion, 1);
    else if (place_backward (e, &ev, &pl, pl.s->ra_index,
                             adaptra_window_backward (last - first,
                                                      pl.s->readahead_index -
                                                      pl.s->ra_index, &b)))
      issue (e, &ev, &pl);
    adaptra_streams_advance (&e->streams, pl.s, first, last, adaptra_now (e));
    return;
  }

  if (!resumed && !reader_of (pl.s, &ev, &b)) {
    /* Another reader (a random read, say) landed on the mark: issue
     * nothing, but keep a mark ahead for the stream's own reader.
     */
    rearm (e, &ev, pl.s, page->stream_id);
    return;
  }
  /* A forward stream's reader reached the mark: its next window right
   * after the current one (state method), issued while the pages
   * between the mark and the window's end cover the backend's latency;
   * when the backend is congested, a mark further on instead.
   */
  if (adaptra_prefetch_congested (e, v)) {
    adaptra_stat_add (&e->stats.io_congestion, 1);
    rearm (e, &ev, pl.s, page->stream_id);
  }
  else {
    pl.method = ADAPTRA_METHOD_STATE;
    if (size_forward (e, &ev, &b, 0, &pl, &w) &&
        place_forward (e, &ev, &pl, pl.s->readahead_index, w))
      issue (e, &ev, &pl);
  }
  adaptra_streams_advance (&e->streams, pl.s, first, last, adaptra_now (e));
}
