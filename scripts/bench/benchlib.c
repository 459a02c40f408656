/* benchlib.c: helpers shared by the benchmark's libnbd clients.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchlib.h"

double
bench_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
bench_parse_size (const char *what, const char *str, uint64_t *bytes)
{
  char *end;
  unsigned long long value;
  unsigned shift = 0;

  errno = 0;
  value = strtoull (str, &end, 10);
  if (errno != 0 || end == str)
    goto bad;
  switch (*end) {
  case '\0': break;
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  default: goto bad;
  }
  if (*end != '\0' || value > (UINT64_MAX >> shift))
    goto bad;
  *bytes = (uint64_t) value << shift;
  return 0;

 bad:
  fprintf (stderr, "%s: cannot parse size '%s'\n", what, str);
  return -1;
}

int
bench_parse_number (const char *what, const char *str, double *value)
{
  char *end;

  errno = 0;
  *value = strtod (str, &end);
  if (errno != 0 || end == str || *end != '\0' || !(*value > 0)) {
    fprintf (stderr, "%s: expected a positive number, got '%s'\n",
             what, str);
    return -1;
  }
  return 0;
}

void
latency_log_add (struct latency_log *log, double seconds)
{
  if (log->count == log->capacity) {
    size_t capacity = log->capacity ? 2 * log->capacity : 4096;
    double *samples = realloc (log->samples, capacity * sizeof *samples);

    if (samples == NULL) {
      perror ("realloc");
      exit (EXIT_FAILURE);
    }
    log->samples = samples;
    log->capacity = capacity;
  }
  log->samples[log->count++] = seconds;
}

void
latency_log_merge (struct latency_log *into, struct latency_log *from)
{
  size_t i;

  for (i = 0; i < from->count; i++)
    latency_log_add (into, from->samples[i]);
  latency_log_free (from);
}

void
latency_log_free (struct latency_log *log)
{
  free (log->samples);
  memset (log, 0, sizeof *log);
}

static int
compare_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

void
bench_print_result (uint64_t bytes, double seconds,
                    struct latency_log *log, uint64_t late)
{
  double sum = 0, mean = 0, p99 = 0, max = 0;
  size_t i;

  if (log->count > 0) {
    qsort (log->samples, log->count, sizeof *log->samples, compare_double);
    for (i = 0; i < log->count; i++)
      sum += log->samples[i];
    mean = sum / log->count;
    /* Nearest-rank percentile: the smallest sample with at least 99%
     * of the samples at or below it.
     */
    p99 = log->samples[(log->count * 99 + 99) / 100 - 1];
    max = log->samples[log->count - 1];
  }
  printf ("bytes=%" PRIu64 " seconds=%.3f requests=%zu "
          "lat_mean_us=%.1f lat_p99_us=%.1f lat_max_us=%.1f late=%" PRIu64
          "\n", bytes, seconds, log->count, mean * 1e6, p99 * 1e6,
          max * 1e6, late);
}
