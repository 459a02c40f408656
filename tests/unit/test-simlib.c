/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of sim/simlib.c: adaptra-sim's size and time parsers, the
 * remote and disk backend models, trace lines (CSV and nbdkit's log
 * filter), latency statistics; and sim/xorshift.h's generator, which
 * adaptra-sim and the integration tests share.
 */

#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "simlib.h"
#include "xorshift.h"

#define MS UINT64_C (1000000)

static void
test_sizes (void **state)
{
  uint64_t n;

  (void) state;
  assert_int_equal (sim_parse_size ("4096", &n), 0);
  assert_int_equal (n, 4096);
  assert_int_equal (sim_parse_size ("4K", &n), 0);
  assert_int_equal (n, 4096);
  assert_int_equal (sim_parse_size ("1.5M", &n), 0);
  assert_int_equal (n, 1572864);
  assert_int_equal (sim_parse_size ("8G", &n), 0);
  assert_int_equal (n, UINT64_C (8) << 30);
  assert_int_equal (sim_parse_size ("16KiB", &n), 0);
  assert_int_equal (n, 16384);
  assert_int_equal (sim_parse_size ("", &n), -1);
  assert_int_equal (sim_parse_size ("-1", &n), -1);
  assert_int_equal (sim_parse_size ("12X", &n), -1);
  assert_int_equal (sim_parse_size ("K", &n), -1);
  assert_int_equal (sim_parse_size ("99999999T", &n), -1);
}

static void
test_durations (void **state)
{
  uint64_t ns;

  (void) state;
  assert_int_equal (sim_parse_duration ("5ms", &ns), 0);
  assert_int_equal (ns, 5 * MS);
  assert_int_equal (sim_parse_duration ("500us", &ns), 0);
  assert_int_equal (ns, 500000);
  assert_int_equal (sim_parse_duration ("3600", &ns), 0);
  assert_int_equal (ns, UINT64_C (3600) * 1000 * MS);
  assert_int_equal (sim_parse_duration ("0.25s", &ns), 0);
  assert_int_equal (ns, 250 * MS);
  assert_int_equal (sim_parse_duration ("5 ms", &ns), -1);
  assert_int_equal (sim_parse_duration ("soon", &ns), -1);
  assert_int_equal (sim_parse_duration ("1e30", &ns), -1);
}

/* Parse spec, which must parse, into *m. */
static void
parse_model (const char *spec, struct sim_model *m)
{
  char why[128];

  assert_int_equal (sim_model_parse (spec, m, why, sizeof why), 0);
}

/* 64 KiB and 1 MiB at 200 MiB/s, in ns. */
#define XFER_64K UINT64_C (312500)
#define XFER_1M (5 * MS)

/* remote:5ms:200M:0.05:0:0: 5 ms, then nbdkit's rate filter, a bucket of
 * 10 MiB (0.05 s of 200 MiB/s) that starts full; no copy cost.
 */
static void
test_remote_burst (void **state)
{
  struct sim_model m;
  char why[128];
  uint64_t t;
  int i;

  (void) state;
  parse_model ("remote:5ms:200M:0.05:0:0", &m);
  /* An idle link: a read costs the latency only, 10 of 1 MiB at once
   * too (the bucket holds them).
   */
  for (i = 0; i < 10; i++)
    assert_int_equal (sim_model_read (&m, 0, 0, 1 << 20), 5 * MS);
  /* The bucket is empty now: the next ones wait for its flow, one
   * after the other.
   */
  assert_int_equal (sim_model_read (&m, 0, 0, 1 << 20), 5 * MS + XFER_1M);
  assert_int_equal (sim_model_read (&m, 0, 0, 1 << 20),
                    5 * MS + 2 * XFER_1M);
  /* 50 ms later the bucket is full again (it filled from 15 ms on). */
  sim_model_forget (&m, 60 * MS);
  t = sim_model_read (&m, 60 * MS, 0, 8 << 20);
  assert_int_equal (t, 65 * MS);
  /* 2 MiB left in it: a read of 4 MiB takes them, then 2 MiB of flow. */
  t = sim_model_read (&m, 60 * MS, 0, 4 << 20);
  assert_int_equal (t, 65 * MS + 2 * XFER_1M);
  sim_model_free (&m);

  assert_int_equal (sim_model_parse ("remote:5ms", &m, why, sizeof why), -1);
  assert_non_null (strstr (why, "remote:LATENCY:BANDWIDTH"));
  assert_int_equal (sim_model_parse ("remote:x:200M", &m, why, sizeof why),
                    -1);
  assert_non_null (strstr (why, "latency 'x'"));
  assert_int_equal (sim_model_parse ("remote:5ms:0", &m, why, sizeof why),
                    -1);
  /* A bucket of 0 passes no read in the filter. */
  assert_int_equal (sim_model_parse ("remote:5ms:200M:0", &m, why,
                                     sizeof why), -1);
  assert_non_null (strstr (why, "burst '0'"));
  assert_int_equal (sim_model_parse ("remote:5ms:200M:x", &m, why,
                                     sizeof why), -1);
  assert_non_null (strstr (why, "burst 'x'"));
  assert_int_equal (sim_model_parse ("remote:5ms:200M:0.05:y", &m, why,
                                     sizeof why), -1);
  assert_non_null (strstr (why, "copy rate 'y'"));
  assert_int_equal (sim_model_parse ("tape", &m, why, sizeof why), -1);
}

/* What the model's clock can time: a trace's span plus its bytes at
 * the bandwidth, under SIM_HORIZON_NS (146 years).
 */
static void
test_model_fits (void **state)
{
  struct sim_model m;

  (void) state;
  parse_model ("remote:1ms:1", &m);      /* a byte a second */
  /* 1e9 bytes: 31.7 years; 4e10: 1268. */
  assert_int_equal (sim_model_fits (&m, 0, UINT64_C (1000000000)), 0);
  assert_int_equal (sim_model_fits (&m, 0, UINT64_C (40000000000)), -1);
  /* The span counts too: 100 years of it and 50 of transfer. */
  assert_int_equal (sim_model_fits (&m, SIM_HORIZON_NS / 146 * 100,
                                    UINT64_C (1577880000)), -1);
  assert_int_equal (sim_model_fits (&m, SIM_HORIZON_NS, 0), -1);
  assert_int_equal (sim_model_fits (&m, UINT64_MAX, UINT64_MAX), -1);
  sim_model_free (&m);
  parse_model ("disk", &m);             /* 150 MiB/s: 1 TiB in 2 hours */
  assert_int_equal (sim_model_fits (&m, SIM_HORIZON_NS / 2,
                                    UINT64_C (1) << 40), 0);
  sim_model_free (&m);
}

/* A saturated link in *m: the bench's bucket (10 MiB), which a read
 * emptied at 0; no copy cost, no overshoot.  On it a worker's 4 MiB,
 * open read key, issued at 0: at 5 ms it takes the 1 MiB that came in
 * since and sleeps 15 ms for the rest, done at 20 ms; final if pinned
 * (sim_model_pin).  Then a client's 64 KiB issued at 1 ms, arriving at
 * 6 ms.  Returns when the client's read completes.
 */
static uint64_t
client_after_4m (struct sim_model *m, unsigned key, bool pinned)
{
  parse_model ("remote:5ms:200M:0.05:0:0", m);
  m->level = 0;
  assert_int_equal (sim_model_start (m, 0, 0, 4 << 20, key), 0);
  assert_int_equal (pinned ? sim_model_pin (m, key)
                    : sim_model_done (m, key), 20 * MS);
  return sim_model_read (m, 1 * MS, 0, 64 << 10);
}

/* On a saturated link each waiting read sleeps for what it lacks and
 * takes what came in when it wakes, as the rate filter's do: whoever
 * runs the bucket first after the tokens come in has them.
 */
static void
test_remote_sleeps (void **state)
{
  struct sim_model m;

  (void) state;
  /* The client's 64 KiB takes them from the 1 ms that came in since
   * the 4 MiB ran the bucket: done at once.  The 4 MiB wakes at 20 ms
   * to find 64 KiB fewer than it lacks, and sleeps for them.
   */
  assert_int_equal (client_after_4m (&m, 7, false), 6 * MS);
  assert_int_equal (sim_model_done (&m, 7), 20 * MS + XFER_64K);
  /* A second worker's 1 MiB issued at 2 ms arrives at 7 ms, takes
   * what came in since the client's (144 KiB), and sleeps for the
   * rest: done at 10.3125 ms.  The 4 MiB takes the 9.6875 ms of flow
   * since when it wakes at 20 ms and sleeps for the 1.0625 MiB it
   * still lacks: it ends when the link has carried all 5.0625 MiB.
   */
  assert_int_equal (sim_model_start (&m, 2 * MS, 0, 1 << 20, 8), 0);
  assert_int_equal (sim_model_done (&m, 8), 10 * MS + XFER_64K);
  assert_int_equal (sim_model_done (&m, 7), 25 * MS + XFER_64K);
  /* Settling the past changes no completion. */
  sim_model_forget (&m, 3 * MS);
  assert_int_equal (sim_model_done (&m, 8), 10 * MS + XFER_64K);
  assert_int_equal (sim_model_done (&m, 7), 25 * MS + XFER_64K);
  sim_model_free (&m);
}

/* A sleeping read wakes late (nbdkit_nanosleep): by
 * SIM_RATE_OVERSHOOT_NS unless the spec says.
 */
static void
test_remote_overshoot (void **state)
{
  struct sim_model m;
  char why[128];
  int i;

  (void) state;
  parse_model ("remote:5ms:200M:0.05:0", &m);
  for (i = 0; i < 10; i++)
    assert_int_equal (sim_model_read (&m, 0, 0, 1 << 20), 5 * MS);
  assert_int_equal (sim_model_read (&m, 0, 0, 1 << 20),
                    5 * MS + XFER_1M + SIM_RATE_OVERSHOOT_NS);
  sim_model_free (&m);
  parse_model ("remote:5ms:200M:0.05:0:1ms", &m);
  m.level = 0;
  assert_int_equal (sim_model_read (&m, 0, 0, 2 << 20),
                    5 * MS + XFER_1M + 1 * MS);
  sim_model_free (&m);
  assert_int_equal (sim_model_parse ("remote:5ms:200M:0.05:0:z", &m, why,
                                     sizeof why), -1);
  assert_non_null (strstr (why, "overshoot 'z'"));
}

/* A read a client waits for is final: later reads cannot take from it. */
static void
test_remote_pin (void **state)
{
  struct sim_model m;

  (void) state;
  /* The 64 KiB that went first above now waits for the 4 MiB: the
   * bucket keeps what the pinned read takes at 20 ms.
   */
  assert_int_equal (client_after_4m (&m, 1, true), 20 * MS + XFER_64K);
  assert_int_equal (sim_model_done (&m, 1), 20 * MS);
  sim_model_free (&m);
}

/* The plugin's copy comes after the bucket, each read its own: at
 * 62.5 MiB/s (remote:...:62.5M), 64 KiB take 1 ms more.
 */
static void
test_remote_copy (void **state)
{
  struct sim_model m;

  (void) state;
  parse_model ("remote:5ms:200M:0.05:62.5M", &m);
  assert_int_equal (sim_model_read (&m, 0, 0, 64 << 10), 6 * MS);
  assert_int_equal (sim_model_start (&m, 0, 0, 64 << 10, 1), 0);
  assert_int_equal (sim_model_done (&m, 1), 6 * MS);
  assert_int_equal (sim_model_pin (&m, 1), 6 * MS);
  sim_model_free (&m);
  /* The default, 3 GiB/s: 64 KiB in 20 us. */
  parse_model ("remote:5ms:200M", &m);
  assert_int_equal (sim_model_read (&m, 0, 0, 64 << 10), 5 * MS + 20345);
  sim_model_free (&m);
}

/* Whatever the order reads are booked in, the bytes delivered by any
 * time t are at most the bucket's 10 MiB and 200 MiB/s x t.
 */
static void
test_remote_bandwidth (void **state)
{
  enum { N = 3000 };
  const double rate = 200.0 * 1024 * 1024 / 1e9;       /* bytes a ns */
  static uint64_t done[N], bytes[N];
  struct sim_model m;
  uint64_t rng = 42, now = 0, sum = 0;
  unsigned open = 0;
  int i, j;

  (void) state;
  parse_model ("remote:5ms:200M", &m);
  for (i = 0; i < N; i++) {
    /* Events every 0-2 ms; a client's reads from up to 3 ms after the
     * event; a worker's (open, finished once settled) at the event.
     */
    uint64_t issue = now + sim_random (&rng) % (3 * MS);

    bytes[i] = 4096 + sim_random (&rng) % (1 << 20);
    if (i % 3 == 0) {
      assert_int_equal (sim_model_start (&m, now, 0, bytes[i], open), 0);
      done[i] = sim_model_pin (&m, open++);
    }
    else
      done[i] = sim_model_read (&m, issue, 0, bytes[i]);
    assert_true (done[i] >= (i % 3 == 0 ? now : issue) + 5 * MS);
    now += sim_random (&rng) % (2 * MS);
    sim_model_forget (&m, now);
  }
  /* Sorted by completion, the bytes delivered by each. */
  for (i = 1; i < N; i++)
    for (j = i; j > 0 && done[j - 1] > done[j]; j--) {
      uint64_t d = done[j], b = bytes[j];

      done[j] = done[j - 1];
      bytes[j] = bytes[j - 1];
      done[j - 1] = d;
      bytes[j - 1] = b;
    }
  for (i = 0; i < N; i++) {
    sum += bytes[i];
    assert_true ((double) sum <= 10.0 * 1024 * 1024 + rate * (double) done[i]
                 + 1);
  }
  /* And the link was kept busy: 1.5 GiB offered in about 3 s. */
  assert_true ((double) sum / (double) (done[N - 1] - done[0]) > 0.9 * rate);
  sim_model_free (&m);
}

/* The disk: sequential requests pay no seek, a jump across the whole
 * export the full 8 ms, everything in arrival order.
 */
static void
test_disk_model (void **state)
{
  const double xfer = 4096.0 * 1e9 / (150.0 * 1024 * 1024);   /* ns */
  struct sim_model m;
  uint64_t a, b, c;

  (void) state;
  parse_model ("disk", &m);
  m.size = UINT64_C (1) << 30;
  a = sim_model_read (&m, 0, 0, 4096);
  assert_int_equal (a, (uint64_t) (xfer + 0.5));
  b = sim_model_read (&m, 0, 4096, 4096);             /* queued, no seek */
  assert_int_equal (b, 2 * (uint64_t) (xfer + 0.5));
  c = sim_model_read (&m, 0, (UINT64_C (1) << 30) - 4096 + 8192, 4096);
  assert_true (c >= b + 8 * MS && c <= b + 8 * MS + 30000);
}

/* The disk's head trace: a line a read, a client's or a worker's, in
 * the format of the bench's disk model (scripts/bench/seeks): arrival,
 * start, end, offset, count, seek, times in seconds.
 */
static void
test_disk_head_log (void **state)
{
  struct sim_model m;
  char *text = NULL;
  size_t len = 0;
  double arrival, start, end, seek;
  uint64_t offset, count;

  (void) state;
  parse_model ("disk", &m);
  m.size = UINT64_C (1) << 30;
  m.head_log = open_memstream (&text, &len);
  assert_non_null (m.head_log);
  sim_model_read (&m, 0, 0, 4096);
  assert_int_equal (sim_model_start (&m, 1000, 1 << 29, 8192, 7), 0);
  assert_int_equal (fclose (m.head_log), 0);
  assert_non_null (strchr (text, '\n'));
  assert_int_equal (sscanf (strchr (text, '\n') + 1,
                            "%lf %lf %lf %" SCNu64 " %" SCNu64 " %lf",
                            &arrival, &start, &end, &offset, &count, &seek),
                    6);
  assert_true (arrival == 1e-6);
  assert_true (start > arrival && end > start + seek);
  assert_int_equal (offset, 1 << 29);
  assert_int_equal (count, 8192);
  /* Half the export away: half-way from the least seek to the most. */
  assert_true (seek > 0.00424 && seek < 0.00426);
  /* The model sums the head's seeks: this one. */
  assert_true (fabs ((double) m.seek_ns / 1e9 - seek) < 1e-6);
  free (text);
  sim_model_free (&m);
}

static void
test_trace_csv (void **state)
{
  struct sim_record r;

  (void) state;
  assert_int_equal (sim_trace_parse_line ("t_ms,op,offset,length,conn", &r),
                    0);
  assert_int_equal (sim_trace_parse_line ("# comment", &r), 0);
  assert_int_equal (sim_trace_parse_line ("12.5,read,4096,512,3", &r), 1);
  assert_int_equal (r.t_ns, 12500000);
  assert_int_equal (r.op, SIM_OP_READ);
  assert_int_equal (r.offset, 4096);
  assert_int_equal (r.length, 512);
  assert_int_equal (r.conn, 3);
  assert_int_equal (sim_trace_parse_line ("13,w,0,4096,1", &r), 1);
  assert_int_equal (r.op, SIM_OP_WRITE);
  assert_int_equal (sim_trace_parse_line ("13,trim,0,4096,1", &r), 1);
  assert_int_equal (r.op, SIM_OP_WRITE);
  assert_int_equal (sim_trace_parse_line ("13,fly,0,4096,1", &r), -1);
  assert_int_equal (sim_trace_parse_line ("13,read,0,4096", &r), -1);
  /* scanf's %u conversions take a sign: "-4096" would be 2^64 - 4096. */
  assert_int_equal (sim_trace_parse_line ("13,read,-4096,4096,1", &r), -1);
  assert_int_equal (sim_trace_parse_line ("13,read,0, -4096,1", &r), -1);
  assert_int_equal (sim_trace_parse_line ("13,read,0,4096,-1", &r), -1);
  assert_int_equal (sim_trace_parse_line ("13,read,0,4096,+1", &r), -1);
  assert_int_equal (sim_trace_parse_line ("13,read, 0, 4096, 1 ", &r), 1);
  /* Past the clock's horizon (1e13 ms is 317 years), or no time. */
  assert_int_equal (sim_trace_parse_line ("1e13,read,0,4096,1", &r), -1);
  assert_int_equal (sim_trace_parse_line ("nan,read,0,4096,1", &r), -1);
  /* The fleet's traces: a sixth column, dur_ms, ignored; F (flush)
   * lines no request.
   */
  assert_int_equal (sim_trace_parse_line ("t_ms,op,offset,length,conn,dur_ms",
                                          &r), 0);
  assert_int_equal (sim_trace_parse_line ("13,R,8192,512,2,0.056", &r), 1);
  assert_int_equal (r.t_ns, 13000000);
  assert_int_equal (r.op, SIM_OP_READ);
  assert_int_equal (r.offset, 8192);
  assert_int_equal (r.length, 512);
  assert_int_equal (r.conn, 2);
  assert_int_equal (sim_trace_parse_line ("14,F,0,0,1,422.961", &r), 0);
  assert_int_equal (sim_trace_parse_line ("14,flush,0,0,1", &r), 0);
  assert_int_equal (sim_trace_parse_line ("13,read,0,4096,1,-9", &r), -1);
  assert_int_equal (sim_trace_parse_line ("13,read,0,4096,1,", &r), -1);
  assert_int_equal (sim_trace_parse_line ("13,read,0,4096,1,9,9", &r), -1);
  assert_int_equal (sim_trace_parse_line ("14,F,0,0,1,x", &r), -1);
}

static void
test_trace_log (void **state)
{
  struct sim_record r, r2;

  (void) state;
  assert_int_equal (sim_trace_parse_line (
    "2026-12-04 20:48:11.564318 connection=1 Read id=1 offset=0x1000 "
    "count=0x40000 ...", &r), 1);
  assert_int_equal (r.op, SIM_OP_READ);
  assert_int_equal (r.offset, 0x1000);
  assert_int_equal (r.length, 0x40000);
  assert_int_equal (r.conn, 1);
  assert_int_equal (sim_trace_parse_line (
    "2026-12-04 20:48:12.064318 connection=2 Write id=7 offset=0x0 "
    "count=0x200 fua=0 ...", &r2), 1);
  assert_int_equal (r2.op, SIM_OP_WRITE);
  assert_int_equal (r2.conn, 2);
  assert_int_equal (r2.t_ns - r.t_ns, 500000000);
  /* Replies, other calls and server events are no requests. */
  assert_int_equal (sim_trace_parse_line (
    "2026-12-04 20:48:11.564810 connection=1 ...Read id=1 return=0", &r), 0);
  assert_int_equal (sim_trace_parse_line (
    "2026-12-04 20:48:11.349542 Ready thread_model=3", &r), 0);
  assert_int_equal (sim_trace_parse_line (
    "2026-12-04 20:48:11.738208 connection=1 Extents id=1 offset=0x0 "
    "count=0x100000 req_one=0 ...", &r), 0);
  assert_int_equal (sim_trace_parse_line (
    "2026-12-04 20:48:11.5 connection=1 Read id=1 offset=zz", &r), -1);
  assert_int_equal (sim_trace_parse_line (
    "2026-12-04 20:48:11.5 connection=1 Read id=1 offset=0x-10 "
    "count=0x200 ...", &r), -1);
  assert_int_equal (sim_trace_parse_line (
    "2026-12-04 20:48:11.5 connection=1 Read id=1 offset=0x10 "
    "count=0x-200 ...", &r), -1);
}

static void
test_latency (void **state)
{
  struct sim_latency l;
  unsigned i;

  (void) state;
  memset (&l, 0, sizeof l);
  assert_true (sim_latency_percentile (&l, 99) == 0);
  for (i = 1; i <= 10000; i++)
    assert_int_equal (sim_latency_add (&l, (double) (10001 - i)), 0);
  assert_true (sim_latency_mean (&l) == 5000.5);
  assert_true (sim_latency_percentile (&l, 99) == 9900);
  assert_true (sim_latency_percentile (&l, 100) == 10000);
  sim_latency_free (&l);
  /* Zeros count in the mean and the ranks, and take no memory: 98990
   * zeros and 1..1010 are 100,000 latencies, whose 99th percentile is
   * the 1000th of the values, 10; their 99.5th is 510.
   */
  for (i = 0; i < 98990; i++)
    assert_int_equal (sim_latency_add (&l, 0), 0);
  for (i = 1; i <= 1010; i++)
    assert_int_equal (sim_latency_add (&l, (double) (1011 - i)), 0);
  assert_true (l.n == 1010 && l.zeros == 98990 && l.cap < 98990);
  assert_true (sim_latency_mean (&l) == 1010.0 * 1011 / 2 / 100000);
  assert_true (sim_latency_percentile (&l, 99) == 10);
  assert_true (sim_latency_percentile (&l, 99.5) == 510);
  assert_true (sim_latency_percentile (&l, 98) == 0);
  sim_latency_free (&l);
}

static void
test_median (void **state)
{
  double odd[] = { 5, 1, 4, 2, 3 }, even[] = { 40, 10, 30, 20 };
  double one[] = { 7 };

  (void) state;
  assert_true (sim_median (odd, 5) == 3);
  assert_true (odd[0] == 1 && odd[4] == 5);
  assert_true (sim_median (even, 4) == 25);
  assert_true (sim_median (one, 1) == 7);
  assert_true (sim_median (NULL, 0) == 0);
}

/* sim/xorshift.h: one seed, one sequence, on every machine: the
 * first numbers xorshift64* gives from the state 1 (worked out apart,
 * with Python's integers, from the generator's definition), and
 * another seed another sequence.
 */
static void
test_random (void **state)
{
  uint64_t a = 1, b = 1, c = 2;

  (void) state;
  assert_int_equal (sim_random (&a), UINT64_C (0x47e4ce4b896cdd1d));
  assert_int_equal (sim_random (&a), UINT64_C (0xabcfa6a8e079651d));
  assert_int_equal (sim_random (&a), UINT64_C (0xb9d10d8feb731f57));
  assert_int_equal (sim_random (&b), UINT64_C (0x47e4ce4b896cdd1d));
  assert_int_not_equal (sim_random (&b), sim_random (&c));
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_sizes),
    cmocka_unit_test (test_durations),
    cmocka_unit_test (test_remote_burst),
    cmocka_unit_test (test_remote_sleeps),
    cmocka_unit_test (test_remote_overshoot),
    cmocka_unit_test (test_remote_pin),
    cmocka_unit_test (test_remote_copy),
    cmocka_unit_test (test_remote_bandwidth),
    cmocka_unit_test (test_disk_model),
    cmocka_unit_test (test_disk_head_log),
    cmocka_unit_test (test_model_fits),
    cmocka_unit_test (test_trace_csv),
    cmocka_unit_test (test_trace_log),
    cmocka_unit_test (test_latency),
    cmocka_unit_test (test_median),
    cmocka_unit_test (test_random),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
