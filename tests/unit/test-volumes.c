/* test-volumes.c: which volumes a write drops its range from.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Unit tests of the engine's invalidation across volumes
 * (adaptra_invalidate, adaptra_invalidate_export in core/invalidate.c): a
 * write must reach every volume that may hold its bytes, from a
 * connection with a volume or without one, and leave the others'
 * pages alone.  A page is "held" when reading it again makes no
 * backend call.  And the volumes' counts of the bytes read for them.
 */

#include <config.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "adaptra/engine.h"
#include "fixture.h"
#include "../../core/engine-impl.h"

/* The smaller volumes' size; the fake disk holds the larger ones. */
#define SIZE (1024 * 1024)

/* An engine that keeps only the pages read, its volumes stepped aside
 * from the start if aside.
 */
static int
engine_setup (bool aside)
{
  struct adaptra_config cfg;

  if (fixture_setup (2 * SIZE) == -1)
    return -1;
  fixture_config (&cfg);
  cfg.pool_bytes = 4 * 1024 * 1024;
  cfg.mode = ADAPTRA_MODE_OFF;          /* only the pages read */
  if (aside)
    cfg.bypass = ADAPTRA_BYPASS_ALWAYS;
  fixture_engine (&cfg);
  return 0;
}

static int
setup (void **state)
{
  (void) state;
  return engine_setup (false);
}

static int
setup_aside (void **state)
{
  (void) state;
  return engine_setup (true);
}

static int
teardown (void **state)
{
  (void) state;
  adaptra_engine_free (e);
  fixture_teardown ();
  return 0;
}

/* A client of a new volume name (size bytes, flags) that read page 0:
 * its client id.
 */
static int
reader (const char *name, uint64_t size, unsigned flags)
{
  char buf[PAGE];
  int c = open_client (e, open_volume (e, name, size, flags), "test");

  assert_int_equal (adaptra_read (e, c, &client_ctx, buf, PAGE, 0), 0);
  return c;
}

/* Does client c's volume still hold page 0? */
static bool
holds (int c)
{
  char buf[PAGE];
  unsigned before = calls;

  assert_int_equal (adaptra_read (e, c, &client_ctx, buf, PAGE, 0), 0);
  return calls == before;
}

/* The volume client c reads. */
static int
volume_of (int c)
{
  struct adaptra_client_row rows[8];
  size_t n = adaptra_clients_snapshot (e, rows, 8), i;

  for (i = 0; i < n && rows[i].id != c; i++)
    ;
  assert_true (i < n);
  return rows[i].volume;
}

/* A connection without a volume (the export grew under the shared
 * volume's clients) writes: the export's shared volume, whatever its
 * size, and every aliasing volume, whatever its size, drop the range;
 * another export's own volume and a connection's own volume do not.
 */
static void
test_writer_without_volume (void **state)
{
  int shared, alias, other, own;

  (void) state;
  shared = reader ("disk", SIZE, 0);
  alias = reader ("alias", 2 * SIZE, ADAPTRA_VOLUME_MAY_ALIAS);
  other = reader ("other", SIZE, 0);
  own = reader ("disk", SIZE, ADAPTRA_VOLUME_PER_CONNECTION);
  assert_true (holds (shared) && holds (alias) && holds (other) &&
               holds (own));
  adaptra_invalidate_export (e, "disk", 3 * SIZE, 0, PAGE);
  assert_false (holds (shared));
  assert_false (holds (alias));
  assert_true (holds (other));
  assert_true (holds (own));
}

/* A connection with a volume of its own writes: the export's shared
 * volume of another size drops the range too; aliasing volumes only
 * at the writer's size.
 */
static void
test_writer_with_volume (void **state)
{
  int writer, shared, alias_same, alias_other;

  (void) state;
  writer = reader ("disk", 2 * SIZE, ADAPTRA_VOLUME_PER_CONNECTION);
  shared = reader ("disk", SIZE, 0);
  alias_same = reader ("a", 2 * SIZE, ADAPTRA_VOLUME_MAY_ALIAS);
  alias_other = reader ("b", SIZE, ADAPTRA_VOLUME_MAY_ALIAS);
  assert_true (holds (writer) && holds (shared) && holds (alias_same) &&
               holds (alias_other));
  adaptra_invalidate (e, volume_of (writer), 0, PAGE);
  assert_false (holds (writer));
  assert_false (holds (shared));
  assert_false (holds (alias_same));
  assert_true (holds (alias_other));
}

/* The exports table of a server no client has reached yet: no rows,
 * and no count of pages (nothing to count into; under UBSan a count of
 * zero volumes was a memset of a NULL array).
 */
static void
test_snapshot_without_volumes (void **state)
{
  struct adaptra_volume_row rows[4];

  (void) state;
  assert_int_equal (adaptra_volumes_snapshot (e, rows, 4), 0);
  assert_int_equal (adaptra_volumes_snapshot (e, rows, 4), 0);
}

/* The one volume's backend bytes, as the "exports" command shows them. */
static uint64_t
row_backend_bytes (void)
{
  struct adaptra_volume_row rows[2];

  assert_int_equal (adaptra_volumes_snapshot (e, rows, 2), 1);
  return rows[0].backend_bytes;
}

/* Volume id's own count of backend bytes; whether it stepped aside. */
static uint64_t
own_backend_bytes (int id, bool *bypass)
{
  uint64_t bytes;

  adaptra_lock (e);
  bytes = adaptra_volume_of (e, id)->backend_bytes;
  *bypass = adaptra_volume_of (e, id)->bypass;
  adaptra_unlock (e);
  return bytes;
}

/* Stepped-aside reads count their bytes in their client until it
 * closes, not in the volume that all its readers share (read.c:
 * count_direct); the volume's count still adds them all up, from its
 * open clients and its closed ones.
 */
static void
test_aside_bytes_add_up (void **state)
{
  char buf[3 * PAGE];
  int volume = open_volume (e, "disk", SIZE, 0);
  int a = open_client (e, volume, "a"), b = open_client (e, volume, "b");
  bool bypass;

  (void) state;
  assert_int_equal (adaptra_read (e, a, &client_ctx, buf, 3 * PAGE, 0), 0);
  assert_int_equal (adaptra_read (e, b, &client_ctx, buf, 2 * PAGE,
                                  8 * PAGE), 0);
  assert_int_equal (own_backend_bytes (volume, &bypass), 0);
  assert_true (bypass);
  assert_int_equal (row_backend_bytes (), 5 * PAGE);
  adaptra_client_close (e, a);
  assert_int_equal (own_backend_bytes (volume, &bypass), 3 * PAGE);
  assert_int_equal (row_backend_bytes (), 5 * PAGE);
  assert_int_equal (adaptra_read (e, b, &client_ctx, buf, PAGE, 0), 0);
  assert_int_equal (row_backend_bytes (), 6 * PAGE);
  adaptra_client_close (e, b);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown (test_snapshot_without_volumes,
                                     setup, teardown),
    cmocka_unit_test_setup_teardown (test_writer_without_volume,
                                     setup, teardown),
    cmocka_unit_test_setup_teardown (test_writer_with_volume,
                                     setup, teardown),
    cmocka_unit_test_setup_teardown (test_aside_bytes_add_up,
                                     setup_aside, teardown),
  };

  return cmocka_run_group_tests (tests, NULL, NULL);
}
