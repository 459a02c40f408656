/* simlib.c: adaptra-sim's parsers, backend models and latency statistics.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* adaptra-sim's parsers, backend models and latency statistics (see
 * simlib.h for the contracts).
 */

#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "simlib.h"

int
sim_parse_size (const char *s, uint64_t *bytes)
{
  char *end;
  double v, scale = 1;

  if (!s || !isdigit ((unsigned char) *s))
    return -1;
  errno = 0;
  v = strtod (s, &end);
  if (errno != 0 || end == s)
    return -1;
  switch (toupper ((unsigned char) *end)) {
  case '\0': break;
  case 'K': scale = 1024.0; end++; break;
  case 'M': scale = 1024.0 * 1024; end++; break;
  case 'G': scale = 1024.0 * 1024 * 1024; end++; break;
  case 'T': scale = 1024.0 * 1024 * 1024 * 1024; end++; break;
  default: return -1;
  }
  if (*end == 'i' && end[1] == 'B')
    end += 2;
  else if (*end == 'B')
    end++;
  v *= scale;
  /* 2^63: far past any pool or export, and exact in a double. */
  if (*end != '\0' || v >= 9223372036854775808.0)
    return -1;
  *bytes = (uint64_t) v;
  return 0;
}

int
sim_parse_duration (const char *s, uint64_t *ns)
{
  char *end;
  double v, scale = 1e9;

  if (!s || !(isdigit ((unsigned char) *s) || *s == '.'))
    return -1;
  errno = 0;
  v = strtod (s, &end);
  if (errno != 0 || end == s)
    return -1;
  if (strcmp (end, "ms") == 0)
    scale = 1e6;
  else if (strcmp (end, "us") == 0)
    scale = 1e3;
  else if (strcmp (end, "ns") == 0)
    scale = 1;
  else if (strcmp (end, "s") != 0 && *end != '\0')
    return -1;
  v *= scale;
  /* More than 292 years does not fit in the nanosecond clock. */
  if (v >= 9.2e18)
    return -1;
  *ns = (uint64_t) llround (v);
  return 0;
}

int
sim_model_parse (const char *spec, struct sim_model *m, char *why,
                 size_t len)
{
  char latency[64], bandwidth[64];
  uint64_t bw;

  memset (m, 0, sizeof *m);
  if (strcmp (spec, "disk") == 0) {
    /* The bench's disk model: 150 MiB/s, seeks 0.5 ms to 8 ms. */
    m->kind = SIM_DISK;
    m->bandwidth = 150.0 * 1024 * 1024;
    m->min_seek_ns = 500000;
    m->max_seek_ns = 8000000;
    return 0;
  }
  if (sscanf (spec, "remote:%63[^:]:%63s", latency, bandwidth) != 2 ||
      strncmp (spec, "remote:", 7) != 0) {
    snprintf (why, len, "--backend=%s: expected remote:LATENCY:BANDWIDTH "
              "(e.g. remote:5ms:200M) or disk", spec);
    return -1;
  }
  m->kind = SIM_REMOTE;
  if (sim_parse_duration (latency, &m->latency_ns) == -1) {
    snprintf (why, len, "--backend=%s: cannot parse latency '%s' "
              "(e.g. 5ms, 200us)", spec, latency);
    return -1;
  }
  if (sim_parse_size (bandwidth, &bw) == -1 || bw == 0) {
    snprintf (why, len, "--backend=%s: cannot parse bandwidth '%s' "
              "(bytes per second, e.g. 200M)", spec, bandwidth);
    return -1;
  }
  m->bandwidth = (double) bw;
  return 0;
}

static uint64_t
transfer_ns (const struct sim_model *m, uint64_t count)
{
  return (uint64_t) llround ((double) count * 1e9 / m->bandwidth);
}

/* Book d ns of the remote pipe from arrival a on: the first gap of the
 * calendar from a on that holds d (simlib.h).
 */
static uint64_t
book (struct sim_model *m, uint64_t a, uint64_t d)
{
  size_t lo = 0, hi = m->nbusy, i;
  uint64_t start = a;

  /* The first interval that ends after a (ends are in order too). */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;

    if (m->busy[mid].end <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (i = lo; i < m->nbusy && m->busy[i].start < start + d; i++)
    if (m->busy[i].end > start)
      start = m->busy[i].end;
  /* [start, start + d) goes before interval i, after i - 1. */
  if (i > 0 && m->busy[i - 1].end == start) {
    m->busy[i - 1].end += d;
    if (i < m->nbusy && m->busy[i].start == m->busy[i - 1].end) {
      m->busy[i - 1].end = m->busy[i].end;
      memmove (&m->busy[i], &m->busy[i + 1],
               (m->nbusy - i - 1) * sizeof m->busy[0]);
      m->nbusy--;
    }
    return start + d;
  }
  if (i < m->nbusy && m->busy[i].start == start + d) {
    m->busy[i].start = start;
    return start + d;
  }
  if (m->nbusy == m->capbusy) {
    size_t cap = m->capbusy ? 2 * m->capbusy : 256;
    struct sim_busy *b = realloc (m->busy, cap * sizeof *b);

    if (!b)
      return UINT64_MAX;
    m->busy = b;
    m->capbusy = cap;
  }
  memmove (&m->busy[i + 1], &m->busy[i], (m->nbusy - i) * sizeof m->busy[0]);
  m->busy[i].start = start;
  m->busy[i].end = start + d;
  m->nbusy++;
  return start + d;
}

uint64_t
sim_model_read (struct sim_model *m, uint64_t now, uint64_t offset,
                uint64_t count)
{
  uint64_t start, seek = 0, distance;

  if (m->kind == SIM_REMOTE)
    return book (m, now + m->latency_ns, transfer_ns (m, count));
  distance = offset > m->head ? offset - m->head : m->head - offset;
  if (distance > 0 && m->size > 0)
    seek = m->min_seek_ns +
      (uint64_t) ((double) (m->max_seek_ns - m->min_seek_ns) *
                  (double) distance / (double) m->size);
  start = now > m->free_at ? now : m->free_at;
  m->free_at = start + seek + transfer_ns (m, count);
  m->head = offset + count;
  return m->free_at;
}

void
sim_model_forget (struct sim_model *m, uint64_t now)
{
  size_t n = 0;

  /* A read issued from now on arrives at now + latency or later, and
   * book's search passes over what ended before; drop it once it is
   * half of the calendar, so that the move costs O(1) a read.
   */
  while (n < m->nbusy && m->busy[n].end <= now + m->latency_ns)
    n++;
  if (n == 0 || n < m->nbusy / 2)
    return;
  memmove (m->busy, m->busy + n, (m->nbusy - n) * sizeof m->busy[0]);
  m->nbusy -= n;
}

void
sim_model_free (struct sim_model *m)
{
  free (m->busy);
  m->busy = NULL;
  m->nbusy = m->capbusy = 0;
}

/* Seconds since the epoch of a log line's "YYYY-MM-DD HH:MM:SS.US". */
static int
log_time (const char *line, uint64_t *ns, int *used)
{
  struct tm tm;
  double sec;
  time_t t;

  memset (&tm, 0, sizeof tm);
  if (sscanf (line, "%4d-%2d-%2d %2d:%2d:%lf%n", &tm.tm_year, &tm.tm_mon,
              &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &sec, used) != 6)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_sec = 0;
  t = timegm (&tm);
  if (t == (time_t) -1 || sec < 0 || sec >= 61)
    return -1;
  *ns = (uint64_t) t * 1000000000 + (uint64_t) llround (sec * 1e9);
  return 0;
}

static int
parse_log_line (const char *line, struct sim_record *r)
{
  char op[16];
  int used;

  if (log_time (line, &r->t_ns, &used) == -1)
    return -1;
  line += used;
  if (sscanf (line, " connection=%" SCNu64 " %15s", &r->conn, op) != 2)
    return 0;                   /* not a connected call */
  if (strcmp (op, "Read") == 0)
    r->op = SIM_OP_READ;
  else if (strcmp (op, "Write") == 0 || strcmp (op, "Trim") == 0 ||
           strcmp (op, "Zero") == 0)
    r->op = SIM_OP_WRITE;
  else
    return 0;                   /* replies ("...Read"), other calls */
  line = strstr (line, " offset=");
  if (!line ||
      sscanf (line, " offset=0x%" SCNx64 " count=0x%" SCNx64,
              &r->offset, &r->length) != 2)
    return -1;
  return 1;
}

static int
parse_csv_line (const char *line, struct sim_record *r)
{
  char op[16];
  double t_ms;
  int used = 0;

  if (sscanf (line, "%lf,%15[^,],%" SCNu64 ",%" SCNu64 ",%" SCNu64 " %n",
              &t_ms, op, &r->offset, &r->length, &r->conn, &used) != 5 ||
      line[used] != '\0' || t_ms < 0)
    return -1;
  if (strcasecmp (op, "read") == 0 || strcasecmp (op, "r") == 0)
    r->op = SIM_OP_READ;
  else if (strcasecmp (op, "write") == 0 || strcasecmp (op, "w") == 0 ||
           strcasecmp (op, "trim") == 0 || strcasecmp (op, "zero") == 0)
    r->op = SIM_OP_WRITE;
  else
    return -1;
  r->t_ns = (uint64_t) llround (t_ms * 1e6);
  return 1;
}

int
sim_trace_parse_line (const char *line, struct sim_record *r)
{
  memset (r, 0, sizeof *r);
  while (*line == ' ' || *line == '\t')
    line++;
  if (*line == '\0' || *line == '\n' || *line == '#' ||
      strncmp (line, "t_ms", 4) == 0)
    return 0;
  /* A log line starts with a date: "2026-"; a CSV line's first field
   * has no '-' in its first five characters.
   */
  if (strlen (line) > 10 && line[4] == '-' && line[7] == '-')
    return parse_log_line (line, r);
  return parse_csv_line (line, r);
}

int
sim_latency_add (struct sim_latency *l, double ms)
{
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 4096;
    double *v = realloc (l->v, cap * sizeof *v);

    if (!v)
      return -1;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = ms;
  l->sum += ms;
  return 0;
}

double
sim_latency_mean (const struct sim_latency *l)
{
  return l->n ? l->sum / (double) l->n : 0;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

double
sim_latency_percentile (struct sim_latency *l, double p)
{
  size_t rank;

  if (l->n == 0)
    return 0;
  qsort (l->v, l->n, sizeof *l->v, cmp_double);
  rank = (size_t) ceil (p / 100.0 * (double) l->n);
  if (rank < 1)
    rank = 1;
  if (rank > l->n)
    rank = l->n;
  return l->v[rank - 1];
}

void
sim_latency_free (struct sim_latency *l)
{
  free (l->v);
  memset (l, 0, sizeof *l);
}

uint64_t
sim_random (uint64_t *state)
{
  uint64_t x = *state;

  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * UINT64_C (0x2545F4914F6CDD1D);
}
