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
 *   remote  the bench's remote model (nbdkit's delay filter, then its
 *           rate filter): every request waits latency_ns, then its
 *           bytes go through one pipe of bandwidth bytes/s shared by
 *           all requests, in the order they reach it.  The simulator
 *           books a read when it is issued, and a request's second
 *           read is issued at its first one's completion, ahead of
 *           reads other clients issue meanwhile: so the pipe keeps a
 *           calendar of its busy intervals, and a read takes the first
 *           idle gap from its arrival (issue + latency) that holds its
 *           transfer.  Booking at the pipe's end instead left an idle
 *           latency in front of every such read that no earlier read
 *           could use: with 10000 streams of 16 KiB/s (2 reads a
 *           request while they catch up) the pipe's backlog grew to
 *           5.8 s at 80% load.
 *   disk    the bench's disk model (scripts/bench/disk-model-filter.c):
 *           one head serving requests in arrival order, each for
 *           seek + count / bandwidth, seek 0 when it starts where the
 *           previous one ended, else min_seek + (max_seek - min_seek)
 *           * distance / size.
 */
enum sim_model_kind { SIM_REMOTE, SIM_DISK };

/* [start, end) in nanoseconds: the remote pipe is transferring. */
struct sim_busy {
  uint64_t start, end;
};

struct sim_model {
  enum sim_model_kind kind;
  uint64_t latency_ns;          /* remote */
  double bandwidth;             /* bytes per second */
  uint64_t min_seek_ns, max_seek_ns;    /* disk */
  uint64_t size;                /* disk: export size, scales the seek */
  uint64_t free_at;             /* disk: head free from then on */
  uint64_t head;                /* disk: end of the last request */
  struct sim_busy *busy;        /* remote: busy intervals, in order */
  size_t nbusy, capbusy;
};


/* "remote:LATENCY:BANDWIDTH" (e.g. remote:5ms:200M, bandwidth per
 * second in binary units) or "disk" (150M/s, 0.5 ms to 8 ms seeks, as
 * the bench).  Returns 0, or -1 with a message in why.
 */
extern int sim_model_parse (const char *spec, struct sim_model *m,
                            char *why, size_t len);

/* Book a read of count bytes at offset issued at now; returns when it
 * completes, or UINT64_MAX when the calendar is out of memory.
 */
extern uint64_t sim_model_read (struct sim_model *m, uint64_t now,
                                uint64_t offset, uint64_t count);

/* No read will be issued before now any more: forget what is past. */
extern void sim_model_forget (struct sim_model *m, uint64_t now);

/* Free what sim_model_read allocated. */
extern void sim_model_free (struct sim_model *m);

/* One request of a trace. */
enum sim_op { SIM_OP_READ, SIM_OP_WRITE, SIM_OP_OTHER };

struct sim_record {
  uint64_t t_ns;                /* time (any origin: replays use deltas) */
  enum sim_op op;               /* writes, trims and zeroes are WRITE */
  uint64_t offset, length;
  uint64_t conn;
};

/* Parse one line of a trace: CSV "t_ms,op,offset,length,conn" (op
 * read|write|trim|zero, or r|w; a header line starting with "t_ms" is
 * skipped), or a line of nbdkit's log filter ("YYYY-MM-DD HH:MM:SS.US
 * connection=N Read id=I offset=0xO count=0xC ...").  Returns 1 with
 * *r filled, 0 for a line that is no request (header, comment, log
 * lines of other events or of replies), -1 for a malformed one.
 */
extern int sim_trace_parse_line (const char *line, struct sim_record *r);

/* Latencies, for the mean and the 99th percentile. */
struct sim_latency {
  double *v;                    /* milliseconds */
  size_t n, cap;
  double sum;
};

extern int sim_latency_add (struct sim_latency *l, double ms);
extern double sim_latency_mean (const struct sim_latency *l);
/* The p-th percentile (0 < p <= 100), nearest rank; sorts l->v. */
extern double sim_latency_percentile (struct sim_latency *l, double p);
extern void sim_latency_free (struct sim_latency *l);

/* xorshift64*: deterministic random numbers for the workloads. */
extern uint64_t sim_random (uint64_t *state);

#endif /* ADAPTRA_SIMLIB_H */
