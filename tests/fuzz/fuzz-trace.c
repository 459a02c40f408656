/* fuzz-trace.c: libFuzzer harness for adaptra-sim's parsers.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* libFuzzer harness for what adaptra-sim reads from outside
 * (sim/simlib.c): its sizes ("4K", "1.5MiB"), durations ("5ms"),
 * backend specs ("remote:5ms:200M:0.05:3G", "disk") and the lines of
 * a trace, CSV or nbdkit's log filter, which a user may take from any
 * server's log.
 *
 * An input is text.  Its first line is given to the size, duration
 * and backend parsers; every line after it is a trace line, and each
 * read it yields is issued to the backend the first line described,
 * if it did, as adaptra-sim replays a trace (on_trace, load_trace).
 *
 * Beyond "no crash, no sanitizer report" (a double out of range cast
 * to an integer is one: UBSan's float-cast-overflow), the parsers'
 * contracts are checked: a size is below 2^63, a duration below the
 * nanosecond clock's 292 years; a refused backend says why in one
 * line, an accepted one has a bandwidth; a trace line is a request
 * (1), no request (0) or malformed (-1), and a request is a read or a
 * write; a read issued to the model completes no earlier than it was
 * issued.
 */

#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/simlib.h"
#include "expect.h"

/* Reads issued to the model per input: enough to fill the remote
 * model's bucket and queue, few enough to keep an input quick.
 */
#define FUZZ_TRACE_READS 64

/* adaptra-sim's largest client request (REQ_MAX): NBD's usual 32 MiB. */
#define FUZZ_TRACE_REQ_MAX (UINT64_C (32) << 20)

static void
check_first_line (const char *line, struct sim_model *m, int *have_model)
{
  char why[512];
  uint64_t v;

  if (sim_parse_size (line, &v) == 0)
    expect (v < UINT64_C (1) << 63, "a size of 2^63 or more");
  if (sim_parse_duration (line, &v) == 0)
    expect (v <= UINT64_C (9200000000000000000), "a duration past the clock");
  why[0] = '\0';
  if (sim_model_parse (line, m, why, sizeof why) == 0) {
    expect (m->bandwidth > 0, "a backend without bandwidth");
    expect (m->kind == SIM_DISK || m->kind == SIM_REMOTE, "an unknown kind");
    *have_model = 1;
  }
  else {
    expect (why[0] != '\0', "a refused backend without a reason");
    expect (strchr (why, '\n') == NULL, "a reason of more than one line");
    sim_model_free (m);
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct sim_model m;
  struct sim_record r;
  char *text, *line, *next;
  int have_model = 0, first = 1, k;
  int have_t0 = 0;
  unsigned reads = 0;
  uint64_t t0 = 0, now, last = 0, done, left, n;
  double busy = 0;                /* the backend's time the reads take */

  text = malloc (size + 1);
  if (!text)
    return 0;
  memcpy (text, data, size);
  text[size] = '\0';
  for (line = text; line; line = next) {
    next = strchr (line, '\n');
    if (next)
      *next++ = '\0';
    if (first) {
      check_first_line (line, &m, &have_model);
      first = 0;
      continue;
    }
    k = sim_trace_parse_line (line, &r);
    expect (k >= -1 && k <= 1, "a trace line neither 1, 0 nor -1");
    if (k != 1)
      continue;
    expect (r.op == SIM_OP_READ || r.op == SIM_OP_WRITE, "an unknown op");
    if (!have_model || r.length == 0 || reads >= FUZZ_TRACE_READS)
      continue;
    /* As adaptra-sim replays it: times from the first request on, kept
     * monotonic; a read in pieces of NBD's largest request, a write
     * (which costs the backend its time too) whole.
     */
    if (!have_t0)
      t0 = r.t_ns, have_t0 = 1;
    now = r.t_ns < t0 ? 0 : r.t_ns - t0;
    if (now < last)
      now = last;
    last = now;
    m.size = UINT64_C (1) << 40;
    for (left = r.length; left > 0 && reads < FUZZ_TRACE_READS;
         left -= n, reads++) {
      n = r.op == SIM_OP_WRITE || left < FUZZ_TRACE_REQ_MAX
        ? left : FUZZ_TRACE_REQ_MAX;
      /* The model's clock stops at SIM_HORIZON_NS (146 years; 40 GB
       * at 1 byte a second): adaptra-sim refuses a trace whose span
       * and transfers reach it (sim_model_fits), so the harness stops
       * where adaptra-sim would not have started.
       */
      busy += (double) n * 1e9 / m.bandwidth;
      if (busy >= (double) SIM_HORIZON_NS || now >= SIM_HORIZON_NS)
        break;
      done = sim_model_read (&m, now, r.offset, n);
      expect (done != UINT64_MAX, "out of memory");
      expect (done >= now, "a read that completes before it is issued");
    }
  }
  if (have_model)
    sim_model_free (&m);
  free (text);
  return 0;
}
