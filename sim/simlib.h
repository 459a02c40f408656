/* simlib.h: adaptra-sim's pure parts: parsers, models, statistics.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* adaptra-sim's pure parts: the parsers of its arguments and traces,
 * and the backend models, in virtual time (nanoseconds).  No engine
 * here: sim/adaptra-sim.c drives the engine with them.
 */

#ifndef ADAPTRA_SIMLIB_H
#define ADAPTRA_SIMLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "4096", "4K", "1.5M", "8G", "1T" (binary units, as nbdkit's sizes):
 * bytes.  Returns 0, or -1 if it is not a size or overflows.
 */
extern int sim_parse_size (const char *s, uint64_t *bytes);

/* "5ms", "500us", "2s", "1.5" (seconds): nanoseconds.  Returns 0 or
 * -1.
 */
extern int sim_parse_duration (const char *s, uint64_t *ns);

/* A backend model: when does a read issued at now complete?
 *
 *   remote  the bench's remote model: nbdkit's delay filter (every
 *           read sleeps latency_ns), then its rate filter, a token
 *           bucket (filters/rate/bucket.c) of bandwidth bytes a second
 *           that holds burst_ns of them (the bench's burstiness=0.05:
 *           10 MiB at 200 MiB/s) and starts full.  The model is the
 *           filter's loop (rate.c, maybe_sleep), event by event: a read
 *           that arrives (issue + latency) runs the bucket: it adds
 *           what came in since the last run (up to the capacity) and
 *           takes what it lacks if the bucket holds it, done; else it
 *           takes all there is, and sleeps for what it still lacks at
 *           the rate, then runs the bucket again, and so on.  Each
 *           waiting read sleeps for its own shortfall and takes what
 *           has come in when it wakes, whoever else ran the bucket in
 *           between: a large read progresses between smaller ones that
 *           arrive after it instead of waiting for them all.  So on an
 *           idle link a read costs its latency only, and on a saturated
 *           one the tokens go to whichever read runs the bucket first
 *           after they come in.  Then the file plugin copies the
 *           bytes from the page cache, each read in its own thread:
 *           count / copy_rate more (64 KiB in 15-30 us on the bench's
 *           machine, model.h; 3 GiB/s unless given).  Small as it is,
 *           that cost is what gives the engine's fitted line (model.c)
 *           a slope on an idle link, where the bucket costs nothing:
 *           without it the fit falls back to a read's mean size over
 *           its mean time (0.8 MB/s for 4 KiB in 5 ms), and the
 *           replayed W5-seed read ahead 4% more pages than the filter.
 *
 *           Reads of two kinds.  A client's read (sim_model_read) is
 *           synchronous in the simulator: its completion is returned
 *           once and stays, so what it took from the bucket is pinned
 *           (a calendar of its runs' takes); a read booked later takes
 *           only what is left, and when a pinned take finds the bucket
 *           emptied by a later booking, the bucket owes it (its level
 *           goes below 0 until the flow repays it).  A prefetch
 *           worker's read (sim_model_start) stays open: its completion
 *           (sim_model_done) is recomputed as reads that go ahead of it
 *           are booked, until a client waits for it (sim_model_pin) or
 *           its time passes.
 *   disk    the bench's disk model (scripts/bench/disk-model-filter.c):
 *           one head serving requests in arrival order, each for
 *           seek + count / bandwidth, seek 0 when it starts where the
 *           previous one ended, else min_seek + (max_seek - min_seek)
 *           * distance / size.  Every read is final when booked.
 */
enum sim_model_kind { SIM_REMOTE, SIM_DISK };

/* A pinned read took bytes from the bucket when it ran it. */
struct sim_grab {
  uint64_t at;
  double bytes;
};

/* An open read: a worker's, whose completion may still move. */
struct sim_open {
  unsigned key;                 /* the caller's name for it */
  bool pinned;                  /* final: done no longer moves */
  uint64_t wake;                /* its next run of the bucket, as at the
                                   checkpoint: issue + latency, then
                                   after each sleep */
  double left;                  /* bytes it lacked at the checkpoint */
  uint64_t done;                /* its tokens' arrival, as last computed */
  uint64_t copy_ns;             /* then the plugin's copy */
  /* The same two during a run of the bucket from the checkpoint. */
  uint64_t run_wake;
  double run_left;
};

struct sim_model {
  enum sim_model_kind kind;
  uint64_t latency_ns;          /* remote */
  double bandwidth;             /* bytes per second */
  uint64_t min_seek_ns, max_seek_ns;    /* disk */
  uint64_t size;                /* disk: export size, scales the seek */
  uint64_t free_at;             /* disk: head free from then on */
  uint64_t head;                /* disk: end of the last request */
  uint64_t seek_ns;             /* disk: the head's time seeking */
  FILE *head_log;               /* disk: each read as the head serves
                                   it, or NULL (sim_model_read) */
  /* Remote: the bucket, as it was at checkpoint (no read is issued
   * before checkpoint - latency any more), and what comes after.
   */
  double burst_bytes;           /* the bucket's capacity */
  double copy_rate;             /* bytes per second; 0: no copy cost */
  uint64_t overshoot_ns;        /* a sleeping read wakes this late */
  uint64_t checkpoint;
  double level;                 /* bytes in the bucket then (< 0: owed) */
  struct sim_grab *grabs;       /* pinned reads' arrivals, in order */
  size_t ngrabs, capgrabs;
  /* Both: the open reads. */
  struct sim_open *open;
  size_t nopen, capopen;
  size_t *running;              /* a run of the bucket's: the open reads
                                   that run it (indices into open) */
  size_t caprunning;
  bool stale;                   /* open reads' done need recomputing */
  uint64_t generation;          /* bumped when an open read's done moves:
                                   while it stands and nothing is stale,
                                   sim_model_done says what it said */
};

/* How late the rate filter's sleeps wake (nbdkit_nanosleep, ppoll):
 * 105 us, the median of the medians sim/filter-delays measured in the
 * bench's remote model at fbb8033 (W1 and W3 adaptive, 5 runs each,
 * 98 to 112 us; adaptra-sim.c, WAKE_DEFAULT_NS, says when and at what
 * load).  Not a detail: a waiting read wakes only when its shortfall
 * has come in, so without it the sleeps of reads lock in step and one
 * wakes just after another every time, taking crumbs (W1's longest
 * wait in the simulator goes from 19 to 47 ms).
 */
#define SIM_RATE_OVERSHOOT_NS UINT64_C (105000)

/* "remote:LATENCY:BANDWIDTH[:BURST[:COPY[:OVERSHOOT]]]" (e.g.
 * remote:5ms:200M, bandwidth per second in binary units, burst the
 * seconds of bandwidth the bucket holds, more than 0, 0.05 unless
 * given, copy the plugin's bytes per second, 3G unless given, 0 for
 * none, overshoot how late a sleeping read wakes,
 * SIM_RATE_OVERSHOOT_NS unless given) or "disk" (150M/s, 0.5 ms to
 * 8 ms seeks, as the bench).  Returns 0, or -1 with a message in why.
 */
extern int sim_model_parse (const char *spec, struct sim_model *m,
                            char *why, size_t len);

/* The model's clock horizon: 2^62 ns, 146 years.  Its times are
 * nanoseconds in a uint64_t, and a completion is a sum of them (the
 * start, a seek, a transfer; the bucket's next step), so each part
 * must stay well under 2^64: a quarter leaves room for the sums and
 * for the engine's read-ahead on top of what a trace asks.  A trace
 * that needs more is refused (sim_model_fits), not saturated: no run
 * that long says anything, and a clock stopped at the horizon would
 * replay the trace at a pace it never had.
 */
#define SIM_HORIZON_NS (UINT64_C (1) << 62)

/* 0 if the model can time a trace that spans span_ns and moves bytes
 * in all: its span plus the backend's time to transfer them at its
 * bandwidth stays under SIM_HORIZON_NS.  -1 if not (1 byte a second
 * and a 40 GB write: 1268 years).
 */
extern int sim_model_fits (const struct sim_model *m, uint64_t span_ns,
                           uint64_t bytes);

/* A client's read of count bytes at offset issued at now: when it
 * completes, which no later read changes; UINT64_MAX when out of
 * memory.  On the disk, with head_log set, each read (a worker's too)
 * writes a line as the bench's disk model does with disk-trace=FILE
 * (scripts/bench/seeks reads either): its arrival, the start and end
 * of its service, offset, count and the seek its service starts with,
 * times in seconds.
 */
extern uint64_t sim_model_read (struct sim_model *m, uint64_t now,
                                uint64_t offset, uint64_t count);

/* A worker's read of count bytes at offset issued at now, open under
 * key (unique among the open reads).  Returns 0, or -1 when out of
 * memory.
 */
extern int sim_model_start (struct sim_model *m, uint64_t now,
                            uint64_t offset, uint64_t count, unsigned key);

/* When the open read key completes, as far as the reads booked so far
 * say; only later as more are booked.  UINT64_MAX when out of memory.
 */
extern uint64_t sim_model_done (struct sim_model *m, unsigned key);

/* A client waits for the open read key: its completion (as
 * sim_model_done) becomes final.  UINT64_MAX when out of memory.
 */
extern uint64_t sim_model_pin (struct sim_model *m, unsigned key);

/* The open read key has completed and been delivered: forget it. */
extern void sim_model_finish (struct sim_model *m, unsigned key);

/* No read will be issued before now any more: settle what is past. */
extern void sim_model_forget (struct sim_model *m, uint64_t now);

/* Free what the model allocated. */
extern void sim_model_free (struct sim_model *m);

/* One request of a trace. */
enum sim_op { SIM_OP_READ, SIM_OP_WRITE };

struct sim_record {
  uint64_t t_ns;                /* time (any origin: replays use deltas) */
  enum sim_op op;               /* writes, trims and zeroes are WRITE */
  uint64_t offset, length;
  uint64_t conn;
};

/* Parse one line of a trace: CSV "t_ms,op,offset,length,conn[,dur_ms]"
 * (op read|write|trim|zero, or r|w; flush or f is no request, as in
 * the fleet's replayer; dur_ms, the time the request took where it
 * was recorded, is ignored: the model says how long it takes here; a
 * header line starting with "t_ms" is skipped; offset, length and
 * conn are numbers without a sign, t_ms under SIM_HORIZON_NS), or a
 * line of nbdkit's log filter ("YYYY-MM-DD HH:MM:SS.US connection=N
 * Read id=I offset=0xO count=0xC ...").  Returns 1 with *r filled, 0
 * for a line that is no request (header, comment, flush, log lines of
 * other events or of replies), -1 for a malformed one.
 */
extern int sim_trace_parse_line (const char *line, struct sim_record *r);

/* Latencies (>= 0), for the mean, the 99th percentile and the most.  Zeros (a
 * hit without --client-rtt: most reads of a run that goes well) are
 * counted, not kept: 100,000 streams for 600 s are 60 million reads,
 * 480 MB of doubles.
 */
struct sim_latency {
  double *v;                    /* milliseconds, the ones above 0 */
  size_t n, cap;
  uint64_t zeros;               /* and how many were 0 */
  double sum;
};

extern int sim_latency_add (struct sim_latency *l, double ms);
extern double sim_latency_mean (const struct sim_latency *l);
/* The p-th percentile (0 < p <= 100), nearest rank; sorts l->v. */
extern double sim_latency_percentile (struct sim_latency *l, double p);
extern void sim_latency_free (struct sim_latency *l);

/* The median of the n values of v (the mean of the middle two for an
 * even n; 0 for none); sorts v.
 */
extern double sim_median (double *v, size_t n);

#endif /* ADAPTRA_SIMLIB_H */
