/* adaptra-sim.c: adaptra-sim: the engine in virtual time.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* adaptra-sim: the adaptra engine in virtual time.
 *
 * The program links the engine the filter links (libadaptra-engine.a)
 * and drives it as the filter does, with three things replaced:
 *
 *   clock     a virtual one (struct sim.now), so an hour of slow
 *             streams runs in seconds;
 *   backend   a model (simlib.c: the bench's remote or disk model)
 *             that says when each read would complete; no byte moves,
 *             the pool keeps page metadata only (cfg.no_data);
 *   workers   simulated: a free virtual worker takes the job a worker
 *             thread would (adaptra_worker_take: the same gate, fair
 *             order and batches, each worker with its own backend
 *             context) at the moment a thread would: whenever the
 *             engine's lock is free (start_workers, below), the model
 *             books its read, and at the virtual time the read
 *             completes the engine runs it (adaptra_worker_complete),
 *             which fills its pages as a worker thread's read would.
 *             A reader that needs a page of a taken job waits in the
 *             clock's wait hook (sim_wait), where a thread would sleep
 *             until the worker woke it; so does one that leaves its
 *             queued job to the workers (where the model sees seeks:
 *             queue.c, adaptra_queue_promote), as the engine leaves it
 *             to them whether they are threads or these.  The engine
 *             splits windows for them as for the filter's threads
 *             (adaptra_workers_simulate).
 *
 * Everything else -- streams, windows, marks, the pool's LRU lists,
 * eviction, rescue, the congestion limit -- is the engine's own code.
 *
 * Time order: each client request runs the engine's read on its own
 * stack (struct request, a coroutine: struct coro), as on its own thread
 * in the filter.  Where the filter's thread would sleep with the
 * engine's lock dropped -- its own backend read (sim_pread), a wait
 * for a page in flight (sim_wait) -- the request yields to the one
 * event loop with a wake-up event (EV_RESUME): at its read's
 * completion, or in a wait at the next worker's completion (the
 * engine looks again, as after a condvar's wake) or its deadline.
 * Client arrivals, worker completions and worker takes so happen in
 * virtual-time order, the clock never goes back, and a worker freed
 * at t takes its next job at t.  A worker's read stays open in the
 * remote model, which moves its completion (and this program its
 * EV_WORKER event) when reads booked after it go ahead of it in the
 * rate filter's bucket, until a client waits for it or its time
 * passes (simlib.h).  Requests still in progress at the run's end are
 * finished past it, uncounted, before the engine closes.
 *
 * Simplifications: a client's own read, once booked, keeps its takes
 * from the bucket (simlib.h), so a smaller read booked after it (a
 * worker's) cannot slip past it as the filter's might; the rate
 * filter's sleeps all wake the same overshoot late (simlib.h,
 * SIM_RATE_OVERSHOOT_NS), without its jitter; a client's request costs
 * nothing outside the backend unless --client-rtt (and
 * --client-spread, a random part) says so; a reader woken from a wait
 * resumes --wake-delay (and --wake-growth per millisecond asleep)
 * later, every time, and the delay filter's sleep overshoots by its
 * mean (--delay-overshoot), without its jitter.
 *
 * The engine calls are all in the "engine adapter" section below.
 */

#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <zlib.h>

#include "adaptra/config.h"
#include "adaptra/engine.h"
#include "adaptra/sim.h"
#include "adaptra/stats.h"
#include "cli.h"
#include "simlib.h"
#include "xorshift.h"

#define PROG "adaptra-sim"
/* Workloads one run mixes (--workload given again and again), each in
 * its region: they sit in fixed arrays (struct options, and a run's
 * random and interleave generators), so parsing needs no allocation.
 * Much larger would only grow those arrays.
 */
#define MAX_WORKLOADS 16
/* Values of one --sweep parameter, in a fixed array: each is a row
 * of the table, and 32 rows are more than one compares at a glance;
 * three sweeps' combinations stay within 32^3 runs.
 */
#define MAX_SWEEP 32
#define SEC UINT64_C (1000000000)
/* Largest client request: NBD's usual 32 MiB. */
#define REQ_MAX (32 * 1024 * 1024)
/* Region of a random workload without an explicit span. */
#define RANDOM_SPAN_DEFAULT (UINT64_C (16) << 30)
/* Region of an interleave workload without an explicit span: the
 * bench's 1 GiB image, which scripts/bench/interleave.c cuts into N.
 */
#define INTERLEAVE_SPAN_DEFAULT (UINT64_C (1) << 30)
/* Streams start evenly over this many seconds unless told otherwise:
 * the bench's W5-seed readers start after a random 0-10 s sleep
 * (scripts/bench/paced-streams.c --spread 10).
 */
#define RAMP_DEFAULT_NS (UINT64_C (10) * SEC)
/* The backend without --backend: the benchmark's remote model
 * (scripts/bench/benchdefs.py: nbdkit's delay filter, 5 ms a read,
 * then its rate filter, 200 MiB/s), the store the matrix's remote
 * cells measure.
 */
#define BACKEND_DEFAULT "remote:5ms:200M"
/* What the filter's reader pays after a wait, beyond a hit's cycle:
 * from the return of the backend read it waited for to its client's
 * next request, WAKE_DEFAULT_NS after a short sleep and
 * WAKE_GROWTH_DEFAULT_NS more per millisecond asleep (--wake-delay,
 * --wake-growth): the condvar's wake-up, the copy out, and a next
 * request that comes later after a long wait than after a hit (the
 * client slept too).  Measured with sim/filter-delays over
 * scripts/bench/run W1 and W3 on the remote model, adaptive and fixed,
 * 5 runs each at fbb8033 (2026-12-07, the bench's machine: 2 shared
 * CPUs, load average 4 to 6 but for the last runs, 10 to 15), the
 * medians of the 20 runs' medians over a hit's median cycle: 60 us
 * after a sleep under 1 ms (runs 14 to 146), 141 after one over 3 ms
 * (78 to 301; such a sleep is about 4.5 ms): 80 us more over 4 ms, 20
 * a millisecond (tests/integration/sim-calibration.csv's runs).  The
 * growth is what settles the filter's W1 fixed reader where it waits
 * one whole fetch in two; a constant delay does not
 * (docs/bench/history/beside-the-matrix.md, "simtime").
 */
#define WAKE_DEFAULT_NS UINT64_C (60000)
#define WAKE_GROWTH_DEFAULT_NS UINT64_C (20000)
/* How long nbdkit's delay filter's 5 ms sleep overshoots, which the
 * remote model adds to its latency (--delay-overshoot):
 * nbdkit_nanosleep is a ppoll, which the timer wakes after the timer
 * slack (50 us) and the scheduler's delay.  Measured with
 * sim/filter-delays in the same 20 runs as WAKE_DEFAULT_NS (the 5 ms
 * ppoll calls of W1 and W3's nbdkit): 128 us, the median of the runs'
 * medians (110 to 260).
 */
#define DELAY_OVERSHOOT_DEFAULT_NS UINT64_C (128000)
/* Points in a --plot. */
#define PLOT_POINTS 400

enum wl_kind { WL_STREAMS, WL_RANDOM, WL_INTERLEAVE };

struct workload {
  enum wl_kind kind;
  uint64_t n;                   /* streams (or interleaved streams) */
  uint64_t rate;                /* streams: bytes per second each */
  uint64_t iops;                /* random */
  uint64_t req;                 /* bytes per read */
  uint64_t span;                /* random, interleave: bytes of its
                                   region */
  uint64_t base;                /* first byte of its region(s) */
  uint64_t region;              /* streams: bytes per stream */
  uint64_t ramp_ns;             /* streams: first reads spread over it */
};

/* The parameters --sweep varies: every combination of their values is
 * a run, pool outermost, the client's round trip innermost.
 */
enum sweep_key { SWEEP_POOL, SWEEP_DURATION, SWEEP_CLIENT_RTT, NSWEEP };

static const char *const sweep_names[NSWEEP] = {
  [SWEEP_POOL] = "pool", [SWEEP_DURATION] = "duration",
  [SWEEP_CLIENT_RTT] = "client-rtt",
};

struct sweep {
  uint64_t v[MAX_SWEEP];        /* bytes, or nanoseconds */
  size_t n;                     /* 0: the option's one value */
};

struct options {
  struct adaptra_config cfg;    /* pool, page, min, max, ratio, mode... */
  const char *backend;
  struct sim_model model;
  struct workload wl[MAX_WORKLOADS];
  size_t nwl;
  const char *trace;
  uint64_t duration_ns;
  bool duration_set;
  uint64_t client_rtt_ns;       /* a request's time outside the engine */
  uint64_t client_spread_ns;    /* and the mean of its random part */
  uint64_t wake_ns;             /* a waiter's wake-up after a short sleep */
  uint64_t wake_growth_ns;      /* and more per millisecond asleep */
  uint64_t delay_overshoot_ns;  /* remote: added to the latency */
  bool json;
  const char *plot;
  const char *head;             /* --head: the disk's head trace */
  const char *waits;            /* --waits: the reads that waited */
  struct sweep sweep[NSWEEP];
  uint64_t seed;
};

const char *const cli_name = PROG;

/* ------------------------------------------------------------------ */
/* Simulation state. */

struct sim_ctx {
  int worker;                   /* -1: a client */
};

struct worker {
  struct adaptra_job *job;      /* taken, not completed yet; NULL: free */
  uint64_t offset;
  uint32_t count;
  uint64_t start, done;
  struct sim_ctx ctx;
};

enum ev_kind {
  EV_STREAM, EV_RANDOM, EV_INTERLEAVE, EV_TRACE, EV_WORKER, EV_SAMPLE,
  EV_RESUME
};

/* A coroutine's context: where its stack stopped, to go on from there.
 *
 * A switch is the simulator's commonest step (two a client request:
 * into its stack and back; four when it sleeps).  glibc's swapcontext
 * saves and restores the signal mask with a system call each way, a
 * third of the simulator's time (perf, the seed hour of
 * test-sim-calibration.sh), for a mask nothing here changes.  On
 * x86-64 the switch is a function that saves the registers a call
 * must preserve (the System V ABI's rbx, rbp, r12-r15) on the stack
 * it leaves, stores that stack pointer, loads the other's and pops
 * its registers: the usual hand-written switch (Boost.Context's
 * jump_fcontext, libco's co_swap, minus their floating-point control
 * words, which nothing here sets).  A new stack starts with such a
 * frame that returns into its entry function, as if called.
 * Elsewhere, and under the sanitizers (whose interceptors know
 * swapcontext's stack switches and not this one), swapcontext.
 */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
  !defined(__SANITIZE_THREAD__)
#define CORO_ASM
#endif

struct coro {
#ifdef CORO_ASM
  void *sp;                     /* its saved registers, then its frames */
#else
  ucontext_t uc;
#endif
};

#ifdef CORO_ASM
/* Save the registers on this stack into *save, go on from to. */
extern void coro_jump (void **save, void *to)
  __attribute__ ((visibility ("hidden")));
__asm__ ("\t.text\n"
         "\t.p2align 4\n"
         "\t.globl coro_jump\n"
         "\t.hidden coro_jump\n"
         "\t.type coro_jump, @function\n"
         "coro_jump:\n"
         "\tpushq %rbp\n"
         "\tpushq %rbx\n"
         "\tpushq %r12\n"
         "\tpushq %r13\n"
         "\tpushq %r14\n"
         "\tpushq %r15\n"
         "\tmovq %rsp, (%rdi)\n"
         "\tmovq %rsi, %rsp\n"
         "\tpopq %r15\n"
         "\tpopq %r14\n"
         "\tpopq %r13\n"
         "\tpopq %r12\n"
         "\tpopq %rbx\n"
         "\tpopq %rbp\n"
         "\tret\n"
         "\t.size coro_jump, .-coro_jump\n");

/* A stack as coro_jump leaves it: the registers it pushed, then its
 * return address; for a new stack, a return into its entry and the
 * entry's own return address (none: it never returns).
 */
struct coro_frame {
  uintptr_t r15, r14, r13, r12, rbx, rbp;
  uintptr_t ret;
  uintptr_t entry_ret;
};
#endif

/* c runs entry (which never returns) on the size bytes at stack from
 * its first switch in.
 */
static void
coro_make (struct coro *c, void *stack, size_t size, void (*entry) (void))
{
#ifdef CORO_ASM
  /* The ABI's alignment: 16 bytes at a call, so that entry finds the
   * stack pointer 8 past it, as after the call that pushed entry_ret.
   */
  uintptr_t top = ((uintptr_t) stack + size) & ~(uintptr_t) 15;
  struct coro_frame *f = (struct coro_frame *) (top - sizeof *f);

  memset (f, 0, sizeof *f);
  f->ret = (uintptr_t) entry;
  c->sp = f;
#else
  if (getcontext (&c->uc) == -1)
    cli_die ("getcontext: %s", strerror (errno));
  c->uc.uc_stack.ss_sp = stack;
  c->uc.uc_stack.ss_size = size;
  c->uc.uc_link = NULL;
  makecontext (&c->uc, entry, 0);
#endif
}

/* Leave the running coroutine (or the event loop) as from, and go on
 * from to; from goes on from here when switched to.
 */
static void
coro_switch (struct coro *from, struct coro *to)
{
#ifdef CORO_ASM
  coro_jump (&from->sp, to->sp);
#else
  if (swapcontext (&from->uc, &to->uc) == -1)
    cli_die ("swapcontext: %s", strerror (errno));
#endif
}

/* A client's request in progress: the engine's read runs on its own
 * stack (a coroutine), as on its own thread in the filter, so that it
 * can sleep where the filter's thread would (its backend read, a wait
 * for a page in flight) while the event loop goes on with the events
 * due before it wakes.
 */
struct request {
  struct coro coro;
  void *stack;
  struct sim_ctx ctx;
  int client;
  uint64_t offset;
  uint32_t count;
  uint64_t start;               /* when it was issued */
  uint64_t done;                /* its last backend read's completion */
  bool waited;                  /* it did not complete from the pool */
  bool finished;
  bool sleeping;                /* in sim_wait: a completion wakes it */
  bool listed;                  /* in struct sim.sleepers */
  uint64_t wake_seq;            /* its one live EV_RESUME event */
  uint64_t slept_at;            /* when it last went to sleep */
  enum ev_kind then;            /* whose workload issued it, and which */
  size_t then_idx;
  size_t id;                    /* its index in struct sim.reqs */
  struct request *next_free;
};

/* A request's stack: the engine's read path and the model's, with
 * room to spare (they use a few KiB); the pages are touched only as
 * used.
 */
#define REQUEST_STACK (256 * 1024)

struct event {
  uint64_t t;
  uint64_t seq;                 /* ties: first scheduled first */
  uint32_t kind;
  uint32_t idx;
};

struct reader {
  uint64_t start, end;          /* its region */
  uint64_t next;                /* next offset */
  uint64_t due;                 /* when its next read is scheduled */
  uint64_t interval;            /* between reads */
  uint32_t req;
  int client;
};

struct random_gen {
  int client;
  uint64_t rng;
};

/* Streams read in turn on one client, one read at a time (the bench's
 * W3, scripts/bench/interleave.c at depth 1).
 */
struct interleaver {
  int client;
  uint64_t region;              /* bytes per stream: span / n, in reads */
  uint64_t turn;                /* the stream whose read is next */
  uint64_t *pos;                /* each stream's next offset in its region */
};

struct trace {
  struct sim_record *rec;
  size_t n, pos;
  uint64_t t0;                  /* first record's time */
  uint64_t end;                 /* highest byte touched */
  uint64_t *conns;              /* conn number of client i */
  int *clients;
  size_t nconns;
};

struct result {
  uint64_t pool_bytes;
  struct adaptra_stats st;
  uint64_t requests, hits;
  double mean_ms, p99_ms, max_ms, wall_s, virtual_s;
  uint64_t client_rtt_ns;
  uint64_t peak_rss;            /* bytes: the process's, so far */
  double seek_s;                /* disk: the head's time seeking */
};

struct sim {
  const struct options *o;
  struct adaptra_engine *e;
  int volume;                   /* the one volume every client reads */
  uint64_t now;                 /* the virtual clock */
  uint64_t end;                 /* stop time */
  struct sim_model model;
  uint64_t export_size;
  struct worker *workers;
  unsigned nworkers;
  int64_t running_worker;       /* worker whose job runs now, or -1 */
  uint64_t retimed;             /* the model's generation when the
                                   workers were last retimed */
  /* Requests: the one running now (NULL: the event loop), every one
   * ever made (EV_RESUME's index), those free to reuse.
   */
  struct request *cur;
  struct request **reqs;
  size_t nreqs;
  struct request **sleepers;    /* asleep in sim_wait (some woken since by
                                   their deadline), each once */
  size_t nsleepers;
  struct request *free_reqs;
  struct coro loop;             /* the event loop's, while a request runs */
  bool draining;                /* past the end: requests finish
                                   uncounted, but in a trace's run */
  size_t active;                /* requests in progress */
  uint64_t client_rng;          /* --client-spread's draws */
  unsigned char *buf;
  /* Events: a binary heap. */
  struct event *heap;
  size_t nheap, capheap;
  uint64_t seq;
  struct reader *readers;
  size_t nreaders;
  struct random_gen random[MAX_WORKLOADS];
  struct interleaver inter[MAX_WORKLOADS];
  struct trace trace;
  /* Results. */
  uint64_t requests, hits;
  struct sim_latency lat;
  bool drain;                   /* a trace's run: end = its last read's */
  FILE *plot;
  FILE *waits;                  /* --waits */
  struct adaptra_stream_row *rows;
  size_t nrows;
};

/* The engine's backend and clock see the one simulation running. */
static struct sim *S;

/* ------------------------------------------------------------------ */
/* Engine adapter: every call into the engine is here.  The rest of the
 * program speaks of offsets, bytes and client numbers.
 */

static uint64_t
sim_now (void *opaque)
{
  (void) opaque;
  return S->now;
}

static int sim_pread (void *ctx, void *buf, uint32_t count, uint64_t offset);
static void sim_wait (void *opaque, uint64_t deadline);
static void start_workers (struct sim *s);

/* Check and apply the configuration; a refusal names the option as
 * the engine names the filter's parameter ("adaptra-page=3000 ..."
 * becomes "--page=3000 ...").
 */
static void
engine_check (const struct adaptra_config *cfg)
{
  char why[ADAPTRA_WHY_LEN], out[ADAPTRA_WHY_LEN];
  const char *p;
  size_t n = 0;

  if (adaptra_config_check (cfg, why, sizeof why) == 0)
    return;
  for (p = why; *p && n + 3 < sizeof out; ) {
    if (strncmp (p, ADAPTRA_PARAM_PREFIX, ADAPTRA_PARAM_PREFIX_LEN) == 0) {
      out[n++] = '-';
      out[n++] = '-';
      p += ADAPTRA_PARAM_PREFIX_LEN;
    }
    else
      out[n++] = *p++;
  }
  out[n] = '\0';
  cli_die ("%s", out);
}

static void
engine_open (struct sim *s, uint64_t pool_bytes)
{
  const struct adaptra_backend backend = { .pread = sim_pread };
  const struct adaptra_clock clock = { .now_ns = sim_now, .wait = sim_wait };
  struct adaptra_config cfg = s->o->cfg;
  char why[ADAPTRA_WHY_LEN];
  void **ctxs;
  unsigned i;
  int err;

  cfg.pool_bytes = pool_bytes;
  cfg.no_data = true;
  cfg.profile_workers = 0;      /* no boot profiles here */
  engine_check (&cfg);
  if (adaptra_engine_new (&cfg, &backend, &clock, &s->e, why, sizeof why))
    cli_die ("cannot create the engine: %s", why);
  /* Windows split for the virtual workers as for the filter's threads. */
  if (adaptra_workers_simulate (s->e, s->nworkers) != 0)
    cli_die ("internal error: the engine runs worker threads");
  err = adaptra_volume_open (s->e, "sim", s->export_size, 0, &s->volume);
  if (err)
    cli_die ("cannot open a volume of %" PRIu64 " bytes: %s", s->export_size,
         strerror (err));
  /* Worker i reads with its own context, as a thread with a handle. */
  ctxs = calloc (s->nworkers, sizeof *ctxs);
  if (!ctxs || !s->workers)
    cli_die ("out of memory");
  for (i = 0; i < s->nworkers; i++)
    ctxs[i] = &s->workers[i].ctx;
  if (adaptra_volume_set_contexts (s->e, s->volume, s->nworkers, ctxs) != 0)
    cli_die ("out of memory");
  free (ctxs);
}

static int
engine_client (struct sim *s, const char *name)
{
  int c, err = adaptra_client_open (s->e, s->volume, name, &c);

  if (err)
    cli_die ("cannot open client %s: %s", name, strerror (err));
  return c;
}

static int
engine_read (struct sim *s, int client, uint64_t offset, uint32_t count)
{
  return adaptra_read (s->e, client, &s->cur->ctx, s->buf, count, offset);
}

static void
engine_invalidate (struct sim *s, uint64_t offset, uint64_t count)
{
  adaptra_invalidate (s->e, s->volume, offset, count);
}

static struct adaptra_job *
engine_take_job (struct sim *s, uint64_t *offset, uint32_t *count)
{
  return adaptra_worker_take (s->e, offset, count);
}

/* Worker w's read completes now: the engine runs its job, whose pread
 * (sim_pread) is that worker's.
 */
static void
engine_complete_job (struct sim *s, struct worker *w)
{
  s->running_worker = w - s->workers;
  adaptra_worker_complete (s->e, w->job, (unsigned) (w - s->workers));
  s->running_worker = -1;
  w->job = NULL;
}

static void
engine_stats (struct sim *s, struct adaptra_stats *st)
{
  adaptra_stats_snapshot (s->e, st);
}

/* Mean window of the live streams, in bytes, and their number. */
static double
engine_mean_window (struct sim *s, size_t *nstreams)
{
  size_t i, n = adaptra_streams_snapshot (s->e, s->rows, s->nrows);
  double sum = 0;

  for (i = 0; i < n; i++)
    sum += (double) s->rows[i].window_bytes;
  *nstreams = n;
  return n ? sum / (double) n : 0;
}

/* The filter joins its worker threads, whose jobs then complete,
 * before it frees the engine; the simulated workers' jobs in flight
 * (due after the run's end, and not counted) complete here so, or
 * nothing would free them.
 */
static void
engine_close (struct sim *s)
{
  unsigned i;

  for (i = 0; i < s->nworkers; i++)
    if (s->workers[i].job)
      engine_complete_job (s, &s->workers[i]);
  adaptra_engine_free (s->e);
  s->e = NULL;
}

/* ------------------------------------------------------------------ */
/* The backend model, as the engine's pread. */

/* Book a client's backend read of count at offset issued at now: when
 * it completes.
 */
static uint64_t
model_read (struct sim *s, uint64_t now, uint64_t offset, uint64_t count)
{
  uint64_t done = sim_model_read (&s->model, now, offset, count);

  if (done == UINT64_MAX)
    cli_die ("out of memory");
  return done;
}

static uint64_t ev_push (struct sim *s, uint64_t t, enum ev_kind kind,
                         size_t idx);

/* The request running now sleeps until the event loop resumes it: at
 * t, or (sleeping) at the next worker's completion, whichever comes
 * first.  The engine's lock is free here, as a thread's is asleep.
 */
static void
request_sleep (struct sim *s, uint64_t t, bool sleeping)
{
  struct request *q = s->cur;

  q->sleeping = sleeping;
  q->slept_at = s->now;
  if (sleeping && !q->listed) {
    q->listed = true;
    s->sleepers[s->nsleepers++] = q;
  }
  q->wake_seq = t == UINT64_MAX ? 0 : ev_push (s, t, EV_RESUME, q->id);
  coro_switch (&q->coro, &s->loop);
}

/* Worker i's read is due at done now (reads booked after it may have
 * delayed it, or a client waited for it): schedule its completion
 * there.  The event at the time before goes stale (the main loop skips it).
 */
static void
retime_worker (struct sim *s, unsigned i, uint64_t done)
{
  struct worker *w = &s->workers[i];

  if (done == UINT64_MAX)
    cli_die ("out of memory");
  /* Never before now: two runs of the bucket from different
   * checkpoints may round a nanosecond apart.
   */
  if (done < s->now)
    done = s->now;
  if (done == w->done)
    return;
  w->done = done;
  ev_push (s, done, EV_WORKER, i);
}

static int
sim_pread (void *ctx, void *buf, uint32_t count, uint64_t offset)
{
  const struct sim_ctx *c = ctx;
  struct worker *w;
  uint64_t done;

  (void) buf;
  if (c->worker >= 0) {
    /* A worker's job, run at its completion time. */
    w = &S->workers[c->worker];
    if (c->worker != S->running_worker || offset != w->offset ||
        count != w->count)
      cli_die ("internal error: job %" PRIu64 "+%" PRIu32 " ran for worker %d, "
           "which read %" PRIu64 "+%" PRIu32, offset, count, c->worker,
           w->offset, w->count);
    S->now = w->done;
    return 0;
  }
  /* A client's own read.  The engine dropped its lock for it: the
   * workers take what the request queued, as threads would, the
   * reader's read issued first; the request sleeps until its read
   * completes, and the events due before then happen meanwhile.
   */
  S->cur->waited = true;
  done = model_read (S, S->now, offset, count);
  start_workers (S);
  request_sleep (S, done, false);
  return 0;
}

/* Worker w's read completed and its job ran: it is free, its read no
 * longer open in the model, and the completion event it had goes
 * stale (the event loop skips it).
 */
static void
free_worker (struct sim *s, struct worker *w)
{
  sim_model_finish (&s->model, (unsigned) (w - s->workers));
}

/* A reader waits for a page in flight: of a worker's read, since a
 * client's own completes in its pread, or of a job still queued that
 * the reader left to the workers, as the filter's reader does where
 * distance costs: it waits for the run at the head to end, and its
 * job goes next (queue.c: adaptra_queue_promote).  The engine dropped
 * its lock: the workers take what the request queued first, as
 * threads would.  The request sleeps until the next worker's read
 * completes, whichever it is (a thread's wait queue wakes it when its
 * page is there; the engine looks again after any return), or until
 * its deadline; meanwhile the event loop runs what is due before,
 * other clients' requests and the workers' completions and takes, in
 * time order.  Outside a request (a volume that closes waits for
 * every job) nothing else runs: the read due first completes, its
 * time final (sim_model_pin).
 */
static void
sim_wait (void *opaque, uint64_t deadline)
{
  struct worker *first = NULL;
  unsigned i;

  (void) opaque;
  start_workers (S);
  for (i = 0; i < S->nworkers; i++) {
    struct worker *w = &S->workers[i];

    if (w->job && (!first || w->done < first->done))
      first = w;
  }
  if (!first)
    cli_die ("internal error: a reader waits and no read is in flight");
  if (S->cur) {
    S->cur->waited = true;
    request_sleep (S, deadline, true);
    return;
  }
  i = (unsigned) (first - S->workers);
  retime_worker (S, i, sim_model_pin (&S->model, i));
  engine_complete_job (S, first);
  free_worker (S, first);
  S->now = first->done;
  start_workers (S);
}

/* ------------------------------------------------------------------ */
/* Events. */

static bool
ev_before (const struct event *a, const struct event *b)
{
  return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static uint64_t
ev_push (struct sim *s, uint64_t t, enum ev_kind kind, size_t idx)
{
  struct event ev = { .t = t, .seq = ++s->seq, .kind = kind,
                      .idx = (uint32_t) idx };
  size_t i;

  if (s->nheap == s->capheap) {
    size_t cap = s->capheap ? 2 * s->capheap : 1024;
    struct event *h = realloc (s->heap, cap * sizeof *h);

    if (!h)
      cli_die ("out of memory");
    s->heap = h;
    s->capheap = cap;
  }
  i = s->nheap++;
  while (i > 0 && ev_before (&ev, &s->heap[(i - 1) / 2])) {
    s->heap[i] = s->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->heap[i] = ev;
  return ev.seq;
}

static struct event
ev_pop (struct sim *s)
{
  struct event top = s->heap[0], last = s->heap[--s->nheap];
  size_t i = 0;

  for (;;) {
    size_t c = 2 * i + 1;

    if (c >= s->nheap)
      break;
    if (c + 1 < s->nheap && ev_before (&s->heap[c + 1], &s->heap[c]))
      c++;
    if (!ev_before (&s->heap[c], &last))
      break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (s->nheap > 0)
    s->heap[i] = last;
  return top;
}

/* Free virtual workers take the next jobs, as worker threads would
 * when the engine's lock is free: after an event (at its time), and
 * inside a client's request where the engine drops its lock (its own
 * backend read, a wait for a page in flight, the request's end).
 */
static void
start_workers (struct sim *s)
{
  unsigned i;

  for (i = 0; i < s->nworkers; i++) {
    struct worker *w = &s->workers[i];

    if (w->job)
      continue;
    w->job = engine_take_job (s, &w->offset, &w->count);
    if (!w->job)
      return;
    w->start = s->now;
    w->done = 0;
    if (sim_model_start (&s->model, s->now, w->offset, w->count, i) == -1)
      cli_die ("out of memory");
    retime_worker (s, i, sim_model_done (&s->model, i));
  }
}

/* The reads booked during an event may have delayed the workers'.
 * If none was booked and no completion moved since the last time
 * (the model's generation), every busy worker's event stands: a
 * completion that retime_worker put off to a past now has fired since.
 * Asking every worker every event was a fifth of the time of 100,000
 * streams.
 */
static void
retime_workers (struct sim *s)
{
  unsigned i;

  if (!s->model.stale && s->model.generation == s->retimed)
    return;
  for (i = 0; i < s->nworkers; i++)
    if (s->workers[i].job)
      retime_worker (s, i, sim_model_done (&s->model, i));
  s->retimed = s->model.generation;
}

/* When a request asleep since slept_at, woken now by a completion,
 * runs again: after the filter's wake-up (WAKE_DEFAULT_NS).
 */
static uint64_t
wake_time (const struct sim *s, uint64_t slept_at)
{
  double asleep_ms = (double) (s->now - slept_at) / 1e6;

  return s->now + s->o->wake_ns +
    (uint64_t) (asleep_ms * (double) s->o->wake_growth_ns);
}

static int
by_id (const void *a, const void *b)
{
  const struct request *x = *(struct request *const *) a;
  const struct request *y = *(struct request *const *) b;

  return x->id < y->id ? -1 : x->id > y->id;
}

static void
finish_worker (struct sim *s, size_t i)
{
  struct worker *w = &s->workers[i];
  size_t k;

  engine_complete_job (s, w);
  free_worker (s, w);
  s->now = w->done;
  /* Its pages are there: the readers asleep on pages in flight look
   * again, once awake, in the order of their ids (wake-ups due at one
   * time run in the order they were scheduled).  Those a deadline
   * woke since are no longer sleeping.
   */
  qsort (s->sleepers, s->nsleepers, sizeof *s->sleepers, by_id);
  for (k = 0; k < s->nsleepers; k++) {
    struct request *q = s->sleepers[k];

    q->listed = false;
    if (q->sleeping) {
      q->sleeping = false;
      q->wake_seq = ev_push (s, wake_time (s, q->slept_at), EV_RESUME, q->id);
    }
  }
  s->nsleepers = 0;
}

/* A request's stack runs the engine's read, hands back to the event
 * loop, and runs the next request given to it when resumed: a stack
 * is set up once (coro_make), not for every request.
 */
static void
request_main (void)
{
  struct request *q = S->cur;

  for (;;) {
    int err = engine_read (S, q->client, q->offset, q->count);

    if (err)
      cli_die ("internal error: read of %" PRIu32 " at %" PRIu64 ": %s",
               q->count, q->offset, strerror (err));
    q->finished = true;
    coro_switch (&q->coro, &S->loop);
  }
}

static void on_stream_done (struct sim *s, size_t i, uint64_t done);
static void on_interleave_done (struct sim *s, size_t k, uint64_t done);

/* Request q completed now: its client has the reply --client-rtt
 * later, and its workload goes on from then.
 */
static void
request_done (struct sim *s, struct request *q)
{
  uint64_t done = s->now + s->o->client_rtt_ns;

  if (s->o->client_spread_ns) {
    /* Exponential, of mean --client-spread. */
    double u = ((double) (sim_random (&s->client_rng) >> 11) + 0.5) /
      9007199254740992.0;

    done += (uint64_t) (-log (u) * (double) s->o->client_spread_ns);
  }

  q->next_free = s->free_reqs;
  s->free_reqs = q;
  s->active--;
  if (s->draining && !s->drain)
    return;
  if (s->now > s->end)
    s->end = s->now;            /* a trace's run goes on to its last read */
  s->requests++;
  s->hits += !q->waited;
  if (s->waits && q->waited)
    fprintf (s->waits, "%.6f %d %" PRIu64 " %" PRIu32 " %.4f\n",
             (double) q->start / 1e9, q->client, q->offset, q->count,
             (double) (done - q->start) / 1e6);
  if (sim_latency_add (&s->lat, (double) (done - q->start) / 1e6) == -1)
    cli_die ("out of memory");
  if (q->then == EV_STREAM)
    on_stream_done (s, q->then_idx, done);
  else if (q->then == EV_INTERLEAVE)
    on_interleave_done (s, q->then_idx, done);
}

/* Run request q until it sleeps or completes. */
static void
request_run (struct sim *s, struct request *q)
{
  s->cur = q;
  coro_switch (&s->loop, &q->coro);
  s->cur = NULL;
  if (q->finished)
    request_done (s, q);
}

/* One client read issued now, on its own stack; when it completes,
 * request_done tells the workload that issued it (then: its event
 * kind, idx its index).
 */
static void
client_read (struct sim *s, int client, uint64_t offset, uint32_t count,
             enum ev_kind then, size_t idx)
{
  struct request *q = s->free_reqs;

  if (q)
    s->free_reqs = q->next_free;
  else {
    struct request **r = realloc (s->reqs, (s->nreqs + 1) * sizeof *r);
    struct request **z = r ? realloc (s->sleepers,
                                      (s->nreqs + 1) * sizeof *z) : NULL;

    if (r)
      s->reqs = r;
    if (z)
      s->sleepers = z;
    q = calloc (1, sizeof *q);
    if (!r || !z || !q || !(q->stack = malloc (REQUEST_STACK)))
      cli_die ("out of memory");
    q->id = s->nreqs;
    q->ctx.worker = -1;
    s->reqs[s->nreqs++] = q;
    coro_make (&q->coro, q->stack, REQUEST_STACK, request_main);
  }
  q->client = client;
  q->offset = offset;
  q->count = count;
  q->start = s->now;
  q->waited = q->finished = q->sleeping = false;
  q->wake_seq = 0;
  q->then = then;
  q->then_idx = idx;
  s->active++;
  request_run (s, q);
}

static void
on_stream (struct sim *s, size_t i)
{
  struct reader *r = &s->readers[i];

  if (r->next + r->req > r->end)
    r->next = r->start;         /* the region ran out: read it again */
  r->next += r->req;
  client_read (s, r->client, r->next - r->req, r->req, EV_STREAM, i);
}

/* Stream i's read is done for its client at done: its next is due. */
static void
on_stream_done (struct sim *s, size_t i, uint64_t done)
{
  struct reader *r = &s->readers[i];

  /* Keep the schedule, but do not catch up with a burst after a slow
   * read (as the bench's paced streams): a stream a period behind
   * starts its schedule again from the completion.
   */
  r->due += r->interval;
  if (r->due + r->interval < done)
    r->due = done;
  ev_push (s, done > r->due ? done : r->due, EV_STREAM, i);
}

static void
on_random (struct sim *s, size_t k)
{
  const struct workload *w = &s->o->wl[k];
  struct random_gen *g = &s->random[k];
  uint64_t slots = w->span / w->req;
  uint64_t off = w->base + (sim_random (&g->rng) % slots) * w->req;
  /* Poisson arrivals: exponential gaps of mean 1/iops. */
  double u = ((double) (sim_random (&g->rng) >> 11) + 0.5) / 9007199254740992.0;

  client_read (s, g->client, off, (uint32_t) w->req, EV_RANDOM, k);
  ev_push (s, s->now + (uint64_t) (-log (u) * 1e9 / (double) w->iops),
           EV_RANDOM, k);
}

/* The next read of interleave workload k, issued when the one before
 * completed (depth 1).  A stream at the end of its region starts over.
 */
static void
on_interleave (struct sim *s, size_t k)
{
  const struct workload *w = &s->o->wl[k];
  struct interleaver *it = &s->inter[k];
  uint64_t j = it->turn;
  uint64_t off = w->base + j * it->region + it->pos[j];

  it->pos[j] = (it->pos[j] + w->req) % it->region;
  it->turn = (j + 1) % w->n;
  client_read (s, it->client, off, (uint32_t) w->req, EV_INTERLEAVE, k);
}

/* Interleave workload k's read is done for its client at done. */
static void
on_interleave_done (struct sim *s, size_t k, uint64_t done)
{
  ev_push (s, done, EV_INTERLEAVE, k);
}

static int
trace_client (struct sim *s, uint64_t conn)
{
  struct trace *t = &s->trace;
  char name[32];
  size_t i;

  for (i = 0; i < t->nconns; i++)
    if (t->conns[i] == conn)
      return t->clients[i];
  t->conns = realloc (t->conns, (t->nconns + 1) * sizeof *t->conns);
  t->clients = realloc (t->clients, (t->nconns + 1) * sizeof *t->clients);
  if (!t->conns || !t->clients)
    cli_die ("out of memory");
  snprintf (name, sizeof name, "trace-%" PRIu64, conn);
  t->conns[t->nconns] = conn;
  t->clients[t->nconns] = engine_client (s, name);
  return t->clients[t->nconns++];
}

static void
on_trace (struct sim *s)
{
  struct trace *t = &s->trace;
  const struct sim_record *r = &t->rec[t->pos++];

  if (r->op == SIM_OP_READ) {
    uint64_t off = r->offset, left = r->length;

    /* A request larger than NBD allows is replayed in pieces. */
    while (left > 0) {
      uint32_t n = left > REQ_MAX ? REQ_MAX : (uint32_t) left;

      client_read (s, trace_client (s, r->conn), off, n, EV_TRACE, 0);
      off += n;
      left -= n;
    }
  }
  else if (r->op == SIM_OP_WRITE && r->length > 0) {
    model_read (s, s->now, r->offset, r->length);
    engine_invalidate (s, r->offset, r->length);
  }
  if (t->pos < t->n)
    ev_push (s, t->rec[t->pos].t_ns - t->t0, EV_TRACE, 0);
}

static void
on_sample (struct sim *s)
{
  struct adaptra_stats st;
  size_t nstreams;
  double window = engine_mean_window (s, &nstreams);
  uint64_t used, all;

  engine_stats (s, &st);
  used = st.pages_inactive + st.pages_active + st.pages_in_flight;
  all = used + st.pages_free;
  fprintf (s->plot, "%.3f %.3f %.2f %zu\n", (double) s->now / 1e9,
           window / 1024, all ? 100.0 * (double) used / (double) all : 0,
           nstreams);
  ev_push (s, s->now + s->end / PLOT_POINTS, EV_SAMPLE, 0);
}

/* The event loop: every event in virtual-time order until the run's
 * end, or (draining) only the requests in progress and the workers'
 * reads they need, past the end, until none is left.
 */
static void
run_events (struct sim *s, bool draining)
{
  s->draining = draining;
  while (s->nheap > 0 && (draining || s->heap[0].t <= s->end)) {
    struct event ev = ev_pop (s);

    /* A worker's completion that moved later since it was scheduled,
     * a request's wake-up that another came before.
     */
    if (ev.kind == EV_WORKER &&
        (!s->workers[ev.idx].job || s->workers[ev.idx].done != ev.t))
      continue;
    if (ev.kind == EV_RESUME && s->reqs[ev.idx]->wake_seq != ev.seq)
      continue;
    if (draining && !s->active)
      break;
    if (draining && ev.kind != EV_WORKER && ev.kind != EV_RESUME)
      continue;
    s->now = ev.t;
    sim_model_forget (&s->model, s->now);
    switch ((enum ev_kind) ev.kind) {
    case EV_STREAM: on_stream (s, ev.idx); break;
    case EV_RANDOM: on_random (s, ev.idx); break;
    case EV_INTERLEAVE: on_interleave (s, ev.idx); break;
    case EV_TRACE: on_trace (s); break;
    case EV_WORKER: finish_worker (s, ev.idx); break;
    case EV_SAMPLE: on_sample (s); break;
    case EV_RESUME:
      s->reqs[ev.idx]->wake_seq = 0;
      s->reqs[ev.idx]->sleeping = false;
      request_run (s, s->reqs[ev.idx]);
      break;
    }
    start_workers (s);
    retime_workers (s);
  }
}

/* ------------------------------------------------------------------ */
/* Set-up and one run. */

/* Load a trace for a model: refused if it needs more than the
 * model's clock (SIM_HORIZON_NS).
 */
static void
load_trace (struct trace *t, const char *path, const struct sim_model *m)
{
  gzFile f = gzopen (path, "rb");
  char line[4096];
  size_t cap = 0, lineno = 0;
  uint64_t bytes = 0;           /* all its requests move, saturated */

  if (!f)
    cli_die ("--trace=%s: %s", path, strerror (errno ? errno : ENOENT));
  while (gzgets (f, line, sizeof line)) {
    struct sim_record r;
    int k;

    lineno++;
    line[strcspn (line, "\r\n")] = '\0';
    k = sim_trace_parse_line (line, &r);
    if (k == -1)
      cli_die ("--trace=%s: line %zu is neither CSV t_ms,op,offset,length,"
               "conn[,dur_ms] (numbers without a sign) nor an nbdkit log "
               "filter line: %.60s", path, lineno, line);
    if (k == 0)
      continue;
    if (t->n > 0 && r.t_ns < t->rec[t->n - 1].t_ns)
      r.t_ns = t->rec[t->n - 1].t_ns;   /* keep time monotonic */
    if (t->n == cap) {
      cap = cap ? 2 * cap : 4096;
      t->rec = realloc (t->rec, cap * sizeof *t->rec);
      if (!t->rec)
        cli_die ("out of memory");
    }
    if (r.offset + r.length > t->end)
      t->end = r.offset + r.length;
    t->rec[t->n++] = r;
    bytes = bytes + r.length < bytes ? UINT64_MAX : bytes + r.length;
  }
  gzclose (f);
  if (t->n == 0)
    cli_die ("--trace=%s: no read or write in it", path);
  t->t0 = t->rec[0].t_ns;
  if (sim_model_fits (m, t->rec[t->n - 1].t_ns - t->t0, bytes) == -1)
    cli_die ("--trace=%s: its %" PRIu64 " bytes at the backend's %.0f "
             "bytes a second take longer than the simulator's clock "
             "(SIM_HORIZON_NS, 146 years)", path, bytes, m->bandwidth);
}

static uint64_t
round_up (uint64_t v, uint64_t to)
{
  return (v + to - 1) / to * to;
}

/* Lay the workloads out: the trace at its own offsets, then each
 * workload in its own region, streams one region each, long enough
 * for the whole run.
 */
static uint64_t
layout (struct options *o, uint64_t trace_end)
{
  uint64_t at = round_up (trace_end, 1 << 20);
  size_t i;

  for (i = 0; i < o->nwl; i++) {
    struct workload *w = &o->wl[i];

    w->base = at;
    if (w->kind == WL_STREAMS) {
      double bytes = (double) w->rate * (double) o->duration_ns / 1e9;

      w->region = round_up ((uint64_t) bytes + w->req, 1 << 20);
      at += w->region * w->n;
    }
    else
      at += w->span;
  }
  return at;
}

/* Refuse a --plot into a directory that is missing or not writable
 * before the run, rather than after it as gnuplot's error and the
 * broken pipe that kills this program (status 141).
 */
static void
check_plot_dir (const char *path)
{
  const char *slash = strrchr (path, '/');
  char *dir;

  if (!slash)
    dir = strdup (".");
  else if (slash == path)
    dir = strdup ("/");
  else
    dir = strndup (path, (size_t) (slash - path));
  if (!dir)
    cli_die ("out of memory");
  if (access (dir, W_OK | X_OK) == -1)
    cli_die ("--plot=%s: cannot write into %s: %s", path, dir,
             strerror (errno));
  free (dir);
}

/* Plot the samples (time, mean window KiB, pool use %, streams) with
 * gnuplot into path (PNG).
 */
static void
write_plot (FILE *data, const char *path, uint64_t pool, const char *mode)
{
  char name[] = "/tmp/adaptra-sim-XXXXXX";
  char buf[4096];
  size_t n;
  FILE *out, *g;
  int fd;

  fd = mkstemp (name);
  if (fd == -1 || (out = fdopen (fd, "w")) == NULL)
    cli_die ("--plot: cannot create a temporary file: %s", strerror (errno));
  rewind (data);
  while ((n = fread (buf, 1, sizeof buf, data)) > 0)
    fwrite (buf, 1, n, out);
  fclose (out);
  g = popen ("gnuplot", "w");
  if (!g)
    cli_die ("--plot: cannot run gnuplot: %s", strerror (errno));
  fprintf (g,
           "set terminal pngcairo size 1000,500\n"
           "set output '%s'\n"
           "set title 'adaptra-sim: pool %" PRIu64 " MiB, %s'\n"
           "set xlabel 'virtual time (s)'\n"
           "set ylabel 'mean window (KiB)'\n"
           "set y2label 'pool in use (%%)'\n"
           "set y2range [0:105]\n"
           "set ytics nomirror\n"
           "set y2tics\n"
           "set key bottom right\n"
           "plot '%s' using 1:2 with lines title 'mean window of live "
           "streams', '' using 1:3 axes x1y2 with lines "
           "title 'pool pages in use'\n",
           path, pool >> 20, mode, name);
  if (pclose (g) != 0) {
    unlink (name);
    cli_die ("--plot=%s: gnuplot failed", path);
  }
  unlink (name);
}

/* The most memory the process has held so far, in bytes (0 if the
 * system does not say).
 */
static uint64_t
peak_rss (void)
{
  struct rusage ru;

  if (getrusage (RUSAGE_SELF, &ru) == -1)
    return 0;
  return (uint64_t) ru.ru_maxrss * 1024;     /* Linux: KiB */
}

static void
run (const struct options *o, uint64_t pool_bytes, uint64_t export_size,
     const struct trace *trace, struct result *res)
{
  struct sim s;
  struct timespec t0, t1;
  size_t i, k, max_req = 0;

  memset (&s, 0, sizeof s);
  S = &s;
  s.o = o;
  s.model = o->model;
  s.model.size = export_size;
  if (o->head && (s.model.head_log = fopen (o->head, "w")) == NULL)
    cli_die ("--head=%s: %s", o->head, strerror (errno));
  if (o->waits && (s.waits = fopen (o->waits, "w")) == NULL)
    cli_die ("--waits=%s: %s", o->waits, strerror (errno));
  s.export_size = export_size;
  s.end = o->duration_ns;
  s.drain = trace && !o->duration_set;
  s.running_worker = -1;
  s.client_rng = o->seed * 2654435761u;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  s.nworkers = o->cfg.workers ? o->cfg.workers : 1;
  s.workers = calloc (s.nworkers, sizeof *s.workers);
  for (i = 0; s.workers && i < s.nworkers; i++)
    s.workers[i].ctx.worker = (int) i;
  engine_open (&s, pool_bytes);
  s.nrows = o->cfg.streams;
  s.rows = calloc (s.nrows, sizeof *s.rows);
  for (i = 0; i < o->nwl; i++)
    if (o->wl[i].kind == WL_STREAMS)
      s.nreaders += o->wl[i].n;
  s.readers = calloc (s.nreaders ? s.nreaders : 1, sizeof *s.readers);
  if (!s.workers || !s.rows || !s.readers)
    cli_die ("out of memory");

  for (i = 0, k = 0; i < o->nwl; i++) {
    const struct workload *w = &o->wl[i];
    uint64_t j;

    if (w->req > max_req)
      max_req = w->req;
    if (w->kind == WL_RANDOM) {
      s.random[i].client = engine_client (&s, "random");
      s.random[i].rng = o->seed * 2654435761u + i + 1;
      ev_push (&s, 0, EV_RANDOM, i);
      continue;
    }
    if (w->kind == WL_INTERLEAVE) {
      s.inter[i].client = engine_client (&s, "interleave");
      s.inter[i].region = w->span / w->n / w->req * w->req;
      s.inter[i].pos = calloc (w->n, sizeof *s.inter[i].pos);
      if (!s.inter[i].pos)
        cli_die ("out of memory");
      ev_push (&s, 0, EV_INTERLEAVE, i);
      continue;
    }
    for (j = 0; j < w->n; j++, k++) {
      struct reader *r = &s.readers[k];
      char name[32];

      snprintf (name, sizeof name, "stream-%zu", k);
      r->client = engine_client (&s, name);
      r->start = r->next = w->base + j * w->region;
      r->end = r->start + w->region;
      r->req = (uint32_t) w->req;
      r->interval = (uint64_t) ((double) w->req * 1e9 / (double) w->rate);
      /* Spread the first reads evenly over the ramp. */
      r->due = (uint64_t) ((double) w->ramp_ns * (double) j /
                           (double) w->n);
      ev_push (&s, r->due, EV_STREAM, k);
    }
  }
  if (trace) {
    s.trace = *trace;
    s.trace.pos = 0;
    s.trace.conns = NULL;
    s.trace.clients = NULL;
    s.trace.nconns = 0;
    max_req = REQ_MAX;
    ev_push (&s, 0, EV_TRACE, 0);
  }
  s.buf = malloc (max_req);
  if (!s.buf)
    cli_die ("out of memory");
  if (o->plot) {
    s.plot = tmpfile ();
    if (!s.plot)
      cli_die ("--plot: cannot create a temporary file: %s", strerror (errno));
    ev_push (&s, 0, EV_SAMPLE, 0);
  }

  run_events (&s, false);
  /* A trace replayed for its own length (no --duration) runs on until
   * its last read completes: a trace recorded on a faster backend would
   * otherwise end with its reads in flight, its later reads served by
   * nothing (one pass over 64 MiB at 0.57 backend bytes a client byte).
   */
  if (s.drain)
    run_events (&s, true);
  engine_stats (&s, &res->st);
  clock_gettime (CLOCK_MONOTONIC, &t1);
  res->pool_bytes = pool_bytes;
  res->requests = s.requests;
  res->hits = s.hits;
  res->mean_ms = sim_latency_mean (&s.lat);
  res->p99_ms = sim_latency_percentile (&s.lat, 99);
  res->max_ms = sim_latency_percentile (&s.lat, 100);
  res->client_rtt_ns = o->client_rtt_ns;
  res->wall_s = (double) (t1.tv_sec - t0.tv_sec) +
    (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
  res->virtual_s = (double) s.end / 1e9;
  res->peak_rss = peak_rss ();
  res->seek_s = (double) s.model.seek_ns / 1e9;
  if (s.plot) {
    write_plot (s.plot, o->plot, pool_bytes, adaptra_mode_name (o->cfg.mode));
    fclose (s.plot);
  }
  /* The requests still in progress end past the run, uncounted. */
  run_events (&s, true);
  engine_close (&s);
  for (i = 0; i < s.nreqs; i++) {
    free (s.reqs[i]->stack);
    free (s.reqs[i]);
  }
  free (s.reqs);
  free (s.sleepers);
  if (s.model.head_log && fclose (s.model.head_log) != 0)
    cli_die ("--head=%s: %s", o->head, strerror (errno));
  if (s.waits && fclose (s.waits) != 0)
    cli_die ("--waits=%s: %s", o->waits, strerror (errno));
  sim_model_free (&s.model);
  sim_latency_free (&s.lat);
  for (i = 0; i < o->nwl; i++)
    free (s.inter[i].pos);
  free (s.trace.conns);
  free (s.trace.clients);
  free (s.buf);
  free (s.heap);
  free (s.readers);
  free (s.rows);
  free (s.workers);
  S = NULL;
}

/* ------------------------------------------------------------------ */
/* Results. */

static double
pct (uint64_t a, uint64_t b)
{
  return b ? 100.0 * (double) a / (double) b : 0;
}

struct figures {
  double hit, ra_hit, ra_settled, ra_pending, unread, ampl;
  uint64_t ra_pages, ra_hits, unread_pages, windows;
};

static void
figures_of (const struct result *r, struct figures *f)
{
  const struct adaptra_method_stats *all =
    &r->st.method[ADAPTRA_METHOD_NONE];
  uint64_t settled, pending;

  f->ra_pages = all->pgreadahead;
  f->ra_hits = all->pgreadahead_hit;
  f->unread_pages = r->st.evicted_unread;
  f->windows = all->readahead;
  settled = f->ra_hits + f->unread_pages;
  pending = f->ra_pages > settled ? f->ra_pages - settled : 0;
  f->hit = pct (r->hits, r->requests);
  f->ra_hit = pct (f->ra_hits, f->ra_pages);
  f->ra_settled = pct (f->ra_hits, settled);
  f->ra_pending = pct (pending, f->ra_pages);
  f->unread = pct (f->unread_pages, f->ra_pages);
  f->ampl = r->st.client_bytes
    ? (double) r->st.backend_bytes / (double) r->st.client_bytes : 0;
}

static void
print_json (const struct options *o, const struct result *r)
{
  struct figures f;

  figures_of (r, &f);
  printf ("{\"pool_bytes\": %" PRIu64 ", \"page_bytes\": %" PRIu32
          ", \"mode\": \"%s\", \"backend\": \"%s\", \"virtual_s\": %.3f"
          ", \"client_requests\": %" PRIu64 ", \"client_bytes\": %" PRIu64
          ", \"backend_requests\": %" PRIu64 ", \"backend_bytes\": %" PRIu64
          ", \"hit_pct\": %.4f, \"ra_hit_pct\": %.4f"
          ", \"ra_settled_hit_pct\": %.4f, \"ra_pending_pct\": %.4f"
          ", \"readahead_pages\": %" PRIu64
          ", \"evicted_unread_pages\": %" PRIu64
          ", \"evicted_unread_pct\": %.4f, \"amplification\": %.4f"
          ", \"windows\": %" PRIu64 ", \"rescues\": %" PRIu64
          ", \"streams_resumed\": %" PRIu64
          ", \"mean_latency_ms\": %.4f, \"p99_latency_ms\": %.4f"
          ", \"max_latency_ms\": %.4f, \"client_rtt_us\": %.3f"
          ", \"backend_latency_ns\": %" PRIu64
          ", \"backend_bytes_per_sec\": %" PRIu64
          ", \"backend_flight_limit_bytes\": %" PRIu64
          ", \"window_max_bytes\": %" PRIu64 ", \"seek_s\": %.4f"
          ", \"peak_rss_bytes\": %" PRIu64 ", \"wall_s\": %.3f}\n",
          r->pool_bytes, o->cfg.page_size, adaptra_mode_name (o->cfg.mode),
          o->backend, r->virtual_s, r->st.client_requests,
          r->st.client_bytes, r->st.backend_requests, r->st.backend_bytes,
          f.hit, f.ra_hit, f.ra_settled, f.ra_pending, f.ra_pages,
          f.unread_pages, f.unread, f.ampl, f.windows,
          r->st.readahead_rescue, r->st.streams_resumed, r->mean_ms,
          r->p99_ms, r->max_ms, (double) r->client_rtt_ns / 1e3,
          r->st.backend_latency_ns, r->st.backend_bytes_per_sec,
          r->st.backend_flight_limit_bytes, r->st.window_max_bytes, r->seek_s,
          r->peak_rss, r->wall_s);
}

static void
print_table (const struct options *o, const struct result *r)
{
  struct figures f;

  figures_of (r, &f);
  printf ("%.3f s of virtual time in %.1f s, peak RSS %.1f MiB: pool %"
          PRIu64 " MiB, %s, backend %s\n", r->virtual_s, r->wall_s,
          (double) r->peak_rss / 1048576, r->pool_bytes >> 20,
          adaptra_mode_name (o->cfg.mode), o->backend);
  printf ("  client reads      %12" PRIu64 "  (%.1f MiB)\n",
          r->st.client_requests, (double) r->st.client_bytes / 1048576);
  printf ("  hit               %11.2f%%  reads served from the pool "
          "without waiting\n", f.hit);
  printf ("  read-ahead hit    %11.2f%%  of pages read ahead, a client read "
          "(%.2f%% still pending, %.2f%% of those settled)\n",
          f.ra_hit, f.ra_pending, f.ra_settled);
  printf ("  evicted unread    %11.3f%%  of pages read ahead (%" PRIu64
          " pages)\n", f.unread, f.unread_pages);
  printf ("  amplification     %12.3f  backend bytes / client bytes\n",
          f.ampl);
  printf ("  backend reads     %12" PRIu64 "  (%.1f MiB)\n",
          r->st.backend_requests, (double) r->st.backend_bytes / 1048576);
  printf ("  latency           %9.3f ms mean, %.3f ms p99, %.3f ms max\n",
          r->mean_ms, r->p99_ms, r->max_ms);
  if (o->model.kind == SIM_DISK)
    printf ("  seeks             %11.3f s  of the head's time\n", r->seek_s);
  printf ("  windows           %12" PRIu64 "  (%" PRIu64 " rescues, %"
          PRIu64 " streams resumed)\n", f.windows, r->st.readahead_rescue,
          r->st.streams_resumed);
}

static void
print_sweep_header (void)
{
  printf ("%10s %9s %8s %8s %8s %8s %9s %6s %8s %8s %8s %7s %8s\n", "pool",
          "virtual_s", "rtt_us", "hit%", "ra_hit%", "pending%", "unread%",
          "ampl", "mean_ms", "p99_ms", "max_ms", "wall_s", "rss_MiB");
}

/* A sweep's row: the figures that vary from run to run. */
enum { COL_HIT, COL_RA_HIT, COL_PENDING, COL_UNREAD, COL_AMPL, COL_MEAN,
       COL_P99, COL_MAX, NCOLS };

static void
columns (const struct result *r, double *c)
{
  struct figures f;

  figures_of (r, &f);
  c[COL_HIT] = f.hit;
  c[COL_RA_HIT] = f.ra_hit;
  c[COL_PENDING] = f.ra_pending;
  c[COL_UNREAD] = f.unread;
  c[COL_AMPL] = f.ampl;
  c[COL_MEAN] = r->mean_ms;
  c[COL_P99] = r->p99_ms;
  c[COL_MAX] = r->max_ms;
}

static void
print_columns (const double *c)
{
  printf (" %8.2f %8.2f %8.2f %9.3f %6.3f %8.3f %8.3f %8.3f", c[COL_HIT],
          c[COL_RA_HIT], c[COL_PENDING], c[COL_UNREAD], c[COL_AMPL],
          c[COL_MEAN], c[COL_P99], c[COL_MAX]);
}

static void
print_sweep_row (const struct result *r, double *c)
{
  columns (r, c);
  printf ("%9" PRIu64 "M %9.3f %8.1f", r->pool_bytes >> 20, r->virtual_s,
          (double) r->client_rtt_ns / 1e3);
  print_columns (c);
  printf (" %7.1f %8.1f\n", r->wall_s, (double) r->peak_rss / 1048576);
}

/* The sweep's last row: each column's median over the n runs of rows
 * (NCOLS a run).  A figure that hangs on whether a reader reaches its
 * window microseconds before or after it completes swings from one
 * client round trip to the next; its median over a few round trips
 * does not.
 */
static void
print_sweep_median (double *rows, size_t n)
{
  double col[NCOLS], *v = malloc (n * sizeof *v);
  size_t i, k;

  if (!v)
    cli_die ("out of memory");
  for (k = 0; k < NCOLS; k++) {
    for (i = 0; i < n; i++)
      v[i] = rows[i * NCOLS + k];
    col[k] = sim_median (v, n);
  }
  free (v);
  printf ("%10s %9s %8s", "median", "", "");
  print_columns (col);
  printf ("\n");
}

/* ------------------------------------------------------------------ */
/* Options. */

/* The default text and the bounds of the filter's parameter name
 * (core/config.c's table), which the engine's options share.
 */
static const char *
param_default (const char *name)
{
  return adaptra_param_find (name)->def;
}

static uint64_t
param_min (const char *name)
{
  return adaptra_param_find (name)->min;
}

static uint64_t
param_max (const char *name)
{
  return adaptra_param_find (name)->max;
}

static void
usage (FILE *f)
{
  /* The engine's options take the filter's defaults: the parameter
   * table's (core/config.c), named here, not copied.
   */
  fprintf (f,
    "usage: " PROG " [OPTION]... --workload SPEC [--workload SPEC]...\n"
    "       " PROG " [OPTION]... --trace FILE\n"
    "Run the adaptra engine in virtual time against a modelled backend.\n"
    "\n"
    "  --pool SIZE            page pool (default %s)\n"
    "  --page SIZE            pool page (default %s)\n"
    "  --ratio N              percent of the thrashing threshold (%s)\n"
    "  --mode adaptive|fixed|off\n"
    "                         read-ahead mode (%s)\n"
    "  --min SIZE             smallest new window (%s)\n"
    "  --max SIZE|auto        largest window (%s)\n"
    "  --streams N            stream table size (%s)\n"
    "  --workers N            prefetch workers (%s)\n"
    "  --backend SPEC         remote:LATENCY:BANDWIDTH[:BURST[:COPY\n"
    "                         [:OVERSHOOT]]]\n"
    "                         (" BACKEND_DEFAULT ") or disk\n"
    "  --workload SPEC        streams:N:RATE:REQ[:RAMP] or\n"
    "                         random:IOPS:REQ[:SPAN] or\n"
    "                         interleave:N:REQ[:SPAN]\n"
    "  --trace FILE           replay a CSV (t_ms,op,offset,length,conn\n"
    "                         [,dur_ms]) or nbdkit log filter trace, maybe\n"
    "                         gzipped\n"
    "  --duration SECONDS     virtual time (60, or until the trace's last\n"
    "                         read completes)\n"
    "  --client-rtt TIME      a request's round trip outside the backend (0)\n"
    "  --client-spread TIME   and a random part of this mean (0)\n"
    "  --wake-delay TIME      a reader's wake-up after a wait (%gus)\n"
    "  --wake-growth TIME     and more per millisecond asleep (%gus)\n"
    "  --delay-overshoot TIME remote: added to the latency (%gus)\n"
    "  --sweep KEY=V1,V2,...  one run per value of KEY: pool, duration or\n"
    "                         client-rtt; several: every combination\n"
    "  --json                 one JSON object per run, the last line\n"
    "  --plot FILE.png        window size and pool use over time\n"
    "  --head FILE            disk: each read as the head serves it\n"
    "  --waits FILE           each client read that waited, and how long\n"
    "  --seed N               seed of the random workloads (1)\n"
    "  --version\n"
    "  --help\n",
    param_default ("pool"), param_default ("page"), param_default ("ratio"),
    param_default ("mode"), param_default ("min"), param_default ("max"),
    param_default ("streams"), param_default ("workers"),
    (double) WAKE_DEFAULT_NS / 1e3, (double) WAKE_GROWTH_DEFAULT_NS / 1e3,
    (double) DELAY_OVERSHOOT_DEFAULT_NS / 1e3);
}

static uint64_t
size_arg (const char *opt, const char *v, uint64_t min)
{
  uint64_t n;

  if (sim_parse_size (v, &n) == -1)
    cli_die ("--%s=%s: not a size (e.g. 4096, 64K, 16M, 8G)", opt, v);
  if (n < min)
    cli_die ("--%s=%s: must be at least %" PRIu64, opt, v, min);
  return n;
}

/* The REQ field f of --workload=arg: a size from 1 byte to REQ_MAX,
 * or exit with a message saying so.
 */
static uint64_t
parse_req (const char *arg, const char *f)
{
  uint64_t req;

  if (sim_parse_size (f, &req) == -1 || req == 0 || req > REQ_MAX)
    cli_die ("--workload=%s: REQ '%s' is not a size from 1 to 32M", arg, f);
  return req;
}

/* A decimal number in [min, max]; returns 0, or -1. */
static int
parse_count (const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
  char *end;
  unsigned long long n;

  errno = 0;
  n = strtoull (v, &end, 10);
  if (errno || end == v || *end || *v == '-' || n < min || n > max)
    return -1;
  *out = n;
  return 0;
}

static uint64_t
count_arg (const char *opt, const char *v, uint64_t min, uint64_t max)
{
  uint64_t n;

  if (parse_count (v, min, max, &n) == -1)
    cli_die ("--%s=%s: not a number from %" PRIu64 " to %" PRIu64,
         opt, v, min, max);
  return n;
}

/* Split spec at ':' into at most max fields (in place). */
static size_t
fields (char *spec, char **f, size_t max)
{
  size_t n = 0;
  char *p = spec;

  while (n < max) {
    f[n++] = p;
    p = strchr (p, ':');
    if (!p)
      break;
    *p++ = '\0';
  }
  return p ? max + 1 : n;
}

static void
parse_workload (struct options *o, const char *arg)
{
  char copy[256], *f[6];
  struct workload *w;
  size_t n;

  if (o->nwl == MAX_WORKLOADS)
    cli_die ("--workload=%s: at most %d workloads", arg, MAX_WORKLOADS);
  w = &o->wl[o->nwl];
  memset (w, 0, sizeof *w);
  snprintf (copy, sizeof copy, "%s", arg);
  n = fields (copy, f, 5);
  if (strcmp (f[0], "streams") == 0 && (n == 4 || n == 5)) {
    w->kind = WL_STREAMS;
    if (parse_count (f[1], 1, 1000000, &w->n) == -1)
      cli_die ("--workload=%s: N '%s' is not a number from 1 to 1000000",
           arg, f[1]);
    if (sim_parse_size (f[2], &w->rate) == -1 || w->rate == 0)
      cli_die ("--workload=%s: RATE '%s' is not a size per second (e.g. 1K)",
           arg, f[2]);
    w->req = parse_req (arg, f[3]);
    w->ramp_ns = RAMP_DEFAULT_NS;
    if (n == 5 && sim_parse_duration (f[4], &w->ramp_ns) == -1)
      cli_die ("--workload=%s: RAMP '%s' is not a time (seconds, or e.g. "
           "500ms)", arg, f[4]);
  }
  else if (strcmp (f[0], "random") == 0 && (n == 3 || n == 4)) {
    w->kind = WL_RANDOM;
    if (parse_count (f[1], 1, 100000000, &w->iops) == -1)
      cli_die ("--workload=%s: IOPS '%s' is not a number from 1 to 100000000",
           arg, f[1]);
    w->req = parse_req (arg, f[2]);
    w->span = RANDOM_SPAN_DEFAULT;
    if (n == 4 && (sim_parse_size (f[3], &w->span) == -1 ||
                   w->span < w->req))
      cli_die ("--workload=%s: SPAN '%s' is not a size of at least REQ",
           arg, f[3]);
  }
  else if (strcmp (f[0], "interleave") == 0 && (n == 3 || n == 4)) {
    w->kind = WL_INTERLEAVE;
    if (parse_count (f[1], 1, 1000000, &w->n) == -1)
      cli_die ("--workload=%s: N '%s' is not a number from 1 to 1000000",
           arg, f[1]);
    w->req = parse_req (arg, f[2]);
    w->span = INTERLEAVE_SPAN_DEFAULT;
    if (n == 4 && sim_parse_size (f[3], &w->span) == -1)
      cli_die ("--workload=%s: SPAN '%s' is not a size", arg, f[3]);
    if (w->span / w->n < w->req)
      cli_die ("--workload=%s: SPAN must hold N reads of REQ", arg);
  }
  else
    cli_die ("--workload=%s: expected streams:N:RATE:REQ[:RAMP], "
         "random:IOPS:REQ[:SPAN] or interleave:N:REQ[:SPAN]", arg);
  o->nwl++;
}

/* --sweep=KEY=V,V,...: the values of one parameter (sweep_names). */
static void
parse_sweep (struct options *o, const char *arg)
{
  char copy[1024], *p, *save = NULL;
  const char *eq = strchr (arg, '=');
  struct sweep *sw = NULL;
  size_t k;

  for (k = 0; eq && k < NSWEEP; k++)
    if (strlen (sweep_names[k]) == (size_t) (eq - arg) &&
        strncmp (arg, sweep_names[k], eq - arg) == 0)
      sw = &o->sweep[k];
  if (!sw)
    cli_die ("--sweep=%s: expected pool=SIZE,..., duration=TIME,... or "
         "client-rtt=TIME,...", arg);
  k = (size_t) (sw - o->sweep);
  if (sw->n)
    cli_die ("--sweep=%s: %s swept twice", arg, sweep_names[k]);
  snprintf (copy, sizeof copy, "%s", eq + 1);
  for (p = strtok_r (copy, ",", &save); p; p = strtok_r (NULL, ",", &save)) {
    uint64_t *v = &sw->v[sw->n];

    if (sw->n == MAX_SWEEP)
      cli_die ("--sweep=%s: at most %d values", arg, MAX_SWEEP);
    if (k == SWEEP_POOL && (sim_parse_size (p, v) == -1 || *v == 0))
      cli_die ("--sweep=%s: '%s' is not a size", arg, p);
    if (k != SWEEP_POOL && (sim_parse_duration (p, v) == -1 ||
                            (k == SWEEP_DURATION && *v == 0)))
      cli_die ("--sweep=%s: '%s' is not a time", arg, p);
    sw->n++;
  }
  if (sw->n == 0)
    cli_die ("--sweep=%s: no value", arg);
}

enum {
  OPT_POOL = 256, OPT_PAGE, OPT_RATIO, OPT_MODE, OPT_MIN, OPT_MAX,
  OPT_STREAMS, OPT_WORKERS, OPT_BACKEND, OPT_WORKLOAD, OPT_TRACE,
  OPT_DURATION, OPT_CLIENT_RTT, OPT_CLIENT_SPREAD, OPT_WAKE_DELAY,
  OPT_WAKE_GROWTH, OPT_DELAY_OVERSHOOT, OPT_SWEEP, OPT_JSON, OPT_PLOT, OPT_HEAD,
  OPT_WAITS,
  OPT_SEED,
  OPT_VERSION,
  OPT_HELP,
};

static const struct option long_options[] = {
  { "pool", required_argument, NULL, OPT_POOL },
  { "page", required_argument, NULL, OPT_PAGE },
  { "ratio", required_argument, NULL, OPT_RATIO },
  { "mode", required_argument, NULL, OPT_MODE },
  { "min", required_argument, NULL, OPT_MIN },
  { "max", required_argument, NULL, OPT_MAX },
  { "streams", required_argument, NULL, OPT_STREAMS },
  { "workers", required_argument, NULL, OPT_WORKERS },
  { "backend", required_argument, NULL, OPT_BACKEND },
  { "workload", required_argument, NULL, OPT_WORKLOAD },
  { "trace", required_argument, NULL, OPT_TRACE },
  { "duration", required_argument, NULL, OPT_DURATION },
  { "client-rtt", required_argument, NULL, OPT_CLIENT_RTT },
  { "client-spread", required_argument, NULL, OPT_CLIENT_SPREAD },
  { "wake-delay", required_argument, NULL, OPT_WAKE_DELAY },
  { "wake-growth", required_argument, NULL, OPT_WAKE_GROWTH },
  { "delay-overshoot", required_argument, NULL, OPT_DELAY_OVERSHOOT },
  { "sweep", required_argument, NULL, OPT_SWEEP },
  { "json", no_argument, NULL, OPT_JSON },
  { "plot", required_argument, NULL, OPT_PLOT },
  { "head", required_argument, NULL, OPT_HEAD },
  { "waits", required_argument, NULL, OPT_WAITS },
  { "seed", required_argument, NULL, OPT_SEED },
  { "version", no_argument, NULL, OPT_VERSION },
  { "help", no_argument, NULL, OPT_HELP },
  { NULL, 0, NULL, 0 },
};

/* --OPT's argument (optarg), a time: into *ns, or stop. */
static void
parse_time (const char *opt, uint64_t *ns)
{
  if (sim_parse_duration (optarg, ns) == -1)
    cli_die ("--%s=%s: not a time (e.g. 80us)", opt, optarg);
}

static void
parse_options (int argc, char **argv, struct options *o)
{
  char why[256];
  uint64_t v;
  int c;

  memset (o, 0, sizeof *o);
  adaptra_config_defaults (&o->cfg);
  o->backend = BACKEND_DEFAULT;
  o->duration_ns = 60 * SEC;
  o->seed = 1;
  o->wake_ns = WAKE_DEFAULT_NS;
  o->wake_growth_ns = WAKE_GROWTH_DEFAULT_NS;
  o->delay_overshoot_ns = DELAY_OVERSHOOT_DEFAULT_NS;
  opterr = 0;
  while ((c = getopt_long (argc, argv, ":", long_options, NULL)) != -1) {
    switch (c) {
    case OPT_POOL: o->cfg.pool_bytes = size_arg ("pool", optarg, 1); break;
    case OPT_PAGE:
      v = size_arg ("page", optarg, 1);
      if (v > UINT32_MAX)
        cli_die ("--page=%s: too large", optarg);
      o->cfg.page_size = (uint32_t) v;
      break;
    case OPT_RATIO:
      o->cfg.ratio = (unsigned) count_arg ("ratio", optarg, param_min ("ratio"),
                                        param_max ("ratio"));
      break;
    case OPT_MODE:
      if (adaptra_mode_parse (optarg, &o->cfg.mode) != 0)
        cli_die ("--mode=%s: expected adaptive, fixed or off", optarg);
      break;
    case OPT_MIN: o->cfg.min_bytes = size_arg ("min", optarg, 1); break;
    case OPT_MAX:
      o->cfg.max_bytes = strcmp (optarg, "auto") == 0
        ? 0 : size_arg ("max", optarg, 1);
      break;
    case OPT_STREAMS:
      o->cfg.streams = (uint32_t) count_arg ("streams", optarg,
                                            param_min ("streams"),
                                            param_max ("streams"));
      break;
    case OPT_WORKERS:
      o->cfg.workers = (unsigned) count_arg ("workers", optarg, 1,
                                            param_max ("workers"));
      break;
    case OPT_BACKEND:
      o->backend = optarg;
      break;
    case OPT_WORKLOAD: parse_workload (o, optarg); break;
    case OPT_TRACE: o->trace = optarg; break;
    case OPT_DURATION:
      if (sim_parse_duration (optarg, &o->duration_ns) == -1 ||
          o->duration_ns == 0)
        cli_die ("--duration=%s: not a positive time (seconds, or e.g. 500ms)",
             optarg);
      o->duration_set = true;
      break;
    case OPT_CLIENT_RTT: parse_time ("client-rtt", &o->client_rtt_ns); break;
    case OPT_CLIENT_SPREAD:
      parse_time ("client-spread", &o->client_spread_ns);
      break;
    case OPT_WAKE_DELAY: parse_time ("wake-delay", &o->wake_ns); break;
    case OPT_WAKE_GROWTH:
      parse_time ("wake-growth", &o->wake_growth_ns);
      break;
    case OPT_DELAY_OVERSHOOT:
      parse_time ("delay-overshoot", &o->delay_overshoot_ns);
      break;
    case OPT_SWEEP: parse_sweep (o, optarg); break;
    case OPT_JSON: o->json = true; break;
    case OPT_PLOT: o->plot = optarg; break;
    case OPT_HEAD: o->head = optarg; break;
    case OPT_WAITS: o->waits = optarg; break;
    case OPT_SEED: o->seed = count_arg ("seed", optarg, 0, UINT64_MAX); break;
    case OPT_VERSION:
      printf ("adaptra-sim (adaptra) %s\n", PACKAGE_VERSION);
      exit (EXIT_SUCCESS);
    case OPT_HELP: usage (stdout); exit (EXIT_SUCCESS);
    case ':':
      cli_die ("%s needs a value (see --help)", argv[optind - 1]);
    default:
      cli_die ("unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind < argc)
    cli_die ("unexpected argument '%s' (see --help)", argv[optind]);
  if (o->nwl == 0 && !o->trace)
    cli_die ("nothing to run: give --workload or --trace (see --help)");
  if (sim_model_parse (o->backend, &o->model, why, sizeof why) == -1)
    cli_die ("%s", why);
  /* The delay filter sleeps the latency and then some. */
  if (o->model.kind == SIM_REMOTE)
    o->model.latency_ns += o->delay_overshoot_ns;
  if (o->head && o->model.kind != SIM_DISK)
    cli_die ("--head=%s: only the disk model has a head", o->head);
}

int
main (int argc, char **argv)
{
  struct options o;
  struct trace trace;
  struct result r;
  uint64_t export_size;
  double *rows = NULL;
  size_t i, k, runs = 1;

  parse_options (argc, argv, &o);
  memset (&trace, 0, sizeof trace);
  if (o.trace) {
    load_trace (&trace, o.trace, &o.model);
    if (!o.duration_set)
      o.duration_ns = trace.rec[trace.n - 1].t_ns - trace.t0 + 1;
  }
  for (k = 0; k < NSWEEP; k++)
    runs *= o.sweep[k].n ? o.sweep[k].n : 1;
  if (o.plot && runs > 1)
    cli_die ("--plot=%s: plots one run, not a --sweep", o.plot);
  if (o.plot)
    check_plot_dir (o.plot);
  if (o.head && runs > 1)
    cli_die ("--head=%s: traces one run, not a --sweep", o.head);
  if (o.waits && runs > 1)
    cli_die ("--waits=%s: traces one run, not a --sweep", o.waits);
  if (!o.json && runs > 1) {
    rows = malloc (runs * NCOLS * sizeof *rows);
    if (!rows)
      cli_die ("out of memory");
    print_sweep_header ();
  }
  for (i = 0; i < runs; i++) {
    /* Run i's values, the last key varying fastest. */
    struct options oi = o;
    uint64_t *at[NSWEEP] = {
      [SWEEP_POOL] = &oi.cfg.pool_bytes,
      [SWEEP_DURATION] = &oi.duration_ns,
      [SWEEP_CLIENT_RTT] = &oi.client_rtt_ns,
    };
    size_t rest = i;

    for (k = NSWEEP; k-- > 0;)
      if (o.sweep[k].n) {
        *at[k] = o.sweep[k].v[rest % o.sweep[k].n];
        rest /= o.sweep[k].n;
      }
    /* Streams' regions follow the run's length, and the disk's seeks
     * the export's size: lay out each run as if it were the only one.
     */
    export_size = layout (&oi, trace.end);
    run (&oi, oi.cfg.pool_bytes, export_size, o.trace ? &trace : NULL, &r);
    if (o.json)
      print_json (&oi, &r);
    else if (runs > 1)
      print_sweep_row (&r, &rows[i * NCOLS]);
    else
      print_table (&oi, &r);
    fflush (stdout);
  }
  if (rows) {
    print_sweep_median (rows, runs);
    free (rows);
  }
  free (trace.rec);
  return EXIT_SUCCESS;
}
