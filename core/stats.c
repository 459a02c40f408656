/* stats.c: the counters, with the seed's names, and their field table.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Statistics.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §3.5.
 *
 * The live counters are plain uint64_t fields bumped with relaxed
 * atomic adds, so any thread may count without the engine lock and a
 * snapshot never tears a value.  The engine keeps the counters of its
 * read path in shards, one cache line apart, each thread counting in
 * its own (engine-impl.h: adaptra_stats_here), so that threads do not
 * bounce one line between cores at every read, as Linux keeps its
 * vm_event_states per CPU and sums them when /proc/vmstat is read; a
 * snapshot is the sum of the shards (adaptra_stats_add_counters).
 *
 * The seed laid out its per-method counters as blocks at fixed offsets
 * from the totals, and bumped the total and the method's copy
 * together; the method array here does the same, with the totals in
 * slot ADAPTRA_METHOD_NONE.
 *
 * The field table below is the only place that spells the names: a
 * printer (text, JSON, Prometheus) walks it.
 */

#include <config.h>

#include <stddef.h>

#include "adaptra/stats.h"

#define COUNTER(field, help) \
  { #field, offsetof (struct adaptra_stats, field), ADAPTRA_STAT_COUNTER, help }
#define GAUGE(field, help) \
  { #field, offsetof (struct adaptra_stats, field), ADAPTRA_STAT_GAUGE, help }
#define METHOD_FIELD(name, m, field, help) \
  { name, offsetof (struct adaptra_stats, method[m].field), \
    ADAPTRA_STAT_COUNTER, help }
/* The seed's per-class names: ra_NAME, ra_NAME_return, ... */
#define METHOD(m, mname) \
  METHOD_FIELD ("ra_" mname, m, readahead, NULL), \
  METHOD_FIELD ("ra_" mname "_return", m, readahead_return, NULL), \
  METHOD_FIELD ("ra_" mname "_eof", m, readahead_eof, NULL), \
  METHOD_FIELD ("pgra_" mname, m, pgreadahead, NULL), \
  METHOD_FIELD ("pgra_" mname "_hit", m, pgreadahead_hit, NULL), \
  METHOD_FIELD ("pgra_" mname "_eof", m, pgreadahead_eof, NULL)

const struct adaptra_stat_field adaptra_stat_fields[] = {
  COUNTER (cache_miss,
           "Reads that entered the read-ahead logic on a miss past page 0"),
  COUNTER (readrandom, "Misses classified as random reads (no read-ahead)"),
  COUNTER (pgreadrandom, "Pages read by random reads"),
  COUNTER (readahead_rescue,
           "Rescues of read-ahead pages in danger of eviction"),
  COUNTER (pgreadahead_rescue, "Pages rescued"),
  COUNTER (readahead_end,
           "Windows dropped because they started past the end of the export"),
  METHOD_FIELD ("readahead", ADAPTRA_METHOD_NONE, readahead,
                "Read-ahead windows issued"),
  METHOD_FIELD ("readahead_return", ADAPTRA_METHOD_NONE, readahead_return,
                "Look-ahead marks hit"),
  METHOD_FIELD ("readahead_eof", ADAPTRA_METHOD_NONE, readahead_eof,
                "Windows that reached the end of the export"),
  METHOD_FIELD ("pgreadahead", ADAPTRA_METHOD_NONE, pgreadahead,
                "Pages read ahead"),
  METHOD_FIELD ("pgreadahead_hit", ADAPTRA_METHOD_NONE, pgreadahead_hit,
                "Read-ahead pages that a client then read"),
  METHOD_FIELD ("pgreadahead_eof", ADAPTRA_METHOD_NONE, pgreadahead_eof,
                "Pages of windows that reached the end of the export"),
  METHOD (ADAPTRA_METHOD_INITIAL, "initial"),
  METHOD (ADAPTRA_METHOD_STATE, "state"),
  METHOD (ADAPTRA_METHOD_CONTEXT, "context"),
  METHOD (ADAPTRA_METHOD_CONTEXTA, "contexta"),
  METHOD (ADAPTRA_METHOD_FIXED, "fixed"),
  METHOD (ADAPTRA_METHOD_BACKWARD, "backward"),
  COUNTER (readahead_shrink,
           "State-method decisions that found no safe room for a window"),
  COUNTER (readahead_follow,
           "Misses that followed a window already holding the pages ahead"),
  COUNTER (readahead_cut,
           "Windows cut short, or to nothing, where the volume's recent"
           " runs ended"),
  COUNTER (pgreadahead_cut, "Pages those cuts took off the windows"),
  COUNTER (io_block, "Client reads that waited for an in-flight page"),
  COUNTER (io_hedge, "Of those, reads that stopped waiting and read the pages"
           " themselves"),
  COUNTER (io_hedge_refused, "Waits past their deadline that the hedge"
           " credit could not pay for: the reader waited on"),
  COUNTER (io_congestion, "Windows skipped because the backend was congested"),
  COUNTER (evicted, "Pages evicted from the pool"),
  COUNTER (evicted_unread,
           "Read-ahead pages evicted before a client read them (thrashing)"),
  COUNTER (invalidated, "Pages dropped by writes, zeroes and trims"),
  COUNTER (prefetch_failed, "Prefetch requests the backend failed"),
  COUNTER (prefetch_stale,
           "Prefetched pages discarded because a write overlapped them"),
  COUNTER (streams_resumed,
           "Streams that left the table and resumed from their mark page"),
  COUNTER (cache_hints, "NBD_CMD_CACHE requests from clients"),
  COUNTER (backend_requests, "Read requests sent to the backend"),
  COUNTER (backend_bytes, "Bytes read from the backend"),
  COUNTER (backend_errors, "Backend read errors"),
  COUNTER (client_requests, "Read requests from clients"),
  COUNTER (client_bytes, "Bytes read by clients"),
  COUNTER (bypass_requests,
           "Client reads of volumes that stepped aside (fast backend)"),
  COUNTER (bypass_bytes,
           "Bytes of those read straight from the backend, not cached"),
  COUNTER (bypass_switches,
           "Volumes that stepped aside, or came back to read-ahead"),
  COUNTER (profile_pages_proposed,
           "Pages prefetched along a boot profile (adaptra-profile)"),
  COUNTER (profile_pages_hit,
           "Pages prefetched along a boot profile that the client read"),
  COUNTER (profile_pages_wasted,
           "Pages prefetched along a boot profile that the client passed"),
  GAUGE (page_bytes, "Pool page size, bytes"),
  GAUGE (pages_free, "Pool pages free"),
  GAUGE (pages_inactive, "Pool pages on the inactive list"),
  GAUGE (pages_active, "Pool pages on the active list"),
  GAUGE (pages_in_flight, "Pool pages being read from the backend"),
  GAUGE (pages_lent,
         "Pool pages lent to boot profiles' recorders and matchers"),
  GAUGE (streams_active, "Streams in the stream table"),
  GAUGE (clients_active, "Client connections open"),
  GAUGE (prefetch_queued_bytes, "Prefetch bytes waiting for a worker"),
  GAUGE (prefetch_flight_bytes, "Prefetch bytes queued or being read"),
  GAUGE (backend_latency_ns,
         "Estimated backend latency per request, nanoseconds"),
  GAUGE (backend_bytes_per_sec,
         "Estimated backend streaming throughput, bytes per second"),
  GAUGE (backend_flight_bytes,
         "Bytes being read from the backend now, prefetch and clients"),
  GAUGE (backend_flight_limit_bytes,
         "Prefetch workers start reads only below this many bytes in "
         "flight: 5/4 of the measured bandwidth-delay product and the "
         "mean read (0: not measured, no limit)"),
  GAUGE (backend_reads,
         "Reads being made of the backend now, prefetch and clients"),
  GAUGE (backend_handles,
         "Backend handles opened for the prefetch workers, open now "
         "(plugins that serialise requests per handle)"),
  GAUGE (workers_running,
         "Prefetch threads running now, of adaptra-workers and "
         "adaptra-profile-workers (ceilings)"),
  GAUGE (window_max_bytes,
         "Largest window any stream may be given now, bytes"),
  GAUGE (volumes_bypassed,
         "Volumes whose backend is too fast for read-ahead to help"),
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
adaptra_stats_count_cut (struct adaptra_stats *live, uint64_t pages)
{
  adaptra_stat_add (&live->readahead_cut, 1);
  adaptra_stat_add (&live->pgreadahead_cut, pages);
}

void
adaptra_stats_add_counters (struct adaptra_stats *snap,
                            const struct adaptra_stats *live)
{
  size_t i;

  for (i = 0; i < adaptra_stat_field_count; i++) {
    const struct adaptra_stat_field *f = &adaptra_stat_fields[i];

    if (f->kind == ADAPTRA_STAT_COUNTER)
      *(uint64_t *) ((char *) snap + f->offset) +=
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

const char *
adaptra_method_name (unsigned method)
{
  static const char *const names[ADAPTRA_METHOD_COUNT] = {
    [ADAPTRA_METHOD_NONE] = "none",
    [ADAPTRA_METHOD_INITIAL] = "initial",
    [ADAPTRA_METHOD_STATE] = "state",
    [ADAPTRA_METHOD_CONTEXT] = "context",
    [ADAPTRA_METHOD_CONTEXTA] = "contexta",
    [ADAPTRA_METHOD_FIXED] = "fixed",
    [ADAPTRA_METHOD_BACKWARD] = "backward",
  };

  return method < ADAPTRA_METHOD_COUNT ? names[method] : "?";
}
