/* adaptra: adaptive read-ahead for nbdkit
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of sim/simlib.c: adaptra-sim's size and time parsers, the
 * remote and disk backend models, trace lines (CSV and nbdkit's log
 * filter), latency statistics.
 */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "simlib.h"

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

/* remote:5ms:200M: 5 ms, then the bytes through one 200 MiB/s pipe. */
static void
test_remote_model (void **state)
{
  struct sim_model m;
  char why[128];
  uint64_t a, b, c;

  (void) state;
  assert_int_equal (sim_model_parse ("remote:5ms:200M", &m, why, sizeof why),
                    0);
  /* 1 MiB takes 5 ms + 5 ms. */
  a = sim_model_read (&m, 0, 0, 1 << 20);
  assert_int_equal (a, 10 * MS);
  /* A second one issued at the same time shares the pipe: its bytes
   * follow the first one's.
   */
  b = sim_model_read (&m, 0, 1 << 20, 1 << 20);
  assert_int_equal (b, 15 * MS);
  /* Much later: latency only, plus its own transfer (4 KiB: 19.5 us). */
  c = sim_model_read (&m, 100 * MS, 0, 4096);
  assert_int_equal (c, 105 * MS + 19531);
  /* A read issued earlier but booked later (a request's first read
   * ended at 100 ms and it issued its second one then, before another
   * client's read at 50 ms was simulated) takes the idle pipe before
   * 105 ms, not the end of the calendar.
   */
  c = sim_model_read (&m, 50 * MS, 0, 4096);
  assert_int_equal (c, 55 * MS + 19531);
  /* One that does not fit in the gap before the 100 ms read waits for
   * it: 1 MiB from 104 ms does not fit before 105 ms.
   */
  c = sim_model_read (&m, 99 * MS, 0, 1 << 20);
  assert_int_equal (c, 105 * MS + 19531 + 5 * MS);
  /* Forgetting the past keeps what may still hold up a read: at
   * 100 ms, the pipe is busy from 105 ms to the last read's end.
   */
  sim_model_forget (&m, 100 * MS);
  assert_int_equal (m.nbusy, 1);
  assert_int_equal (m.busy[0].start, 105 * MS);
  c = sim_model_read (&m, 100 * MS, 0, 4096);
  assert_int_equal (c, 110 * MS + 2 * 19531);
  sim_model_free (&m);
  assert_int_equal (sim_model_parse ("remote:5ms", &m, why, sizeof why), -1);
  assert_non_null (strstr (why, "remote:LATENCY:BANDWIDTH"));
  assert_int_equal (sim_model_parse ("remote:x:200M", &m, why, sizeof why),
                    -1);
  assert_non_null (strstr (why, "latency 'x'"));
  assert_int_equal (sim_model_parse ("remote:5ms:0", &m, why, sizeof why),
                    -1);
  assert_int_equal (sim_model_parse ("tape", &m, why, sizeof why), -1);
}

/* The disk: sequential requests pay no seek, a jump across the whole
 * export the full 8 ms, everything in arrival order.
 */
static void
test_disk_model (void **state)
{
  const double xfer = 4096.0 * 1e9 / (150.0 * 1024 * 1024);   /* ns */
  struct sim_model m;
  char why[128];
  uint64_t a, b, c;

  (void) state;
  assert_int_equal (sim_model_parse ("disk", &m, why, sizeof why), 0);
  m.size = UINT64_C (1) << 30;
  a = sim_model_read (&m, 0, 0, 4096);
  assert_int_equal (a, (uint64_t) (xfer + 0.5));
  b = sim_model_read (&m, 0, 4096, 4096);             /* queued, no seek */
  assert_int_equal (b, 2 * (uint64_t) (xfer + 0.5));
  c = sim_model_read (&m, 0, (UINT64_C (1) << 30) - 4096 + 8192, 4096);
  assert_true (c >= b + 8 * MS && c <= b + 8 * MS + 30000);
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
  assert_int_equal (sim_trace_parse_line ("13,read,0,4096,1,9", &r), -1);
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
}

static void
test_random (void **state)
{
  uint64_t a = 1, b = 1, c = 2;

  (void) state;
  assert_int_equal (sim_random (&a), sim_random (&b));
  assert_int_not_equal (sim_random (&a), sim_random (&c));
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_sizes),
    cmocka_unit_test (test_durations),
    cmocka_unit_test (test_remote_model),
    cmocka_unit_test (test_disk_model),
    cmocka_unit_test (test_trace_csv),
    cmocka_unit_test (test_trace_log),
    cmocka_unit_test (test_latency),
    cmocka_unit_test (test_random),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
