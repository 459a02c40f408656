/* recognise.c: which stream a read belongs to.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Stream recognition: which stream a read belongs to, and so which
 * case of the read-ahead decision it is (readahead.c sizes and places
 * the window of each case; readahead.h is the seam between them).
 * As in the seed's context method, the evidence is what the pool
 * holds: the pages a reader got to, and the history behind a read.
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
 * stream and issues nothing (adaptra_recognise_covering and
 * adaptra_recognise_follow).  Without a stream:
 *
 *   page 0                    initial method, a new stream
 *   the client's previous     initial method from both requests
 *   read just before          (adaptive mode: adjacent_read), a new
 *                             stream at its second read; or follow
 *   one of its latest lone    a trail (TRAIL_REQUESTS requests) past
 *   reads just before         it, a new stream at its second read; or
 *                             follow
 *   history behind            context / accelerated context (the pages
 *     > EVIDENCE x req        before the miss were read, or are the
 *                             request's own, and are still here), a
 *                             new stream; or, if a window holds the
 *                             pages ahead, follow its stream
 *   history above             a backward stream
 *     > EVIDENCE x req
 *   otherwise                 random: read as is, counted as
 *                             readrandom; no stream, unless its client's
 *                             lone reads start runs: then a trail past
 *                             it, a new stream (trail).  A random scan
 *                             can never grow a window.
 *
 * Requiring more history than the request (Linux 2013, "make context
 * readahead more conservative", asks for more than one request; we ask
 * for more than EVIDENCE) keeps random readers from starting streams.
 *
 * On a mark the stream is the one the mark's page names, and the
 * request is its reader's only by the seed's test (read enough since
 * the window was issued: adaptra_recognise_reader).  A stream that
 * has left the table resumes from the state its mark page carries,
 * when the history behind the mark shows its reader is back
 * (adaptra_recognise_resume).
 */

#include <config.h>

#include <assert.h>
#include <inttypes.h>

#include "minmax.h"
#include "range.h"
#include "window.h"
#include "engine-impl.h"
#include "readahead.h"
#include "recognise.h"

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

/* How far past a forward stream's expected page (its position), or
 * below a backward stream's window, a miss may land (requests that
 * overtook others) and still belong to it, in pages.  Tight, so that
 * random reads that land near a window do not drive its stream (a
 * position match needs the pool's history besides: stream_of_miss):
 * 16 pages of 4 KiB (the default page) are one request of 64 KiB, the
 * benchmark's sequential readers' size, that overtook the one before it.
 */
#define POSITION_SLACK 16

/* A new stream of the event's volume for its client (a full table
 * gives up its least recently used one: stream.c), expecting page next,
 * its run begun at page origin (the first page of the client's reads
 * the pool shows it made just before: readahead.c's run_end measures
 * the run from there).
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

/* Does page p name the stream of the reader that got there?  Then its
 * id goes in *id.  The page must be one a reader got to: read by a
 * client, or read on demand.  A read-ahead page nobody has read yet
 * proves nothing.
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
   * any read without a stream, and goes the same way
   * (adaptra_recognise_start).
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

/* The stream of miss ev: stream_of_miss's, or the stream it found
 * near when the pool shows the history a new stream would need
 * (EVIDENCE requests behind the read, or above it for a backward
 * stream).  A near stream without it stays in *near for
 * adaptra_recognise_start, which starts no trail beside it.
 */
struct adaptra_stream *
adaptra_recognise_miss (struct adaptra_engine *e, const struct event *ev,
                        const struct adaptra_window_bounds *b,
                        struct adaptra_stream **near)
{
  const struct adaptra_volume *v = ev->v;
  const uint64_t first = ev->first, last = ev->last, index = ev->reader;
  struct adaptra_stream *s = stream_of_miss (e, ev, near);

  if (!s && *near &&
      ((*near)->backward
       ? history_above (e, v, last, b) > EVIDENCE * (last - first)
       : history_behind (e, v, index, b) > EVIDENCE * (last - index)))
    s = *near;
  return s;
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
 * the reader follows it (adaptra_recognise_follow).  A stream that
 * lost pages does not: their eviction is what its next window must
 * answer (the state method halves it).
 */
struct adaptra_stream *
adaptra_recognise_covering (struct adaptra_engine *e, const struct event *ev,
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
 * ahead (adaptra_recognise_covering): no window, and the reader reads
 * its own pages as s's, so that the first to reach s's mark, whoever
 * it is, issues s's next window.  Returns s.
 */
struct adaptra_stream *
adaptra_recognise_follow (struct adaptra_engine *e, const struct event *ev,
                          struct adaptra_stream *s)
{
  struct placement pl = {
    .s = s, .start = s->ra_index, .end = s->readahead_index,
    .mark = NO_MARK,
  };

  adaptra_stat_add (&e->stats.readahead_follow, 1);
  adaptra_readahead_trace (e, ADAPTRA_TRACE_FOLLOW, ev, &pl, 0);
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
 * gets a trail (adaptra_recognise_start), not four times both requests, which
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
 * keeps the TRAIL_REQUESTS requests.
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

  if ((pl.s = adaptra_recognise_covering (e, ev, NULL)) != NULL)
    return adaptra_recognise_follow (e, ev, pl.s);
  pl.s = new_stream (e, ev, ev->last, origin);
  pl.method = ADAPTRA_METHOD_INITIAL;
  w.ra = min_u64 (trail_pages (e, c, ev, b->max), b->max);
  w.la = w.ra;
  if (adaptra_readahead_place_forward (e, ev, &pl, ev->last, w))
    adaptra_readahead_issue (e, ev, &pl);
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
  if (c->lone_next != 0)
    score_lone (&c->lone_runs, read_by_client (e, c->lone_next - 1));
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
struct adaptra_stream *
adaptra_recognise_start (struct adaptra_engine *e, const struct event *ev,
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
    if (adaptra_readahead_size_forward (e, ev, b, 0, &pl, &w) &&
        adaptra_readahead_place_forward (e, ev, &pl, ev->reader, w))
      adaptra_readahead_issue (e, ev, &pl);
    return pl.s;
  }

  /* Pages a client read just behind the miss, more than EVIDENCE
   * requests of them: a new stream, sized from that history (context
   * method, accelerated when the history reaches the first page).
   * The request's own pages before the miss are the reader's too,
   * although it has not copied them yet (as on a mark:
   * adaptra_recognise_resume): the history runs from the request's
   * first page.  Counted from the miss, a reader whose request ran
   * past the end of a window found none, and its miss was random:
   * adaptra-sim --pool 8G --workload streams:10000:16K:16K, 10000 of
   * them in the first 15 s, one a stream whose first window ended
   * inside a request.
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
    if ((pl.s = adaptra_recognise_covering (e, ev, NULL)) != NULL)
      return adaptra_recognise_follow (e, ev, pl.s);
    pl.s = new_stream (e, ev, ev->last, ev->reader - h);
    pl.method = adjacent == AFTER_LAST ? ADAPTRA_METHOD_INITIAL
                                       : ADAPTRA_METHOD_CONTEXT;
    if (adaptra_readahead_size_forward (e, ev, b, h, &pl, &w) &&
        adaptra_readahead_place_forward (e, ev, &pl, ev->reader, w))
      adaptra_readahead_issue (e, ev, &pl);
    return pl.s;
  }

  /* The same above the request: a new backward stream, its window
   * below the request.
   */
  h = history_above (e, v, ev->last, b);
  if (h > EVIDENCE * (ev->last - ev->first)) {
    pl.s = new_stream (e, ev, ev->first, ev->first);
    pl.s->backward = true;
    if (adaptra_readahead_place_backward (e, ev, &pl, ev->first,
                        adaptra_window_backward (ev->last - ev->first, 0, b)))
      adaptra_readahead_issue (e, ev, &pl);
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

/* Is the request of the mark event ev from s's own reader?  The seed's
 * test: more than half the pages from the previous mark to this one
 * were read since the window was issued (in any order, so reordered
 * requests pass), or the request itself is as large as a window.  A
 * read that merely lands on the mark is not the reader.
 */
bool
adaptra_recognise_reader (const struct adaptra_stream *s,
                          const struct event *ev,
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

/* A forward stream's mark was taken, and the stream has left the table
 * (pushed out by newer streams, or idle ADAPTRA_STREAM_REAP_NS).  The
 * pages a client read behind the mark are the evidence that its reader is
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
 * carries that state (readahead.c: adaptra_readahead_issue, rearm); a
 * backward window's mark does not (the reader moves away from the
 * pages above it), and starts nothing.
 */
struct adaptra_stream *
adaptra_recognise_resume (struct adaptra_engine *e, const struct event *ev,
                          uint32_t f, struct adaptra_window_bounds *b)
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
