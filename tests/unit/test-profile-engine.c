/* Boot profiles driving the engine: record, save, restart, replay.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The core half of adaptra-profile=DIR end to end, as the filter is
 * to wire it: boot 1 reads through an engine while a recorder
 * watches; the profile is merged and saved; the engine is freed (the
 * server restarts); boot 2, on a cold engine, loads the profile, and
 * after each read the matcher's ranges go to adaptra_cache_hint.  The
 * fake backend counts reads per context, so the client's own backend
 * reads (what a boot waits for) and the prefetch's are told apart.
 * A write in the middle of boot 2 shows that a profile only decides
 * what to prefetch: every byte read is the disk's current one.
 */

#include <config.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "adaptra/profile.h"
#include "fixture.h"

#define DISK (32 * 1024 * 1024)         /* 8192 pages */
#define MS UINT64_C (1000000)
#define READS 600

static char tmpdir[64];

/* A boot: READS reads of 1 to 4 pages at random-looking pages. */
static void
boot_trace (uint32_t seed, uint64_t *off, uint32_t *len)
{
  uint32_t x = seed;
  unsigned i;

  for (i = 0; i < READS; i++) {
    x = x * 1103515245 + 12345;
    off[i] = (uint64_t) ((x >> 4) % (DISK / PAGE - 4)) * PAGE;
    x = x * 1103515245 + 12345;
    len[i] = (1 + (x >> 16) % 4) * PAGE;
  }
}

/* A boot: the fixture's engine on a cold pool. */
static void
power_on (void)
{
  struct adaptra_config cfg;

  fixture_config (&cfg);
  cfg.pool_bytes = 32 * 1024 * 1024;
  fixture_start (&cfg, "vm1.img", "guest");
  client_bytes = worker_bytes = 0;
}

/* Prefetch what the matcher proposes now, as the filter would: at
 * most 1 MiB a call, and the jobs run (as workers would) before the
 * next range, so that the engine never finds the backend congested
 * and drops a range.
 */
static void
follow (struct adaptra_matcher *m)
{
  struct adaptra_profile_range r[16];
  size_t k, n;

  do {
    n = adaptra_matcher_next (m, now_ns, 1 << 20, r, 16);
    for (k = 0; k < n; k++) {
      adaptra_cache_hint (e, client, r[k].offset, r[k].count);
      drain ();
    }
  } while (n == 16);
}

static const struct adaptra_profile_key key = {
  .identity = "vm1.img", .page_size = PAGE, .export_size = DISK,
};

/* Boot 1 with a recorder; the profile saved in tmpdir.  Returns the
 * bytes the client read from the backend.
 */
static uint64_t
record_boot (const uint64_t *off, const uint32_t *len, char *path,
             size_t pathlen)
{
  struct adaptra_recorder *r;
  struct adaptra_profile *fresh, *old, *merged;
  char name[ADAPTRA_PROFILE_NAME_MAX], why[256];
  unsigned i;

  power_on ();
  r = adaptra_recorder_new (&key, 1 << 20, 300 * UINT64_C (1000000000),
                            now_ns, NULL);
  for (i = 0; i < READS; i++, now_ns += MS) {
    read_check (off[i], len[i]);
    adaptra_recorder_read (r, off[i], len[i], now_ns);
    drain ();
  }
  fresh = adaptra_recorder_profile (r);
  adaptra_recorder_free (r);
  assert_int_equal (adaptra_profile_file_name (key.identity, DISK, name,
                                               sizeof name), 0);
  snprintf (path, pathlen, "%s/%s", tmpdir, name);
  old = adaptra_profile_load (path, &key, why, sizeof why);
  assert_true (old || errno == ENOENT);
  merged = adaptra_profile_merge (old, fresh, 1 << 20);
  assert_int_equal (adaptra_profile_save (merged, path, why, sizeof why), 0);
  adaptra_profile_free (old);
  adaptra_profile_free (fresh);
  adaptra_profile_free (merged);
  fixture_stop ();
  return client_bytes;
}

/* The same boot after a restart: the client reads nearly nothing from
 * the backend itself; the prefetch reads what it needs and hardly
 * more.  A write at read 300 over pages it prefetched for reads 310
 * to 329 is seen by those reads.
 */
static void
test_replay_after_restart (void **state)
{
  static uint64_t off[READS];
  static uint32_t len[READS];
  struct adaptra_matcher_config mcfg;
  struct adaptra_matcher_counters c;
  struct adaptra_matcher *m;
  struct adaptra_profile *p;
  uint64_t cold, needed = 0;
  char path[256], why[256];
  struct adaptra_stats s;
  unsigned i;

  (void) state;
  boot_trace (5, off, len);
  cold = record_boot (off, len, path, sizeof path);
  assert_true (cold > READS * PAGE);

  power_on ();
  p = adaptra_profile_load (path, &key, why, sizeof why);
  if (!p)
    fail_msg ("%s", why);
  needed = p->pages * PAGE;
  adaptra_matcher_defaults (&mcfg);
  m = adaptra_matcher_new (p, &mcfg);
  assert_non_null (m);
  for (i = 0; i < READS; i++, now_ns += MS) {
    if (i == 300) {
      unsigned j;

      for (j = 310; j < 330; j++)
        write_disk (off[j], len[j], 0xa5 ^ j);
    }
    read_check (off[i], len[i]);
    adaptra_matcher_read (m, off[i], len[i], now_ns);
    follow (m);
  }
  adaptra_matcher_counters (m, &c);
  /* The first read, and the 20 the write invalidated, at most. */
  assert_true (client_bytes <= (1 + 20) * 4 * PAGE);
  /* The prefetch read the boot's pages, the 20 reads' again, and
   * nothing else.
   */
  assert_true (worker_bytes <= needed);
  assert_true (worker_bytes >= needed - (1 + 20) * 4 * PAGE);
  assert_int_equal (c.state, ADAPTRA_MATCHER_FOLLOWING);
  assert_int_equal (c.wasted + c.pending, 0);
  assert_int_equal (c.proposed * PAGE, worker_bytes);
  s = stats ();
  assert_int_equal (s.io_congestion, 0);
  assert_int_equal (s.prefetch_stale, 0);
  assert_true (s.invalidated > 0);
  adaptra_matcher_free (m);
  adaptra_profile_free (p);
  fixture_stop ();
  unlink (path);
}

/* Another guest on the same export: the profile costs it at most
 * lead_min_bytes of prefetch, and the client reads what it reads.
 */
static void
test_other_guest (void **state)
{
  static uint64_t off[READS], other_off[READS];
  static uint32_t len[READS], other_len[READS];
  struct adaptra_matcher_config mcfg;
  struct adaptra_matcher_counters c;
  struct adaptra_matcher *m;
  struct adaptra_profile *p;
  char path[256], why[256];
  uint64_t cold;
  unsigned i;

  (void) state;
  boot_trace (5, off, len);
  record_boot (off, len, path, sizeof path);
  boot_trace (77, other_off, other_len);

  power_on ();
  p = adaptra_profile_load (path, &key, why, sizeof why);
  assert_non_null (p);
  adaptra_matcher_defaults (&mcfg);
  m = adaptra_matcher_new (p, &mcfg);
  for (i = 0; i < READS; i++, now_ns += MS) {
    read_check (other_off[i], other_len[i]);
    adaptra_matcher_read (m, other_off[i], other_len[i], now_ns);
    follow (m);
  }
  adaptra_matcher_counters (m, &c);
  cold = client_bytes;
  assert_true (worker_bytes <= mcfg.lead_min_bytes);
  assert_true ((c.wasted + c.pending) * PAGE <= mcfg.lead_min_bytes);
  assert_int_not_equal (c.state, ADAPTRA_MATCHER_FOLLOWING);
  assert_true (cold > READS * PAGE);
  adaptra_matcher_free (m);
  adaptra_profile_free (p);
  fixture_stop ();
  unlink (path);
}

static bool
engine_lends (void *en, uint64_t bytes)
{
  return adaptra_lend (en, bytes);
}

static void
engine_takes_back (void *en, uint64_t bytes)
{
  adaptra_take_back (en, bytes);
}

/* Frames of the pool, wherever they are. */
static uint64_t
frames (const struct adaptra_stats *s)
{
  return s->pages_free + s->pages_inactive + s->pages_active +
    s->pages_in_flight + s->pages_lent;
}

/* A recorder whose budget draws on the engine's pool, as the filter
 * wires it: over a full pool, what it holds is lent by the pool
 * (evicting pages: the frames stay the same), and given back when it
 * is freed.
 */
static void
test_recorder_in_pool (void **state)
{
  static uint64_t off[READS];
  static uint32_t len[READS];
  struct adaptra_profile_memory mem = {
    .limit = 1 << 20, .source_take = engine_lends,
    .source_give = engine_takes_back,
  };
  struct adaptra_recorder *r;
  struct adaptra_stats s;
  uint64_t total, evicted;
  unsigned i;

  (void) state;
  power_on ();
  mem.source = e;
  for (i = 0; i < DISK / (1 << 20); i++)
    read_check ((uint64_t) i << 20, 1 << 20);
  drain ();
  s = stats ();
  total = frames (&s);
  evicted = s.evicted;
  assert_int_equal (s.pages_free, 0);
  assert_int_equal (s.pages_lent, 0);
  boot_trace (7, off, len);
  r = adaptra_recorder_new (&key, 1 << 20, 300 * UINT64_C (1000000000),
                            now_ns, &mem);
  assert_non_null (r);
  for (i = 0; i < READS; i++, now_ns += MS) {
    read_check (off[i], len[i]);
    assert_true (adaptra_recorder_read (r, off[i], len[i], now_ns));
    drain ();
    s = stats ();
    assert_int_equal (s.pages_lent, (mem.used + PAGE - 1) / PAGE);
    assert_int_equal (frames (&s), total);
  }
  assert_true (s.pages_lent > 0);
  assert_true (s.evicted >= evicted + s.pages_lent);
  adaptra_recorder_free (r);
  s = stats ();
  assert_int_equal (s.pages_lent, 0);
  assert_int_equal (frames (&s), total);
  fixture_stop ();
}

static int
setup (void **state)
{
  (void) state;
  snprintf (tmpdir, sizeof tmpdir, "/tmp/test-profile-engine.XXXXXX");
  if (!mkdtemp (tmpdir))
    return -1;
  return fixture_setup (DISK);
}

static int
teardown (void **state)
{
  (void) state;
  fixture_teardown ();
  return rmdir (tmpdir);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown (test_replay_after_restart, setup,
                                     teardown),
    cmocka_unit_test_setup_teardown (test_other_guest, setup, teardown),
    cmocka_unit_test_setup_teardown (test_recorder_in_pool, setup, teardown),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
