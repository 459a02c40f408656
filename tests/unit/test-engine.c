/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of the engine (engine.c, volume.c, read.c, aside.c,
 * hedge.c, snapshot.c, readahead.c, prefetch.c) on a
 * fake backend (a RAM disk that logs and can fail) and a fake clock.
 * Prefetch jobs run in the test's thread (adaptra_prefetch_run_one),
 * so every count below is deterministic; one test runs real workers.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "adaptra/sim.h"
#include "fixture.h"
#include "../../core/engine-impl.h"
#include "../../core/model.h"
#include "../../core/snapshot.h"

#define DISK (16 * 1024 * 1024 + 100)   /* not page aligned on purpose */

/* Every test's engine, unless it starts another: DISK, a small pool. */
static struct fixture_spec engine_spec = { DISK, fixture_small_pool };

static void
base_config (struct adaptra_config *cfg)
{
  fixture_config (cfg);
  fixture_small_pool (cfg);
}

static void
restart_engine (const struct adaptra_config *cfg)
{
  adaptra_engine_free (e);
  ntraces = 0;
  fixture_start (cfg, "", "test");
}

static void
test_sequential_scan (void **state)
{
  struct adaptra_client_row row;
  struct adaptra_stats s;
  uint64_t off;
  unsigned i;

  (void) state;
  for (off = 0; off < 4 * 1024 * 1024; off += 16384) {
    read_check (off, 16384);
    drain ();
    now_ns += 1000000;
  }
  s = stats ();
  assert_int_equal (s.client_requests, 256);
  /* The first window is the initial one, the rest state windows that
   * grow at most 2x a step up to the 64-page max.
   */
  assert_int_equal (traces[0].placement.method,
                    ADAPTRA_METHOD_INITIAL);
  assert_int_equal (trace_pages (&traces[0]), 16);
  for (i = 1; i < ntraces; i++) {
    assert_int_equal (traces[i].placement.method,
                    ADAPTRA_METHOD_STATE);
    assert_true (trace_pages (&traces[i]) <=
                 2 * trace_pages (&traces[i - 1]));
    assert_true (trace_pages (&traces[i]) <= 64);
  }
  assert_int_equal (trace_pages (&traces[ntraces - 1]), 64);
  /* The client's own row agrees. */
  assert_int_equal (adaptra_clients_snapshot (e, &row, 1), 1);
  assert_string_equal (row.name, "test");
  assert_int_equal (row.requests, 256);
  assert_int_equal (row.bytes, 4 * 1024 * 1024);
  assert_int_equal (row.streams_started, 1);
  assert_int_equal (row.streams_active, 1);
  assert_int_equal (row.readahead_hits,
                    s.method[ADAPTRA_METHOD_NONE].pgreadahead_hit);
  assert_int_equal (row.backend_bytes, 4 * PAGE);
  /* Every window after the first was started by a mark, and nearly
   * every page came from read-ahead.
   */
  assert_int_equal (s.method[ADAPTRA_METHOD_NONE].readahead_return,
                    ntraces - 1);
  assert_int_equal (s.cache_miss, 0);
  assert_true (s.method[ADAPTRA_METHOD_NONE].pgreadahead_hit >= 1000);
  assert_true (s.backend_requests < 40);
  assert_int_equal (s.readrandom, 0);
  assert_int_equal (s.streams_active, 1);
}

static void
test_random_reads_never_read_ahead (void **state)
{
  struct adaptra_stats s;
  unsigned i;

  (void) state;
  for (i = 0; i < 2000; i++) {
    uint64_t page = 1 + (i * UINT64_C (7919)) % (DISK / PAGE - 2);

    read_check (page * PAGE, PAGE);
    now_ns += 1000;
  }
  assert_int_equal (drain (), 0);
  s = stats ();
  assert_int_equal (s.method[ADAPTRA_METHOD_NONE].readahead, 0);
  assert_int_equal (s.method[ADAPTRA_METHOD_NONE].pgreadahead, 0);
  assert_int_equal (s.streams_active, 0);
  assert_int_equal (s.readrandom, 2000);
  assert_int_equal (s.backend_requests, 2000);
  assert_int_equal (ntraces, 0);
}

/* The page carrying the current look-ahead mark of the (only) stream. */
static uint64_t
current_mark (void)
{
  struct adaptra_stream_row row;

  assert_int_equal (adaptra_streams_snapshot (e, &row, 1), 1);
  return (row.window_offset + row.window_bytes - row.lookahead_bytes) / PAGE;
}

/* A scan stops; a read elsewhere lands on its look-ahead mark, while
 * the stream lives and after it was reaped.  Neither is the stream's
 * reader (the seed's test: it read less than half the pages since the
 * last mark), so neither issues a window.
 */
static void
test_random_read_on_a_mark_issues_nothing (void **state)
{
  struct adaptra_stream_row row;
  struct adaptra_stats before, after;
  uint64_t mark, end;
  unsigned i;

  (void) state;
  for (i = 0; i < 16; i++) {
    read_check (i * 16384, 16384);
    drain ();
    now_ns += 1000000;
  }
  before = stats ();
  mark = current_mark ();
  assert_int_equal (adaptra_streams_snapshot (e, &row, 1), 1);
  end = (row.window_offset + row.window_bytes) / PAGE;
  read_check (mark * PAGE, PAGE);
  drain ();
  after = stats ();
  assert_int_equal (after.method[ADAPTRA_METHOD_NONE].readahead,
                    before.method[ADAPTRA_METHOD_NONE].readahead);
  assert_int_equal (after.method[ADAPTRA_METHOD_NONE].readahead_return,
                    before.method[ADAPTRA_METHOD_NONE].readahead_return + 1);

  /* The mark was re-armed further on for the stream's own reader.  A
   * random read lands on it once the stream is idle long enough to be
   * reaped: the pages behind it were read ahead, never read, so they
   * are no history to restart a stream from.
   */
  mark += (end - mark) / 2;             /* where rearm puts it */
  assert_true (mark > 64);
  now_ns += 601 * SEC;
  before = stats ();
  read_check (mark * PAGE, PAGE);
  drain ();
  after = stats ();
  assert_int_equal (after.method[ADAPTRA_METHOD_NONE].readahead,
                    before.method[ADAPTRA_METHOD_NONE].readahead);
  assert_int_equal (after.method[ADAPTRA_METHOD_NONE].readahead_return,
                    before.method[ADAPTRA_METHOD_NONE].readahead_return + 1);
}

static void
test_interleaved_streams (void **state)
{
  struct adaptra_stream_row rows[16];
  struct adaptra_stats s;
  uint64_t base[8];
  unsigned i, k;
  size_t n;

  (void) state;
  for (k = 0; k < 8; k++)
    base[k] = (UINT64_C (1) << 20) * (2 * k + 1);   /* 1M, 3M, ... 15M */
  for (i = 0; i < 64; i++)
    for (k = 0; k < 8; k++) {
      read_check (base[k] + i * 8192, 8192);
      drain ();
      now_ns += 100000;
    }
  s = stats ();
  n = adaptra_streams_snapshot (e, rows, 16);
  assert_int_equal (n, 8);
  assert_int_equal (s.streams_active, 8);
  /* Each started with a trail (the initial method) on its second
   * read, right after its own lone first one, though the client's read
   * before it was another stream's (recognise.c: adjacent_read); the
   * first stream on its third: its second read, the first of the
   * client's reads to continue a lone read, is not yet evidence
   * (lone_reads_continue)...
   */
  assert_int_equal (s.method[ADAPTRA_METHOD_CONTEXT].readahead, 0);
  assert_int_equal (s.method[ADAPTRA_METHOD_INITIAL].readahead, 8);
  assert_int_equal (s.readrandom, 9);
  /* ...and then followed by its marks. */
  assert_true (s.method[ADAPTRA_METHOD_STATE].readahead >= 8 * 4);
  /* Every stream is at the end of its own region. */
  for (i = 0; i < n; i++) {
    assert_false (rows[i].backward);
    assert_int_equal ((rows[i].position - 64 * 8192) % (UINT64_C (2) << 20),
                      UINT64_C (1) << 20);
  }
}

static void
test_reordered_reads_one_stream (void **state)
{
  struct adaptra_stats s;
  uint64_t base = 5 * 1024 * 1024;
  unsigned i;

  (void) state;
  /* Pairs swapped: 1 0 3 2 5 4 ... as a client with requests in
   * flight delivers them.
   */
  for (i = 0; i < 128; i++) {
    read_check (base + (i ^ 1) * 16384, 16384);
    drain ();
    now_ns += 100000;
  }
  s = stats ();
  assert_int_equal (s.streams_active, 1);
  assert_true (s.method[ADAPTRA_METHOD_NONE].pgreadahead_hit > 400);
  /* Random: the first five reads (1 0 3 2 5), before there is
   * history (read 2 is right after read 1, one of the client's latest
   * lone reads, but the first of its reads to continue one is not yet
   * evidence: recognise.c, lone_reads_continue), read 4 starts the
   * stream by the context method; and the two that overtook their
   * predecessor just past a window that ran out (reads 7 and 9:
   * position alone is no evidence, they read on demand and the
   * predecessor, arriving next, carries the stream on).
   */
  assert_int_equal (s.readrandom, 7);
}

static void
test_backward_stream (void **state)
{
  struct adaptra_stream_row row;
  struct adaptra_stats s;
  uint64_t off = 8 * 1024 * 1024;
  unsigned i;

  (void) state;
  for (i = 0; i < 256; i++) {
    off -= PAGE;
    read_check (off, PAGE);
    drain ();
    now_ns += 100000;
  }
  s = stats ();
  assert_int_equal (adaptra_streams_snapshot (e, &row, 1), 1);
  assert_true (row.backward);
  assert_true (s.method[ADAPTRA_METHOD_BACKWARD].readahead > 3);
  assert_true (s.method[ADAPTRA_METHOD_BACKWARD].pgreadahead_hit > 200);
  assert_true (s.backend_requests < 40);
}

/* Random reads landing next to a stream's windows, as happens often at
 * a high rate of random reads, are not its reader: they issue nothing
 * and do not move it.  Just past a forward window (the page before is
 * read-ahead nobody read) and just below a backward one (nothing above
 * was read by a client).
 */
static void
test_random_reads_next_to_windows (void **state)
{
  struct adaptra_stream_row row;
  uint64_t past, below, position, marks;
  unsigned i;

  (void) state;
  for (i = 0; i < 40; i++) {
    read_check ((UINT64_C (1000) + i) * PAGE, PAGE);
    drain ();
  }
  assert_int_equal (adaptra_streams_snapshot (e, &row, 1), 1);
  past = (row.window_offset + row.window_bytes) / PAGE;
  position = row.position;
  ntraces = 0;
  read_check (past * PAGE, PAGE);
  drain ();
  assert_int_equal (ntraces, 0);
  /* The first read (the stream starts at the second, adjacent to it),
   * and this one.
   */
  assert_int_equal (stats ().readrandom, 2);
  assert_int_equal (adaptra_streams_snapshot (e, &row, 1), 1);
  assert_int_equal (row.position, position);

  for (i = 1; i <= 40; i++) {
    read_check ((UINT64_C (3000) - i) * PAGE, PAGE);
    drain ();
  }
  assert_int_equal (adaptra_streams_snapshot (e, &row, 1), 1);
  assert_true (row.backward);
  below = row.window_offset / PAGE - 4;
  position = row.position;
  ntraces = 0;
  read_check (below * PAGE, PAGE);
  drain ();
  assert_int_equal (ntraces, 0);
  assert_int_equal (adaptra_streams_snapshot (e, &row, 1), 1);
  assert_true (row.backward);
  assert_int_equal (row.position, position);
  /* A read that lands on the backward window's mark, far from where
   * its reader is, takes the mark but issues nothing.
   */
  marks = stats ().method[ADAPTRA_METHOD_BACKWARD].readahead_return;
  read_check (row.window_offset + row.lookahead_bytes, PAGE);
  drain ();
  assert_int_equal (ntraces, 0);
  assert_int_equal (stats ().method[ADAPTRA_METHOD_BACKWARD].readahead_return,
                    marks + 1);
}

/* Read on page by page from page until a window is issued. */
static void
read_until_window (uint64_t page)
{
  ntraces = 0;
  while (ntraces == 0) {
    read_check (page * PAGE, PAGE);
    drain ();
    page++;
  }
}

static void
test_read_behind_stream_ignored (void **state)
{
  struct adaptra_stream_row row;
  unsigned i, windows;

  (void) state;
  for (i = 0; i < 40; i++) {
    read_check ((UINT64_C (1000) + i) * PAGE, PAGE);
    drain ();
  }
  windows = ntraces;
  assert_int_equal (adaptra_streams_snapshot (e, &row, 1), 1);
  assert_int_equal (row.position, 1040 * PAGE);
  /* A read 240 pages behind it is close, but not the stream's. */
  read_check (800 * PAGE, PAGE);
  assert_int_equal (ntraces, windows);
  assert_int_equal (adaptra_streams_snapshot (e, &row, 1), 1);
  assert_int_equal (row.position, 1040 * PAGE);
  /* The stream's first read, and this one. */
  assert_int_equal (stats ().readrandom, 2);
}

static void
test_context_from_history (void **state)
{
  unsigned i;

  (void) state;
  for (i = 0; i < 32; i++) {
    read_check (UINT64_C (2) * 1024 * 1024 + i * PAGE, PAGE);
    drain ();
  }
  /* The stream is reaped after 10 minutes idle, and its window (whose
   * mark would resume it) is dropped ...
   */
  now_ns += 601 * SEC;
  adaptra_invalidate (e, volume, (UINT64_C (512) + 32) * PAGE, 64 * PAGE);
  read_check (0, PAGE);
  assert_int_equal (stats ().streams_active, 1);   /* only the new one */
  /* ... and the pool's history starts it again where it went on. */
  read_until_window (512 + 32);
  assert_int_equal (traces[0].placement.method,
                    ADAPTRA_METHOD_CONTEXT);
  assert_true (traces[0].event.reader >= 512 + 32);
  assert_int_equal (stats ().streams_active, 2);
}

/* A client's read right after its own previous one starts a stream
 * (the initial method), at the second read instead of the fourth; the
 * previous read must be the same client's, and fixed mode keeps the
 * seed's evidence (no window before the fourth read).
 */
static void
test_second_adjacent_read_starts_stream (void **state)
{
  struct adaptra_config cfg;
  unsigned char buf[PAGE];
  int other;

  (void) state;
  read_check (1000 * PAGE, PAGE);
  assert_int_equal (stats ().readrandom, 1);
  read_check (1001 * PAGE, PAGE);
  assert_int_equal (ntraces, 1);
  assert_int_equal (traces[0].placement.method,
                    ADAPTRA_METHOD_INITIAL);
  assert_int_equal (traces[0].event.reader, 1001);
  assert_int_equal (trace_pages (&traces[0]), 8); /* 4 x the 2 pages read */
  assert_int_equal (stats ().readrandom, 1);
  assert_int_equal (stats ().streams_active, 1);

  /* Another client read the page before: no evidence for this one. */
  other = open_client (e, volume, "other");
  assert_int_equal (adaptra_read (e, other, &client_ctx, buf, PAGE,
                                  3000 * PAGE), 0);
  read_check (3001 * PAGE, PAGE);
  assert_int_equal (ntraces, 1);
  assert_int_equal (stats ().readrandom, 3);
  adaptra_client_close (e, other);

  base_config (&cfg);
  cfg.mode = ADAPTRA_MODE_FIXED;
  restart_engine (&cfg);
  read_check (1000 * PAGE, PAGE);
  read_check (1001 * PAGE, PAGE);
  assert_int_equal (ntraces, 0);
  assert_int_equal (stats ().readrandom, 2);
}

/* A request whose first pages are present (read ahead, not yet read)
 * misses on the rest: those pages are the reader's history too.  Ten
 * pages read before them in one request, and four of the request's
 * own, are more than twice the four the miss reads: a stream by the
 * context method, not a random read.
 */
static void
test_context_counts_request_pages (void **state)
{
  struct adaptra_stats before, after;

  (void) state;
  read_check (90 * PAGE, 10 * PAGE);    /* one random read */
  adaptra_cache_hint (e, client, 100 * PAGE, 4 * PAGE);
  drain ();
  before = stats ();
  ntraces = 0;
  read_check (100 * PAGE, 8 * PAGE);    /* misses on page 104 */
  after = stats ();
  assert_int_equal (after.readrandom, before.readrandom);
  assert_int_equal (ntraces, 1);
  assert_int_equal (traces[0].placement.method,
                    ADAPTRA_METHOD_CONTEXT);
  assert_int_equal (traces[0].event.reader, 104);
}

static void
test_accelerated_context_from_zero (void **state)
{
  unsigned i;

  (void) state;
  for (i = 0; i < 40; i++) {
    read_check ((uint64_t) i * PAGE, PAGE);
    drain ();
  }
  now_ns += 601 * SEC;
  adaptra_invalidate (e, volume, 40 * PAGE, 64 * PAGE);
  /* Everything from page 0 is still here: a stream from the start. */
  read_until_window (40);
  assert_int_equal (traces[0].placement.method,
                    ADAPTRA_METHOD_CONTEXTA);
  assert_int_equal (stats ().method[ADAPTRA_METHOD_CONTEXTA].readahead, 1);
}

/* The seed's slow stream: 4 KiB every 2.5 s.  It keeps one stream and
 * its state from the initial window on; every later window is sized
 * by the state method.
 */
static void
test_slow_stream_keeps_state (void **state)
{
  struct adaptra_client_row row;
  unsigned i;

  (void) state;
  for (i = 0; i < 200; i++) {
    read_check ((uint64_t) i * PAGE, PAGE);
    drain ();
    now_ns += 2500000000u;
  }
  assert_true (ntraces >= 5);
  assert_int_equal (traces[0].placement.method,
                    ADAPTRA_METHOD_INITIAL);
  for (i = 1; i < ntraces; i++)
    assert_int_equal (traces[i].placement.method,
                    ADAPTRA_METHOD_STATE);
  assert_int_equal (adaptra_clients_snapshot (e, &row, 1), 1);
  assert_int_equal (row.streams_started, 1);
  assert_int_equal (stats ().cache_miss, 0);
}

/* Read pages [from, to) n at a time, running prefetch after each. */
static void
scan_by (uint64_t from, uint64_t to, uint64_t n)
{
  for (; from < to; from += n) {
    read_check (from * PAGE, n * PAGE);
    drain ();
    now_ns += 1000000;
  }
}

static void
scan (uint64_t from, uint64_t to)
{
  scan_by (from, to, 1);
}

/* A full table gives a stream's slot away; when its reader takes the
 * next mark, the stream resumes from the state the mark page carries
 * (the state method, not the context method, and no miss), whether
 * the mark is the first page of the reader's request or not (the
 * request's pages before the mark count as read).
 */
static void
resume_case (uint64_t n)
{
  struct adaptra_config cfg;
  struct adaptra_stats before, after;
  uint64_t p;

  base_config (&cfg);
  cfg.streams = 1;
  restart_engine (&cfg);
  scan_by (0, 64 * n, n);               /* stream A, state windows */
  assert_int_equal (traces[ntraces - 1].placement.method,
                    ADAPTRA_METHOD_STATE);
  scan_by (2048, 2048 + 12 * n, n);     /* stream B takes A's slot */
  before = stats ();
  assert_int_equal (before.streams_active, 1);
  assert_int_equal (before.streams_resumed, 0);
  ntraces = 0;
  for (p = 64 * n; ntraces == 0; p += n) {      /* A reads on */
    read_check (p * PAGE, n * PAGE);
    drain ();
  }
  after = stats ();
  assert_int_equal (after.streams_resumed, 1);
  assert_int_equal (traces[0].placement.method,
                    ADAPTRA_METHOD_STATE);
  assert_int_equal (after.method[ADAPTRA_METHOD_CONTEXT].readahead,
                    before.method[ADAPTRA_METHOD_CONTEXT].readahead);
  assert_int_equal (after.cache_miss, before.cache_miss);
}

static void
test_resume_from_mark (void **state)
{
  (void) state;
  resume_case (1);
}

static void
test_resume_mark_inside_request (void **state)
{
  (void) state;
  resume_case (4);
}

/* A new stream's first window is read with the miss that starts it,
 * in one backend request, when a job queued now would wait longer
 * than a backend read takes; with an empty queue it is queued for
 * the workers past the reader's request.
 */
static void
test_miss_reads_window_when_queue_slow (void **state)
{
  uint64_t queued;
  unsigned before;

  (void) state;
  read_ns = 5000000;                    /* 5 ms a read... */
  read_ns_per_kib = 5000;               /* ...and 200 MB/s */
  scan_by (0, 256, 4);                  /* the backend measured */
  read_check (2000 * PAGE, PAGE);
  read_check (2001 * PAGE, PAGE);       /* a stream, its window queued */
  assert_int_equal (traces[ntraces - 1].placement.method,
                    ADAPTRA_METHOD_INITIAL);
  assert_true (stats ().pages_in_flight > 0);
  drain ();

  /* Over 1 MiB queued: over 5 ms at 200 MB/s, the latency. */
  adaptra_cache_hint (e, client, 8 * 1024 * 1024, 2 * 1024 * 1024);
  queued = stats ().pages_in_flight;
  assert_true (queued * PAGE > 1024 * 1024);
  read_check (3000 * PAGE, PAGE);
  before = calls;
  read_check (3001 * PAGE, PAGE);
  assert_int_equal (traces[ntraces - 1].placement.method,
                    ADAPTRA_METHOD_INITIAL);
  assert_int_equal (calls, before + 1);
  assert_int_equal (stats ().pages_in_flight, queued);
  assert_int_equal (page_reads[3001 + trace_pages (&traces[ntraces - 1]) - 1],
                    1);
  drain ();
}

/* A stream that left the table reaches its mark while the backend is
 * congested: it resumes, defers its window and re-arms the mark further
 * on in the same window, whose pages carry the id of the stream that
 * issued it, not the resumed one's.  When its reader reaches the new
 * mark, after the congestion cleared, it resumes again and issues the
 * window: no miss, no new stream by the context method.
 */
static void
test_resume_rearms_when_congested (void **state)
{
  struct adaptra_config cfg;
  struct adaptra_stats before, after;
  uint64_t p;

  (void) state;
  base_config (&cfg);
  cfg.streams = 1;
  restart_engine (&cfg);
  scan (0, 64);                         /* stream A, state windows */
  scan (2048, 2060);                    /* stream B takes A's slot */
  /* 2M queued: over the limit of a 4M pool with 256K windows (1M). */
  adaptra_cache_hint (e, client, 8 * 1024 * 1024, 2 * 1024 * 1024);
  before = stats ();
  ntraces = 0;
  for (p = 64; stats ().io_congestion == before.io_congestion; p++)
    read_check (p * PAGE, PAGE);        /* A reads on, undrained */
  assert_int_equal (ntraces, 0);
  assert_int_equal (stats ().streams_resumed, before.streams_resumed + 1);
  drain ();
  read_until_window (p);
  after = stats ();
  assert_int_equal (traces[0].placement.method,
                    ADAPTRA_METHOD_STATE);
  assert_int_equal (after.streams_resumed, before.streams_resumed + 2);
  assert_int_equal (after.cache_miss, before.cache_miss);
  assert_int_equal (after.method[ADAPTRA_METHOD_CONTEXT].readahead,
                    before.method[ADAPTRA_METHOD_CONTEXT].readahead);
}

/* A resumed stream rescues: its window was issued long before, the
 * pool aged by most of its pages meanwhile (the age the mark page
 * carries says so), so the pages ahead of the reader are moved back
 * to the inactive head instead of a new window.
 */
static void
test_resume_rescues (void **state)
{
  struct adaptra_config cfg;
  struct adaptra_stats s;
  unsigned i;

  (void) state;
  base_config (&cfg);
  cfg.streams = 1;
  restart_engine (&cfg);
  scan (0, 40);
  /* Other reads take the slot and age the pool by 900 of its 1024
   * pages (reads two pages apart: random, no stream).
   */
  scan (1024, 1034);
  for (i = 0; i < 900; i++)
    read_check ((UINT64_C (2100) + 2 * i) * PAGE, PAGE);
  ntraces = 0;
  read_until_window (40);
  s = stats ();
  assert_int_equal (s.streams_resumed, 1);
  assert_int_equal (traces[0].kind, ADAPTRA_TRACE_RESCUE);
  assert_true (s.pgreadahead_rescue > 0);
}

/* Push everything read so far out of the 1024-page pool: 1200 reads
 * of single pages two apart (random: no stream, no read-ahead) from
 * page 1000.  Pages flagged for activation move to the active list on
 * the way; the flood's own pages are read once each.
 */
static uint64_t
active_after_flood (void)
{
  unsigned i;

  for (i = 0; i < 1200; i++)
    read_check ((UINT64_C (1000) + 2 * i) * PAGE, PAGE);
  return stats ().pages_active;
}

/* A scan in small or unaligned requests touches each page several
 * times in a row: one access, so none of its pages is activated, for
 * 512-byte reads, 3000-byte reads at an odd offset, and two 512-byte
 * scans interleaved on one connection.
 */
static void
test_successive_touches_one_access (void **state)
{
  struct adaptra_config cfg;
  uint64_t off;
  unsigned k;

  (void) state;
  for (off = 0; off < 1024 * 1024; off += 512) {
    read_check (off, 512);
    drain ();
  }
  assert_int_equal (active_after_flood (), 0);

  base_config (&cfg);
  restart_engine (&cfg);
  for (off = 100; off < 1024 * 1024; off += 3000) {
    read_check (off, 3000);
    drain ();
  }
  assert_int_equal (active_after_flood (), 0);

  restart_engine (&cfg);
  for (off = 0; off < 512 * 1024; off += 512)
    for (k = 0; k < 2; k++) {
      read_check (k * 1024 * 1024 + off, 512);
      drain ();
    }
  assert_int_equal (active_after_flood (), 0);
}

/* A page read again after another page is reused: it is activated,
 * and so is a page two clients read.
 */
static void
test_reuse_activates (void **state)
{
  int other = open_client (e, volume, "other");
  unsigned char buf[PAGE];

  (void) state;
  read_check (100 * PAGE, PAGE);
  read_check (200 * PAGE, PAGE);
  read_check (100 * PAGE, PAGE);
  read_check (300 * PAGE, 512);
  assert_int_equal (adaptra_read (e, other, &client_ctx, buf, 512,
                                  300 * PAGE + 512), 0);
  assert_int_equal (active_after_flood (), 2);
  adaptra_client_close (e, other);
}

/* Bytes client c read again from the pool (depth.h: adaptra_keep). */
static uint64_t
rereads_of (int c)
{
  return __atomic_load_n (&adaptra_client_of (e, c)->rereads,
                          __ATOMIC_RELAXED);
}

/* A request's pages read again count once per new access, as one at a
 * time would: the hit path without the lock counts them once per
 * request, and its first page is the same access as the reader's last
 * page touched.
 */
static void
test_rereads_counted_per_request (void **state)
{
  uint64_t before;

  (void) state;
  read_check (100 * PAGE, 4 * PAGE);
  read_check (200 * PAGE, PAGE);
  before = rereads_of (client);
  read_check (100 * PAGE, 4 * PAGE);
  assert_int_equal (rereads_of (client), before + 4 * PAGE);
  /* Page 103 was the last touched: the same access again. */
  read_check (103 * PAGE, PAGE);
  read_check (103 * PAGE + 100, 100);
  assert_int_equal (rereads_of (client), before + 4 * PAGE);
  read_check (101 * PAGE, 3 * PAGE);
  assert_int_equal (rereads_of (client), before + 7 * PAGE);
}

static void
test_fixed_mode (void **state)
{
  struct adaptra_config cfg;
  uint64_t off;
  unsigned i;

  (void) state;
  base_config (&cfg);
  cfg.mode = ADAPTRA_MODE_FIXED;
  restart_engine (&cfg);
  for (off = 0; off < 2 * 1024 * 1024; off += 8192) {
    read_check (off, 8192);
    drain ();
  }
  assert_true (ntraces > 10);
  for (i = 0; i < ntraces; i++) {
    assert_int_equal (traces[i].placement.method,
                    ADAPTRA_METHOD_FIXED);
    assert_int_equal (trace_pages (&traces[i]), 32); /* 128K */
  }
}

static void
test_mode_off (void **state)
{
  char why[128];
  uint64_t off;

  (void) state;
  assert_int_equal (adaptra_engine_set_mode (e, ADAPTRA_MODE_OFF,
                                             why, sizeof why), 0);
  for (off = 0; off < 1024 * 1024; off += 8192)
    read_check (off, 8192);
  assert_int_equal (drain (), 0);
  assert_int_equal (stats ().method[ADAPTRA_METHOD_NONE].readahead, 0);
  /* The pool still caches. */
  calls = 0;
  read_check (0, 8192);
  assert_int_equal (calls, 0);
}

/* Two readers, one page: one backend call. */
static void *
reader_thread (void *arg)
{
  unsigned char buf[PAGE];

  (void) arg;
  return (void *) (intptr_t) adaptra_read (e, client, &client_ctx, buf,
                                           PAGE, 3 * 1024 * 1024);
}

/* Run fn in two threads, a (with arg_a) then b: a is held inside the
 * backend until io_block reaches blocks (b waits for a page a reads),
 * then both finish, and each must return NULL.
 */
static void
run_while_held (void *(*fn) (void *), void *arg_a, void *arg_b,
                uint64_t blocks)
{
  pthread_t a, b;
  void *ra, *rb;
  unsigned i;

  sem_init (&entered, 0, 0);
  sem_init (&release, 0, 0);
  gate = true;
  pthread_create (&a, NULL, fn, arg_a);
  sem_wait (&entered);                  /* a is inside the backend */
  pthread_create (&b, NULL, fn, arg_b);
  for (i = 0; i < 5000 && stats ().io_block < blocks; i++)
    usleep (1000);
  assert_int_equal (stats ().io_block, blocks);
  gate = false;
  sem_post (&release);
  pthread_join (a, &ra);
  pthread_join (b, &rb);
  assert_null (ra);
  assert_null (rb);
  sem_destroy (&entered);
  sem_destroy (&release);
}

static void
test_inflight_dedup (void **state)
{
  (void) state;
  run_while_held (reader_thread, NULL, NULL, 1);  /* b waits for a */
  assert_int_equal (calls, 1);
}

static void
test_reader_runs_queued_job (void **state)
{
  struct adaptra_stats s;

  (void) state;
  read_check (0, PAGE);                 /* initial window [1, 4) queued */
  calls = 0;
  /* The next read needs queued pages: it runs their job itself.  What
   * it does not want (2 pages) is less than ADAPTRA_JOB_MIN, so it
   * reads them too rather than leave a worker a second backend read
   * (test_steal_splits_chunk has the split).
   */
  read_check (PAGE, PAGE);
  s = stats ();
  assert_int_equal (calls, 1);
  assert_int_equal (s.io_block, 1);
  assert_int_equal (s.pages_in_flight, 0);
  assert_int_equal (s.prefetch_flight_bytes, 0);
  assert_int_equal (drain (), 0);
  read_check (2 * PAGE, 2 * PAGE);
  assert_int_equal (calls, 1);
}

/* Read pages [1, 8) as client *arg and check the bytes. */
static void *
follower_thread (void *arg)
{
  unsigned char buf[7 * PAGE];
  int err = adaptra_read (e, *(int *) arg, &client_ctx, buf, sizeof buf,
                          PAGE);

  return (void *) (intptr_t) (err ? err : memcmp (buf, disk + PAGE,
                                                  sizeof buf) != 0);
}

/* Two readers following the same pages, as W8's guests do.  Reader
 * a's request misses at page 4, a's decision issues a window past the
 * request, then a reads the queued pages 1..3 before its miss (held
 * in the backend here).  Reader b, deciding on the same miss
 * meanwhile, finds page 4 still absent: it must follow a's window, not
 * restart (and double) it.  Together they read from the backend the
 * very pages a reads alone, each once.
 */
static void
test_followers_share_window (void **state)
{
  unsigned char alone[DISK / PAGE + 1];
  struct adaptra_config cfg;
  int b;
  unsigned i;

  (void) state;
  /* a alone: page 0 (initial window [0, 4), pages 1..3 queued), then
   * pages [1, 8).
   */
  read_check (0, PAGE);
  assert_null (follower_thread (&client));
  drain ();
  memcpy (alone, page_reads, sizeof alone);
  assert_int_equal (stats ().readahead_follow, 0);

  base_config (&cfg);
  restart_engine (&cfg);
  memset (page_reads, 0, sizeof alone);
  b = open_client (e, volume, "b");
  read_check (0, PAGE);
  /* a decides and reads pages 1..3, held; b decides and waits. */
  run_while_held (follower_thread, &client, &b, 2);
  drain ();
  assert_memory_equal (page_reads, alone, sizeof alone);
  for (i = 0; i < sizeof alone; i++)
    assert_true (alone[i] <= 1);
  assert_int_equal (stats ().readahead_follow, 1);
  adaptra_client_close (e, b);
}

/* peek names the queued jobs in the order run_one runs them. */
static void
test_prefetch_peek (void **state)
{
  uint64_t offset;
  uint32_t count;

  (void) state;
  assert_false (adaptra_prefetch_peek (e, 0, &offset, &count));
  read_check (0, PAGE);                 /* initial window [0, 4) */
  adaptra_cache_hint (e, client, 1024 * 1024, 65536);
  assert_true (adaptra_prefetch_peek (e, 0, &offset, &count));
  assert_int_equal (offset, PAGE);
  assert_int_equal (count, 3 * PAGE);
  assert_true (adaptra_prefetch_peek (e, 1, &offset, &count));
  assert_int_equal (offset, 1024 * 1024);
  assert_int_equal (count, 65536);
  assert_false (adaptra_prefetch_peek (e, 2, &offset, &count));
  calls = 0;
  assert_true (adaptra_prefetch_run_one (e, volume, &worker_ctx));
  assert_int_equal (calls, 1);
  assert_true (adaptra_prefetch_peek (e, 0, &offset, &count));
  assert_int_equal (offset, 1024 * 1024);
  /* The tail of the export: the read is short. */
  drain ();
  adaptra_cache_hint (e, client, DISK - 100, 100);
  assert_true (adaptra_prefetch_peek (e, 0, &offset, &count));
  assert_int_equal (offset, DISK - 100 - (DISK - 100) % PAGE);
  assert_int_equal (count, (DISK - 100) % PAGE + 100);
}

/* Fair tails (prefetch.c).  A reader's first window is queued, then a
 * huge prefetch of another stream (a 2 MiB cache hint: stream 0), in
 * chunks since it competes.  The reader's next window goes ahead of
 * the hint's chunks: its start tag is in the first round and its pages
 * are before the hint's (rounds in page order).  Its pages are ready
 * while the hint is still in flight.
 */
static void
test_fair_queue_between_streams (void **state)
{
  const uint64_t hint = 4 * 1024 * 1024;
  struct adaptra_config cfg;
  uint64_t offset;
  uint32_t count;
  unsigned before;

  (void) state;
  base_config (&cfg);
  cfg.pool_bytes = 16 * 1024 * 1024;
  restart_engine (&cfg);
  read_check (0, PAGE);                 /* initial window [1, 4) queued */
  adaptra_cache_hint (e, client, hint, 2 * 1024 * 1024);
  /* Chunks of 256 KiB (the bandwidth-delay product of a backend that
   * takes no time is below the 256 KiB floor), not one 2 MiB read.
   */
  assert_true (adaptra_prefetch_peek (e, 1, &offset, &count));
  assert_int_equal (offset, hint);
  assert_int_equal (count, 256 * 1024);
  assert_true (adaptra_prefetch_run_one (e, volume, &worker_ctx));
  read_check (PAGE, 3 * PAGE);          /* the mark: the next window */
  /* The reader's window is next, not behind the hint's eight chunks;
   * then the hint's first chunk (the job taken was the reader's first
   * window, of lower pages in the same round).
   */
  assert_true (adaptra_prefetch_peek (e, 1, &offset, &count));
  assert_int_equal (offset, hint);
  assert_true (adaptra_prefetch_peek (e, 0, &offset, &count));
  assert_int_equal (offset, 4 * PAGE);
  assert_true (adaptra_prefetch_run_one (e, volume, &worker_ctx));
  assert_true (adaptra_prefetch_run_one (e, volume, &worker_ctx));
  assert_int_equal (stats ().pages_in_flight, 448);
  before = calls;
  read_check (offset, count);           /* ready: no backend read */
  assert_int_equal (calls, before);
  assert_int_equal (stats ().io_block, 0);
}

/* Within a round (4 MiB of start tag) the queue is in page order
 * across streams, and in queued order within a stream: two cache hints
 * (stream 0), the second at lower pages, then a reader's initial
 * window, all in the first round.  Strict tag order would give hint,
 * window, hint; page order alone would put the second hint first.
 */
static void
test_fair_queue_rounds_in_page_order (void **state)
{
  const uint64_t mib = 1024 * 1024;
  struct adaptra_config cfg;
  uint64_t offset;
  uint32_t count;

  (void) state;
  base_config (&cfg);
  cfg.pool_bytes = 16 * mib;
  restart_engine (&cfg);
  adaptra_cache_hint (e, client, 8 * mib, 256 * 1024);
  adaptra_cache_hint (e, client, 4 * mib, 256 * 1024);
  read_check (0, PAGE);                 /* initial window [1, 4) queued */
  assert_true (adaptra_prefetch_peek (e, 0, &offset, &count));
  assert_int_equal (offset, PAGE);
  assert_true (adaptra_prefetch_peek (e, 1, &offset, &count));
  assert_int_equal (offset, 8 * mib);
  assert_true (adaptra_prefetch_peek (e, 2, &offset, &count));
  assert_int_equal (offset, 4 * mib);
  assert_false (adaptra_prefetch_peek (e, 3, &offset, &count));
  /* The hints are out of page order (the second follows its stream's
   * last job), so a new stream's window at 2 MiB goes where a walk from
   * the head puts it, before the first job it goes before (the hint at
   * 8 MiB), not before the smallest page above its own (4 MiB), which
   * the queue's order index would say were the queue in order.
   */
  read_check (2 * mib, PAGE);
  read_check (2 * mib + PAGE, PAGE);    /* a stream: its window queued */
  assert_true (adaptra_prefetch_peek (e, 1, &offset, &count));
  assert_true (offset > 2 * mib && offset < 4 * mib);
  assert_true (adaptra_prefetch_peek (e, 2, &offset, &count));
  assert_int_equal (offset, 8 * mib);
  assert_true (adaptra_prefetch_peek (e, 3, &offset, &count));
  assert_int_equal (offset, 4 * mib);
}

/* A stream's chunks are read in page order, and a second window of the
 * same stream queues behind all of the first.
 */
static void
test_fair_queue_keeps_stream_order (void **state)
{
  struct adaptra_config cfg;
  const uint64_t hint = 1024 * 1024;
  uint64_t offset, expect = hint;
  uint32_t count;

  (void) state;
  base_config (&cfg);
  cfg.pool_bytes = 16 * 1024 * 1024;
  restart_engine (&cfg);
  read_check (0, PAGE);                 /* another stream's window */
  adaptra_cache_hint (e, client, hint, 1024 * 1024);
  adaptra_cache_hint (e, client, 2 * hint, 512 * 1024);
  assert_true (adaptra_prefetch_run_one (e, volume, &worker_ctx));
  calls = 0;
  while (adaptra_prefetch_peek (e, 0, &offset, &count)) {
    assert_int_equal (offset, expect);
    assert_int_equal (count, 256 * 1024);
    expect += count;
    assert_true (adaptra_prefetch_run_one (e, volume, &worker_ctx));
  }
  assert_int_equal (expect, hint + 1536 * 1024);
  read_check (hint, 1536 * 1024);
  assert_int_equal (calls, 6);
}

/* A prefetch that competes with nothing is split per worker only; one
 * that competes goes out in the model's chunks for the streams sharing
 * the backend (model.h: adaptra_model_chunk), and the workers start jobs only
 * below the flight limit, 5/4 of that product and a mean read (what a
 * read holds in flight besides the product).  The fake backend
 * serves one read at a time in 5 ms + 5 us a KiB: reads of 4 MiB
 * (in jobs of up to a transfer slot) measure its rate, reads of 4 KiB
 * its latency (5 ms).
 */
static void
test_chunk_and_flight_limit (void **state)
{
  const uint64_t mib = 1024 * 1024;
  struct adaptra_config cfg;
  uint64_t offset, limit, chunk, fill, bdp;
  uint32_t count;
  double mean;
  unsigned i;

  (void) state;
  base_config (&cfg);
  cfg.pool_bytes = 64 * mib;
  cfg.max_bytes = 0;
  restart_engine (&cfg);
  /* Nothing measured: no limit in bytes, four jobs at once. */
  assert_true (adaptra_prefetch_may_start (e, UINT64_C (1) << 40, 3));
  assert_false (adaptra_prefetch_may_start (e, 0, 4));
  assert_int_equal (stats ().backend_flight_limit_bytes, 0);
  read_ns = 5000000;
  read_ns_per_kib = 5000;
  for (i = 0; i < 24; i++) {
    adaptra_cache_hint (e, client, 8 * mib, 4 * mib);
    drain ();
    adaptra_invalidate (e, volume, 8 * mib, 4 * mib);
    read_check (12 * mib + i * 65536, 4096);
  }
  /* R is at least the mean delivery rate and at most the backend's
   * 200 MB/s (a KiB in 5 us); L is the 4 KiB reads' 5 ms; no read is
   * over 4 MiB.
   */
  limit = stats ().backend_flight_limit_bytes;
  mean = (double) stats ().backend_bytes * SEC / (double) (now_ns - SEC);
  assert_true (limit >= 1.25 * mean * 0.0049);
  assert_true (limit <= 1.25 * (1024 / 5e-6 * 0.0051 + 4 * mib));
  bdp = (uint64_t) ((double) stats ().backend_bytes_per_sec *
                    (double) stats ().backend_latency_ns / 1e9);
  assert_true (limit >= 1.25 * bdp);
  assert_true (adaptra_prefetch_may_start (e, 0, 0));
  assert_true (adaptra_prefetch_may_start (e, limit - 1, 15));
  assert_false (adaptra_prefetch_may_start (e, limit, 1));
  /* A window that competes with nothing: one job. */
  adaptra_cache_hint (e, client, 8 * mib, 2 * mib);
  assert_true (adaptra_prefetch_peek (e, 0, &offset, &count));
  assert_int_equal (count, 2 * mib);
  drain ();
  /* One that competes: chunks of a sixteenth of R x L, at least 64
   * KiB, rounded down to a power of two; but the two streams sharing
   * the backend (the hint's and the window's) must fill the limit
   * with ADAPTRA_MODEL_STREAM_READS reads each, so no less than a
   * power of two of an eighth of the limit, up to 1 MiB.
   */
  read_check (0, PAGE);                 /* another stream's window */
  adaptra_cache_hint (e, client, 2 * mib, 3 * mib);
  chunk = bdp / 16;
  if (chunk < 65536)
    chunk = 65536;
  fill = limit / (2 * ADAPTRA_MODEL_STREAM_READS);
  assert_true (fill > chunk);           /* what this backend tests */
  assert_true (adaptra_prefetch_peek (e, 1, &offset, &count));
  assert_int_equal (offset, 2 * mib);
  assert_int_equal (count & (count - 1), 0);
  assert_true (count >= fill || count == mib);
  assert_true (count < 2 * fill);
  assert_true (adaptra_prefetch_peek (e, 2, &offset, &count));
  assert_int_equal (offset, 2 * mib + count);
}

/* A backend of 5 ms a read that delivers little (4 KiB reads one at a
 * time: R x L far under 512 KiB) has the floor of the flight limit,
 * ADAPTRA_MODEL_LIMIT_MIN: its latency is one that parallel reads
 * hide, so more workers than a backend not yet measured gets (four)
 * may read small jobs at once, but not more bytes than the floor.
 */
static void
test_slow_backend_limit_floor (void **state)
{
  unsigned i;

  (void) state;
  assert_false (adaptra_prefetch_may_start (e, 0, 4));
  read_ns = 5000000;
  for (i = 0; i < 64; i++)
    read_check ((uint64_t) i * 65536, 4096);
  assert_int_equal (stats ().backend_flight_limit_bytes,
                    ADAPTRA_MODEL_LIMIT_MIN);
  assert_true (adaptra_prefetch_may_start (e, 0, 4));
  assert_true (adaptra_prefetch_may_start (e, ADAPTRA_MODEL_LIMIT_MIN - 1,
                                           15));
  assert_false (adaptra_prefetch_may_start (e, ADAPTRA_MODEL_LIMIT_MIN, 1));
}

/* A simulated worker's job is timed from its take, when its read
 * begins, not from its completion's call (the fake backend takes no
 * time): the backend's latency estimate is the worker's 5 ms.  Also at
 * time 0, where adaptra-sim's virtual clock starts.
 */
static void
test_taken_job_timed_from_its_take (void **state)
{
  struct adaptra_config cfg;
  void *ctxs[] = { &worker_ctx };
  struct adaptra_job *job;
  uint64_t offset;
  uint32_t count;

  (void) state;
  base_config (&cfg);
  now_ns = 0;
  restart_engine (&cfg);
  assert_int_equal (adaptra_workers_simulate (e, 1), 0);
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, ctxs), 0);
  assert_null (adaptra_worker_take (e, &offset, &count));
  adaptra_cache_hint (e, client, 1024 * 1024, 65536);
  job = adaptra_worker_take (e, &offset, &count);
  assert_non_null (job);
  assert_int_equal (offset, 1024 * 1024);
  assert_int_equal (count, 65536);
  assert_int_equal (stats ().backend_flight_bytes, 65536);
  assert_int_equal (worker_bytes, 0);
  now_ns += 5000000;
  adaptra_worker_complete (e, job, 0);
  assert_int_equal (worker_bytes, 65536);
  assert_int_equal (stats ().backend_flight_bytes, 0);
  assert_int_equal (stats ().backend_latency_ns, 5000000);
}

/* A reader that needs a page of a job a simulated worker took waits in
 * the clock's wait hook (no thread would wake it), which completes
 * the job; the reader then copies the page, read once.
 */
static struct adaptra_job *hooked_job;
static unsigned hook_calls;

static uint64_t
hook_now (void *opaque)
{
  (void) opaque;
  return now_ns;
}

static void
hook_wait (void *opaque, uint64_t deadline)
{
  (void) opaque;
  (void) deadline;
  hook_calls++;
  assert_non_null (hooked_job);
  now_ns += 5000000;
  adaptra_worker_complete (e, hooked_job, 0);
  hooked_job = NULL;
}

static void
test_reader_waits_in_clock_hook (void **state)
{
  const struct adaptra_clock clock = { .now_ns = hook_now, .wait = hook_wait };
  struct adaptra_config cfg;
  void *ctxs[] = { &worker_ctx };
  char why[ADAPTRA_WHY_LEN];
  uint64_t offset;
  uint32_t count;

  (void) state;
  fixture_stop ();
  base_config (&cfg);
  if (adaptra_engine_new (&cfg, &fixture_backend, &clock, &e, why, sizeof why))
    fail_msg ("adaptra_engine_new: %s", why);
  volume = open_volume (e, "", disk_size, 0);
  client = open_client (e, volume, "test");
  assert_int_equal (adaptra_workers_simulate (e, 1), 0);
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, ctxs), 0);
  adaptra_cache_hint (e, client, 0, 65536);
  hooked_job = adaptra_worker_take (e, &offset, &count);
  assert_non_null (hooked_job);
  hook_calls = 0;
  calls = 0;
  read_check (4096, 4096);
  assert_int_equal (hook_calls, 1);
  assert_null (hooked_job);
  assert_int_equal (calls, 1);
  assert_int_equal (stats ().io_block, 1);
  assert_int_equal (stats ().backend_latency_ns, 5000000);
}

/* The hedge tests (hedge.c: adaptra_hedge_deadline): a worker's job of the 1
 * MiB at 1 MiB held inside the backend, and a reader of HEDGE_COUNT
 * bytes of it in another thread.
 */
#define HEDGE_JOB (UINT64_C (1) << 20)
#define HEDGE_OFFSET (HEDGE_JOB + PAGE + 5)
#define HEDGE_COUNT (2 * PAGE)
#define MS UINT64_C (1000000)

static pthread_t hedge_job_thread, hedge_reader_thread;
static unsigned char hedge_buf[HEDGE_COUNT];
static int hedge_err;

static void *
hedge_drain (void *arg)
{
  (void) arg;
  drain ();
  return NULL;
}

static void *
hedge_read (void *arg)
{
  (void) arg;
  hedge_err = adaptra_read (e, client, &client_ctx, hedge_buf, HEDGE_COUNT,
                            HEDGE_OFFSET);
  return NULL;
}

/* The backends teach_model teaches. */
enum taught { TAUGHT_REMOTE, TAUGHT_DISK, TAUGHT_DRAINED };

/* Teach the engine's model a backend: a remote store (5 ms a read, 200
 * MiB/s, far as near); a disk's head (a read that does not continue
 * the last seeks 8 ms; 150 MB/s); or a remote store whose token bucket
 * ran dry under large reads (drained: 1 MiB reads take 100 ms, so the
 * line's slope is their pace and its intercept nought, as after a
 * burst); by reads of 64 KiB and 1 MiB on the fake clock.
 */
static void
teach_model (enum taught backend)
{
  bool disk = backend == TAUGHT_DISK;
  struct adaptra_model *m = &e->model;
  uint64_t at = 0, last_end = 0;
  unsigned i;

  for (i = 0; i < 400; i++) {
    uint64_t bytes = i % 2 ? HEDGE_JOB : 65536;
    uint64_t offset = disk && i % 4 == 3 ? at + 64 * HEDGE_JOB : at;
    enum adaptra_model_distance where = adaptra_model_start (m, offset, bytes);
    uint64_t t0 = now_ns;

    if (disk)
      now_ns += (offset == last_end ? 0 : 8 * MS) + bytes * SEC / 150000000;
    else if (backend == TAUGHT_DRAINED && bytes == HEDGE_JOB)
      now_ns += 100 * MS;
    else
      now_ns += 5 * MS + bytes * SEC / (200 * HEDGE_JOB);
    adaptra_model_end (m, bytes);
    adaptra_model_sample (m, bytes, t0, now_ns, where);
    last_end = offset + bytes;
    at += bytes;
  }
}

/* Queue the job, let a worker thread take it into the backend and hold
 * it there, start the reader and wait until it blocks on the job.
 */
static void
hedge_start (void)
{
  unsigned i;

  sem_init (&entered, 0, 0);
  sem_init (&release, 0, 0);
  adaptra_cache_hint (e, client, HEDGE_JOB, HEDGE_JOB);
  __atomic_store_n (&gate, true, __ATOMIC_SEQ_CST);
  pthread_create (&hedge_job_thread, NULL, hedge_drain, NULL);
  sem_wait (&entered);                  /* the job is in the backend */
  pthread_create (&hedge_reader_thread, NULL, hedge_read, NULL);
  for (i = 0; i < 5000 && stats ().io_block < 1; i++)
    usleep (1000);
  assert_int_equal (stats ().io_block, 1);
}

/* The fake clock passes before_ns, short of the reader's deadline: it
 * still waits; then after_ns more, past it: it reads its pages itself,
 * not held, and returns while the job is still held.
 */
static void
hedge_past_deadline (uint64_t before_ns, uint64_t after_ns)
{
  struct timespec limit;

  __atomic_fetch_add (&now_ns, before_ns, __ATOMIC_SEQ_CST);
  usleep (20000);
  assert_int_equal (pthread_tryjoin_np (hedge_reader_thread, NULL), EBUSY);
  assert_int_equal (stats ().io_hedge, 0);
  assert_int_equal (stats ().io_hedge_refused, 0);
  __atomic_store_n (&gate, false, __ATOMIC_SEQ_CST);
  __atomic_fetch_add (&now_ns, after_ns, __ATOMIC_SEQ_CST);
  clock_gettime (CLOCK_REALTIME, &limit);
  limit.tv_sec += 5;
  assert_int_equal (pthread_timedjoin_np (hedge_reader_thread, NULL, &limit),
                    0);
  assert_int_equal (stats ().io_hedge, 1);
  assert_int_equal (stats ().io_hedge_refused, 0);      /* the credit paid */
  assert_true (stats ().pages_in_flight > 0);           /* the job's */
}

/* Let the job end, and check that it filled the pool: the whole 1 MiB
 * reads right, from the pool alone unless a write dropped pages.
 */
static void
hedge_finish (bool written)
{
  unsigned before;

  sem_post (&release);
  pthread_join (hedge_job_thread, NULL);
  sem_destroy (&entered);
  sem_destroy (&release);
  assert_int_equal (stats ().pages_in_flight, 0);
  before = calls;
  read_check (HEDGE_JOB, HEDGE_JOB);
  if (written)
    assert_true (calls > before && stats ().prefetch_stale > 0);
  else
    assert_int_equal (calls, before);
}

/* The reader's deadline with the job alone in flight: its own read of
 * three pages after the job's 1 MiB, 10.06 ms.  HEDGE_ALONE_NS is past
 * its read alone (5.06 ms), not past the job's bytes; HEDGE_PAST_NS
 * more is past the deadline.
 */
#define HEDGE_ALONE_NS (6 * MS)
#define HEDGE_PAST_NS (5 * MS)

/* A reader behind a job in flight waits no longer than its own read
 * would take: then it reads its bytes itself, the job goes on and
 * fills the pool.
 */
static void
test_hedge_after_deadline (void **state)
{
  (void) state;
  teach_model (TAUGHT_REMOTE);
  read_ns = 5 * MS;
  read_ns_per_kib = 5000;
  hedge_start ();
  hedge_past_deadline (HEDGE_ALONE_NS, HEDGE_PAST_NS);
  assert_int_equal (hedge_err, 0);
  assert_memory_equal (hedge_buf, disk + HEDGE_OFFSET, HEDGE_COUNT);
  hedge_finish (false);
}

/* The reader of hedge_start behind the job and more reads of 1 MiB in
 * flight: it still waits past before_ns, has read its pages itself
 * after_ns more.
 */
static void
hedge_behind_reads (unsigned more, uint64_t before_ns, uint64_t after_ns)
{
  unsigned i;

  teach_model (TAUGHT_REMOTE);
  read_ns = 5 * MS;
  read_ns_per_kib = 5000;
  for (i = 0; i < more; i++)
    adaptra_model_start (&e->model, (8 + i) * HEDGE_JOB, HEDGE_JOB);
  hedge_start ();
  hedge_past_deadline (before_ns, after_ns);
  assert_int_equal (hedge_err, 0);
  assert_memory_equal (hedge_buf, disk + HEDGE_OFFSET, HEDGE_COUNT);
  for (i = 0; i < more; i++)
    adaptra_model_end (&e->model, HEDGE_JOB);
  hedge_finish (false);
}

/* Behind a bucket that shares its rate among the reads in flight, a
 * reader's own read takes its latency and its bytes times the reads
 * (hedge.c: own), whatever the others' bytes.  With three more reads of
 * 1 MiB in flight (4 MiB and four reads: the job's time on a fair link,
 * 25.1 ms) the reader's own read takes 5.3 ms, so the reader hedges a
 * latency past it (10.3 ms), as its read then ends (15.6 ms) before
 * the fair bound: past 9 ms it waits, past 11 it has read.
 */
static void
test_hedge_sooner_behind_many_reads (void **state)
{
  (void) state;
  hedge_behind_reads (3, 9 * MS, 2 * MS);
}

/* With one more read of 1 MiB in flight (the fair bound 15.1 ms), a
 * hedge a latency past the reader's own read (10.2 ms) would end at
 * 15.4 ms, after it: the reader waits for the fair bound.
 */
static void
test_hedge_not_sooner_where_it_cannot_pay (void **state)
{
  (void) state;
  hedge_behind_reads (1, 11 * MS, 5 * MS);
}

/* A hedged read that fails fails the client's read as its own read
 * would; the job is not harmed.
 */
static void
test_hedge_error (void **state)
{
  (void) state;
  teach_model (TAUGHT_REMOTE);
  hedge_start ();
  fail_ctx = &client_ctx;
  hedge_past_deadline (HEDGE_ALONE_NS, HEDGE_PAST_NS);
  fail_ctx = NULL;
  assert_int_equal (hedge_err, EIO);
  assert_int_equal (stats ().backend_errors, 1);
  hedge_finish (false);
}

/* A write that reaches the backend while the hedged read is there:
 * the read returns the bytes before it (a read that races a write may
 * return either), the pool none: the job's pages it covers are STALE,
 * the job's end drops them, and the next read has the write's bytes.
 */
static unsigned char before_write[HEDGE_COUNT];

static void
write_during_hedge (uint64_t offset, uint32_t count)
{
  (void) count;
  if (offset == HEDGE_OFFSET)
    write_disk (HEDGE_OFFSET + 100, 200, 0xa5);
}

static void
test_write_during_hedge (void **state)
{
  (void) state;
  teach_model (TAUGHT_REMOTE);
  memcpy (before_write, disk + HEDGE_OFFSET, HEDGE_COUNT);
  hedge_start ();
  during_read = write_during_hedge;
  hedge_past_deadline (HEDGE_ALONE_NS, HEDGE_PAST_NS);
  during_read = NULL;
  assert_int_equal (hedge_err, 0);
  assert_memory_equal (hedge_buf, before_write, HEDGE_COUNT);
  assert_memory_not_equal (disk + HEDGE_OFFSET, before_write, HEDGE_COUNT);
  hedge_finish (true);
}

/* Past any deadline, the reader started by hedge_start still waits for
 * the job, reading nothing itself, and has the job's bytes when it ends;
 * io_hedge_refused counts refusals (a wait past a deadline the credit
 * did not pay for): once the reader made them, it still waits.
 */
static void
hedge_waits_for_job (uint64_t refusals)
{
  unsigned i;

  hedge_start ();
  __atomic_fetch_add (&now_ns, SEC, __ATOMIC_SEQ_CST);
  usleep (50000);
  for (i = 0; i < 5000 && stats ().io_hedge_refused < refusals; i++)
    usleep (1000);
  assert_int_equal (pthread_tryjoin_np (hedge_reader_thread, NULL), EBUSY);
  assert_int_equal (sem_trywait (&entered), -1);        /* no read of its own */
  __atomic_store_n (&gate, false, __ATOMIC_SEQ_CST);
  sem_post (&release);                  /* the job ends; so does the wait */
  pthread_join (hedge_reader_thread, NULL);
  assert_int_equal (hedge_err, 0);
  assert_memory_equal (hedge_buf, disk + HEDGE_OFFSET, HEDGE_COUNT);
  assert_int_equal (stats ().io_hedge, 0);
  assert_int_equal (stats ().io_hedge_refused, refusals);
  hedge_finish (false);
}

/* Where distance costs (a disk's head), the reader waits for the job
 * however long it takes: its own read would cost a seek there and back.
 * It has no deadline, so no credit refuses it anything.
 */
static void
test_no_hedge_where_seeks (void **state)
{
  (void) state;
  teach_model (TAUGHT_DISK);
  hedge_waits_for_job (0);
}

/* Hedged reads spend a credit that the reads the model sampled earned
 * (hedge.c: HEDGE_SHARE): with the credit spent, a reader past its
 * deadline waits for the job, as where seeks cost, and the refusal is
 * counted.
 */
static void
test_hedge_needs_credit (void **state)
{
  (void) state;
  teach_model (TAUGHT_REMOTE);
  e->hedge_credit = 0;
  e->hedge_earned_at = adaptra_model_delivered (&e->model);
  hedge_waits_for_job (1);
}

/* A line whose intercept is nought (large reads slowed by a drained
 * token bucket) still gives the deadline the least latency as its fixed
 * cost: the reader hedges past it, as on any latency-bound backend,
 * rather than waiting for the job however long it takes.
 */
static void
test_hedge_when_line_at_nought (void **state)
{
  struct adaptra_model_estimate est;
  struct timespec limit;

  (void) state;
  teach_model (TAUGHT_DRAINED);
  adaptra_model_estimate (&e->model, now_ns, &est);
  assert_int_equal (est.fixed_ns, 0);
  assert_true (est.latency_bound);
  hedge_start ();
  __atomic_store_n (&gate, false, __ATOMIC_SEQ_CST);
  __atomic_fetch_add (&now_ns, SEC, __ATOMIC_SEQ_CST);
  clock_gettime (CLOCK_REALTIME, &limit);
  limit.tv_sec += 5;
  assert_int_equal (pthread_timedjoin_np (hedge_reader_thread, NULL, &limit),
                    0);
  assert_int_equal (hedge_err, 0);
  assert_memory_equal (hedge_buf, disk + HEDGE_OFFSET, HEDGE_COUNT);
  assert_int_equal (stats ().io_hedge, 1);
  hedge_finish (false);
}

/* A reader that needs a page of a queued chunk reads the part up to the
 * end of its request when at least ADAPTRA_JOB_MIN is left; the rest
 * stays queued, is read once, and a write that lands on it meanwhile
 * still makes its pages STALE.
 */
static void
test_steal_splits_chunk (void **state)
{
  struct adaptra_stats s;
  uint64_t offset;
  uint32_t count;

  (void) state;
  adaptra_cache_hint (e, client, 0, 512 * 1024);        /* pages [0, 128) */
  calls = 0;
  read_check (8 * PAGE, 2 * PAGE);
  s = stats ();
  assert_int_equal (calls, 1);
  assert_int_equal (s.io_block, 1);
  assert_int_equal (s.backend_bytes, 10 * PAGE);
  assert_true (adaptra_prefetch_peek (e, 0, &offset, &count));
  assert_int_equal (offset, 10 * PAGE);
  assert_int_equal (count, 118 * PAGE);
  assert_false (adaptra_prefetch_peek (e, 1, &offset, &count));
  write_disk (20 * PAGE, PAGE, 0x3C);
  assert_int_equal (drain (), 1);
  s = stats ();
  assert_int_equal (calls, 2);
  assert_int_equal (s.backend_bytes, 128 * PAGE);
  assert_int_equal (s.prefetch_stale, 1);
  assert_int_equal (s.prefetch_flight_bytes, 0);
  read_check (0, 128 * PAGE);
  assert_int_equal (calls, 3);          /* the stale page, again */
}

/* cfg.no_data: the same decisions and counts, no byte copied (the
 * backend is called with a NULL buffer for pool pages).
 */
static unsigned null_reads;

static int
null_pread (void *ctx, void *buf, uint32_t count, uint64_t offset)
{
  (void) ctx;
  (void) count;
  (void) offset;
  null_reads += buf == NULL;
  return 0;
}

static void
test_no_data (void **state)
{
  const struct adaptra_backend backend = { .pread = null_pread };
  struct adaptra_config cfg;
  struct adaptra_engine *nd;
  struct adaptra_stats a, b;
  unsigned char buf[16384];
  char why[ADAPTRA_WHY_LEN];
  uint64_t off;
  int c;

  (void) state;
  base_config (&cfg);
  cfg.no_data = true;
  assert_int_equal (adaptra_engine_new (&cfg, &backend, &fixture_clock, &nd,
                                        why, sizeof why), 0);
  c = open_client (nd, open_volume (nd, "", DISK, 0), "nd");
  for (off = 0; off < 2 * 1024 * 1024; off += sizeof buf) {
    assert_int_equal (adaptra_read (e, client, &client_ctx, buf, sizeof buf,
                                    off), 0);
    assert_int_equal (adaptra_read (nd, c, &client_ctx, buf, sizeof buf,
                                    off), 0);
    while (adaptra_prefetch_run_one (e, volume, &worker_ctx))
      ;
    while (adaptra_prefetch_run_one (nd, 0, &worker_ctx))
      ;
  }
  adaptra_stats_snapshot (e, &a);
  adaptra_stats_snapshot (nd, &b);
  assert_int_equal (a.backend_requests, b.backend_requests);
  assert_int_equal (a.method[ADAPTRA_METHOD_NONE].pgreadahead_hit,
                    b.method[ADAPTRA_METHOD_NONE].pgreadahead_hit);
  assert_int_equal (null_reads, b.backend_requests);
  adaptra_engine_free (nd);
}

/* A backend of 1 ms + 1 us a byte (1 MB/s), in virtual time. */
static void
slow_read (uint64_t offset, uint32_t count)
{
  (void) offset;
  now_ns += 1000000 + (uint64_t) count * 1000;
}

/* Prefetch in flight is held to a second of the backend's measured
 * throughput when that is less than an eighth of the pool: here 1 MiB
 * (four 256K windows; the measured 1 MB/s is less) instead of 2 MiB of
 * a 16M pool.  Counted with 256K cache hints, which stop at the limit.
 */
static void
test_congestion_by_throughput (void **state)
{
  struct adaptra_config cfg;
  unsigned accepted;

  (void) state;
  base_config (&cfg);
  cfg.pool_bytes = 16 * 1024 * 1024;
  restart_engine (&cfg);
  during_read = slow_read;
  read_check (8 * 1024 * 1024, PAGE);
  read_check (9 * 1024 * 1024, 65536);
  read_check (10 * 1024 * 1024, 4 * 65536);
  drain ();
  during_read = NULL;
  for (accepted = 0; accepted < 16; accepted++) {
    adaptra_cache_hint (e, client, (uint64_t) accepted * 262144, 262144);
    if (stats ().io_congestion > 0)
      break;
  }
  assert_int_equal (accepted, 5);
}

/* A write lands while a prefetch is reading. */
static void
write_during_read (uint64_t offset, uint32_t count)
{
  (void) offset;
  (void) count;
  during_read = NULL;
  write_disk (20 * PAGE + 5, 3 * PAGE, 0xAB);
}

static void
test_invalidate_during_prefetch (void **state)
{
  (void) state;
  adaptra_cache_hint (e, client, 20 * PAGE, 4 * PAGE);  /* queued */
  assert_int_equal (stats ().pages_in_flight, 4);
  during_read = write_during_read;
  drain ();
  /* The window read pages 20..23 before the write: all discarded. */
  assert_int_equal (stats ().prefetch_stale, 4);
  assert_int_equal (stats ().invalidated, 4);
  read_check (20 * PAGE, 8 * PAGE);     /* every byte new */
}

static void
test_invalidate_ready_pages (void **state)
{
  (void) state;
  read_check (0, 64 * PAGE);
  drain ();
  write_disk (100, 2 * PAGE, 0x5A);
  read_check (0, 64 * PAGE);
}

static void
test_failed_prefetch_reader_retries (void **state)
{
  struct adaptra_stats s;

  (void) state;
  read_check (0, PAGE);
  fail_ctx = &worker_ctx;
  drain ();
  s = stats ();
  assert_int_equal (s.prefetch_failed, 1);
  assert_int_equal (s.pages_in_flight, 0);
  fail_ctx = NULL;
  read_check (PAGE, 2 * PAGE);          /* read again, correctly */
}

static void
test_failed_demand_read (void **state)
{
  unsigned char buf[PAGE];

  (void) state;
  fail_ctx = &client_ctx;
  assert_int_equal (adaptra_read (e, client, &client_ctx, buf, PAGE,
                                  5 * PAGE), EIO);
  assert_int_equal (stats ().pages_in_flight, 0);
  fail_ctx = NULL;
  read_check (5 * PAGE, PAGE);
}

static void
test_eof_clamp (void **state)
{
  struct adaptra_stats s;
  unsigned char buf[16];
  uint64_t off;

  (void) state;
  for (off = DISK - 64 * PAGE; off + 8192 <= DISK; off += 8192) {
    read_check (off, 8192);
    drain ();
  }
  read_check (DISK - 100, 100);
  drain ();
  s = stats ();
  assert_true (s.method[ADAPTRA_METHOD_NONE].readahead_eof >= 1);
  assert_int_equal (adaptra_read (e, client, &client_ctx, buf, 16,
                                  DISK - 8), EINVAL);
  /* bad_requests is checked in teardown. */
}

static void
test_cache_hint_bounded (void **state)
{
  struct adaptra_stats s;

  (void) state;
  adaptra_cache_hint (e, client, 0, DISK);
  s = stats ();
  assert_int_equal (s.cache_hints, 1);
  /* The pool can spare half of its frames: 1024 pages of budget less
   * the sixteenth that transfer slots take, 960.
   */
  assert_int_equal (s.pages_in_flight, 480);
  drain ();
  calls = 0;
  read_check (PAGE, 470 * PAGE);
  assert_int_equal (calls, 0);
  /* Past the end: nothing. */
  adaptra_cache_hint (e, client, DISK, 4096);
  assert_int_equal (stats ().pages_in_flight, 0);
}

static void
test_thrashing_accounting (void **state)
{
  struct adaptra_stats s;
  unsigned i;

  (void) state;
  /* A stream with a window read ahead... */
  for (i = 0; i < 4; i++) {
    read_check ((uint64_t) i * 4 * PAGE, 4 * PAGE);
    drain ();
  }
  /* ... then a flood of other reads pushes its pages out unread. */
  for (i = 0; i < 1200; i++)
    read_check ((UINT64_C (1000) + 2 * i) * PAGE, PAGE);
  s = stats ();
  assert_true (s.evicted_unread > 0);
  assert_true (s.evicted >= s.evicted_unread);
  adaptra_stats_reset (e);
  s = stats ();
  assert_int_equal (s.evicted_unread, 0);
  assert_int_equal (s.client_requests, 0);
}

static void
test_rescue_pages_in_danger (void **state)
{
  struct adaptra_stats s;
  unsigned i;

  (void) state;
  read_check (0, PAGE);                 /* window [0, 4), mark on page 2 */
  drain ();
  /* Other reads age the pool by 900 of its 1024 pages meanwhile. */
  for (i = 0; i < 900; i++)
    read_check ((UINT64_C (1000) + 3 * i) * PAGE, PAGE);
  read_check (PAGE, PAGE);
  read_check (2 * PAGE, PAGE);          /* the mark */
  s = stats ();
  /* Pages 2 and 3 would be evicted before the reader gets there:
   * they move back to the inactive head, and no window is issued.
   */
  assert_int_equal (s.readahead_rescue, 1);
  assert_int_equal (s.pgreadahead_rescue, 2);
  assert_int_equal (s.method[ADAPTRA_METHOD_NONE].readahead, 1);
  assert_int_equal (traces[ntraces - 1].kind, ADAPTRA_TRACE_RESCUE);
  assert_int_equal (drain (), 0);
  calls = 0;
  read_check (3 * PAGE, PAGE);
  assert_int_equal (calls, 0);
}

/* A fresh engine with pool_bytes of pool and adaptra-max=auto (a 1M
 * floor here).
 */
static void
restart_auto_max (uint64_t pool_bytes)
{
  struct adaptra_config cfg;

  base_config (&cfg);
  cfg.pool_bytes = pool_bytes;
  cfg.max_bytes = 0;
  restart_engine (&cfg);
}

/* restart_auto_max with a 64 MiB pool over a backend of 5 ms a read
 * and ns_per_kib a KiB, measured first by 24 hints of 4 MiB (their
 * pages dropped after each); no trace kept.
 */
static void
restart_measured (uint64_t ns_per_kib)
{
  unsigned i;

  restart_auto_max (64 * 1024 * 1024);
  read_ns = 5000000;
  read_ns_per_kib = ns_per_kib;
  for (i = 0; i < 24; i++) {
    adaptra_cache_hint (e, client, 0, 4 * 1024 * 1024);
    drain ();
    adaptra_invalidate (e, volume, 0, 4 * 1024 * 1024);
  }
  ntraces = 0;
}

/* The largest window traced, in pages. */
static uint64_t
biggest_window (void)
{
  uint64_t biggest = 0;
  unsigned i;

  for (i = 0; i < ntraces; i++)
    if (trace_pages (&traces[i]) > biggest)
      biggest = trace_pages (&traces[i]);
  return biggest;
}

static void
test_auto_max_grows_when_late (void **state)
{
  uint64_t off, biggest;

  (void) state;
  restart_auto_max (16 * 1024 * 1024);
  /* No worker runs: every read waits for (runs) its read-ahead, as a
   * reader does whose backend is slower than the window covers: one
   * whose latency reads in parallel hide (2 ms a read), since a lone
   * stream's window where none is hidden is one read (readahead.c).
   */
  read_ns = 2000000;
  for (off = 0; off < 8 * 1024 * 1024; off += 65536)
    read_check (off, 65536);
  biggest = biggest_window ();
  assert_true (stats ().io_block > 0);
  assert_true (biggest > 256);          /* beyond the 1M floor */
  assert_true (biggest <= 1024);        /* a quarter of the pool */
  /* The gauge tells the raised cap, not the 1M floor. */
  assert_true (stats ().window_max_bytes > 256 * PAGE);
}

/* On a backend whose latency parallel reads hide (5 ms a read, 200 MB/s
 * in all), a late reader's cap grows past the 1M floor with what the
 * backend delivers, and stops at 8 x R x L (readahead.c, raise_cap):
 * under 8 MB here, where the pool alone (64 MiB) would let it reach
 * 16 MiB, a 2048-page window by 7 MiB into the volume.  Half a second
 * of 4 MiB hints measures R first.
 */
static void
test_auto_max_late_stops_at_delivery (void **state)
{
  uint64_t off, biggest;

  (void) state;
  restart_measured (5000);
  for (off = 0; off < 16 * 1024 * 1024; off += 65536)
    read_check (off, 65536);
  biggest = biggest_window ();
  assert_true (stats ().io_block > 0);
  assert_true (biggest > 256);
  assert_true (biggest * PAGE <= 8 * 200000000 / 1000 * 5);
}

/* The same where a read's transfer is most of its time (5 ms a read,
 * 50 MB/s, 1 MiB reads: 26 ms each), as at a busy link where reads
 * wait behind others: parallel reads hide little there, and the cap
 * stops at 2 x R x L (readahead.c, LATE_SLOW_CAP_BDPS), here under the
 * 1M floor, so no window passes the floor and the request its reader
 * reads itself; at 8 x R x L one reached 1537 pages.
 */
static void
test_auto_max_late_slow_reads (void **state)
{
  uint64_t off;

  (void) state;
  restart_measured (20000);
  for (off = 0; off < 16 * 1024 * 1024; off += 1024 * 1024)
    read_check (off, 1024 * 1024);
  assert_true (stats ().io_block > 0);
  assert_true (biggest_window () <= 2 * 256);
}

static void
test_size_and_clients (void **state)
{
  struct adaptra_client_row rows[32];
  unsigned char buf[PAGE];
  int ids[20];
  unsigned i;

  (void) state;
  read_check (0, 8 * PAGE);
  drain ();
  /* The export, reopened smaller: every page goes, reads past the end
   * fail.
   */
  adaptra_client_close (e, client);
  adaptra_volume_close (e, volume);
  assert_int_equal (stats ().pages_inactive, 0);
  volume = open_volume (e, "", 64 * PAGE, 0);
  client = open_client (e, volume, "test");
  assert_int_equal (adaptra_read (e, client, &client_ctx, buf, PAGE,
                                  64 * PAGE), EINVAL);
  read_check (60 * PAGE, 4 * PAGE);
  drain ();
  /* The table of clients grows; closed ones leave the rows. */
  for (i = 0; i < 20; i++) {
    ids[i] = open_client (e, volume, "more");
    assert_true (ids[i] > 0);
  }
  assert_int_equal (adaptra_clients_snapshot (e, rows, 32), 21);
  for (i = 0; i < 20; i += 2)
    adaptra_client_close (e, ids[i]);
  assert_int_equal (adaptra_clients_snapshot (e, rows, 32), 11);
  assert_int_equal (stats ().clients_active, 11);
  /* Each row counts its own client's live streams, past the gaps the
   * closed ones left.
   */
  for (i = 0; i < 4; i++)
    assert_int_equal (adaptra_read (e, ids[5], &client_ctx, buf, PAGE,
                                    (16 + i) * PAGE), 0);
  drain ();
  assert_int_equal (adaptra_clients_snapshot (e, rows, 32), 11);
  for (i = 0; i < 11; i++)
    assert_int_equal (rows[i].streams_active, rows[i].id == ids[5]);
  assert_int_equal (adaptra_clients_snapshot (e, rows, 3), 3);
  /* New clients take the closed slots, lowest first, before the table
   * grows (adaptra_client_open starts at the first slot that may be
   * free).
   */
  for (i = 0; i < 20; i += 2)
    assert_int_equal (open_client (e, volume, "again"), ids[i]);
  assert_int_equal (adaptra_clients_snapshot (e, rows, 32), 21);
  for (i = 0; i < 20; i++)
    adaptra_client_close (e, ids[i]);
}

/* 32 interleaved streams in a 1024-page pool: returns the pages
 * read ahead and evicted unread.
 */
static void
many_streams (uint64_t *pgreadahead, uint64_t *unread, uint64_t *requests)
{
  struct adaptra_stats s;
  unsigned round, k;

  for (round = 0; round < 120; round++)
    for (k = 0; k < 32; k++) {
      read_check ((UINT64_C (512) * 1024 * k + round * 4096), 4096);
      drain ();
      now_ns += 10000;
    }
  s = stats ();
  *pgreadahead = s.method[ADAPTRA_METHOD_NONE].pgreadahead;
  *unread = s.evicted_unread;
  *requests = s.backend_requests;
}

static void
test_small_pool_settles (void **state)
{
  struct adaptra_config cfg;
  uint64_t ra_fixed, unread_fixed, req_fixed, ra, unread, req;

  (void) state;
  base_config (&cfg);
  cfg.mode = ADAPTRA_MODE_FIXED;
  restart_engine (&cfg);
  many_streams (&ra_fixed, &unread_fixed, &req_fixed);
  base_config (&cfg);
  restart_engine (&cfg);
  many_streams (&ra, &unread, &req);
  /* The constant 128K windows of 32 streams do not fit: most of
   * their pages are pushed out before the reader comes.  The adaptive
   * windows fit, and read the same data in far fewer requests.
   */
  assert_true (unread_fixed * 2 > ra_fixed);
  assert_true (unread * 100 <= ra);
  assert_true (req * 4 < req_fixed);
}

static void
test_tunables (void **state)
{
  struct adaptra_config cfg;
  char why[128];

  (void) state;
  assert_int_equal (adaptra_engine_set_ratio (e, 0, why, sizeof why), EINVAL);
  assert_non_null (strstr (why, "adaptra-ratio=0"));
  assert_int_equal (adaptra_engine_set_ratio (e, 80, why, sizeof why), 0);
  assert_int_equal (adaptra_engine_set_max (e, 8192, why, sizeof why),
                    EINVAL);
  assert_non_null (strstr (why, "adaptra-max=8192"));
  assert_int_equal (adaptra_engine_set_max (e, 0, why, sizeof why), 0);
  assert_int_equal (adaptra_engine_set_min (e, 64 * 1024, why, sizeof why), 0);
  adaptra_engine_get_config (e, &cfg);
  assert_int_equal (cfg.ratio, 80);
  assert_int_equal (cfg.max_bytes, 0);
  assert_int_equal (cfg.min_bytes, 64 * 1024);
}

/* The engine hands its tracer records: the event a decision was made
 * on and where it put the window; adaptra_trace_format makes them the
 * seed's trace lines.
 */
static void
test_trace_records (void **state)
{
  const struct adaptra_trace window = {
    .kind = ADAPTRA_TRACE_WINDOW,
    .event = { .what = ADAPTRA_EVENT_MARK, .reader = 40 },
    .placement = { .stream = 65537, .client = 1,
                   .method = ADAPTRA_METHOD_STATE, .start = 40, .end = 104,
                   .mark = 72 },
    .pages = 64,
  };
  const struct adaptra_trace bypass = {
    .kind = ADAPTRA_TRACE_BYPASS,
    .bypass = { .volume = 2, .on = true, .read_ns = 1500.4,
                .bytes = 65536 },
  };
  struct adaptra_trace rescue = window;
  char line[ADAPTRA_TRACE_LINE_LEN];

  (void) state;
  read_check (0, PAGE);
  read_check (PAGE, PAGE);
  assert_int_equal (ntraces, 1);
  assert_int_equal (traces[0].kind, ADAPTRA_TRACE_WINDOW);
  assert_int_equal (traces[0].event.what, ADAPTRA_EVENT_MISS);
  assert_int_equal (traces[0].event.volume, volume);
  assert_int_equal (traces[0].event.client, client);
  assert_int_equal (traces[0].event.reader, traces[0].event.first);
  assert_int_equal (traces[0].placement.client, client);
  assert_int_not_equal (traces[0].placement.stream, 0);
  assert_true (traces[0].placement.mark == ADAPTRA_NO_MARK ||
               (traces[0].placement.mark >= traces[0].placement.start &&
                traces[0].placement.mark < traces[0].placement.end));
  assert_false (traces[0].placement.at_eof);

  adaptra_trace_format (&window, line, sizeof line);
  assert_string_equal (line, "readahead-state(client=1, stream=65537, "
                       "index=40, ra=40+64-32) = 64");
  rescue.kind = ADAPTRA_TRACE_RESCUE;
  rescue.placement.mark = ADAPTRA_NO_MARK;
  adaptra_trace_format (&rescue, line, sizeof line);
  assert_string_equal (line, "readahead-rescue(client=1, stream=65537, "
                       "index=40, ra=40+64-0) = 64");
  adaptra_trace_format (&bypass, line, sizeof line);
  assert_string_equal (line, "bypass(volume=2, read_ns=1500, bytes=65536) "
                       "= on");
}

/* A refused configuration comes back as EINVAL with the reason, and
 * the engine pointer is left alone.
 */
static void
test_new_says_why (void **state)
{
  struct adaptra_engine *other = NULL;
  struct adaptra_config cfg;
  char why[ADAPTRA_WHY_LEN] = "";

  (void) state;
  base_config (&cfg);
  cfg.page_size = 3000;
  assert_int_equal (adaptra_engine_new (&cfg, &fixture_backend,
                                        &fixture_clock, &other,
                                        why, sizeof why), EINVAL);
  assert_null (other);
  assert_non_null (strstr (why, "adaptra-page=3000"));
  base_config (&cfg);
  assert_int_equal (adaptra_engine_new (&cfg, &(struct adaptra_backend) { 0 },
                                        &fixture_clock, &other,
                                        why, sizeof why), EINVAL);
  assert_null (other);
  assert_non_null (strstr (why, "pread"));
}

static void
test_workers (void **state)
{
  void *ctxs[2] = { &worker_ctx, &worker_ctx };
  uint64_t off;

  (void) state;
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 2, ctxs), 0);
  assert_int_equal (adaptra_workers_start (e, 2, 0), 0);
  assert_int_equal (adaptra_workers_start (e, 2, 0), EBUSY);
  for (off = 0; off + 65536 <= DISK; off += 65536)
    read_check (off, 65536);
  adaptra_workers_stop (e);
  assert_int_equal (stats ().pages_in_flight, 0);
  assert_true (stats ().method[ADAPTRA_METHOD_NONE].pgreadahead_hit > 0);
}

/* A worker for hints only runs a cache hint's job (how boot profiles
 * prefetch) queued behind a stream's window, and leaves the window's
 * job queued.
 */
static void
test_hint_worker_takes_hints_only (void **state)
{
  void *ctx = &worker_ctx;
  unsigned i;

  (void) state;
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, &ctx), 0);
  read_check (0, PAGE);                 /* initial window: pages 1..3 */
  assert_int_equal (adaptra_workers_start (e, 0, 1), 0);
  adaptra_cache_hint (e, client, 64 * PAGE, 4 * PAGE);
  for (i = 0; i < 5000 && stats ().pages_in_flight > 3; i++)
    usleep (1000);
  assert_int_equal (stats ().pages_in_flight, 3);
  assert_int_equal (stats ().prefetch_queued_bytes, 3 * PAGE);
  calls = 0;
  read_check (64 * PAGE, 4 * PAGE);     /* the hint's pages are there */
  assert_int_equal (calls, 0);
  adaptra_workers_stop (e);
}

/* Lending the workers one more context (a connection joining an
 * export) returns while a job runs; taking one away waits for it.
 */
struct set_contexts_call {
  unsigned n;
  void **ctxs;
  bool returned;
};

static void *
set_contexts_thread (void *arg)
{
  struct set_contexts_call *c = arg;

  adaptra_volume_set_contexts (e, volume, c->n, c->ctxs);
  __atomic_store_n (&c->returned, true, __ATOMIC_SEQ_CST);
  return NULL;
}

/* Call set_contexts (n, ctxs) in a thread while a worker's job (a
 * cache hint of the page at offset) is held in the backend; true if it
 * returned before the job was released.
 */
static bool
set_contexts_returns_during_job (uint64_t offset, unsigned n, void **ctxs)
{
  struct set_contexts_call c = { .n = n, .ctxs = ctxs };
  pthread_t t;
  bool early;
  unsigned i;

  gate = true;
  adaptra_cache_hint (e, client, offset, PAGE);
  sem_wait (&entered);                  /* the worker is in the backend */
  pthread_create (&t, NULL, set_contexts_thread, &c);
  for (i = 0; i < 500 && !__atomic_load_n (&c.returned, __ATOMIC_SEQ_CST);
       i++)
    usleep (1000);
  early = __atomic_load_n (&c.returned, __ATOMIC_SEQ_CST);
  gate = false;
  sem_post (&release);
  pthread_join (t, NULL);
  return early;
}

static void
test_set_contexts_waits_only_to_drop (void **state)
{
  void *one[] = { &worker_ctx };
  void *two[] = { &worker_ctx, &client_ctx };

  (void) state;
  sem_init (&entered, 0, 0);
  sem_init (&release, 0, 0);
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, one), 0);
  assert_int_equal (adaptra_workers_start (e, 1, 0), 0);
  assert_true (set_contexts_returns_during_job (0, 2, two));
  /* The worker reads with worker_ctx (two[0]): dropping it waits. */
  assert_false (set_contexts_returns_during_job (PAGE, 1, two + 1));
  adaptra_workers_stop (e);
  sem_destroy (&entered);
  sem_destroy (&release);
}

/* The stress tests' threads: two prefetch workers that read with
 * worker_ctx, and crews of readers and writers.
 */
static void
start_two_workers (void)
{
  void *ctxs[2] = { &worker_ctx, &worker_ctx };

  assert_int_equal (adaptra_volume_set_contexts (e, volume, 2, ctxs), 0);
  assert_int_equal (adaptra_workers_start (e, 2, 0), 0);
}

/* Read count bytes at off as client c into buf: true if the read
 * failed or its bytes are not the disk's.  For the crews' threads,
 * which count what went wrong instead of failing the test.
 */
static bool
read_wrong (int c, unsigned char *buf, uint32_t count, uint64_t off)
{
  return adaptra_read (e, c, &client_ctx, buf, count, off) != 0 ||
    memcmp (buf, disk + off, count) != 0;
}

/* threads threads of run, each given its index as its argument. */
struct crew {
  void *(*run) (void *arg);
  unsigned threads;
};

#define CREW_THREADS_MAX 16

/* Run the threads of n crews at once and wait for them all, in
 * order; each must return NULL (no wrong byte seen).
 */
static void
run_crews (const struct crew *crews, unsigned n)
{
  pthread_t threads[CREW_THREADS_MAX];
  unsigned c, i, started = 0;
  void *r;

  for (c = 0; c < n; c++)
    for (i = 0; i < crews[c].threads; i++) {
      assert_true (started < CREW_THREADS_MAX);
      pthread_create (&threads[started++], NULL, crews[c].run,
                      (void *) (intptr_t) i);
    }
  for (i = 0; i < started; i++) {
    pthread_join (threads[i], &r);
    assert_null (r);
  }
}

/* Concurrency: workers, three sequential readers on regions nobody
 * writes, one writer elsewhere.  Afterwards no page may be stale.
 */
static void *
stress_reader (void *arg)
{
  uint64_t base = (uint64_t) (intptr_t) arg * 4 * 1024 * 1024;
  unsigned char *buf = malloc (65536);
  uint64_t off;
  intptr_t bad = buf == NULL;

  for (off = 0; off + 12288 <= 2 * 1024 * 1024 && buf; off += 12288)
    bad += read_wrong (client, buf, 12288, base + off);
  free (buf);
  return (void *) bad;
}

/* A crew's writer: writes writes of len bytes, write i all of byte
 * value i, at i * step % span into the regions, stride apart from
 * first, a region a write in turn.  With check it reads the first
 * page of each write back as client and stops at a wrong one: NULL
 * if none was.
 */
struct writer {
  unsigned writes;
  uint32_t len;
  uint64_t first, stride;
  unsigned regions;
  uint64_t span, step;
  bool check;
};

static void *
write_regions (const struct writer *w)
{
  unsigned i;

  for (i = 0; i < w->writes; i++) {
    uint64_t off = w->first + i % w->regions * w->stride +
      i * w->step % w->span;
    unsigned char buf[PAGE];

    write_disk (off, w->len, (int) i);
    if (w->check && read_wrong (client, buf, sizeof buf, off))
      return (void *) 1;
  }
  return NULL;
}

/* Regions 2M..4M, 6M..8M, 10M..12M: beside the readers'.  Reading
 * the written area races with nothing: check it.
 */
static void *
stress_writer (void *arg)
{
  static const struct writer w = {
    .writes = 3000, .len = 9000,
    .first = 2 * 1024 * 1024, .stride = UINT64_C (4) * 1024 * 1024,
    .regions = 3, .span = 2 * 1024 * 1024 - 9000, .step = 5003,
    .check = true
  };

  (void) arg;
  return write_regions (&w);
}

static void
test_concurrent_stress (void **state)
{
  const struct crew crews[] = { { stress_reader, 3 }, { stress_writer, 1 } };

  (void) state;
  start_two_workers ();
  run_crews (crews, sizeof crews / sizeof *crews);
  adaptra_workers_stop (e);
  read_check (0, 12 * 1024 * 1024);
}

/* Concurrency of the hit path (docs/DESIGN.md §9): eight readers read
 * 4 to 12 KiB at random in a hot megabyte, most of it hits served
 * without the engine lock; a writer rewrites pages of it and
 * invalidates them; two scanners stream through the rest of the disk,
 * so that workers prefetch and the pool evicts.  Each page of the hot
 * megabyte holds one byte value, a function of its page and version
 * (hot_byte): a reader checks that every page it got is whole and not
 * older than the last write whose invalidation had returned before
 * the read began.  Afterwards every frame is free or on a list again:
 * no pin was lost and no stale frame leaked.
 */
#define HOT_PAGES 256
#define HOT_READS 4000
#define HOT_WRITES 1500

static unsigned hot_done[HOT_PAGES];    /* versions written and invalidated */
static unsigned hot_reads_done;         /* reads the readers are past */

static unsigned char
hot_byte (uint64_t page, unsigned version)
{
  return (unsigned char) (version * 31 + page * 7);
}

/* The version of page whose bytes are buf, or -1 if they are torn. */
static int
hot_version (uint64_t page, const unsigned char *buf)
{
  unsigned i;

  for (i = 1; i < PAGE; i++)
    if (buf[i] != buf[0])
      return -1;
  /* 223 is the inverse of 31 modulo 256. */
  return (unsigned char) ((unsigned char) (buf[0] - page * 7) * 223);
}

/* The next run of 1 to 3 hot pages from generator state *x: its first
 * page, and its length in *n.
 */
static uint64_t
hot_run (uint64_t *x, uint64_t *n)
{
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  *n = 1 + *x % 3;
  return (*x >> 8) % (HOT_PAGES - *n + 1);
}

static void *
hot_reader (void *arg)
{
  int c = -1;
  unsigned char *buf = malloc (3 * PAGE);
  uint64_t x = (uint64_t) (intptr_t) arg * 0x9e3779b97f4a7c15 + 1;
  intptr_t bad = 0;
  unsigned i, j;

  adaptra_client_open (e, volume, "hot", &c);
  for (i = 0; i < HOT_READS && buf && c >= 0; i++) {
    unsigned before[3];
    uint64_t n, first = hot_run (&x, &n);

    for (j = 0; j < n; j++)
      before[j] = __atomic_load_n (&hot_done[first + j], __ATOMIC_ACQUIRE);
    if (adaptra_read (e, c, &client_ctx, buf, (uint32_t) (n * PAGE),
                      first * PAGE) != 0)
      bad++;
    for (j = 0; j < n; j++) {
      int v = hot_version (first + j, buf + j * PAGE);

      /* Versions stay below 256: no wrap. */
      if (v < 0 || (unsigned) v < before[j])
        bad++;
    }
    __atomic_add_fetch (&hot_reads_done, 1, __ATOMIC_RELEASE);
  }
  /* A reader that stopped early still lets the writer start. */
  __atomic_add_fetch (&hot_reads_done, HOT_READS - i, __ATOMIC_RELEASE);
  adaptra_client_close (e, c);
  free (buf);
  return (void *) bad;
}

static void *
hot_writer (void *arg)
{
  const struct timespec pause = { .tv_nsec = 100000 };
  unsigned version[HOT_PAGES] = { 0 };
  uint64_t x = 88172645463325252u;
  unsigned i, j;

  (void) arg;
  /* Write once the readers have cached the hot pages (a reader's worth
   * of reads among them): on a loaded machine a writer that ran first
   * wrote them all before any was cached and invalidated nothing.
   */
  while (__atomic_load_n (&hot_reads_done, __ATOMIC_ACQUIRE) < HOT_READS)
    nanosleep (&pause, NULL);
  for (i = 0; i < HOT_WRITES; i++) {
    uint64_t n, first = hot_run (&x, &n);

    for (j = 0; j < n && version[first + j] < 255; j++)
      ;
    if (j < n)
      continue;
    pthread_mutex_lock (&disk_lock);
    for (j = 0; j < n; j++)
      memset (disk + (first + j) * PAGE,
              hot_byte (first + j, ++version[first + j]), PAGE);
    pthread_mutex_unlock (&disk_lock);
    adaptra_invalidate (e, volume, first * PAGE, n * PAGE);
    for (j = 0; j < n; j++)
      __atomic_store_n (&hot_done[first + j], version[first + j],
                        __ATOMIC_RELEASE);
  }
  return NULL;
}

static void *
hot_scanner (void *arg)
{
  int c = -1;
  uint64_t off = HOT_PAGES * PAGE + (uint64_t) (intptr_t) arg * 65536;
  unsigned char *buf = malloc (65536);
  intptr_t bad = 0;

  adaptra_client_open (e, volume, "scan", &c);
  for (; off + 65536 <= DISK && buf && c >= 0; off += 2 * 65536)
    bad += read_wrong (c, buf, 65536, off);
  adaptra_client_close (e, c);
  free (buf);
  return (void *) bad;
}

/* Until told to stop, switch the step-aside setting between always
 * and never, so that reads go both ways around the engine lock and
 * meet pages cached before the switch.
 */
static bool toggling;

static void *
bypass_toggler (void *arg)
{
  const struct timespec pause = { .tv_nsec = 200000 };
  char why[128];
  unsigned n = 0;

  (void) arg;
  while (__atomic_load_n (&toggling, __ATOMIC_ACQUIRE)) {
    adaptra_engine_set_bypass (e, n++ % 2 ? ADAPTRA_BYPASS_NEVER
                               : ADAPTRA_BYPASS_ALWAYS, why, sizeof why);
    nanosleep (&pause, NULL);
  }
  adaptra_engine_set_bypass (e, ADAPTRA_BYPASS_NEVER, why, sizeof why);
  return NULL;
}

/* 8 readers of hot pages, 2 scanners, a writer and prefetch workers,
 * and with toggle a thread that switches stepping aside on and off.
 */
static void
hits_stress (bool toggle)
{
  const struct crew crews[] = {
    { hot_reader, 8 }, { hot_scanner, 2 }, { hot_writer, 1 }
  };
  pthread_t toggler;
  struct adaptra_stats s;
  uint64_t frames, p;

  for (p = 0; p < HOT_PAGES; p++) {
    memset (disk + p * PAGE, hot_byte (p, 0), PAGE);
    hot_done[p] = 0;
  }
  hot_reads_done = 0;
  s = stats ();
  frames = s.pages_free + s.pages_inactive + s.pages_active;
  start_two_workers ();
  toggling = toggle;
  if (toggle)
    pthread_create (&toggler, NULL, bypass_toggler, NULL);
  run_crews (crews, sizeof crews / sizeof *crews);
  if (toggle) {
    __atomic_store_n (&toggling, false, __ATOMIC_RELEASE);
    pthread_join (toggler, NULL);
  }
  adaptra_workers_stop (e);
  s = stats ();
  assert_int_equal (s.pages_in_flight, 0);
  assert_int_equal (s.pages_free + s.pages_inactive + s.pages_active, frames);
  assert_int_equal (s.client_requests,
                    8 * HOT_READS + 2 * ((DISK / PAGE - HOT_PAGES) / 32));
  if (toggle) {
    /* Reads went both ways; how many each way depends on timing. */
    assert_true (s.bypass_switches > 1);
    assert_true (s.bypass_requests > 0);
    assert_true (s.bypass_requests < s.client_requests);
  }
  else {
    assert_true (s.evicted > 0);
    assert_true (s.invalidated > 0);
  }
  read_check (0, DISK);
}

static void
test_concurrent_hits_stress (void **state)
{
  (void) state;
  hits_stress (false);
}

/* The same with stepping aside switched on and off meanwhile: reads of
 * absent pages then go around the engine lock too (read_unlocked).
 */
static void
test_concurrent_aside_stress (void **state)
{
  (void) state;
  hits_stress (true);
}


/* Stream hits from many threads: 6 readers in 3 pairs, the two of a
 * pair reading one region in 4 KiB requests side by side (so that they
 * race for the first touch of each read-ahead page), each region
 * twice, through a stream table of 2 slots (so that streams are pushed
 * out and their slots reused while their readers hit their pages),
 * with prefetch workers and a writer in a fourth region, which reads
 * each write back through the engine (its pages are then in the pool
 * when a later write lands on them, and must be invalidated).  Every
 * byte is the disk's; a read-ahead page's first touch counts once, so
 * there are no more hits than pages read ahead, and the clients'
 * hits add up to the engine's.
 */
#define STREAM_REGION (UINT64_C (3) * 1024 * 1024)

static struct adaptra_volume_row volume_row (void);

static void *
stream_pair_reader (void *arg)
{
  uint64_t base = (uint64_t) (intptr_t) arg / 2 * STREAM_REGION;
  int c = -1;
  unsigned char buf[PAGE];
  uint64_t off;
  intptr_t bad = adaptra_client_open (e, volume, "stream", &c) != 0;
  unsigned pass;

  for (pass = 0; pass < 2 && c >= 0; pass++)
    for (off = 0; off < STREAM_REGION; off += PAGE)
      bad += read_wrong (c, buf, PAGE, base + off);
  if (c >= 0)
    adaptra_client_close (e, c);
  return (void *) bad;
}

static void *
stream_region_writer (void *arg)
{
  static const struct writer w = {
    .writes = 2000, .len = 100, .first = 3 * STREAM_REGION,
    .regions = 1, .span = STREAM_REGION, .step = 7919, .check = true
  };

  (void) arg;
  return write_regions (&w);
}

static void
test_concurrent_stream_stress (void **state)
{
  const struct crew crews[] = {
    { stream_pair_reader, 6 }, { stream_region_writer, 1 }
  };
  struct adaptra_config cfg;
  struct adaptra_stats s;

  (void) state;
  base_config (&cfg);
  cfg.streams = 2;
  adaptra_client_close (e, client);
  restart_engine (&cfg);
  start_two_workers ();
  run_crews (crews, sizeof crews / sizeof *crews);
  adaptra_workers_stop (e);
  s = stats ();
  assert_true (s.method[ADAPTRA_METHOD_NONE].pgreadahead > 0);
  assert_true (s.method[ADAPTRA_METHOD_NONE].pgreadahead_hit <=
               s.method[ADAPTRA_METHOD_NONE].pgreadahead);
  assert_int_equal (volume_row ().readahead_hits,
                    s.method[ADAPTRA_METHOD_NONE].pgreadahead_hit);
  assert_int_equal (s.pages_in_flight, 0);
  read_check (0, DISK);
}

/* A second volume on disk2, for the volume tests. */
static int
open_second (unsigned flags, uint64_t size, int *client2)
{
  int v = open_volume (e, "second", size, flags);
  uint64_t i;

  assert_true (v != volume);
  *client2 = open_client (e, v, "test2");
  for (i = 0; i < DISK2; i++)
    disk2[i] = (unsigned char) ~((i * 40503u) >> 7);
  return v;
}

static void
read_check2 (int client2, uint64_t offset, uint32_t count)
{
  unsigned char *buf = malloc (count);

  assert_non_null (buf);
  assert_int_equal (adaptra_read (e, client2, &client2_ctx, buf, count,
                                  offset), 0);
  assert_memory_equal (buf, disk2 + offset, count);
  free (buf);
}

static unsigned
drain2 (int v)
{
  unsigned n = 0;

  while (adaptra_prefetch_run_one (e, v, &worker2_ctx))
    n++;
  return n;
}

/* Two volumes read at the same offsets, interleaved, each with its
 * own streams: every byte is its own disk's, and each volume's
 * read-ahead runs only with its own contexts (the fake backend reads
 * disk2 for disk2's contexts, so a wrong context gives wrong bytes).
 */
static void
test_volumes_keep_their_bytes (void **state)
{
  struct adaptra_volume_row rows[4];
  struct adaptra_stream_row srows[8];
  int v2, client2;
  uint64_t off;
  size_t n, i;

  (void) state;
  disk2 = malloc (DISK2);
  assert_non_null (disk2);
  v2 = open_second (0, DISK2, &client2);
  for (off = 0; off + 3 * PAGE <= DISK2 / 2; off += 3 * PAGE) {
    read_check (off, 3 * PAGE);
    read_check2 (client2, off, 3 * PAGE);
    assert_true (drain () + drain2 (v2) > 0 || off > 0);
  }
  /* A read past the second volume's end is refused, not clamped. */
  assert_int_equal (adaptra_read (e, client2, &client2_ctx, disk2, PAGE,
                                  DISK2), EINVAL);
  assert_int_equal (stats ().streams_active, 2);
  n = adaptra_streams_snapshot (e, srows, 8);
  assert_int_equal (n, 2);
  for (i = 0; i < n; i++)
    assert_string_equal (srows[i].volume_name,
                         srows[i].volume == v2 ? "second" : "");
  n = adaptra_volumes_snapshot (e, rows, 4);
  assert_int_equal (n, 2);
  assert_string_equal (rows[1].name, "second");
  assert_int_equal (rows[1].size, DISK2);
  assert_int_equal (rows[1].clients, 1);
  assert_int_equal (rows[1].client_bytes, rows[0].client_bytes);
  /* Read ahead of a sequential reader: everything it read, and more,
   * came from the backend, on demand or by prefetch.
   */
  assert_true (rows[1].backend_bytes >= rows[1].client_bytes);
  assert_true (rows[1].readahead_hits > 0);
  assert_true (rows[0].pages > 0 && rows[1].pages > 0);
  assert_int_equal (rows[0].pages + rows[1].pages,
                    stats ().pages_inactive + stats ().pages_active);
  adaptra_client_close (e, client2);
  adaptra_volume_close (e, v2);
  free (disk2);
}

/* A write drops its range from its own volume only, unless the other
 * volume may alias it (same size, flagged).
 */
static void
test_volumes_invalidation (void **state)
{
  uint64_t before;
  int v2, client2, flags;

  (void) state;
  disk2 = malloc (DISK2);
  assert_non_null (disk2);
  for (flags = 0; flags <= ADAPTRA_VOLUME_MAY_ALIAS;
       flags += ADAPTRA_VOLUME_MAY_ALIAS) {
    v2 = open_second (flags, DISK2, &client2);
    read_check2 (client2, 0, 16 * PAGE);
    drain2 (v2);
    /* A volume of another size never aliases. */
    adaptra_invalidate (e, volume, 0, 16 * PAGE);
    calls = 0;
    read_check2 (client2, 0, 16 * PAGE);
    assert_int_equal (calls, 0);
    adaptra_client_close (e, client2);
    adaptra_volume_close (e, v2);

    /* The same size: aliases only when flagged. */
    v2 = open_second (flags, DISK, &client2);
    read_check2 (client2, 0, 16 * PAGE);
    drain2 (v2);
    before = stats ().invalidated;
    adaptra_invalidate (e, volume, 4 * PAGE, PAGE);
    calls = 0;
    read_check2 (client2, 0, 16 * PAGE);
    assert_int_equal (calls, flags ? 1 : 0);
    assert_int_equal (stats ().invalidated - before, flags ? 1 : 0);
    adaptra_client_close (e, client2);
    adaptra_volume_close (e, v2);
  }
  free (disk2);
}

/* Closing a volume drops its pages, streams and queued jobs; its id
 * is reused and the new volume sees none of the old bytes.
 */
static void
test_volume_close (void **state)
{
  int v2, client2, v3;

  (void) state;
  disk2 = malloc (DISK2);
  assert_non_null (disk2);
  read_check (0, 4 * PAGE);
  drain ();
  v2 = open_second (0, DISK2, &client2);
  read_check2 (client2, 0, 4 * PAGE);   /* initial window queued */
  assert_true (stats ().pages_in_flight > 0);
  assert_int_equal (stats ().streams_active, 2);
  adaptra_client_close (e, client2);
  adaptra_volume_close (e, v2);
  assert_int_equal (stats ().pages_in_flight, 0);
  assert_int_equal (stats ().streams_active, 1);
  assert_false (adaptra_prefetch_run_one (e, v2, &worker2_ctx));
  /* Reopened at the same id on other bytes: nothing old is served. */
  memset (disk2, 0x77, DISK2);
  v3 = open_volume (e, "third", DISK2, 0);
  assert_int_equal (v3, v2);
  client2 = open_client (e, v3, "test3");
  read_check2 (client2, 0, 4 * PAGE);
  adaptra_client_close (e, client2);
  adaptra_volume_close (e, v3);
  /* The first volume kept its pages. */
  calls = 0;
  read_check (0, 4 * PAGE);
  assert_int_equal (calls, 0);
  free (disk2);
}

/* Workers read only the jobs of volumes that have contexts, each with
 * that volume's; a volume without any is read ahead by its readers,
 * and losing its contexts drops its queue.
 */
static void
test_volume_contexts (void **state)
{
  void *ctxs[1] = { &worker_ctx };
  struct adaptra_stats s;
  int v2, client2;
  unsigned i;

  (void) state;
  disk2 = malloc (DISK2);
  assert_non_null (disk2);
  v2 = open_second (0, DISK2, &client2);
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 1, ctxs), 0);
  assert_int_equal (adaptra_workers_start (e, 2, 0), 0);
  read_check2 (client2, 0, 4 * PAGE);   /* queued, no worker may take it */
  read_check (0, 4 * PAGE);             /* queued, a worker takes it */
  /* Once the workers are idle, what is still queued is v2's. */
  for (i = 0; i < 5000; i++) {
    s = stats ();
    if (s.prefetch_queued_bytes == s.pages_in_flight * PAGE)
      break;
    usleep (1000);
  }
  assert_true (s.prefetch_queued_bytes > 0);
  assert_true (adaptra_prefetch_run_one (e, v2, &worker2_ctx));
  read_check2 (client2, 4 * PAGE, 12 * PAGE);
  assert_int_equal (adaptra_volume_set_contexts (e, volume, 0, NULL), 0);
  read_check (4 * PAGE, 4 * PAGE);
  adaptra_workers_stop (e);
  assert_int_equal (stats ().pages_in_flight, 0);
  adaptra_client_close (e, client2);
  adaptra_volume_close (e, v2);
  v2 = -1;
  assert_int_equal (adaptra_volume_open (e, "huge",
                                         ADAPTRA_VOLUME_SIZE_MAX + 1, 0, &v2),
                    EFBIG);
  assert_int_equal (adaptra_client_open (e, 99, "nobody", &v2), EINVAL);
  assert_int_equal (v2, -1);            /* written only on success */
  free (disk2);
}

/* Over the congestion limit, a volume below its share of it may still
 * prefetch: one export's scan cannot take every window from another.
 */
static void
test_congestion_shared_fairly (void **state)
{
  uint64_t congested, queued;
  int v2, client2;

  (void) state;
  disk2 = malloc (DISK2);
  assert_non_null (disk2);
  v2 = open_second (0, DISK2, &client2);
  /* 4M pool, 256K windows: the limit is 1M.  Volume 1 queues 2M. */
  adaptra_cache_hint (e, client, 0, 2 * 1024 * 1024);
  queued = stats ().prefetch_flight_bytes;
  assert_true (queued > 1024 * 1024);
  congested = stats ().io_congestion;
  adaptra_cache_hint (e, client, 4 * 1024 * 1024, 65536);
  assert_int_equal (stats ().io_congestion, congested + 1);
  assert_int_equal (stats ().prefetch_flight_bytes, queued);
  /* Volume 2 has none in flight, below its half of the limit. */
  adaptra_cache_hint (e, client2, 0, 65536);
  assert_int_equal (stats ().io_congestion, congested + 1);
  assert_int_equal (stats ().prefetch_flight_bytes, queued + 65536);
  drain2 (v2);
  drain ();
  assert_int_equal (stats ().prefetch_flight_bytes, 0);
  read_check2 (client2, 0, 65536);
  adaptra_client_close (e, client2);
  adaptra_volume_close (e, v2);
  free (disk2);
}

/* The volume row of the test's volume. */
static struct adaptra_volume_row
volume_row (void)
{
  struct adaptra_volume_row rows[4];
  size_t n = adaptra_volumes_snapshot (e, rows, 4), i;

  for (i = 0; i < n && rows[i].id != volume; i++)
    ;
  assert_true (i < n);
  return rows[i];
}

/* The volumes snapshot counts the pool's pages at most once an
 * ADAPTRA_PAGE_COUNTS_REUSE_NS: a count taken within it is served
 * again, a later one counts anew.
 */
static void
test_page_counts_reused (void **state)
{
  uint64_t first, in_pool;
  struct adaptra_stats s;

  (void) state;
  read_check (0, 16 * PAGE);
  drain ();
  first = volume_row ().pages;
  assert_true (first > 0);
  read_check (1024 * PAGE, 16 * PAGE);
  drain ();
  s = stats ();
  in_pool = s.pages_inactive + s.pages_active;
  assert_true (in_pool > first);
  now_ns += ADAPTRA_PAGE_COUNTS_REUSE_NS - 1;
  assert_int_equal (volume_row ().pages, first);
  now_ns += 1;
  assert_int_equal (volume_row ().pages, in_pool);
}

/* A fresh engine with adaptra-bypass=auto over a backend as fast as
 * the pool (a file in the page cache: 20 us a read plus 0.2 us a KiB),
 * read in 64 KiB until the volume steps aside (once read-ahead has had
 * its trial, aside.c: served); returns where the reads ended.
 */
static uint64_t
read_until_aside (void)
{
  struct adaptra_config cfg;
  uint64_t off = 0;
  unsigned i;

  base_config (&cfg);
  cfg.bypass = ADAPTRA_BYPASS_AUTO;
  restart_engine (&cfg);
  read_ns = 20000;
  read_ns_per_kib = 200;
  for (i = 0; i < 400 && !volume_row ().bypass; i++) {
    read_check (off, 65536);
    drain ();
    off += 65536;
  }
  assert_true (volume_row ().bypass);
  return off;
}

/* Step aside on a backend as fast as the pool, come back when it turns
 * slow (the remote model: 5 ms) within 3 reads.
 */
static void
test_step_aside (void **state)
{
  struct adaptra_stats s;
  uint64_t off = read_until_aside (), windows, pages, requests, bytes;
  unsigned i;

  (void) state;
  s = stats ();
  assert_int_equal (s.volumes_bypassed, 1);
  assert_int_equal (s.bypass_switches, 1);
  /* Stepped aside: misses go straight to the client, no window, no
   * page; what the pool holds is still served.
   */
  windows = s.method[ADAPTRA_METHOD_NONE].readahead;
  pages = s.pages_inactive + s.pages_active;
  requests = s.bypass_requests;
  bytes = s.bypass_bytes;
  calls = 0;
  read_check (off + 64 * 65536, 3 * 65536 + 5);
  assert_int_equal (calls, 1);
  read_check (off - 65536, 65536);
  assert_int_equal (calls, 1);
  s = stats ();
  assert_int_equal (s.method[ADAPTRA_METHOD_NONE].readahead, windows);
  assert_int_equal (s.pages_inactive + s.pages_active, pages);
  assert_int_equal (s.bypass_requests, requests + 2);
  assert_int_equal (s.bypass_bytes, bytes + 3 * 65536 + 5);
  /* The backend turns slow: read-ahead is back within 3 reads. */
  read_ns = 5000000;
  for (i = 0; i < 3 && volume_row ().bypass; i++)
    read_check ((100 + i) * 65536, 65536);
  assert_false (volume_row ().bypass);
  assert_int_equal (stats ().bypass_switches, 2);
  /* The reads in bypass left no history: the stream is found again
   * from what the next reads leave in the pool (context method).
   */
  for (; i < 8; i++)
    read_check ((100 + i) * 65536, 65536);
  assert_true (stats ().method[ADAPTRA_METHOD_NONE].readahead > windows);
}

/* Stepped aside on a loaded machine: the backend's reads take 5 ms,
 * all but 20 us of it waiting on a run queue for a CPU, then as long
 * with the thread on its CPU for 20 us and its virtual CPU taken by a
 * hypervisor for the rest (the clock's cpu_use): the volume stays
 * aside (test-model: test_fast_on_a_loaded_machine).  The same 5 ms
 * run on the CPU in the backend, with as long a wait on a run queue
 * just before or after each read (outside its time), is a slowdown:
 * read-ahead is back within the 3 reads test_step_aside allows (where
 * the reads sleep in the backend).
 */
static void
test_step_aside_on_a_loaded_machine (void **state)
{
  unsigned i;

  (void) state;
  read_until_aside ();
  read_ns = 5000000;
  read_wait_ns = read_ns - 20000;
  for (i = 0; i < 20; i++)
    read_check ((100 + i) * 65536, 65536);
  assert_true (volume_row ().bypass);
  read_wait_ns = 0;
  read_run_ns = 20000;
  read_stolen = true;
  for (i = 0; i < 20; i++)
    read_check ((120 + i) * 65536, 65536);
  assert_true (volume_row ().bypass);
  assert_int_equal (stats ().bypass_switches, 1);
  read_run_ns = read_ns;
  read_wait_ns = read_ns - 20000;
  read_stolen = false;
  for (i = 0; i < 3 && volume_row ().bypass; i++)
    read_check ((140 + i) * 65536, 65536);
  assert_false (volume_row ().bypass);
  assert_int_equal (stats ().bypass_switches, 2);
}

/* adaptra-bypass=always and never override the measurement. */
static void
test_step_aside_override (void **state)
{
  char why[128];
  unsigned i;

  (void) state;
  read_ns = 5000000;                    /* slow, yet: */
  assert_int_equal (adaptra_engine_set_bypass (e, ADAPTRA_BYPASS_ALWAYS,
                                               why, sizeof why), 0);
  read_check (0, 65536);
  assert_true (volume_row ().bypass);
  assert_int_equal (stats ().method[ADAPTRA_METHOD_NONE].readahead, 0);
  read_ns = 0;                          /* fast, yet: */
  assert_int_equal (adaptra_engine_set_bypass (e, ADAPTRA_BYPASS_NEVER,
                                               why, sizeof why), 0);
  for (i = 1; i < 40; i++)
    read_check (i * 65536, 65536);
  assert_false (volume_row ().bypass);
  assert_true (stats ().method[ADAPTRA_METHOD_NONE].readahead > 0);
}

/* Reads that must not wait for the engine lock: one thread holds it
 * (in a trace line, which the engine writes under the lock) while
 * another makes the read, which must complete before the lock is
 * released.  With the read under the lock, the holder's wait times out
 * and the test fails.
 */
static struct {
  sem_t done;
  bool in_time;                 /* the read completed while held */
  bool started;
  pthread_t thread;
  int client;
  uint64_t offset;
  uint32_t count;
} held;

static void *
held_reader (void *arg)
{
  unsigned char *buf = malloc (held.count);
  void *bad = (void *) 1;

  (void) arg;
  if (buf && adaptra_read (e, held.client, &client_ctx, buf, held.count,
                           held.offset) == 0 &&
      memcmp (buf, disk + held.offset, held.count) == 0)
    bad = NULL;
  free (buf);
  sem_post (&held.done);
  return bad;
}

/* From a trace hook: start the read of count at offset by client c and
 * give it 10 s to finish while this thread holds the lock.
 */
static void
read_while_holding_lock (int c, uint64_t offset, uint32_t count)
{
  struct timespec deadline;

  held.client = c;
  held.offset = offset;
  held.count = count;
  clock_gettime (CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  assert_int_equal (pthread_create (&held.thread, NULL, held_reader, NULL),
                    0);
  held.started = true;
  held.in_time = sem_timedwait (&held.done, &deadline) == 0;
}

/* The test's end: the read ran, without the lock, and read the bytes. */
static void
assert_read_while_held (void)
{
  void *r;

  assert_true (held.started);
  pthread_join (held.thread, &r);
  assert_null (r);
  assert_true (held.in_time);
  sem_destroy (&held.done);
}

/* A read of a volume that stepped aside does not wait for the engine
 * lock: the switch that adaptra_engine_set_bypass makes writes a trace
 * line, and the read is of pages the pool does not hold.
 */
static void
read_aside_while_held (const struct adaptra_trace *t)
{
  if (t->kind == ADAPTRA_TRACE_BYPASS)
    read_while_holding_lock (client, 40 * PAGE + 7, 3 * PAGE + 5);
}

static void
test_step_aside_without_lock (void **state)
{
  char why[128];
  uint64_t before;

  (void) state;
  sem_init (&held.done, 0, 0);
  held.started = false;
  before = stats ().bypass_bytes;
  during_trace = read_aside_while_held;
  assert_int_equal (adaptra_engine_set_bypass (e, ADAPTRA_BYPASS_ALWAYS,
                                               why, sizeof why), 0);
  during_trace = NULL;
  assert_read_while_held ();
  assert_int_equal (stats ().bypass_bytes, before + 3 * PAGE + 5);
}

/* A read of a live stream's read-ahead pages near its reader does not
 * wait for the engine lock either: at the stream's third window
 * (written under the lock as its mark at page index is taken), another
 * client reads the two pages after the mark, read ahead by the window
 * before and not read yet.  Their first touches count as read-ahead
 * hits, once each.
 */
static int stream_reader2;

/* Read-ahead hits of every method (the "none" row is their sum). */
static uint64_t
readahead_hits (void)
{
  return stats ().method[ADAPTRA_METHOD_NONE].pgreadahead_hit;
}

static void
read_stream_while_held (const struct adaptra_trace *t)
{
  uint64_t index = t->event.reader;

  if (held.started || t->kind != ADAPTRA_TRACE_WINDOW ||
      t->placement.method != ADAPTRA_METHOD_STATE ||
      t->placement.start < index + 3)
    return;
  read_while_holding_lock (stream_reader2, (index + 1) * PAGE, 2 * PAGE);
}

static void
test_stream_hit_without_lock (void **state)
{
  struct adaptra_client_row rows[2];
  uint64_t hits, p;

  (void) state;
  stream_reader2 = open_client (e, volume, "second reader");
  sem_init (&held.done, 0, 0);
  held.started = false;
  during_trace = read_stream_while_held;
  for (p = 0; p < 256 && !held.started; p++) {
    read_check (p * PAGE, PAGE);
    drain ();
  }
  during_trace = NULL;
  assert_read_while_held ();
  assert_int_equal (held.offset, p * PAGE);
  hits = readahead_hits ();
  /* The first reader reads on through them: not first touches. */
  read_check (p * PAGE, 2 * PAGE);
  drain ();
  assert_int_equal (readahead_hits (), hits);
  assert_int_equal (adaptra_clients_snapshot (e, rows, 2), 2);
  assert_int_equal (rows[1].readahead_hits, 2);
  assert_int_equal (rows[0].readahead_hits + rows[1].readahead_hits, hits);
}

int
main (void)
{
#define T(name) cmocka_unit_test_prestate_setup_teardown (name, \
    fixture_open_test, fixture_close_test, &engine_spec)
  const struct CMUnitTest tests[] = {
    T (test_sequential_scan),
    T (test_random_reads_never_read_ahead),
    T (test_random_read_on_a_mark_issues_nothing),
    T (test_interleaved_streams),
    T (test_reordered_reads_one_stream),
    T (test_backward_stream),
    T (test_read_behind_stream_ignored),
    T (test_random_reads_next_to_windows),
    T (test_context_from_history),
    T (test_second_adjacent_read_starts_stream),
    T (test_miss_reads_window_when_queue_slow),
    T (test_context_counts_request_pages),
    T (test_accelerated_context_from_zero),
    T (test_slow_stream_keeps_state),
    T (test_successive_touches_one_access),
    T (test_reuse_activates),
    T (test_rereads_counted_per_request),
    T (test_resume_from_mark),
    T (test_resume_mark_inside_request),
    T (test_resume_rearms_when_congested),
    T (test_resume_rescues),
    T (test_fixed_mode),
    T (test_mode_off),
    T (test_inflight_dedup),
    T (test_reader_runs_queued_job),
    T (test_followers_share_window),
    T (test_prefetch_peek),
    T (test_fair_queue_between_streams),
    T (test_fair_queue_keeps_stream_order),
    T (test_fair_queue_rounds_in_page_order),
    T (test_chunk_and_flight_limit),
    T (test_taken_job_timed_from_its_take),
    T (test_reader_waits_in_clock_hook),
    T (test_hedge_after_deadline),
    T (test_hedge_sooner_behind_many_reads),
    T (test_hedge_not_sooner_where_it_cannot_pay),
    T (test_hedge_error),
    T (test_write_during_hedge),
    T (test_hedge_needs_credit),
    T (test_hedge_when_line_at_nought),
    T (test_no_hedge_where_seeks),
    T (test_slow_backend_limit_floor),
    T (test_steal_splits_chunk),
    T (test_congestion_by_throughput),
    T (test_no_data),
    T (test_invalidate_during_prefetch),
    T (test_invalidate_ready_pages),
    T (test_failed_prefetch_reader_retries),
    T (test_failed_demand_read),
    T (test_eof_clamp),
    T (test_cache_hint_bounded),
    T (test_thrashing_accounting),
    T (test_rescue_pages_in_danger),
    T (test_auto_max_grows_when_late),
    T (test_auto_max_late_stops_at_delivery),
    T (test_auto_max_late_slow_reads),
    T (test_size_and_clients),
    T (test_small_pool_settles),
    T (test_tunables),
    T (test_new_says_why),
    T (test_trace_records),
    T (test_workers),
    T (test_hint_worker_takes_hints_only),
    T (test_set_contexts_waits_only_to_drop),
    T (test_concurrent_stress),
    T (test_concurrent_stream_stress),
    T (test_concurrent_hits_stress),
    T (test_concurrent_aside_stress),
    T (test_volumes_keep_their_bytes),
    T (test_volumes_invalidation),
    T (test_volume_close),
    T (test_volume_contexts),
    T (test_congestion_shared_fairly),
    T (test_page_counts_reused),
    T (test_step_aside),
    T (test_step_aside_on_a_loaded_machine),
    T (test_step_aside_override),
    T (test_step_aside_without_lock),
    T (test_stream_hit_without_lock),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
