/* flight.c: how many bytes of prefetch the backend takes at once.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The delivery rate behind the flight limit (flight.h): a ring of
 * slots, each the bytes of the reads that completed in it.  A read
 * for a slot newer than the one in its place reuses the place (the
 * old slot left the window long ago); a read for an older one is too
 * late to count.
 */

#include <config.h>

#include <stddef.h>

#include "flight.h"

void
adaptra_flight_start (struct adaptra_flight *f, uint64_t bytes)
{
  __atomic_fetch_add (&f->running, bytes, __ATOMIC_RELAXED);
}

void
adaptra_flight_end (struct adaptra_flight *f, uint64_t bytes)
{
  __atomic_fetch_sub (&f->running, bytes, __ATOMIC_RELAXED);
}

uint64_t
adaptra_flight_running (const struct adaptra_flight *f)
{
  return __atomic_load_n (&f->running, __ATOMIC_RELAXED);
}

/* Slot ids are the slot's number + 1, so that 0 is a place unused. */
static uint64_t
slot_id (uint64_t t)
{
  return t / ADAPTRA_FLIGHT_SLOT_NS + 1;
}

#define BUCKET_NS (ADAPTRA_FLIGHT_LATENCY_NS / ADAPTRA_FLIGHT_BUCKETS)

void
adaptra_flight_sample (struct adaptra_flight *f, uint64_t bytes,
                       uint64_t t0, uint64_t t1)
{
  uint64_t id = slot_id (t1), second = t1 / BUCKET_NS + 1;
  uint64_t t = t1 > t0 ? t1 - t0 : 0;
  struct adaptra_flight_slot *s = &f->slot[id % ADAPTRA_FLIGHT_SLOTS];
  struct adaptra_flight_bucket *b =
    &f->bucket[second % ADAPTRA_FLIGHT_BUCKETS];

  if (id > f->newest)
    f->newest = id;
  if (s->id < id) {
    s->id = id;
    s->bytes = 0;
  }
  if (s->id == id)
    s->bytes += bytes;

  if (b->id < second) {
    b->id = second;
    b->fastest_ns = t;
    b->fastest_bytes = bytes;
  }
  else if (b->id == second && t < b->fastest_ns) {
    b->fastest_ns = t;
    b->fastest_bytes = bytes;
  }
}

uint64_t
adaptra_flight_rate (const struct adaptra_flight *f, uint64_t now)
{
  uint64_t id = slot_id (now), most = 0;
  size_t i;

  for (i = 0; i < ADAPTRA_FLIGHT_SLOTS; i++) {
    const struct adaptra_flight_slot *s = &f->slot[i];

    /* Over (two slots ago or older, by now and by what completed),
     * and in the last second.
     */
    if (s->id + 2 <= id && s->id + 2 <= f->newest &&
        s->id + 2 + ADAPTRA_FLIGHT_WINDOW_SLOTS > id && s->bytes > most)
      most = s->bytes;
  }
  return (uint64_t) ((double) most * 1e9 / ADAPTRA_FLIGHT_SLOT_NS);
}

/* L at now, given R at now; UINT64_MAX if no read is in the window. */
static uint64_t
latency (const struct adaptra_flight *f, uint64_t now, uint64_t rate)
{
  uint64_t second = now / BUCKET_NS + 1, least = UINT64_MAX;
  size_t i;

  for (i = 0; i < ADAPTRA_FLIGHT_BUCKETS; i++) {
    const struct adaptra_flight_bucket *b = &f->bucket[i];
    uint64_t transfer, l;

    if (b->id == 0 || b->id > second ||
        b->id + ADAPTRA_FLIGHT_BUCKETS <= second)
      continue;
    /* Its transfer at R, but at most half its time: R is what was
     * delivered, and under a light load (one read at a time) that is
     * the reads themselves, whose whole time would pass for transfer.
     */
    transfer = rate ? (uint64_t) ((double) b->fastest_bytes * 1e9 /
                                  (double) rate) : 0;
    if (transfer > b->fastest_ns / 2)
      transfer = b->fastest_ns / 2;
    l = b->fastest_ns > transfer ? b->fastest_ns - transfer : 0;
    if (l < least)
      least = l;
  }
  return least;
}

void
adaptra_flight_estimate (const struct adaptra_flight *f, uint64_t now,
                         struct adaptra_flight_estimate *est)
{
  uint64_t l;

  est->rate = adaptra_flight_rate (f, now);
  l = latency (f, now, est->rate);
  est->latency_ns = l == UINT64_MAX ? 0 : l;
  est->bdp = (uint64_t) ((double) est->rate * (double) est->latency_ns / 1e9);
  est->slow = l != UINT64_MAX && l >= ADAPTRA_FLIGHT_LATENCY_MIN;
  est->limit = UINT64_MAX;
  if (est->rate > 0 && est->slow && est->bdp >= ADAPTRA_FLIGHT_MIN)
    est->limit = est->bdp * ADAPTRA_FLIGHT_GAIN_NUM / ADAPTRA_FLIGHT_GAIN_DEN;
}
