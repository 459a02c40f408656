/* readahead.c: the read-ahead decision on a miss or a mark.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The read-ahead decision: which method sizes a read's window, and
 * where the window goes.  Which stream the read belongs to, and so
 * which case of the decision it is, is recognise.c's: its design
 * note has the table of cases.
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
 * A known forward stream continues with the state method (or the
 * fixed window), a backward one with a doubled backward window.
 * recognise.c's cases without a stream start one with the initial
 * or context method, a backward window or a trail, and size and
 * place its window through the same calls as the cases here
 * (readahead.h).
 *
 * The window is clamped to [adaptra-min, the effective max], where the
 * max is adaptra-max, or with auto the larger of
 * ADAPTRA_AUTO_MAX_FLOOR and the backend's bandwidth-delay product,
 * raised to a larger request (bounds_of) and for a stream whose reader
 * came late (raise_cap), and always at most half of the pool's
 * inactive plus free pages (adaptra_pool_spare).  The look-ahead is
 * at least the pages the reader consumes while the backend fetches a
 * window, so a steady reader does not catch up with its read-ahead.
 *
 * A decision is data, as in Linux's mm/readahead.c: what happened is a
 * struct event (miss or mark, volume, client, the request's pages, the
 * reader's page), and each case below is a commented block that fills
 * a struct placement (stream, method, window, mark) and hands it to
 * adaptra_readahead_issue (), the one place a window is recorded and
 * dispatched.  Forward windows are sized by
 * adaptra_readahead_size_forward, which asks the window policy for
 * the mode (window.c) and otherwise uses the case's method.
 */

#include <config.h>

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>

#include "minmax.h"
#include "range.h"
#include "window.h"
#include "engine-impl.h"
#include "readahead.h"
#include "recognise.h"

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

/* Hand the tracer the decision of kind on ev, placed at pl, which
 * inserted or moved n pages (engine.h: struct adaptra_trace).
 */
void
adaptra_readahead_trace (struct adaptra_engine *e,
                         enum adaptra_trace_kind kind, const struct event *ev,
                         const struct placement *pl, uint64_t n)
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
 * its reader gets there (recognise.c: adaptra_recognise_resume).
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
dispatch_data (struct adaptra_engine *e, struct adaptra_volume *v,
               uint64_t from, const struct placement *pl, uint64_t *mark)
{
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
 * whose pages it has looked at already), for adaptra_readahead_issue
 * to mark;
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
void
adaptra_readahead_issue (struct adaptra_engine *e, const struct event *ev,
                         struct placement *pl)
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
  adaptra_readahead_trace (e, ADAPTRA_TRACE_WINDOW, ev, pl, inserted);
}

/* The page past which forward stream s reads nothing ahead for now
 * (stream.c: adaptra_streams_run_bound): its origin plus the length
 * by which most of the volume's recent runs that got as far as s
 * will have read once ev's request is in had ended; or UINT64_MAX.
 *
 * Not on a volume whose map knows zero extents (holes.h): its client
 * asked for block status, and copies each data extent whole, so its
 * runs end at the holes, where its windows stop already (dispatch_data,
 * recognise.c: trail_pages); recent extents' lengths would only cut a
 * longer one short, a wait more for each.
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
bool
adaptra_readahead_place_forward (struct adaptra_engine *e,
                                 const struct event *ev, struct placement *pl,
                                 uint64_t start, struct adaptra_window w)
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
bool
adaptra_readahead_place_backward (struct adaptra_engine *e,
                                  const struct event *ev, struct placement *pl,
                                  uint64_t end, struct adaptra_window w)
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
    uint64_t sharing = adaptra_streams_sharing (&e->streams, s);

    ceiling = min_u64 (ceiling, max_u64 (b->max, bdps * est->bdp / sharing
                                         >> e->page_shift));
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
 * earlier window (adaptra_readahead_issue).  It grows without two
 * jobs going out together, whose pieces would race to the head: the
 * window that grows it is that much longer (one read still, at most
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
  adaptra_readahead_trace (e, ADAPTRA_TRACE_RESCUE, ev, &pl, moved);
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
  /* Windows alike for a client's streams that take turns where each
   * turn costs a seek (adaptra_window_alike, the mean of their last
   * proposals: adaptra_streams_propose).  A client that reads several
   * files in lock step (W3) reaches their marks in the order their
   * windows end, and windows alike end in the order they began: the
   * turns keep the ramp's order, a sweep of the head, where T's noise,
   * window by window, scrambles it (a turn's seek 2.2-3.0 ms against
   * 2.8-3.4 in the filter at the disk model).  Not only while others'
   * jobs are queued: a stream that finds them done is still one of
   * the turns (lone_window), and left out it keeps its own T's window.
   */
  if (est.seeks && !lone)
    *w = adaptra_window_alike (&in, &d,
                               adaptra_streams_propose (&e->streams, s,
                                                        d.window.ra), b);
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
bool
adaptra_readahead_size_forward (struct adaptra_engine *e,
                                const struct event *ev,
                                struct adaptra_window_bounds *b,
                                uint64_t history, struct placement *pl,
                                struct adaptra_window *w)
{
  const uint64_t req = ev->last - ev->reader;

  if (adaptra_window_fixed_mode (b, w, &pl->method))
    return true;
  switch (pl->method) {
  case ADAPTRA_METHOD_INITIAL:
    /* Four times what the stream has read: at the volume's first page
     * its request (history 0), at its second read (recognise.c:
     * adjacent_read) the request before it too.  The mark half way
     * then leaves its reader two requests' worth more to read while
     * its next window is queued and read: when many streams start at
     * once the queue holds 1 to 2 s of throughput, and 10000 streams
     * reading a 16 KiB request a second (adaptra-sim --pool 8G --workload
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

uint64_t
adaptra_readahead_miss (struct adaptra_engine *e,
                        struct adaptra_volume *v, int client,
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

  pl.s = adaptra_recognise_miss (e, &ev, &b, &near);
  if (!pl.s) {
    struct adaptra_stream *s = adaptra_recognise_start (e, &ev, &b, near);

    return s ? s->id : 0;
  }

  /* A known backward stream: its next window below the request, twice
   * the larger of the request and its last window.
   */
  if (pl.s->backward) {
    w = adaptra_window_backward (last - first, pl.s->readahead_index -
                                 pl.s->ra_index, &b);
    if (adaptra_readahead_place_backward (e, &ev, &pl, first, w))
      adaptra_readahead_issue (e, &ev, &pl);
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
  if ((cover = adaptra_recognise_covering (e, &ev, pl.s)) != NULL)
    return adaptra_recognise_follow (e, &ev, cover)->id;

  /* Inside or past its window: the window ran out (no mark was
   * reached, or it ended at a hole) or its pages were evicted or
   * dropped, so restart the window at the miss (state method), beyond
   * the pages the reader reads itself.
   */
  pl.method = ADAPTRA_METHOD_STATE;
  if (adaptra_readahead_size_forward (e, &ev, &b, 0, &pl, &w) &&
      adaptra_readahead_place_forward (e, &ev, &pl, index,
                                       beyond (w, last - index)))
    adaptra_readahead_issue (e, &ev, &pl);
  adaptra_streams_advance (&e->streams, pl.s, first, last, adaptra_now (e));
  return pl.s->id;
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

void
adaptra_readahead_mark (struct adaptra_engine *e,
                        struct adaptra_volume *v, int client,
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
    if ((pl.s = adaptra_recognise_resume (e, &ev, f, &b)) == NULL)
      return;
    resumed = true;
  }

  /* A backward stream's reader reached the mark: its next window below
   * the current one, unless the backend is congested.
   */
  if (pl.s->backward) {
    if (!adaptra_recognise_reader (pl.s, &ev, &b))
      return;
    if (adaptra_prefetch_congested (e, v))
      adaptra_stat_add (&e->stats.io_congestion, 1);
    else if (adaptra_readahead_place_backward (e, &ev, &pl, pl.s->ra_index,
                             adaptra_window_backward (last - first,
                                                      pl.s->readahead_index -
                                                      pl.s->ra_index, &b)))
      adaptra_readahead_issue (e, &ev, &pl);
    adaptra_streams_advance (&e->streams, pl.s, first, last, adaptra_now (e));
    return;
  }

  if (!resumed && !adaptra_recognise_reader (pl.s, &ev, &b)) {
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
    if (adaptra_readahead_size_forward (e, &ev, &b, 0, &pl, &w) &&
        adaptra_readahead_place_forward (e, &ev, &pl,
                                         pl.s->readahead_index, w))
      adaptra_readahead_issue (e, &ev, &pl);
  }
  adaptra_streams_advance (&e->streams, pl.s, first, last, adaptra_now (e));
}
