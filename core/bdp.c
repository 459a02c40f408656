/* bdp.c: backend latency and throughput, fitted from its reads.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Bandwidth-delay sizing, and whether the backend is too fast for
 * read-ahead to help.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §3.3 (the max) and §7.
 *
 * The seed capped windows at 1 MiB because a local disk answers in
 * well under a millisecond.  A remote backend needs about one
 * bandwidth-delay product in flight per stream: 5 ms x 200 MB/s is
 * 1 MB, 50 ms x 1 GB/s is 50 MB.
 *
 * A read of n bytes costs t = L + n / B: a fixed latency L and a
 * transfer at throughput B.  Dividing bytes by time would measure
 * neither (for one request in flight it just gives n / t, and the
 * product L x B collapses to n).  So the engine fits the line through
 * its reads: moving averages of n, t, n^2 and n*t give the slope
 * 1/B = cov(n, t) / var(n) and the intercept L.  Demand reads are
 * small and read-ahead windows large, so the sizes vary enough for a
 * fit; while they do not, all of t is taken as latency and n / t as
 * throughput, which errs on the side of more look-ahead.
 */

#include <config.h>

#include "bdp.h"

/* Weight of a new sample in the moving averages: 1/8. */
#define EWMA_DIVISOR 8.0

/* Sizes must spread by at least 10% (variance 1% of n^2) to fit. */
#define MIN_RELATIVE_VARIANCE 0.01

void
adaptra_bdp_sample (struct adaptra_bdp *m, uint64_t bytes, uint64_t ns)
{
  double n = (double) bytes, t = (double) ns;

  if (m->samples++ == 0) {
    m->n = n;
    m->t = t;
    m->nn = n * n;
    m->nt = n * t;
    return;
  }
  m->n += (n - m->n) / EWMA_DIVISOR;
  m->t += (t - m->t) / EWMA_DIVISOR;
  m->nn += (n * n - m->nn) / EWMA_DIVISOR;
  m->nt += (n * t - m->nt) / EWMA_DIVISOR;
}

/* Fit t = latency + n * slope; slope 0 when the sizes do not spread. */
static void
fit (const struct adaptra_bdp *m, double *latency, double *slope)
{
  double var = m->nn - m->n * m->n;
  double cov = m->nt - m->n * m->t;

  *latency = m->t;
  *slope = 0;
  if (var > MIN_RELATIVE_VARIANCE * m->n * m->n && cov > 0) {
    *slope = cov / var;
    *latency = m->t - m->n * *slope;
    if (*latency < 0)
      *latency = 0;
  }
}

uint64_t
adaptra_bdp_latency_ns (const struct adaptra_bdp *m)
{
  double latency, slope;

  if (m->samples == 0)
    return 0;
  fit (m, &latency, &slope);
  return (uint64_t) latency;
}

uint64_t
adaptra_bdp_bytes_per_sec (const struct adaptra_bdp *m)
{
  double latency, slope;

  if (m->samples == 0)
    return 0;
  fit (m, &latency, &slope);
  if (slope > 0)
    return (uint64_t) (1e9 / slope);
  return m->t > 0 ? (uint64_t) (m->n * 1e9 / m->t) : 0;
}

uint64_t
adaptra_bdp_bytes (const struct adaptra_bdp *m)
{
  return (uint64_t) ((double) adaptra_bdp_latency_ns (m) *
                     (double) adaptra_bdp_bytes_per_sec (m) / 1e9);
}

uint64_t
adaptra_bdp_fetch_ns (const struct adaptra_bdp *m, uint64_t bytes)
{
  uint64_t rate = adaptra_bdp_bytes_per_sec (m);

  if (rate == 0)
    return adaptra_bdp_latency_ns (m);
  return adaptra_bdp_latency_ns (m) +
    (uint64_t) ((double) bytes * 1e9 / (double) rate);
}

bool
adaptra_bdp_fast (const struct adaptra_bdp *m, bool was_fast)
{
  double bound = ADAPTRA_FAST_LATENCY_NS +
    m->n * 1e9 / (double) ADAPTRA_FAST_BYTES_PER_SEC;

  if (m->samples < ADAPTRA_FAST_SAMPLES)
    return false;
  return m->t <= (was_fast ? 2 * bound : bound);
}
