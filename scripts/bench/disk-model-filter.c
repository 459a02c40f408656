/* disk-model-filter.c: a filter modelling a disk with seeks, for the bench.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The benchmark's "disk" backend model: an nbdkit filter that makes a
 * fast file behave like one spinning disk.
 *
 *   --filter=.../nbdkit-diskmodel-filter.so file IMG
 *       [disk-bandwidth=150M] [disk-min-seek=0.5ms] [disk-max-seek=8ms]
 *       [disk-trace=FILE]
 *
 * There is one head.  Requests are served one after another in the
 * order they arrive, and each occupies the head for
 *
 *   seek + count / disk-bandwidth
 *
 * where seek is 0 when the request starts exactly where the previous
 * one ended, and otherwise grows linearly with the distance from that
 * point: disk-min-seek for a short hop, disk-max-seek for a jump
 * across the whole export.
 *
 * So interleaved streams pay a seek on every switch, and the only way
 * to go faster is to read bigger pieces of each stream per visit --
 * the effect behind the seed's "parallel reads 29-100% faster".
 *
 *            arrival order
 *   req A ---[seek A][xfer A]
 *   req B ------------------[seek B][xfer B]        head_free_at
 *   req C ----------------------------------[xfer C]  (C follows B)
 *
 * Instead of holding a lock while sleeping, the filter keeps the time
 * at which the head becomes free: under a short lock a request books
 * its slot (start = max (now, head_free_at)) and moves the head, then
 * sleeps without the lock until its slot ends and reads the data.
 * The booking order is the service order, as with a real FIFO queue.
 *
 * NBD_CMD_CACHE requests pass through without cost or head movement:
 * the model has no cache of its own to fill.
 *
 * disk-trace=FILE writes one line per read as the head books it:
 * its arrival, the start and end of its service (CLOCK_MONOTONIC
 * seconds), offset and count in bytes, and the seek its service
 * starts with in seconds; scripts/bench/seeks sums a trace up.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nbdkit-filter.h>

/* Parameters, in bytes per second and seconds. */
static double bandwidth = 150e6;     /* disk-bandwidth */
static double min_seek = 0.0005;     /* disk-min-seek */
static double max_seek = 0.008;      /* disk-max-seek */

/* The head.  lock protects the three fields below. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double head_free_at;          /* CLOCK_MONOTONIC seconds */
static uint64_t head_position;       /* end of the last booked request */
static int64_t export_size;          /* scales the seek distance */
static FILE *trace;                  /* disk-trace, or NULL */

/* Parse "8ms", "500us", "0.01s" or plain seconds. */
static int
parse_duration (const char *key, const char *value, double *seconds)
{
  char *end;
  double scale = 1;

  errno = 0;
  *seconds = strtod (value, &end);
  if (errno == 0 && end != value) {
    if (strcmp (end, "ms") == 0)
      scale = 1e-3;
    else if (strcmp (end, "us") == 0)
      scale = 1e-6;
    else if (strcmp (end, "s") != 0 && *end != '\0')
      end = (char *) value;
  }
  if (errno != 0 || end == value || *seconds < 0) {
    nbdkit_error ("%s: cannot parse duration '%s'", key, value);
    return -1;
  }
  *seconds *= scale;
  return 0;
}

static int
diskmodel_config (nbdkit_next_config *next, nbdkit_backend *nxdata,
                  const char *key, const char *value)
{
  if (strcmp (key, "disk-bandwidth") == 0) {
    int64_t r = nbdkit_parse_size (value);

    if (r == -1)
      return -1;
    if (r == 0) {
      nbdkit_error ("disk-bandwidth must be > 0");
      return -1;
    }
    bandwidth = r;
    return 0;
  }
  if (strcmp (key, "disk-min-seek") == 0)
    return parse_duration (key, value, &min_seek);
  if (strcmp (key, "disk-max-seek") == 0)
    return parse_duration (key, value, &max_seek);
  if (strcmp (key, "disk-trace") == 0) {
    if (trace)
      fclose (trace);
    trace = fopen (value, "w");
    if (!trace) {
      nbdkit_error ("disk-trace: %s: %m", value);
      return -1;
    }
    /* A line at a time: the bench stops the server with a signal. */
    setvbuf (trace, NULL, _IOLBF, 0);
    return 0;
  }
  return next (nxdata, key, value);
}

static void
diskmodel_unload (void)
{
  if (trace)
    fclose (trace);
}

static int
diskmodel_config_complete (nbdkit_next_config_complete *next,
                           nbdkit_backend *nxdata)
{
  if (min_seek > max_seek) {
    nbdkit_error ("disk-min-seek must not exceed disk-max-seek");
    return -1;
  }
  return next (nxdata);
}

#define diskmodel_config_help \
  "disk-bandwidth=BYTES  Transfer rate per second (default 150M).\n" \
  "disk-min-seek=TIME    Seek time of the shortest jump (default 0.5ms).\n" \
  "disk-max-seek=TIME    Seek time across the whole export (default 8ms).\n" \
  "disk-trace=FILE       Write each read's arrival, service start and\n" \
  "                      end, offset, count and seek to FILE."

static int
diskmodel_prepare (nbdkit_next *next, void *handle, int readonly)
{
  int64_t size = next->get_size (next);

  if (size == -1)
    return -1;
  pthread_mutex_lock (&lock);
  export_size = size;
  pthread_mutex_unlock (&lock);
  return 0;
}

static double
monotonic_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Book the head for one request; returns when its service ends. */
static double
book_head (uint32_t count, uint64_t offset)
{
  double arrival, start, seek = 0, end;
  uint64_t distance;

  pthread_mutex_lock (&lock);
  distance = offset > head_position ? offset - head_position
                                    : head_position - offset;
  if (distance > 0 && export_size > 0)
    seek = min_seek + (max_seek - min_seek) * distance / export_size;
  arrival = start = monotonic_now ();
  if (start < head_free_at)
    start = head_free_at;
  end = start + seek + count / bandwidth;
  head_free_at = end;
  head_position = offset + count;
  if (trace)
    fprintf (trace, "%.6f %.6f %.6f %" PRIu64 " %" PRIu32 " %.6f\n",
             arrival, start, end, offset, count, seek);
  pthread_mutex_unlock (&lock);
  return end;
}

static int
diskmodel_pread (nbdkit_next *next, void *handle, void *buf, uint32_t count,
                 uint64_t offset, uint32_t flags, int *err)
{
  double end = book_head (count, offset);
  struct timespec until = {
    .tv_sec = (time_t) end,
    .tv_nsec = (long) ((end - (time_t) end) * 1e9),
  };

  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL)
         == EINTR)
    ;
  return next->pread (next, buf, count, offset, flags, err);
}

static struct nbdkit_filter filter = {
  .name              = "diskmodel",
  .longname          = "adaptra benchmark one-head disk model",
  .unload            = diskmodel_unload,
  .config            = diskmodel_config,
  .config_complete   = diskmodel_config_complete,
  .config_help       = diskmodel_config_help,
  .prepare           = diskmodel_prepare,
  .pread             = diskmodel_pread,
};

NBDKIT_REGISTER_FILTER (filter)
