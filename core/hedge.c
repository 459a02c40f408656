/* hedge.c: a waiting reader's deadline, and its own read after it.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Hedging (docs/DESIGN.md §6): a reader that needs pages a started
 * read holds (a worker's job, another client's miss) waits for them
 * no longer than its own read would take, then reads them itself,
 * within a credit that bounds what reading bytes twice may cost; the
 * started read still fills the pool.  The locked read path (read.c)
 * drives it, page by page of its request:
 *
 *   IN_FLIGHT page p, its job started (not stealable)
 *        |
 *        v
 *   adaptra_hedge_deadline: the model's time for the reader's own read
 *        |                  of [p, last) after the bytes in flight, or
 *        |                  a latency past it beside the reads in
 *        |                  flight where that pays; none unless
 *        |                  latency-bound
 *        v
 *   wait on p's queue until then  ---- woken, p READY ---> copy, on
 *        |
 *        v  deadline passed
 *   adaptra_read_hedged: hedge_affords (the credit: 1/HEDGE_SHARE of
 *        |               the bytes delivered, held to the limit)
 *        +-- pays:    aside.c: adaptra_read_straight of the run in
 *        |            flight into the client's buffer (io_hedge)
 *        +-- refused: wait on for the read that holds the pages
 *                     (io_hedge_refused)
 */

#include <config.h>

#include "range.h"
#include "engine-impl.h"
#include "aside.h"
#include "hedge.h"

/* How long a reader waits for a page that a read already started
 * holds (a worker's job, another client's miss): no longer than
 * reading what it needs itself would take, the model's time for one
 * read of the rest of its request, pages [p, last), after the bytes in
 * flight at the backend now, which a link that shares its bandwidth
 * fairly would deliver first (fetch_ns).  Then it reads them itself
 * (adaptra_read_hedged): a bound by construction on every wait, where
 * sizing the jobs bounds none.  Behind a token bucket (the rate filter in
 * front of a remote store) the read that wakes first takes the tokens
 * there are, so the reads in flight end out of order, the largest and
 * oldest last, and that is often the job that holds the reader's next
 * page: a 64 KiB reader waited 30-50 ms for it where its own read
 * takes 5.  The cost is the hedged bytes read twice; counting the
 * bytes in flight keeps it to the reads that a fair link would have
 * served sooner (without them, adaptra-sim's 16 streams on a busy
 * link read 27% of their bytes twice).  The fixed cost is the line's
 * intercept, or the least latency where that is less: a token bucket's
 * burst, then its large reads slowed to its rate, put the intercept at
 * nought, when no read takes less than a latency; taking nought for
 * "no deadline" left adaptra-sim's 64 KiB reader 24 ms behind 8 MiB of
 * its stream's startup jobs, its own read 5.3 ms.
 *
 * That bound (fair) is the latest a fair link ends the job; a reader
 * may hedge sooner where that can pay.  A bucket that shares its rate
 * among the reads in flight (processor sharing) serves the reader's
 * own read in about own = fixed + bytes x (reads in flight + 1) /
 * bandwidth, whatever the bytes of the others.  A wait a latency past
 * that (early = latency + own) is a job starved, not one sharing.
 * But the hedged read does not race the job: the reader waits for its
 * own read, own more, so hedging at early ends at early + own, and
 * pays only where that is before fair.  So the deadline is early where
 * early + own < fair, else fair: many reads in flight, each of a few
 * hundred KiB (adaptra-sim's 64 KiB reader behind a 200 MB/s bucket
 * with 2 MiB in flight: 14 ms fair, 9 early), not one large job nor a
 * latency long against the bytes (20 ms a read: early + own is 60 ms,
 * where the job ends by 40).  There hedging at early only added its
 * own read to the wait.  Without the pays test (min (early, fair))
 * adaptra-sim's W1 p99 rose 4.44 -> 4.66 ms and its 20 ms link's
 * max 46 -> 60 ms; with own alone for the deadline, W1's p99 was 5.5.
 *
 * Only where the backend is latency-bound (the model's latency_bound:
 * a latency of ADAPTRA_MODEL_LATENCY_MIN or more, and no seeks), which
 * is where a started job's own time, not its transfer, keeps a reader
 * waiting.  Not where distance costs (seeks: a disk's head): the job's
 * run is one pass of the head, and the reader's own read of a page in
 * it sends the head there out of turn and back, a seek each way for
 * every read in the queue behind it, so waiting for the run is the
 * faster way to the page.  A disk's near reads take no latency, so
 * this also holds before the model has seen its seeks (its first few
 * dozen reads).  Nor before the model has a rate.  Returns the
 * deadline on the engine's clock, UINT64_MAX for none.  Lock held.
 */
uint64_t
adaptra_hedge_deadline (struct adaptra_engine *e,
                        const struct adaptra_volume *v, uint64_t p,
                        uint64_t last)
{
  struct adaptra_model_estimate est;
  uint64_t now = adaptra_now (e);
  uint64_t bytes = adaptra_clamp_to_size (p << e->page_shift,
                                          (last - p) << e->page_shift,
                                          v->base + v->size);
  uint64_t own, fair, early;

  assert_locked (e);
  adaptra_model_estimate (&e->model, now, &est);
  if (!est.latency_bound || est.bandwidth == 0)
    return UINT64_MAX;
  est.fixed_ns = max_u64 (est.fixed_ns, est.latency_ns);
  fair = adaptra_model_fetch_ns (&est, bytes +
                                 adaptra_model_running (&e->model));
  own = adaptra_model_fetch_ns (&est, bytes *
                                (adaptra_model_reads (&e->model) + 1));
  early = est.latency_ns + own;
  return now + (early + own < fair ? early : fair);
}

/* What hedged reads may cost: a byte read twice for every HEDGE_SHARE
 * bytes the backend delivered, so that hedging adds at most 1/HEDGE_SHARE
 * to the bytes read below the filter (the tail-at-scale rule: hedge
 * only the few reads that wait longest, at a few percent of the load;
 * J. Dean and L. A. Barroso, "The Tail at Scale", CACM 2013).  A wait
 * passes its deadline for two reasons: the job that holds the page is
 * starved of the link (a token bucket serving the reads out of order),
 * the case hedging is for, rare and costing tens of milliseconds; or the
 * whole machine is slow (CPUs shared with busier programs), when every
 * job is late and the hedged read, on the same CPUs, is as late as the
 * job: a copy of a sparse image read 2.3% of its bytes twice on a
 * loaded 2-CPU machine.  The credit bounds the second without the
 * need to tell them apart.  Earned by every read the model samples
 * (adaptra_model_delivered), spent by hedged reads, and held to the
 * model's limit (bytes in flight that fill the link), so a long calm
 * stretch does not buy a long burst.  Starts at nought: a server's
 * first hedge follows HEDGE_SHARE times its bytes.  No gauge shows it:
 * it is brought up to date only when a wait passes its deadline, and
 * between such waits it fills to its cap (the limit, which the gauge
 * backend_flight_limit_bytes shows) once the backend delivered
 * HEDGE_SHARE times that, so a gauge sampled now and then would mostly
 * show the cap.  io_hedge_refused counts the waits it could not pay
 * for.
 */
#define HEDGE_SHARE 100

/* Can the credit pay for a hedged read of bytes now?  If so, take it.
 * Lock held.
 */
static bool
hedge_affords (struct adaptra_engine *e, uint64_t bytes)
{
  struct adaptra_model_estimate est;
  uint64_t delivered = adaptra_model_delivered (&e->model);

  assert_locked (e);
  adaptra_model_estimate (&e->model, adaptra_now (e), &est);
  e->hedge_credit = min_u64 (e->hedge_credit + (delivered - e->hedge_earned_at)
                             / HEDGE_SHARE, est.limit);
  e->hedge_earned_at = delivered;
  if (e->hedge_credit < bytes)
    return false;
  e->hedge_credit -= bytes;
  return true;
}

/* A reader's wait for the run of pages in flight [p, p + n) passed
 * its deadline (adaptra_hedge_deadline): read the bytes request r
 * wants of them straight from the backend into the client's buffer,
 * as read.c's read_direct does, if the credit affords them
 * (hedge_affords); else set *hedged false.  The read that holds them
 * goes on and fills the pool's pages when it ends; nothing here
 * writes them.  Coherency is read_direct's: the hedged read starts
 * after the request, so after any write that reached the backend
 * before it (a write that races the request may land on either side
 * of it, as for any read); a write meanwhile flags the pool's pages
 * STALE, as ever.  A backend error fails the request as a read of its
 * own would.  Lock held on entry and exit, dropped for the read.
 */
int
adaptra_read_hedged (struct adaptra_engine *e, struct adaptra_client *c,
                     void *ctx, const struct adaptra_request *r,
                     uint64_t p, uint64_t n, bool *hedged)
{
  int err;

  *hedged = hedge_affords (e, adaptra_request_bytes (r, p, n, e->page_shift));
  if (!*hedged)
    return 0;
  adaptra_unlock (e);
  err = adaptra_read_straight (e, c, ctx, r, p, n);
  adaptra_lock (e);
  return err;
}
