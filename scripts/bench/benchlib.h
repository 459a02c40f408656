/* benchlib.h: helpers shared by the benchmark's libnbd clients.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Helpers shared by the benchmark's libnbd client tools (interleave,
 * paced-streams): a monotonic clock, size parsing, a latency log and
 * the one-line result every tool prints for scripts/bench/run to parse.
 */

#ifndef ADAPTRA_BENCH_BENCHLIB_H
#define ADAPTRA_BENCH_BENCHLIB_H

#include <stddef.h>
#include <stdint.h>

/* Seconds on CLOCK_MONOTONIC. */
extern double bench_now (void);

/* Parse "4096", "64K", "16M", "1G" (powers of 1024) into *bytes.
 * Returns 0, or -1 after printing an error naming WHAT.
 */
extern int bench_parse_size (const char *what, const char *str,
                             uint64_t *bytes);

/* Parse a positive decimal number (seconds, rates) into *value.
 * Returns 0, or -1 after printing an error naming WHAT.
 */
extern int bench_parse_number (const char *what, const char *str,
                               double *value);

/* Growable array of request latencies in seconds.  Not thread-safe:
 * give each thread its own log and merge them with latency_log_merge.
 */
struct latency_log {
  double *samples;              /* one entry per completed request */
  size_t count;                 /* entries used */
  size_t capacity;              /* entries allocated */
};

/* Append one latency.  Exits the program on out-of-memory. */
extern void latency_log_add (struct latency_log *log, double seconds);

/* Move every sample of FROM into INTO and empty FROM. */
extern void latency_log_merge (struct latency_log *into,
                               struct latency_log *from);

/* Free the samples; the log is empty afterwards. */
extern void latency_log_free (struct latency_log *log);

/* Print the result line on stdout:
 *   bytes=N seconds=S requests=N lat_mean_us=X lat_p99_us=X lat_max_us=X
 *   late=N
 * LATE counts requests that missed their schedule (0 for unpaced tools).
 * Sorts LOG's samples.
 */
extern void bench_print_result (uint64_t bytes, double seconds,
                                struct latency_log *log, uint64_t late);

#endif /* ADAPTRA_BENCH_BENCHLIB_H */
