/* test-stream.c: the stream table (core/stream.c).
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of core/stream.c: ids, position matching, reaping, reuse,
 * a client's proposals.
 * Stream recognition end to end (interleaved, reordered, backward,
 * random) is tested through the engine in test-engine.c.
 */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../core/stream.h"

#define SEC UINT64_C (1000000000)

static struct adaptra_streams table;

static int
setup4 (void **state)
{
  (void) state;
  return adaptra_streams_init (&table, 4);
}

static int
teardown (void **state)
{
  (void) state;
  adaptra_streams_fini (&table);
  return 0;
}

static void
test_get_by_id (void **state)
{
  struct adaptra_stream *s;
  uint64_t id;

  (void) state;
  s = adaptra_streams_new (&table, 3, 100, 0);
  assert_non_null (s);
  id = s->id;
  assert_int_not_equal (id, 0);
  assert_ptr_equal (adaptra_streams_get (&table, id), s);
  assert_int_equal (s->client, 3);
  assert_null (adaptra_streams_get (&table, 0));
  /* A reused slot gets a new id: the old id no longer resolves. */
  adaptra_streams_free (&table, s);
  assert_null (adaptra_streams_get (&table, id));
  s = adaptra_streams_new (&table, 3, 100, 0);
  assert_int_not_equal (s->id, id);
  assert_int_equal (adaptra_streams_count (&table), 1);
}

static void
test_find_by_position (void **state)
{
  struct adaptra_stream *a, *b;

  (void) state;
  a = adaptra_streams_new (&table, 1, 1000, 0);
  b = adaptra_streams_new (&table, 1, 50000, 1);
  assert_ptr_equal (adaptra_streams_find (&table, 1000), a);
  /* Within the tolerance on either side, across granules. */
  assert_ptr_equal (adaptra_streams_find (&table, 1000 + 200), a);
  assert_ptr_equal (adaptra_streams_find (&table, 1000 - 200), a);
  assert_ptr_equal (adaptra_streams_find (&table, 50000 + 17), b);
  assert_null (adaptra_streams_find (&table, 1000 + 2 * 256 + 1));
  assert_null (adaptra_streams_find (&table, 20000));
  /* Advancing moves it in the hash; a late read does not move it back. */
  adaptra_streams_advance (&table, a, 8990, 9000, 2);
  assert_null (adaptra_streams_find (&table, 1000));
  assert_ptr_equal (adaptra_streams_find (&table, 9001), a);
  adaptra_streams_advance (&table, a, 990, 1000, 3);
  assert_int_equal (a->next, 9000);
  /* A backward stream moves down. */
  b->backward = true;
  adaptra_streams_advance (&table, b, 49000, 49500, 4);
  assert_int_equal (b->next, 49000);
  adaptra_streams_advance (&table, b, 49600, 50000, 5);
  assert_int_equal (b->next, 49000);
  /* Page 0 has no granule below it. */
  adaptra_streams_free (&table, b);
  b = adaptra_streams_new (&table, 1, 0, 6);
  assert_ptr_equal (adaptra_streams_find (&table, 5), b);
}

static void
test_most_recent_wins (void **state)
{
  struct adaptra_stream *a, *b;

  (void) state;
  a = adaptra_streams_new (&table, 1, 1000, 0);
  b = adaptra_streams_new (&table, 2, 1010, 5);
  assert_ptr_equal (adaptra_streams_find (&table, 1005), b);
  adaptra_streams_advance (&table, a, 990, 1000, 9);
  assert_ptr_equal (adaptra_streams_find (&table, 1005), a);
  assert_ptr_equal (adaptra_streams_first (&table), a);
  assert_ptr_equal (adaptra_streams_after (&table, a), b);
  assert_null (adaptra_streams_after (&table, b));
}

static void
test_reap_idle (void **state)
{
  const uint64_t reap = ADAPTRA_STREAM_REAP_NS;
  struct adaptra_stream *a, *b;

  (void) state;
  assert_true (reap >= 600 * SEC);
  a = adaptra_streams_new (&table, 1, 1000, 0);
  b = adaptra_streams_new (&table, 1, 9000, 0);
  adaptra_streams_advance (&table, b, 9000, 9001, SEC);
  /* A stream reading every 2.5 s (or every minute) keeps its state. */
  assert_false (adaptra_streams_reap_one (&table, 3 * SEC));
  assert_false (adaptra_streams_reap_one (&table, 60 * SEC));
  assert_false (adaptra_streams_reap_one (&table, reap - 1));
  assert_true (adaptra_streams_reap_one (&table, reap));
  assert_int_equal (a->id, 0);
  assert_false (adaptra_streams_reap_one (&table, reap));
  assert_int_equal (adaptra_streams_count (&table), 1);
  assert_true (adaptra_streams_reap_one (&table, reap + SEC));
  assert_int_equal (adaptra_streams_count (&table), 0);
  assert_false (adaptra_streams_reap_one (&table, 100 * reap));
}

/* A full table gives the least recently used slot to a new stream,
 * however recently that stream read: its state lives on in its pages.
 */
static void
test_full_table (void **state)
{
  struct adaptra_stream *s, *oldest;
  uint64_t i, old_id;

  (void) state;
  for (i = 0; i < 4; i++)
    assert_non_null (adaptra_streams_new (&table, 1, i * 10000, i));
  oldest = adaptra_streams_find (&table, 0);
  old_id = oldest->id;
  adaptra_streams_advance (&table, oldest, 0, 1, 10);   /* now the newest */
  s = adaptra_streams_new (&table, 2, 99999, 11);
  assert_non_null (s);
  assert_int_equal (adaptra_streams_count (&table), 4);
  /* Stream 1 (idle since t = 1 ns) went, stream 0 stayed. */
  assert_null (adaptra_streams_find (&table, 10000));
  assert_ptr_equal (adaptra_streams_get (&table, old_id), oldest);
  assert_ptr_equal (adaptra_streams_find (&table, 99999), s);
}

/* Ids do not alias: 70000 streams through one slot (more than the 16
 * bits the sequence once had) all get new ids, and the sequence wraps
 * past 48 bits to 1, never to an id of 0.
 */
static void
test_id_space (void **state)
{
  struct adaptra_streams one;
  struct adaptra_stream *s;
  uint64_t first, i;

  (void) state;
  assert_int_equal (adaptra_streams_init (&one, 1), 0);
  s = adaptra_streams_new (&one, 0, 0, 0);
  first = s->id;
  for (i = 1; i < 70000; i++) {
    s = adaptra_streams_new (&one, 0, i, i);
    assert_int_not_equal (s->id, first);
    assert_null (adaptra_streams_get (&one, first));
  }
  assert_int_equal (s->id >> ADAPTRA_STREAM_SLOT_BITS, 70000);
  one.sequence = (UINT64_C (1) << 48) - 2;
  s = adaptra_streams_new (&one, 0, 0, i);
  assert_int_equal (s->id, ((UINT64_C (1) << 48) - 1) << 16);
  s = adaptra_streams_new (&one, 0, 0, i + 1);
  assert_int_equal (s->id, UINT64_C (1) << 16);
  adaptra_streams_fini (&one);
}

static void
test_bad_size (void **state)
{
  struct adaptra_streams t;

  (void) state;
  assert_int_equal (adaptra_streams_init (&t, 0), -1);
  assert_int_equal (adaptra_streams_init (&t, ADAPTRA_STREAMS_MAX + 1), -1);
}

/* Runs of a volume, read one after the other (sampled by
 * adaptra_streams_run_bound): a stream started at time *now, its run
 * len pages from its origin read a tick later, its reader gone when
 * the next starts.
 */
static struct adaptra_stream *
run (struct adaptra_streams *t, uint64_t *now, uint64_t origin, uint64_t len)
{
  struct adaptra_stream *s = adaptra_streams_new (t, 1, origin, (*now)++);

  s->origin = origin;
  adaptra_streams_advance (t, s, origin, origin + len, (*now)++);
  return s;
}

#define RUN_PAGES 100
#define RUNS_OVER (ADAPTRA_RUN_LATER + ADAPTRA_RUN_ENDED_MIN)

/* Runs over are those ADAPTRA_RUN_LATER later streams followed: with
 * ADAPTRA_RUN_ENDED_MIN of them that got as far as the new stream, its
 * bound is where they ended, one odd long run among them
 * notwithstanding (ADAPTRA_RUN_SHARE); a stream past that length is
 * compared with the runs that got as far, too few: no bound.
 */
static void
test_run_bound_from_runs_over (void **state)
{
  struct adaptra_streams t;
  struct adaptra_stream *s;
  uint64_t now = 1;
  unsigned i;

  (void) state;
  assert_int_equal (adaptra_streams_init (&t, 64), 0);
  for (i = 0; i < RUNS_OVER; i++)
    run (&t, &now, 1000 * (i + 1), i == 1 ? 9 * RUN_PAGES : RUN_PAGES);
  s = run (&t, &now, 100000, 10);
  assert_int_equal (adaptra_streams_run_bound (&t, s, 10, now), RUN_PAGES);
  assert_int_equal (adaptra_streams_run_bound (&t, s, RUN_PAGES, now),
                    RUN_PAGES);
  assert_int_equal (adaptra_streams_run_bound (&t, s, RUN_PAGES + 1, now),
                    UINT64_MAX);
  /* Another volume's runs say nothing of this one's. */
  s->volume = 1;
  assert_int_equal (adaptra_streams_run_bound (&t, s, 10, now), UINT64_MAX);
  adaptra_streams_fini (&t);
}

/* Too few runs over, streams read again since later ones started
 * (interleaved on one connection), or runs still going that went
 * further: no bound.
 */
static void
test_run_bound_needs_runs_over (void **state)
{
  struct adaptra_streams t;
  struct adaptra_stream *s, *r[RUNS_OVER];
  uint64_t now = 1;
  unsigned i;

  (void) state;
  assert_int_equal (adaptra_streams_init (&t, 64), 0);
  /* With s, ADAPTRA_RUN_LATER streams follow all but one fewer than
   * ADAPTRA_RUN_ENDED_MIN of them.
   */
  for (i = 0; i < RUNS_OVER - 2; i++)
    r[i] = run (&t, &now, 1000 * (i + 1), RUN_PAGES);
  s = run (&t, &now, 100000, 10);
  assert_int_equal (adaptra_streams_run_bound (&t, s, 10, now), UINT64_MAX);
  r[i] = run (&t, &now, 1000 * (i + 1), RUN_PAGES);
  s = run (&t, &now, 200000, 10);
  assert_int_equal (adaptra_streams_run_bound (&t, s, 10, now), RUN_PAGES);
  /* Each read again after all started: none is over. */
  for (i = 0; i < RUNS_OVER - 1; i++)
    adaptra_streams_advance (&t, r[i], 1000 * (i + 1),
                             1000 * (i + 1) + RUN_PAGES, now++);
  s = run (&t, &now, 300000, 10);
  assert_int_equal (adaptra_streams_run_bound (&t, s, 10, now), UINT64_MAX);
  adaptra_streams_fini (&t);

  /* ADAPTRA_RUN_ENDED_MIN runs over, behind ADAPTRA_RUN_LATER longer
   * ones, most of them still going: the bound is not the short runs'
   * length.
   */
  assert_int_equal (adaptra_streams_init (&t, 64), 0);
  for (i = 0; i < ADAPTRA_RUN_ENDED_MIN; i++)
    run (&t, &now, 1000 * (i + 1), RUN_PAGES);
  for (i = 0; i < ADAPTRA_RUN_LATER; i++)
    run (&t, &now, 100000 * (i + 1), 10 * RUN_PAGES);
  s = run (&t, &now, 10000000, 10);
  assert_true (adaptra_streams_run_bound (&t, s, 10, now) >= 10 * RUN_PAGES);
  adaptra_streams_fini (&t);
}

/* Slow streams started one after the other, each read again a
 * while after it started, before many more start (W5: each reader
 * reads once in a few seconds): not over until their readers have
 * been gone ADAPTRA_RUN_IDLE times as long as they read, however many
 * streams started since.
 */
static void
test_run_bound_waits_for_slow_streams (void **state)
{
  const uint64_t life = 10;
  struct adaptra_streams t;
  struct adaptra_stream *s;
  uint64_t now;
  unsigned i;

  (void) state;
  assert_int_equal (adaptra_streams_init (&t, 64), 0);
  for (i = 0; i < ADAPTRA_RUN_ENDED_MIN; i++) {
    s = adaptra_streams_new (&t, 1, 1000 * (i + 1), i);
    s->origin = 1000 * (i + 1);
    adaptra_streams_advance (&t, s, s->origin, s->origin + RUN_PAGES,
                             i + life);
  }
  for (i = 0; i < ADAPTRA_RUN_LATER; i++) {
    s = adaptra_streams_new (&t, 1, 100000 * (i + 1), 2 * life + i);
    s->origin = 100000 * (i + 1);
  }
  now = 2 * life + ADAPTRA_RUN_LATER;
  assert_int_equal (adaptra_streams_run_bound (&t, s, 10, now), UINT64_MAX);
  now = (ADAPTRA_RUN_IDLE + 1) * (life + ADAPTRA_RUN_ENDED_MIN);
  assert_int_equal (adaptra_streams_run_bound (&t, s, 10, now), RUN_PAGES);
  adaptra_streams_fini (&t);
}

/* A client's proposals (adaptra_streams_propose): the mean of its
 * streams' last ones, each stream counted once, kept as they propose
 * again and as they leave: freed, pushed out of a full table, reaped.
 * Another client's count apart; a stream with no client (-1) gets its
 * own proposal back and counts in no sum.
 */
static void
test_proposals_as_streams_leave (void **state)
{
  struct adaptra_stream *a, *b, *c, *d;
  uint64_t a_id;

  (void) state;
  a = adaptra_streams_new (&table, 3, 100, 0);
  a_id = a->id;
  b = adaptra_streams_new (&table, 3, 10000, 1);
  c = adaptra_streams_new (&table, 3, 20000, 2);
  d = adaptra_streams_new (&table, 1, 30000, 3);
  assert_int_equal (adaptra_streams_propose (&table, a, 100), 100);
  assert_int_equal (adaptra_streams_propose (&table, b, 200), 150);
  assert_int_equal (adaptra_streams_propose (&table, c, 600), 300);
  assert_int_equal (adaptra_streams_propose (&table, d, 8), 8);
  /* a proposes again: its last proposal replaced, not added. */
  assert_int_equal (adaptra_streams_propose (&table, a, 400), 400);
  adaptra_streams_free (&table, c);
  assert_int_equal (adaptra_streams_propose (&table, b, 200), 300);
  c = adaptra_streams_new (&table, 3, 40000, 4);
  assert_int_equal (adaptra_streams_propose (&table, c, 100), 700 / 3);
  /* A new stream of client 2 pushes out the least recently used, a
   * (the table holds 4): b's proposal and c's are left.
   */
  d = adaptra_streams_new (&table, 2, 50000, 4);
  assert_null (adaptra_streams_get (&table, a_id));
  assert_int_equal (adaptra_streams_propose (&table, c, 100), 150);
  /* Reaped, all idle past the limit. */
  while (adaptra_streams_reap_one (&table, 5 + ADAPTRA_STREAM_REAP_NS))
    ;
  assert_int_equal (adaptra_streams_count (&table), 0);
  a = adaptra_streams_new (&table, 3, 100, 6 + ADAPTRA_STREAM_REAP_NS);
  assert_int_equal (adaptra_streams_propose (&table, a, 50), 50);
  b = adaptra_streams_new (&table, 1, 200, 7 + ADAPTRA_STREAM_REAP_NS);
  assert_int_equal (adaptra_streams_propose (&table, b, 70), 70);
  b = adaptra_streams_new (&table, -1, 300, 8 + ADAPTRA_STREAM_REAP_NS);
  assert_int_equal (adaptra_streams_propose (&table, b, 90), 90);
  assert_int_equal (b->proposal, 0);
  assert_int_equal (adaptra_streams_propose (&table, a, 50), 50);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown (test_get_by_id, setup4, teardown),
    cmocka_unit_test_setup_teardown (test_find_by_position, setup4, teardown),
    cmocka_unit_test_setup_teardown (test_most_recent_wins, setup4, teardown),
    cmocka_unit_test_setup_teardown (test_reap_idle, setup4, teardown),
    cmocka_unit_test_setup_teardown (test_full_table, setup4, teardown),
    cmocka_unit_test_setup_teardown (test_proposals_as_streams_leave, setup4,
                                     teardown),
    cmocka_unit_test (test_id_space),
    cmocka_unit_test (test_bad_size),
    cmocka_unit_test (test_run_bound_from_runs_over),
    cmocka_unit_test (test_run_bound_needs_runs_over),
    cmocka_unit_test (test_run_bound_waits_for_slow_streams),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
