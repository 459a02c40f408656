/* stats.h: the engine's counters and gauges, and their field table.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Counters and gauges of the engine, with the seed's names so that
 * results compare with its /proc/vmstat figures.
 *
 * Printers never name fields: they walk adaptra_stat_fields, which
 * gives each value's name, offset and kind.
 */

#ifndef ADAPTRA_STATS_H
#define ADAPTRA_STATS_H

#include <stddef.h>
#include <stdint.h>

/* The read-ahead methods, numbered as the stats blocks are. */
enum adaptra_method {
  ADAPTRA_METHOD_NONE = 0,
  ADAPTRA_METHOD_INITIAL,       /* first sequential evidence (seed "newfile") */
  ADAPTRA_METHOD_STATE,         /* thrashing-threshold estimate */
  ADAPTRA_METHOD_CONTEXT,       /* stream inferred from pool history */
  ADAPTRA_METHOD_CONTEXTA,      /* history reaches page 0: accelerated */
  ADAPTRA_METHOD_FIXED,         /* legacy constant window */
  ADAPTRA_METHOD_BACKWARD,      /* descending offsets */
  ADAPTRA_METHOD_COUNT
};

/* Name of a method as used in counters and traces ("state"...). */
extern const char *adaptra_method_name (unsigned method);

/* The seed's six counters of one read-ahead method. */
struct adaptra_method_stats {
  uint64_t readahead;           /* windows issued */
  uint64_t readahead_return;    /* look-ahead marks hit */
  uint64_t readahead_eof;       /* windows stopped at the end of the export */
  uint64_t pgreadahead;         /* pages read ahead (newly inserted) */
  uint64_t pgreadahead_hit;     /* of those, pages a client then read */
  uint64_t pgreadahead_eof;     /* pages of windows that reached the end */
};

struct adaptra_stats {
  /* Counters (reset by adaptra_stats_reset). */
  uint64_t cache_miss;          /* read-ahead entered on a miss past page 0 */
  uint64_t readrandom;          /* misses classified random */
  uint64_t pgreadrandom;        /* pages of those */
  uint64_t readahead_rescue;    /* rescues */
  uint64_t pgreadahead_rescue;  /* pages rescued */
  uint64_t readahead_end;       /* windows that started past the end */
  uint64_t readahead_shrink;    /* state method found no safe room */
  uint64_t readahead_follow;    /* misses that followed a window holding
                                   the pages ahead, issuing none */
  uint64_t readahead_cut;       /* windows the run bound cut short or to
                                   nothing (readahead.c: run_end) */
  uint64_t pgreadahead_cut;     /* pages it cut off them */
  uint64_t io_block;            /* reads that waited for an in-flight page */
  uint64_t io_hedge;            /* of those, reads that stopped waiting
                                   and read the pages themselves */
  uint64_t io_hedge_refused;    /* waits past their deadline that the
                                   hedge credit could not pay for, and
                                   went on (hedge.c: hedge_affords) */
  uint64_t io_congestion;       /* windows skipped: backend congested */
  uint64_t evicted;             /* pages evicted */
  uint64_t evicted_unread;      /* read-ahead pages evicted unread */
  uint64_t invalidated;         /* pages dropped by writes */
  uint64_t prefetch_failed;     /* prefetch requests that failed */
  uint64_t prefetch_stale;      /* prefetched pages discarded: written */
  uint64_t streams_resumed;     /* resumed from a mark page's state */
  uint64_t cache_hints;         /* NBD_CMD_CACHE requests */
  uint64_t backend_requests;    /* reads sent to the backend */
  uint64_t backend_bytes;
  uint64_t backend_errors;
  uint64_t client_requests;     /* reads from clients */
  uint64_t client_bytes;
  uint64_t bypass_requests;     /* reads of volumes that stepped aside */
  uint64_t bypass_bytes;        /* bytes of them read straight from the
                                   backend into the client's buffer */
  uint64_t bypass_switches;     /* volumes stepping aside, or back */
  uint64_t profile_pages_proposed; /* pages a boot profile prefetched */
  uint64_t profile_pages_hit;   /* of those, pages the client then read */
  uint64_t profile_pages_wasted; /* of those, pages it passed unread */
  /* Per method; index ADAPTRA_METHOD_NONE holds the totals. */
  struct adaptra_method_stats method[ADAPTRA_METHOD_COUNT];

  /* Gauges (the state at snapshot time). */
  uint64_t page_bytes;              /* pool page size */
  uint64_t pages_free;
  uint64_t pages_inactive;
  uint64_t pages_active;
  uint64_t pages_in_flight;
  uint64_t pages_lent;              /* to boot profiles (adaptra_lend) */
  uint64_t streams_active;
  uint64_t clients_active;
  uint64_t prefetch_queued_bytes;   /* waiting for a worker */
  uint64_t prefetch_flight_bytes;   /* queued or being read */
  uint64_t backend_latency_ns;      /* per-request latency estimate */
  uint64_t backend_bytes_per_sec;   /* streaming throughput estimate */
  uint64_t backend_flight_bytes;    /* being read from the backend now */
  uint64_t backend_flight_limit_bytes; /* most prefetch started at once */
  uint64_t backend_reads;           /* reads being made of the backend now */
  uint64_t backend_handles;         /* backend handles the workers' sets
                                       hold open (the filter's) */
  uint64_t workers_running;         /* prefetch threads running now */
  uint64_t window_max_bytes;        /* effective window cap now */
  uint64_t volumes_bypassed;        /* volumes stepped aside now */
};

enum adaptra_stat_kind {
  ADAPTRA_STAT_COUNTER,         /* monotonic until reset */
  ADAPTRA_STAT_GAUGE,           /* current value */
};

struct adaptra_stat_field {
  const char *name;
  size_t offset;                /* of a uint64_t in struct adaptra_stats */
  enum adaptra_stat_kind kind;
  const char *help;             /* one line for humans; NULL for the
                                   per-method copies, whose help is
                                   that of the total of the same name */
};

/* Every value of struct adaptra_stats, in printing order. */
extern const struct adaptra_stat_field adaptra_stat_fields[];
extern const size_t adaptra_stat_field_count;

/* The value a field describes. */
static inline uint64_t
adaptra_stat_value (const struct adaptra_stats *s,
                    const struct adaptra_stat_field *f)
{
  return *(const uint64_t *) ((const char *) s + f->offset);
}

/* Add n to a live counter.  Relaxed atomic: safe from any thread, and
 * cheap enough for the hit path.
 */
static inline void
adaptra_stat_add (uint64_t *counter, uint64_t n)
{
  __atomic_fetch_add (counter, n, __ATOMIC_RELAXED);
}

/* A window of method was issued with pages newly read (at_eof: it
 * reached the end of the export): counts it and its pages for the
 * method and in the totals.
 */
extern void adaptra_stats_count_window (struct adaptra_stats *live,
                                        unsigned method, uint64_t pages,
                                        int at_eof);

/* A look-ahead mark of a method's window was hit. */
extern void adaptra_stats_count_return (struct adaptra_stats *live,
                                        unsigned method);

/* A client read n pages that a method's window read ahead. */
extern void adaptra_stats_count_hits (struct adaptra_stats *live,
                                      unsigned method, uint64_t n);

/* Where the volume's recent runs ended (the run bound), a window was
 * cut short or to nothing, and pages off it.
 */
extern void adaptra_stats_count_cut (struct adaptra_stats *live,
                                     uint64_t pages);

/* Add the counters of live into snap (reading each value atomically),
 * so that a snapshot of counters kept in several shards is their sum;
 * the gauges of snap are left for the caller to fill.
 */
extern void adaptra_stats_add_counters (struct adaptra_stats *snap,
                                        const struct adaptra_stats *live);

/* Zero the counters of live; gauges are untouched. */
extern void adaptra_stats_clear_counters (struct adaptra_stats *live);

#endif /* ADAPTRA_STATS_H */
