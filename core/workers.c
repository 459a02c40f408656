/* workers.c: the prefetch worker threads and the gate they pass.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The threads of workers.h, the gate (flight_open) that the model's
 * congestion limit and depth set, the take and completion that
 * adaptra-sim's simulated workers share with the threads (sim.h), and
 * the call through which a caller runs queued jobs itself.  Demand
 * reads never queue: the client's thread reads its own misses, and a
 * reader that needs a page of a job still queued steals the part of it
 * that it wants (queue.c).  Terms: docs/DESIGN.md §6.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "adaptra/sim.h"
#include "engine-impl.h"

/* The most pages of job, of stream s (NULL if it is no longer in the
 * table), that a worker starts: where the backend is latency-bound, the
 * model's chunk or product, whichever is larger (the window's first job,
 * queue.c), while none of the stream's jobs is being read; while one is,
 * the chunk or the model's job_min (what the window's other jobs are cut
 * to), if smaller; and while the model is in startup at most
 * ADAPTRA_WORKERS_STARTUP_LEAD; elsewhere (and for cache hints, which no
 * reader follows) the whole job.
 *
 * Why the product only first: it saves a reader at one request at a
 * time a round trip a window, where nothing of its stream is in flight
 * to hide the latency.  Behind a read of its own stream it saves
 * nothing, and a backend that shares its rate among the reads in
 * flight (a token bucket that serves whichever read lacks least, as
 * nbdkit's rate filter does; processor sharing) serves a stream's
 * later, smaller reads before an earlier, larger one, which is the one
 * its reader needs first: adaptra-sim's remote W1 (5 ms, 200 MB/s)
 * waited 20-25 ms for product-sized jobs (1.3 MiB) that up to seven
 * job_min-sized reads started after them overtook.  Alike in size, a
 * stream's reads end in the order they started.  Lock held.
 */
static uint64_t
start_pages (struct adaptra_engine *e, const struct adaptra_job *job,
             const struct adaptra_stream *s)
{
  struct adaptra_model_estimate est;
  uint64_t most;

  if (job->stream == 0)
    return UINT64_MAX;
  adaptra_model_estimate (&e->model, adaptra_now (e), &est);
  if (est.limit == UINT64_MAX)
    return UINT64_MAX;
  most = max_u64 (est.chunk, s && s->running_jobs > 0
                  ? min_u64 (est.job_min, est.bdp) : est.bdp);
  if (est.startup)
    most = min_u64 (most, ADAPTRA_WORKERS_STARTUP_LEAD);
  return max_u64 (most >> e->page_shift, 1);
}

/* Start job's first pages only, up to start_pages: the rest stays
 * queued in its place, for the next worker or for its reader to steal
 * (adaptra_queue_split; unless less than ADAPTRA_JOB_MIN would stay,
 * and the whole job starts).  A job a worker has started cannot be
 * stolen, and its reader, once it catches up, waits for all of it: a
 * window's last job (the rest of it, up to the model's job_max, four
 * products) or a startup job sized from a burst's rates (11 MiB over
 * the remote model) stalled a 64 KiB reader at queue depth 1 for
 * 25-80 ms, where its own next chunk takes about two latencies.  Lock
 * held.
 */
static void
start_at_most (struct adaptra_engine *e, struct adaptra_job *job,
               const struct adaptra_stream *s)
{
  uint64_t most = start_pages (e, job, s);

  if (job->npages > most)
    adaptra_queue_split (&e->queue, job, most);
}

bool
adaptra_prefetch_run_one (struct adaptra_engine *e, int volume, void *ctx)
{
  struct adaptra_volume *v;
  struct adaptra_job *job = NULL;

  adaptra_lock (e);
  v = adaptra_volume_of (e, volume);
  if (v)
    for (job = e->queue.head; job && job->volume != v; job = job->next)
      ;
  if (job == NULL) {
    adaptra_unlock (e);
    return false;
  }
  start_at_most (e, job, adaptra_streams_get (&e->streams, job->stream));
  adaptra_prefetch_take (e, job->prev, job, true);
  adaptra_unlock (e);
  adaptra_fetch_job_then_lock (e, ctx, job, false, false);
  adaptra_unlock (e);
  return true;
}

bool
adaptra_prefetch_peek (struct adaptra_engine *e, size_t k, uint64_t *offset,
                       uint32_t *count)
{
  struct adaptra_job *job;

  adaptra_lock (e);
  for (job = e->queue.head; job && k > 0; job = job->next)
    k--;
  if (job) {
    *offset = (job->first << e->page_shift) - job->volume->base;
    *count = job->bytes;
  }
  adaptra_unlock (e);
  return job != NULL;
}

/* May a prefetch job start while running bytes are being read from
 * the backend, busy of them by workers?  Under the model's congestion
 * limit, while the bytes are under it or none are; else while fewer
 * than the model's depth of jobs are (any number where latency-bound:
 * many slow streams, whose windows are a few pages, need many reads at
 * once), by the model's estimate est.
 */
static bool
open_by (const struct adaptra_model_estimate *est, uint64_t running,
         unsigned busy)
{
  if (est->limit != UINT64_MAX)
    return running == 0 || running < est->limit;
  return est->depth == 0 || busy < est->depth;
}

/* open_by, by the model's estimate now.  Lock held. */
static bool
flight_open (struct adaptra_engine *e, uint64_t running, unsigned busy)
{
  struct adaptra_model_estimate est;

  assert_locked (e);
  adaptra_model_estimate (&e->model, adaptra_now (e), &est);
  return open_by (&est, running, busy);
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

/* Does stream have ADAPTRA_MODEL_STREAM_READS of its jobs read by
 * workers now?  Then its next waits, and another stream's goes first:
 * one stream keeps at most that many backend handles busy (model.h).
 * Cache hints (stream 0) and streams that left the table are not
 * counted.  Lock held.
 */
static bool
stream_busy (struct adaptra_engine *e, uint64_t stream)
{
  const struct adaptra_stream *s = adaptra_streams_get (&e->streams, stream);

  return s && s->running_jobs >= ADAPTRA_MODEL_STREAM_READS;
}

/* Count a job of stream s that a worker starts (n = 1) or ends
 * (n = -1); s NULL: the stream is no longer in the table.  Lock held.
 */
static void
count_running (struct adaptra_engine *e, struct adaptra_stream *s, int n)
{
  if (s && (n > 0 || s->running_jobs > 0)) {
    bool had = adaptra_stream_has_jobs (s);

    s->running_jobs += (uint32_t) n;
    adaptra_stream_jobs (&e->streams, s, had);
  }
}

/* May worker w run job?  Its volume must have contexts, and a worker
 * for hints only takes a cache hint's job (of no stream): a boot
 * profile's extents are short and scattered, so following one is
 * bound by latency and wants many reads at once, where the windows of
 * streams, large and sequential, fill the backend's bandwidth with
 * adaptra-workers reads (DESIGN.md §8).
 */
static bool
may_run (struct adaptra_engine *e, const struct adaptra_worker *w,
         const struct adaptra_job *job)
{
  return job->volume->nctx > 0 && (!w->hints_only || job->stream == 0) &&
    !stream_busy (e, job->stream);
}

/* The job that continues the queue's batch (adaptra_queue_batch), or
 * else the first queued job (in fair order), that worker w may run,
 * and the one before it; NULL if none, or if the backend has its fill
 * of prefetch in flight (a worker of hints only does not ask: a boot
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
      !flight_open (e, adaptra_model_running (&e->model), e->workers_busy))
    return NULL;
  job = adaptra_queue_batch (&e->queue, adaptra_now (e), prev);
  if (job && may_run (e, w, job))
    return job;
  *prev = NULL;
  for (job = e->queue.head; job && !may_run (e, w, job);
       *prev = job, job = job->next)
    ;
  return job;
}

unsigned
adaptra_workers_wanted (const struct adaptra_model_estimate *est,
                        unsigned ceiling)
{
  uint64_t want;

  want = est->depth != 0 ? est->depth : ceiling;
  if (want < ADAPTRA_WORKERS_MIN)
    want = ADAPTRA_WORKERS_MIN;
  return want < ceiling ? (unsigned) want : ceiling;
}

/* The slots of a kind of workers (hints_only or not): [*first, *first
 * + *n), and the counts of their threads running and reading a job.
 * Lock held.
 */
static void
kind_of (struct adaptra_engine *e, bool hints_only, unsigned *first,
         unsigned *n, unsigned **alive, unsigned **busy)
{
  *first = hints_only ? e->nworkers : 0;
  *n = hints_only ? e->nhint_workers : e->nworkers;
  *alive = hints_only ? &e->hint_threads : &e->threads;
  *busy = hints_only ? &e->hint_workers_busy : &e->workers_busy;
}

static void *worker_main (void *arg);

/* Start a thread in the first free slot of the kind hints_only, after
 * joining the one that ended there.  Returns 0, EAGAIN when every slot
 * runs one, or pthread_create's error.  Lock held: a thread that ended
 * no longer takes it, so the join does not wait for the lock.
 */
static int
spawn (struct adaptra_engine *e, bool hints_only)
{
  unsigned first, n, *alive, *busy, i;
  struct adaptra_worker *w;
  int err;

  assert_locked (e);
  kind_of (e, hints_only, &first, &n, &alive, &busy);
  for (i = first; i < first + n && e->workers[i].alive; i++)
    ;
  if (i == first + n)
    return EAGAIN;
  w = &e->workers[i];
  if (w->exited)
    pthread_join (w->thread, NULL);
  w->exited = false;
  w->alive = true;
  err = pthread_create (&w->thread, NULL, worker_main, w);
  if (err) {
    w->alive = false;
    return err;
  }
  (*alive)++;
  return 0;
}

/* Would job's stream have ADAPTRA_MODEL_STREAM_READS of its jobs read
 * by workers if the queued ones before it started too (stream_busy,
 * looking ahead)?  A stream's queued jobs are linked in queue order.
 * Lock held.
 */
static bool
stream_full (struct adaptra_engine *e, const struct adaptra_job *job)
{
  const struct adaptra_stream *s = adaptra_streams_get (&e->streams,
                                                        job->stream);
  const struct adaptra_job *p;
  uint32_t k;

  if (!s)
    return false;
  k = s->running_jobs;
  for (p = job->stream_prev; p && k < ADAPTRA_MODEL_STREAM_READS;
       p = p->stream_prev)
    k++;
  return k >= ADAPTRA_MODEL_STREAM_READS;
}

/* How many queued jobs threads of the kind hints_only could start now,
 * at most most: in queue order, those they may run (may_run, with
 * each stream's jobs ahead of it counted as started) while the gate,
 * counting the jobs before as read, stays open (not asked for hints,
 * as next_for_worker).  A walk of at most the kind's ceiling of jobs.
 * Lock held.
 */
static unsigned
startable (struct adaptra_engine *e, bool hints_only,
           const struct adaptra_model_estimate *est, unsigned most)
{
  unsigned first, n, *alive, *busy, k = 0, seen = 0;
  uint64_t running = adaptra_model_running (&e->model);
  const struct adaptra_job *job;

  kind_of (e, hints_only, &first, &n, &alive, &busy);
  for (job = e->queue.head; job && k < most && seen < n;
       job = job->next, seen++) {
    if (job->volume->nctx == 0 || (hints_only && job->stream != 0) ||
        stream_full (e, job))
      continue;
    if (!hints_only && !open_by (est, running, *busy + k))
      break;
    running += job->bytes;
    k++;
  }
  return k;
}

/* Threads of the kind hints_only for the queued jobs they could start
 * now (startable), all at once: wake as many of the kind's threads
 * that wait as there are such jobs, and start one for each job more,
 * while fewer run than pay (adaptra_workers_wanted; all of the ceiling
 * for hints: a profile's reads are short and bound by latency,
 * DESIGN.md §8).  One thread woken or started an event made a chain:
 * each thread took its job and only then started or woke the next, a
 * thread's start or wake-up each, while the jobs the gate had just
 * let through waited; a window's jobs queued while the gate was
 * closed waited for completions one by one.  A thread that cannot
 * start is no error: the running ones read the queue.  Lock held.
 */
static void
grow (struct adaptra_engine *e, bool hints_only)
{
  unsigned first, n, *alive, *busy, want, idle, need, i;
  struct adaptra_model_estimate est;

  assert_locked (e);
  kind_of (e, hints_only, &first, &n, &alive, &busy);
  idle = *alive - *busy;
  /* Every thread of the ceiling reading: none to wake, none to start,
   * so neither the estimate nor the walk of the queue.
   */
  if (e->stopping || !e->workers || n == 0 || (idle == 0 && *alive >= n))
    return;
  adaptra_model_estimate (&e->model, adaptra_now (e), &est);
  want = hints_only ? n : adaptra_workers_wanted (&est, n);
  need = startable (e, hints_only, &est, want > *busy ? want - *busy : 0);
  for (i = 0; i < need && i < idle; i++)
    pthread_cond_signal (hints_only ? &e->hint_queued : &e->job_queued);
  while (need > idle && *alive < want && spawn (e, hints_only) == 0)
    idle++;
}

void
adaptra_workers_room (struct adaptra_engine *e)
{
  grow (e, false);
}

/* Simulated workers: a count without thread slots. */
bool
adaptra_workers_take_jobs (const struct adaptra_engine *e)
{
  return e->threads > 0 || (e->workers == NULL && e->nworkers > 0);
}

void
adaptra_workers_job_queued (struct adaptra_engine *e, bool hint)
{
  assert_locked (e);
  grow (e, false);
  if (hint)
    grow (e, true);
}

/* Worker w takes job (next_for_worker's; prev before it) off the
 * queue, its first pages only (start_at_most): it counts as reading one,
 * its read begins (adaptra_fetch_job_begin: its bytes count in flight
 * from here, under the lock, so that the gate every thread asks next
 * sees them; counted once the thread had dropped the lock, a thread
 * descheduled in between let others through the gate ahead of it),
 * and the jobs behind it that could start too get their threads
 * (grow).  Lock held.
 */
static void
take (struct adaptra_engine *e, const struct adaptra_worker *w,
      struct adaptra_job *prev, struct adaptra_job *job)
{
  struct adaptra_stream *s = adaptra_streams_get (&e->streams, job->stream);
  unsigned first, n, *alive, *busy;

  kind_of (e, w->hints_only, &first, &n, &alive, &busy);
  start_at_most (e, job, s);
  adaptra_prefetch_take (e, prev, job, true);
  adaptra_fetch_job_begin (e, job);
  (*busy)++;
  grow (e, w->hints_only);
  count_running (e, s, 1);
}

/* Worker w ran the job of stream it took.  Lock held. */
static void
done (struct adaptra_engine *e, const struct adaptra_worker *w,
      uint64_t stream)
{
  unsigned first, n, *alive, *busy;

  kind_of (e, w->hints_only, &first, &n, &alive, &busy);
  count_running (e, adaptra_streams_get (&e->streams, stream), -1);
  (*busy)--;
}

/* adaptra-sim's workers are the threads' kind that take any job. */
static const struct adaptra_worker simulated;

struct adaptra_job *
adaptra_worker_take (struct adaptra_engine *e, uint64_t *offset,
                     uint32_t *count)
{
  struct adaptra_job *job, *prev;

  adaptra_lock (e);
  job = next_for_worker (e, &simulated, &prev);
  if (job) {
    take (e, &simulated, prev, job);
    *offset = (job->first << e->page_shift) - job->volume->base;
    *count = job->bytes;
  }
  adaptra_unlock (e);
  return job;
}

void
adaptra_worker_complete (struct adaptra_engine *e, struct adaptra_job *job,
                         unsigned index)
{
  uint64_t stream = job->stream;
  /* As a thread's: valid until the job ends. */
  void *ctx = job->volume->ctxs[index % job->volume->nctx];

  adaptra_fetch_job_then_lock (e, ctx, job, true, true);
  done (e, &simulated, stream);
  adaptra_unlock (e);
}

/* Wait on cond for at most ADAPTRA_WORKERS_IDLE_NS (the condition
 * variables are on the real-time clock; the caller measures its idle
 * time on the monotonic one).  Returns false if the time ran out.
 * Lock held; dropped meanwhile.
 */
static bool
idle_wait (struct adaptra_engine *e, pthread_cond_t *cond)
{
  struct timespec until;
  bool woken;

  clock_gettime (CLOCK_REALTIME, &until);
  until.tv_sec += (time_t) (ADAPTRA_WORKERS_IDLE_NS / 1000000000);
  until.tv_nsec += (long) (ADAPTRA_WORKERS_IDLE_NS % 1000000000);
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000;
  }
  assert_locked (e);
  set_lock_owner (e, 0);
  woken = pthread_cond_timedwait (cond, &e->lock, &until) != ETIMEDOUT;
  set_lock_owner (e, adaptra_lock_self ());
  return woken;
}

static void *
worker_main (void *arg)
{
  struct adaptra_worker *w = arg;
  struct adaptra_engine *e = w->e;
  unsigned first, n, *alive, *busy;

  adaptra_lock (e);
  kind_of (e, w->hints_only, &first, &n, &alive, &busy);
  for (;;) {
    struct adaptra_job *job = NULL, *prev = NULL;
    uint64_t stream, idle_since = adaptra_monotonic_ns ();
    bool woken = false;
    void *ctx;

    while (!e->stopping && (job = next_for_worker (e, w, &prev)) == NULL) {
      if (woken)
        e->idle_wakeups++;
      if (*alive > (w->hints_only ? ADAPTRA_HINT_WORKERS_MIN
                    : ADAPTRA_WORKERS_MIN) &&
          adaptra_monotonic_ns () - idle_since >= ADAPTRA_WORKERS_IDLE_NS)
        break;
      woken = idle_wait (e, w->hints_only ? &e->hint_queued
                         : &e->job_queued);
    }
    if (e->stopping || job == NULL)
      break;
    take (e, w, prev, job);
    stream = job->stream;
    /* Valid until the job ends: adaptra_volume_set_contexts waits. */
    ctx = job->volume->ctxs[w->index % job->volume->nctx];
    adaptra_unlock (e);
    adaptra_fetch_job_then_lock (e, ctx, job, true, true);
    done (e, w, stream);
  }
  /* Ended, idle (the slot's next thread joins this one) or stopped
   * (adaptra_workers_stop joins it).
   */
  (*alive)--;
  w->alive = false;
  w->exited = true;
  adaptra_unlock (e);
  return NULL;
}

/* Stop every thread and join them, leaving stopping set (no thread
 * starts until the caller clears it).  Lock not held.
 */
static void
join_workers (struct adaptra_engine *e)
{
  unsigned i, n;

  adaptra_lock (e);
  e->stopping = true;
  pthread_cond_broadcast (&e->job_queued);
  pthread_cond_broadcast (&e->hint_queued);
  n = e->nworkers + e->nhint_workers;
  adaptra_unlock (e);
  /* No thread starts while stopping, so no slot changes hands: each
   * one's thread has ended or ends now, and only this joins it.
   */
  for (i = 0; i < n; i++) {
    struct adaptra_worker *w = &e->workers[i];
    bool started;

    adaptra_lock (e);
    started = w->alive || w->exited;
    adaptra_unlock (e);
    if (started)
      pthread_join (w->thread, NULL);
  }
}

int
adaptra_workers_start (struct adaptra_engine *e, unsigned n, unsigned hints)
{
  struct adaptra_worker *workers;
  unsigned k;
  int err = 0;

  if (n + hints == 0)
    return e->workers ? EBUSY : 0;
  workers = calloc (n + hints, sizeof *workers);
  if (!workers)
    return ENOMEM;
  for (k = 0; k < n + hints; k++) {
    workers[k].e = e;
    workers[k].index = k;
    workers[k].hints_only = k >= n;
  }
  /* Under the lock: a job queued now may start a thread (grow). */
  adaptra_lock (e);
  if (e->workers) {
    adaptra_unlock (e);
    free (workers);
    return EBUSY;
  }
  e->workers = workers;
  e->nworkers = n;
  e->nhint_workers = hints;
  for (k = 0; k < n && k < ADAPTRA_WORKERS_MIN && !err; k++)
    err = spawn (e, false);
  for (k = 0; k < hints && k < ADAPTRA_HINT_WORKERS_MIN && !err; k++)
    err = spawn (e, true);
  adaptra_unlock (e);
  if (err)
    adaptra_workers_stop (e);
  return err;
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
  join_workers (e);
  /* Under the lock, and before stopping clears: a job queued meanwhile
   * must not start a thread in the slots freed here.
   */
  adaptra_lock (e);
  free (e->workers);
  e->workers = NULL;
  e->nworkers = e->nhint_workers = 0;
  adaptra_prefetch_drop_queue (e, NULL);
  e->stopping = false;
  adaptra_unlock (e);
}

