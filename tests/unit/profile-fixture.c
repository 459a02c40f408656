/* profile-fixture.c: traces, profiles and a directory for profile tests.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Deterministic: traces come from a fixed LCG, time is passed in.
 * A "boot" is a trace of reads at random-looking pages (1 to 8 pages
 * each, a quarter of them re-reads of earlier ones), which no
 * read-ahead window can predict and a profile can.
 */

#include <config.h>

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "profile-fixture.h"

const struct adaptra_profile_key key = {
  .identity = "vm1.img", .page_size = PAGE, .export_size = EXPORT_SIZE,
};

char tmpdir[64];

/* A boot: n reads from seed.  A quarter re-read an earlier read. */
struct rd *
boot_trace (uint32_t seed, size_t n)
{
  struct rd *t = malloc (n * sizeof *t);
  uint32_t x = seed;
  size_t i;

  assert_non_null (t);
  for (i = 0; i < n; i++) {
    x = x * 1103515245 + 12345;
    if (i > 0 && (x >> 16) % 4 == 0) {
      t[i] = t[(x >> 8) % i];
      continue;
    }
    x = x * 1103515245 + 12345;
    t[i].offset = (uint64_t) ((x >> 4) % (EXPORT_PAGES - 8)) * PAGE;
    x = x * 1103515245 + 12345;
    t[i].count = (1 + (x >> 16) % 8) * PAGE;
  }
  return t;
}

/* n reads that never overlap: each in its own 8-page slot of the
 * export, the slots in a shuffled order (4973 is prime to the 8192
 * slots).
 */
struct rd *
slot_trace (size_t n)
{
  struct rd *t = malloc (n * sizeof *t);
  size_t i;

  assert_non_null (t);
  assert_true (n <= EXPORT_PAGES / 8);
  for (i = 0; i < n; i++)
    t[i] = (struct rd) {
      .offset = (uint64_t) (i * 4973 % (EXPORT_PAGES / 8)) * 8 * PAGE,
      .count = (1 + (i * 7 + i / 3) % 8) * PAGE,
    };
  return t;
}

struct adaptra_profile *
record (const struct rd *t, size_t n, uint64_t budget_pages)
{
  struct adaptra_recorder *r = adaptra_recorder_new (&key, budget_pages,
                                                     3600 * SEC, 0, NULL);
  struct adaptra_profile *p;
  size_t i;

  assert_non_null (r);
  for (i = 0; i < n; i++)
    adaptra_recorder_read (r, t[i].offset, t[i].count, i * MS);
  p = adaptra_recorder_profile (r);
  adaptra_recorder_free (r);
  assert_non_null (p);
  return p;
}

/* A profile of the given extents; seen/missed as given, boots. */
struct adaptra_profile *
make (const struct adaptra_profile_extent *x, size_t n, uint32_t boots)
{
  struct adaptra_profile *p = adaptra_profile_new (&key);
  char why[256];
  size_t i;

  assert_non_null (p);
  p->extents = malloc ((n ? n : 1) * sizeof *x);
  assert_non_null (p->extents);
  if (n > 0)
    memcpy (p->extents, x, n * sizeof *x);
  p->count = n;
  p->boots = boots;
  for (i = 0; i < n; i++)
    p->pages += x[i].pages;
  if (adaptra_profile_check (p, why, sizeof why) == -1)
    fail_msg ("made profile invalid: %s", why);
  return p;
}

void
assert_extents (const struct adaptra_profile *p,
                const struct adaptra_profile_extent *x, size_t n)
{
  size_t i;

  assert_int_equal (p->count, n);
  for (i = 0; i < n; i++) {
    assert_int_equal (p->extents[i].start, x[i].start);
    assert_int_equal (p->extents[i].pages, x[i].pages);
    assert_int_equal (p->extents[i].seen, x[i].seen);
    assert_int_equal (p->extents[i].missed, x[i].missed);
  }
}

void
assert_same (const struct adaptra_profile *a, const struct adaptra_profile *b)
{
  assert_string_equal (a->identity, b->identity);
  assert_int_equal (a->page_size, b->page_size);
  assert_int_equal (a->export_size, b->export_size);
  assert_int_equal (a->boots, b->boots);
  assert_int_equal (a->pages, b->pages);
  assert_extents (a, b->extents, b->count);
}

int
make_tmpdir (void **state)
{
  (void) state;
  snprintf (tmpdir, sizeof tmpdir, "/tmp/test-profile.XXXXXX");
  return mkdtemp (tmpdir) ? 0 : -1;
}

int
remove_tmpdir (void **state)
{
  DIR *d = opendir (tmpdir);
  struct dirent *de;
  char path[512];

  (void) state;
  while (d && (de = readdir (d))) {
    if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
      continue;
    snprintf (path, sizeof path, "%s/%s", tmpdir, de->d_name);
    if (unlink (path) == -1)
      rmdir (path);
  }
  if (d)
    closedir (d);
  return rmdir (tmpdir);
}

unsigned
files_in (const char *dir)
{
  DIR *d = opendir (dir);
  struct dirent *de;
  unsigned n = 0;

  assert_non_null (d);
  while ((de = readdir (d)))
    n += strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0;
  closedir (d);
  return n;
}
