/* aside.c: stepping aside, a read straight to the backend.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Stepping aside (docs/DESIGN.md §7): while its backend is about as
 * fast as a copy from the pool, a volume serves its misses straight
 * from the backend into the client's buffer, makes no read-ahead
 * decision and caches nothing; what the pool holds of it is still
 * served.
 *
 * When: adaptra_steps_aside, asked by every locked read of the volume
 * (read.c), by a sampled stepped-aside read and by a new adaptra-bypass
 * (engine.c).  adaptra-bypass=always or never decides alone; auto asks
 * the volume's model (model.c: adaptra_model_fast) and, where its
 * clients read in streams, whether read-ahead has had its trial
 * (served).  The volume's bypass flag is what the hit path reads.
 *
 * How: a stepped-aside read takes one of two ways to the backend,
 * both without the engine lock, and a hedged read (hedge.c) takes the
 * last step of them:
 *
 *   read.c: read_unlocked        read.c: read_direct
 *   (absent pages, on the        (the locked path, lock
 *    lockless path)               dropped for the read; also a
 *                                 deep client's miss its volume
 *                                 does not keep, depth.h)
 *            \                          /
 *             +--> adaptra_read_aside <--+
 *                   |  claims the volume's sample? (a compare-and-
 *                   |  swap, at most once every ASIDE_SAMPLE_NS)
 *                   |      yes: cpu_use before
 *                   v
 *             adaptra_read_straight  <---- hedge.c: adaptra_read_hedged
 *                   |  backend pread into the client's buffer,
 *                   |  count_direct
 *                   v
 *             sampled: cpu_use after, machine_ns; if the engine lock
 *               is free (a trylock), the engine's and the volume's
 *               models take the sample and adaptra_steps_aside
 *               looks again
 *             else, while the volume is aside: its bytes count in
 *               the volume's next sample (adaptra_model_deliver)
 *
 * Why the ways without the engine lock are safe: read.c's note.
 */

#include <config.h>

#include "engine-impl.h"

/* Read-ahead's trial before a volume steps aside: its windows serve
 * the pool's worth of pages, or ASIDE_TRIAL_BYTES where the pool is
 * larger, so that the pool has filled and aged once.
 */
#define ASIDE_TRIAL_BYTES (4 * 1024 * 1024)

/* Has volume v's read-ahead had its trial: have its windows served
 * that many pages, or has no client of it started a stream?  Stepping
 * aside weighs the backend against the pool, so where streams read,
 * the pool must have served first: a volume that stepped aside after
 * its first 16 reads, before its first window was read, never read
 * ahead at all (and a test of read-ahead over the memory plugin saw
 * none); one that stepped aside after its first hit never filled a
 * tiny pool.  Random readers start no stream and step aside on the
 * model alone.  Lock held.
 */
static bool
served (struct adaptra_engine *e, struct adaptra_volume *v)
{
  uint64_t hits = v->readahead_hits, streams = 0;
  uint64_t trial = min_u64 (e->cfg.pool_bytes, ASIDE_TRIAL_BYTES)
    >> e->page_shift;
  size_t i;

  assert_locked (e);
  for (i = 0; !v->served && i < e->nclients; i++) {
    const struct adaptra_client *c = adaptra_client_at (e, i);

    if (c->used && c->volume == v) {
      hits += __atomic_load_n (&c->readahead_hits, __ATOMIC_RELAXED);
      streams += c->streams_started;
    }
  }
  v->served = v->served || hits >= trial;
  return v->served || streams == 0;
}

bool
adaptra_steps_aside (struct adaptra_engine *e, struct adaptra_volume *v)
{
  bool fast;

  assert_locked (e);
  switch (e->cfg.bypass) {
  case ADAPTRA_BYPASS_ALWAYS: fast = true; break;
  case ADAPTRA_BYPASS_NEVER: fast = false; break;
  case ADAPTRA_BYPASS_AUTO: default:
    fast = adaptra_model_fast (&v->model, adaptra_now (e), v->bypass) &&
      served (e, v);
    break;
  }
  if (fast != v->bypass) {
    __atomic_store_n (&v->bypass, fast, __ATOMIC_RELAXED);
    adaptra_stat_add (&e->stats.bypass_switches, 1);
    if (e->cfg.trace) {
      const struct adaptra_trace t = {
        .kind = ADAPTRA_TRACE_BYPASS,
        .bypass = { .volume = v->id, .on = fast,
                    .read_ns = v->model.pace, .bytes = v->model.all.n },
      };

      e->cfg.trace (e->cfg.trace_opaque, &t);
    }
  }
  return fast;
}

/* Account a read of bytes straight from the backend for client c (or
 * its error err).  Counters are atomic or per-thread: no lock needed.
 * The volume's bytes are the client's until it closes (direct_bytes):
 * an atomic add to the volume would move the cache line that every
 * stepped-aside read of the volume loads (its bypass flag) between
 * the CPUs at every read.
 */
static void
count_direct (struct adaptra_engine *e, struct adaptra_client *c,
              uint64_t bytes, int err)
{
  struct adaptra_stats *st = adaptra_stats_here (e);

  adaptra_stat_add (&st->backend_requests, 1);
  if (err) {
    adaptra_stat_add (&st->backend_errors, 1);
    return;
  }
  adaptra_stat_add (&st->backend_bytes, bytes);
  if (__atomic_load_n (&c->volume->bypass, __ATOMIC_RELAXED))
    adaptra_stat_add (&st->bypass_bytes, bytes);
  __atomic_fetch_add (&c->direct_bytes, bytes, __ATOMIC_RELAXED);
  __atomic_fetch_add (&c->backend_bytes, bytes, __ATOMIC_RELAXED);
}

/* Client c's read of the bytes request r wants of pages [p, p + n)
 * straight from the backend into its buffer, counted (count_direct);
 * returns 0 or the backend's error.  Lock not held.
 */
int
adaptra_read_straight (struct adaptra_engine *e, struct adaptra_client *c,
                       void *ctx, const struct adaptra_request *r,
                       uint64_t p, uint64_t n)
{
  uint64_t start = max_u64 (p << e->page_shift, r->offset);
  uint32_t bytes = (uint32_t) adaptra_request_bytes (r, p, n, e->page_shift);
  int err;

  assert_unlocked (e);
  err = e->backend.pread (ctx, r->buf + (start - r->offset), bytes,
                          start - c->volume->base);
  count_direct (e, c, bytes, err);
  return err;
}

/* How often the reads of a volume that stepped aside feed the
 * throughput estimates (adaptra_read_aside): at most once in this time.  A
 * sample takes the engine lock, and a stepped-aside read from a fast
 * backend takes little more than that lock would: sampling every read
 * would make the lock a serial section of every such read, which this
 * path exists to avoid.  A backend whose reads take this long or more
 * is still sampled at every read of a client at queue depth 1, so
 * read-ahead comes back within the reads model.h's averages need to see
 * a slowdown (at queue depth N, within N times as many).  Time-based,
 * the samples are an unbiased pick of the reads, where sampling every
 * slow read and some of the fast ones would weigh a few slow reads of
 * a fast backend up.
 */
#define ASIDE_SAMPLE_NS UINT64_C (1000000)

/* What the calling thread has had of the CPUs (struct adaptra_clock's
 * cpu_use) in *use; false where the clock does not know.
 */
static bool
cpu_use (const struct adaptra_engine *e, struct adaptra_cpu_use *use)
{
  return e->clock.cpu_use && e->clock.cpu_use (e->clock.opaque, use);
}

/* What the machine took of a read's time t, by what its thread had of
 * the CPUs just before (a) and just after (b) it.  The read's time off
 * the CPU is t less what the thread ran (b's CPU time counts a little
 * more than the read's, so this errs low).  Where the thread never left
 * its CPU (no new slice), all of it: a hypervisor gave the virtual CPU
 * to another guest, or an interrupt ran.  Else at most the time it
 * waited on a run queue (what it slept, in a disk, a socket or a lock,
 * is the backend's), and no more than that time off: a wait just
 * before or after the read, outside t, does not count.
 */
static uint64_t
machine_ns (uint64_t t, const struct adaptra_cpu_use *a,
            const struct adaptra_cpu_use *b)
{
  uint64_t off = t - min_u64 (t, b->run_ns - a->run_ns);

  return b->slices == a->slices ? off
    : min_u64 (off, b->wait_ns - a->wait_ns);
}

/* Client c's read of the absent pages [p, p + n) of request r, when
 * its volume stepped aside: straight from the backend into the
 * client's buffer, without the engine lock (from the lockless path,
 * or from read.c's read_direct, which drops it).  The throughput
 * sample that keeps the step-aside decision current is taken once every
 * ASIDE_SAMPLE_NS, by the read that claims it (a compare-and-swap of
 * the volume's aside_sampled_ns) and only if the engine lock is free:
 * losing some samples under contention costs the estimate nothing (it
 * is a moving average over many reads), waiting for the lock would
 * serialise the reads this path exists to spread.  Only the claiming
 * read asks what its thread had of the CPUs (on Linux two system
 * calls, about 2 us), just before and just after the backend's read,
 * and times the read between the two: the step-aside test leaves out
 * what the machine took of it (machine_ns, ADAPTRA_MODEL_FAST_*).
 */
int
adaptra_read_aside (struct adaptra_engine *e, struct adaptra_client *c,
                    void *ctx, const struct adaptra_request *r,
                    uint64_t p, uint64_t n)
{
  uint64_t bytes = adaptra_request_bytes (r, p, n, e->page_shift);
  uint64_t t0, t1 = 0, last, machine = 0;
  struct adaptra_cpu_use before, after;
  bool sample, known = false;
  int err;

  assert_unlocked (e);
  t0 = adaptra_now (e);
  /* Samples are claimed by the reads' starts, so that a read not
   * sampled costs one clock reading, not two; signed, since a
   * concurrent read that started later may have claimed its sample
   * first.
   */
  last = __atomic_load_n (&c->volume->aside_sampled_ns, __ATOMIC_RELAXED);
  sample = (int64_t) (t0 - last) >= (int64_t) ASIDE_SAMPLE_NS &&
    __atomic_compare_exchange_n (&c->volume->aside_sampled_ns, &last, t0,
                                 false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  if (sample && (known = cpu_use (e, &before)))
    t0 = adaptra_now (e);
  err = adaptra_read_straight (e, c, ctx, r, p, n);
  if (err)
    return err;
  if (sample) {
    t1 = adaptra_now (e);
    if (known && cpu_use (e, &after))
      machine = machine_ns (t1 - t0, &before, &after);
  }
  if (sample && adaptra_trylock (e)) {
    adaptra_model_sample_waited (&e->model, bytes, t0, t1,
                                 ADAPTRA_MODEL_UNKNOWN, machine);
    adaptra_model_sample_waited (&c->volume->model, bytes, t0, t1,
                                 ADAPTRA_MODEL_UNKNOWN, machine);
    adaptra_steps_aside (e, c->volume);
    adaptra_unlock (e);
  }
  else if (__atomic_load_n (&c->volume->bypass, __ATOMIC_RELAXED))
    /* Its bytes still count in the volume's next sample: the step-aside
     * decision weighs what the reads in parallel deliver together
     * (ADAPTRA_MODEL_FAST_*), not the sampled read's time alone.  Not
     * once the volume stepped back: the engine samples every read
     * then, and the reads still out from before would make the next
     * one look paced by all of them, and step aside again at once.
     */
    adaptra_model_deliver (&c->volume->model, bytes);
  return 0;
}
