/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Statistics.
 *
 * The live counters are plain uint64_t fields bumped with relaxed
 * atomic adds, so any thread may count without the engine lock and a
 * snapshot never tears a value.  The seed laid out its per-method
 * counters as blocks at fixed offsets from the totals, and bumped the
 * total and the method's copy together; the method array here does
 * the same, with the totals in slot ADAPTRA_METHOD_NONE.
 *
 * The field table below is the only place that spells the names: a
 * printer (text, JSON, Prometheus) walks it.
 */

#include <config.h>

#include <stddef.h>

#include "adaptra/stats.h"

#define COUNTER(field) \
  { #field, offsetof (struct adaptra_stats, field), ADAPTRA_STAT_COUNTER }
#define GAUGE(field) \
  { #field, offsetof (struct adaptra_stats, field), ADAPTRA_STAT_GAUGE }
#define METHOD_FIELD(name, m, field) \
  { name, offsetof (struct adaptra_stats, method[m].field), \
    ADAPTRA_STAT_COUNTER }
/* The seed's per-class names: ra_NAME, ra_NAME_return, ... */
#define METHOD(m, mname) \
  METHOD_FIELD ("ra_" mname, m, readahead), \
  METHOD_FIELD ("ra_" mname "_return", m, readahead_return), \
  METHOD_FIELD ("ra_" mname "_eof", m, readahead_eof), \
  METHOD_FIELD ("pgra_" mname, m, pgreadahead), \
  METHOD_FIELD ("pgra_" mname "_hit", m, pgreadahead_hit), \
  METHOD_FIELD ("pgra_" mname "_eof", m, pgreadahead_eof)

const struct adaptra_stat_field adaptra_stat_fields[] = {
  COUNTER (cache_miss),
  COUNTER (readrandom),
  COUNTER (pgreadrandom),
  COUNTER (readahead_rescue),
  COUNTER (pgreadahead_rescue),
  COUNTER (readahead_end),
  METHOD_FIELD ("readahead", ADAPTRA_METHOD_NONE, readahead),
  METHOD_FIELD ("readahead_return", ADAPTRA_METHOD_NONE, readahead_return),
  METHOD_FIELD ("readahead_eof", ADAPTRA_METHOD_NONE, readahead_eof),
  METHOD_FIELD ("pgreadahead", ADAPTRA_METHOD_NONE, pgreadahead),
  METHOD_FIELD ("pgreadahead_hit", ADAPTRA_METHOD_NONE, pgreadahead_hit),
  METHOD_FIELD ("pgreadahead_eof", ADAPTRA_METHOD_NONE, pgreadahead_eof),
  METHOD (ADAPTRA_METHOD_INITIAL, "initial"),
  METHOD (ADAPTRA_METHOD_STATE, "state"),
  METHOD (ADAPTRA_METHOD_CONTEXT, "context"),
  METHOD (ADAPTRA_METHOD_CONTEXTA, "contexta"),
  METHOD (ADAPTRA_METHOD_FIXED, "fixed"),
  METHOD (ADAPTRA_METHOD_BACKWARD, "backward"),
  COUNTER (readahead_shrink),
  COUNTER (io_block),
  COUNTER (io_congestion),
  COUNTER (evicted),
  COUNTER (evicted_unread),
  COUNTER (invalidated),
  COUNTER (prefetch_failed),
  COUNTER (prefetch_stale),
  COUNTER (streams_refused),
  COUNTER (cache_hints),
  COUNTER (backend_requests),
  COUNTER (backend_bytes),
  COUNTER (backend_errors),
  COUNTER (client_requests),
  COUNTER (client_bytes),
  GAUGE (pages_free),
  GAUGE (pages_inactive),
  GAUGE (pages_active),
  GAUGE (pages_in_flight),
  GAUGE (streams_active),
  GAUGE (clients_active),
  GAUGE (prefetch_queued_bytes),
  GAUGE (prefetch_flight_bytes),
  GAUGE (backend_latency_ns),
  GAUGE (backend_bytes_per_sec),
  GAUGE (window_max_bytes),
};

const size_t adaptra_stat_field_count =
  sizeof adaptra_stat_fields / sizeof adaptra_stat_fields[0];

void
adaptra_stats_count_window (struct adaptra_stats *live, unsigned method,
                            uint64_t pages, int at_eof)
{
  unsigned m[2] = { ADAPTRA_METHOD_NONE, method };
  unsigned i;

  for (i = 0; i < 2; i++) {
    struct adaptra_method_stats *ms = &live->method[m[i]];

    adaptra_stat_add (&ms->readahead, 1);
    adaptra_stat_add (&ms->pgreadahead, pages);
    if (at_eof) {
      adaptra_stat_add (&ms->readahead_eof, 1);
      adaptra_stat_add (&ms->pgreadahead_eof, pages);
    }
  }
}

void
adaptra_stats_count_return (struct adaptra_stats *live, unsigned method)
{
  adaptra_stat_add (&live->method[ADAPTRA_METHOD_NONE].readahead_return, 1);
  adaptra_stat_add (&live->method[method].readahead_return, 1);
}

void
adaptra_stats_count_hits (struct adaptra_stats *live, unsigned method,
                          uint64_t n)
{
  adaptra_stat_add (&live->method[ADAPTRA_METHOD_NONE].pgreadahead_hit, n);
  adaptra_stat_add (&live->method[method].pgreadahead_hit, n);
}

void
adaptra_stats_copy_counters (struct adaptra_stats *snap,
                             const struct adaptra_stats *live)
{
  size_t i;

  for (i = 0; i < adaptra_stat_field_count; i++) {
    const struct adaptra_stat_field *f = &adaptra_stat_fields[i];

    if (f->kind == ADAPTRA_STAT_COUNTER)
      *(uint64_t *) ((char *) snap + f->offset) =
        __atomic_load_n ((const uint64_t *) ((const char *) live + f->offset),
                         __ATOMIC_RELAXED);
  }
}

void
adaptra_stats_clear_counters (struct adaptra_stats *live)
{
  size_t i;

  for (i = 0; i < adaptra_stat_field_count; i++) {
    const struct adaptra_stat_field *f = &adaptra_stat_fields[i];

    if (f->kind == ADAPTRA_STAT_COUNTER)
      __atomic_store_n ((uint64_t *) ((char *) live + f->offset), 0,
                        __ATOMIC_RELAXED);
  }
}
