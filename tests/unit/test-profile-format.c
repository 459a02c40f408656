/* test-profile-format.c: unit tests of the profile file format.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "profile-fixture.h"

/* The profile saved at path loads, for the fixture's key, as p. */
static void
assert_loads_as (const char *path, const struct adaptra_profile *p)
{
  char why[256];
  struct adaptra_profile *q = adaptra_profile_load (path, &key, why,
                                                    sizeof why);

  if (!q)
    fail_msg ("%s: %s", path, why);
  assert_same (q, p);
  adaptra_profile_free (q);
}

static void
test_round_trip (void **state)
{
  struct rd *t = boot_trace (1, 500);
  struct adaptra_profile *p = record (t, 500, 1 << 20), *q;
  unsigned char *buf;
  size_t len;
  char why[256], path[512];

  (void) state;
  p->boots = 3;
  p->extents[0].seen = 3;
  p->extents[0].missed = 2;
  assert_int_equal (adaptra_profile_encode (p, &buf, &len), 0);
  assert_int_equal (len, 48 + strlen ("vm1.img") + 16 * p->count);
  q = adaptra_profile_decode (buf, len, &key, why, sizeof why);
  if (!q)
    fail_msg ("%s", why);
  assert_same (q, p);
  adaptra_profile_free (q);
  free (buf);

  snprintf (path, sizeof path, "%s/p", tmpdir);
  assert_int_equal (adaptra_profile_save (p, path, why, sizeof why), 0);
  assert_loads_as (path, p);
  /* No want: any valid profile loads (the CLI's view). */
  q = adaptra_profile_load (path, NULL, why, sizeof why);
  assert_non_null (q);
  adaptra_profile_free (q);
  assert_int_equal (unlink (path), 0);
  adaptra_profile_free (p);
  free (t);

  /* An empty profile and the default export's "" round-trip too. */
  {
    struct adaptra_profile_key k = key;

    k.identity = "";
    p = adaptra_profile_new (&k);
    assert_int_equal (adaptra_profile_encode (p, &buf, &len), 0);
    assert_int_equal (len, 48);
    q = adaptra_profile_decode (buf, len, &k, why, sizeof why);
    assert_non_null (q);
    assert_same (q, p);
    adaptra_profile_free (q);
    free (buf);
    adaptra_profile_free (p);
  }
}

/* A file cut at any length, or with any one byte changed, is refused. */
static void
test_torn (void **state)
{
  static const struct adaptra_profile_extent x[] = {
    { 10, 4, 1, 0 }, { 3, 2, 1, 0 }, { 60000, 9, 1, 0 },
  };
  struct adaptra_profile *p = make (x, 3, 1), *q;
  unsigned char *buf;
  size_t len, i;
  char why[256], path[512];
  int fd;

  (void) state;
  assert_int_equal (adaptra_profile_encode (p, &buf, &len), 0);
  for (i = 0; i < len; i++) {
    why[0] = '\0';
    q = adaptra_profile_decode (buf, i, &key, why, sizeof why);
    assert_null (q);
    assert_true (why[0] != '\0');
  }
  for (i = 0; i < len; i++) {
    buf[i] ^= 0x20;
    assert_null (adaptra_profile_decode (buf, len, &key, why, sizeof why));
    buf[i] ^= 0x20;
  }
  /* And as a file: the length the header promises is not there. */
  snprintf (path, sizeof path, "%s/torn", tmpdir);
  fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true (fd >= 0);
  assert_int_equal (write (fd, buf, len - 5), (ssize_t) (len - 5));
  close (fd);
  errno = 0;
  assert_null (adaptra_profile_load (path, &key, why, sizeof why));
  assert_int_equal (errno, EINVAL);
  assert_non_null (strstr (why, "torn"));
  unlink (path);
  free (buf);
  adaptra_profile_free (p);
}

/* Patch a field of an encoded profile and reseal it, so that the
 * check aimed at, not the checksum, refuses it.
 */
static unsigned char *
patched (const struct adaptra_profile *p, size_t *len, size_t at,
         const void *bytes, size_t n)
{
  unsigned char *buf;

  assert_int_equal (adaptra_profile_encode (p, &buf, len), 0);
  assert_true (at + n <= *len);
  memcpy (buf + at, bytes, n);
  adaptra_profile_seal (buf, *len);
  return buf;
}

static void
refused (unsigned char *buf, size_t len,
         const struct adaptra_profile_key *want, const char *reason)
{
  char why[256] = "";

  if (adaptra_profile_decode (buf, len, want, why, sizeof why))
    fail_msg ("accepted, expected \"%s\"", reason);
  if (!strstr (why, reason))
    fail_msg ("refused with \"%s\", expected \"%s\"", why, reason);
  free (buf);
}

static void
le32 (unsigned char *b, uint32_t v)
{
  b[0] = v; b[1] = v >> 8; b[2] = v >> 16; b[3] = v >> 24;
}

static void
le64 (unsigned char *b, uint64_t v)
{
  le32 (b, (uint32_t) v);
  le32 (b + 4, (uint32_t) (v >> 32));
}

static void
test_hostile (void **state)
{
  static const struct adaptra_profile_extent x[] = {
    { 10, 4, 2, 1 }, { 3, 2, 1, 0 },
  };
  struct adaptra_profile *p = make (x, 2, 2);
  struct adaptra_profile_key other;
  const size_t ext = 48 + strlen ("vm1.img");   /* first extent */
  unsigned char b[8], *buf;
  size_t len;

  (void) state;
  /* Sanity: unpatched, it loads. */
  buf = patched (p, &len, 0, "ADAPROF\n", 8);
  {
    char why[256];
    struct adaptra_profile *q = adaptra_profile_decode (buf, len, &key, why,
                                                        sizeof why);
    assert_non_null (q);
    adaptra_profile_free (q);
  }
  free (buf);

  buf = patched (p, &len, 0, "QCOW\xfb\0\0\0", 8);
  refused (buf, len, &key, "bad magic");
  le32 (b, 2);
  buf = patched (p, &len, 8, b, 4);
  refused (buf, len, &key, "format version 2");
  /* Counts that would overflow 32-bit sizes, or just lie. */
  le32 (b, UINT32_MAX);
  buf = patched (p, &len, 32, b, 4);
  refused (buf, len, &key, "over the limits");
  le32 (b, 0x10000000);         /* 16 * count wraps 32 bits to 0 */
  buf = patched (p, &len, 32, b, 4);
  refused (buf, len, &key, "over the limits");
  le32 (b, 3);
  buf = patched (p, &len, 32, b, 4);
  refused (buf, len, &key, "torn");
  le32 (b, UINT32_MAX - 40);
  buf = patched (p, &len, 28, b, 4);
  refused (buf, len, &key, "over the limits");
  le32 (b, 1);
  buf = patched (p, &len, 36, b, 4);
  refused (buf, len, &key, "reserved");
  /* Trailing data. */
  assert_int_equal (adaptra_profile_encode (p, &buf, &len), 0);
  buf = realloc (buf, len + 1);
  buf[len] = 0;
  adaptra_profile_seal (buf, len + 1);
  refused (buf, len + 1, &key, "torn");
  /* A bad checksum. */
  assert_int_equal (adaptra_profile_encode (p, &buf, &len), 0);
  buf[40] ^= 1;
  refused (buf, len, &key, "checksum");
  /* Bad keys. */
  le32 (b, 3000);
  buf = patched (p, &len, 12, b, 4);
  refused (buf, len, NULL, "page size 3000");
  le64 (b, 0);
  buf = patched (p, &len, 16, b, 8);
  refused (buf, len, NULL, "export size 0");
  le64 (b, UINT64_C (1) << 60);
  buf = patched (p, &len, 16, b, 8);
  refused (buf, len, NULL, "export size");
  buf = patched (p, &len, 48 + 2, "\0", 1);
  refused (buf, len, NULL, "NUL");
  /* Another export's, another size's, another page size's. */
  other = key;
  other.identity = "vm2.img";
  assert_int_equal (adaptra_profile_encode (p, &buf, &len), 0);
  refused (buf, len, &other, "another export");
  other = key;
  other.export_size++;
  assert_int_equal (adaptra_profile_encode (p, &buf, &len), 0);
  refused (buf, len, &other, "another export");
  other = key;
  other.page_size = 2 * PAGE;
  assert_int_equal (adaptra_profile_encode (p, &buf, &len), 0);
  refused (buf, len, &other, "another export");
  /* Extents: overflow, past the end, empty, overlapping, weights. */
  le64 (b, UINT64_MAX - 1);
  buf = patched (p, &len, ext, b, 8);
  refused (buf, len, &key, "past the export");
  le64 (b, EXPORT_PAGES - 3);   /* + 4 pages: one past the end */
  buf = patched (p, &len, ext, b, 8);
  refused (buf, len, &key, "past the export");
  le32 (b, 0);
  buf = patched (p, &len, ext + 8, b, 4);
  refused (buf, len, &key, "empty");
  le64 (b, 12);                 /* second extent: 12..13 inside 10..13 */
  buf = patched (p, &len, ext + 16, b, 8);
  refused (buf, len, &key, "overlap");
  buf = patched (p, &len, ext + 12, "\0", 1);
  refused (buf, len, &key, "seen 0");
  buf = patched (p, &len, ext + 12, "\3", 1);
  refused (buf, len, &key, "seen 3, missed 1 in 2 boots");
  buf = patched (p, &len, ext + 13, "\2", 1);
  refused (buf, len, &key, "missed 2");
  buf = patched (p, &len, ext + 15, "\1", 1);
  refused (buf, len, &key, "reserved");
  le32 (b, 0);
  buf = patched (p, &len, 24, b, 4);
  refused (buf, len, &key, "0 boots");
  adaptra_profile_free (p);
}

static void
test_load_errors (void **state)
{
  char why[256], path[512];
  int fd;

  (void) state;
  snprintf (path, sizeof path, "%s/none", tmpdir);
  errno = 0;
  assert_null (adaptra_profile_load (path, &key, why, sizeof why));
  assert_int_equal (errno, ENOENT);
  /* The reason never names the file, which its caller names: the
   * path would be said twice, or (a name in a directory) otherwise.
   */
  assert_string_equal (why, "no such file");
  errno = 0;
  assert_null (adaptra_profile_load (tmpdir, &key, why, sizeof why));
  assert_int_equal (errno, EINVAL);
  assert_null (strstr (why, tmpdir));
  /* A file over the largest valid size is not even read. */
  snprintf (path, sizeof path, "%s/big", tmpdir);
  fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true (fd >= 0);
  assert_int_equal (ftruncate (fd, ADAPTRA_PROFILE_FILE_MAX + 1), 0);
  close (fd);
  errno = 0;
  assert_null (adaptra_profile_load (path, NULL, why, sizeof why));
  assert_int_equal (errno, EINVAL);
  assert_non_null (strstr (why, "at most"));
  unlink (path);
  /* A FIFO with no writer is refused at once: opened blocking, the
   * load would wait for a writer forever (the alarm fails the test).
   */
  snprintf (path, sizeof path, "%s/fifo", tmpdir);
  assert_int_equal (mkfifo (path, 0600), 0);
  alarm (10);
  errno = 0;
  assert_null (adaptra_profile_load (path, &key, why, sizeof why));
  alarm (0);
  assert_int_equal (errno, EINVAL);
  assert_non_null (strstr (why, "not a regular file"));
  unlink (path);
}

/* The lock is exclusive: while a child holds it, the parent waits,
 * and gets it only after the child let go.  A lock file left by a
 * dead holder (older than ADAPTRA_PROFILE_LOCK_STALE_S) is broken.
 */
static void
test_lock (void **state)
{
  char why[256], path[512], lock[512], marker[512];
  struct timeval old[2];
  int ready[2], fd, status;
  pid_t pid;
  char c;

  (void) state;
  snprintf (path, sizeof path, "%s/locked.profile", tmpdir);
  snprintf (lock, sizeof lock, "%s/.locked.profile.lock", tmpdir);
  snprintf (marker, sizeof marker, "%s/released", tmpdir);
  assert_int_equal (pipe (ready), 0);
  pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0) {
    if (adaptra_profile_lock (path, why, sizeof why) == -1)
      _exit (1);
    if (write (ready[1], "x", 1) != 1)
      _exit (1);
    usleep (200 * 1000);
    fd = open (marker, O_WRONLY | O_CREAT, 0600);
    close (fd);
    adaptra_profile_unlock (path);
    _exit (0);
  }
  assert_int_equal (read (ready[0], &c, 1), 1);
  assert_int_equal (access (lock, F_OK), 0);
  assert_int_equal (adaptra_profile_lock (path, why, sizeof why), 0);
  assert_int_equal (access (marker, F_OK), 0);
  adaptra_profile_unlock (path);
  assert_int_equal (access (lock, F_OK), -1);
  assert_int_equal (waitpid (pid, &status, 0), pid);
  assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  close (ready[0]);
  close (ready[1]);
  unlink (marker);

  /* A stale lock: its holder died long ago. */
  fd = open (lock, O_WRONLY | O_CREAT | O_EXCL, 0644);
  assert_true (fd >= 0);
  close (fd);
  old[0].tv_sec = old[1].tv_sec = time (NULL) -
    2 * ADAPTRA_PROFILE_LOCK_STALE_S;
  old[0].tv_usec = old[1].tv_usec = 0;
  assert_int_equal (utimes (lock, old), 0);
  assert_int_equal (adaptra_profile_lock (path, why, sizeof why), 0);
  adaptra_profile_unlock (path);
  assert_int_equal (files_in (tmpdir), 0);
}

/* Servers on one directory: WRITERS processes merge UPDATES boots each
 * into one profile, all starting at once, while a reader loads every
 * version it can: every update counts (boots == WRITERS * UPDATES),
 * and every version the reader saw was whole, with boots never going
 * back.
 */
#define WRITERS 6
#define UPDATES 5

static void
test_update_concurrent (void **state)
{
  char why[256], path[512];
  int go[2], status, w;
  pid_t pids[WRITERS + 1];
  struct adaptra_profile *p;
  char c;

  (void) state;
  snprintf (path, sizeof path, "%s/shared.profile", tmpdir);
  assert_int_equal (pipe (go), 0);
  for (w = 0; w <= WRITERS; w++) {
    pids[w] = fork ();
    assert_true (pids[w] >= 0);
    if (pids[w] > 0)
      continue;
    close (go[1]);
    if (read (go[0], &c, 1) != 0)
      _exit (2);
    if (w == WRITERS) {
      /* The reader: until the last boot is in, each version whole. */
      uint32_t last = 0;

      for (;;) {
        errno = 0;
        p = adaptra_profile_load (path, &key, why, sizeof why);
        if (p == NULL && errno != ENOENT) {
          fprintf (stderr, "reader: %s\n", why);
          _exit (1);
        }
        if (p == NULL)
          continue;
        if (p->boots < last) {
          fprintf (stderr, "reader: boots %u after %u\n", p->boots, last);
          _exit (1);
        }
        last = p->boots;
        adaptra_profile_free (p);
        if (last == WRITERS * UPDATES)
          _exit (0);
      }
    }
    for (int i = 0; i < UPDATES; i++) {
      struct rd *t = boot_trace (100 + w * UPDATES + i, 300);
      struct adaptra_profile *fresh = record (t, 300, 1 << 20);

      if (adaptra_profile_update (path, fresh, 1 << 20, why,
                                  sizeof why) == -1) {
        fprintf (stderr, "writer %d: %s\n", w, why);
        _exit (1);
      }
      adaptra_profile_free (fresh);
      free (t);
    }
    _exit (0);
  }
  close (go[0]);
  close (go[1]);                /* all start now */
  /* Writers first: if one lost a boot the reader would wait forever,
   * so it is stopped once they are done and the count is checked.
   */
  for (w = 0; w < WRITERS; w++) {
    assert_int_equal (waitpid (pids[w], &status, 0), pids[w]);
    assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  }
  p = adaptra_profile_load (path, &key, why, sizeof why);
  assert_non_null (p);
  if (p->boots != WRITERS * UPDATES)
    kill (pids[WRITERS], SIGKILL);
  assert_int_equal (p->boots, WRITERS * UPDATES);
  adaptra_profile_free (p);
  assert_int_equal (waitpid (pids[WRITERS], &status, 0), pids[WRITERS]);
  assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  unlink (path);
  assert_int_equal (files_in (tmpdir), 0);
}

/* A failed save leaves the old file as it was and no temporary file:
 * a write over RLIMIT_FSIZE (EFBIG, as a full disk would), a rename
 * onto a directory, a directory that does not exist.
 */
static void
test_save_atomic (void **state)
{
  static const struct adaptra_profile_extent x1[] = { { 1, 1, 1, 0 } };
  struct adaptra_profile *p1 = make (x1, 1, 1), *p2;
  struct rd *t = boot_trace (3, 200);
  struct rlimit old, lim;
  char why[256], path[512];

  (void) state;
  p2 = record (t, 200, 1 << 20);
  snprintf (path, sizeof path, "%s/profile", tmpdir);
  assert_int_equal (adaptra_profile_save (p1, path, why, sizeof why), 0);
  assert_int_equal (files_in (tmpdir), 1);

  assert_int_equal (getrlimit (RLIMIT_FSIZE, &old), 0);
  signal (SIGXFSZ, SIG_IGN);
  lim = old;
  lim.rlim_cur = 100;           /* p1 is 71 bytes, p2 thousands */
  assert_int_equal (setrlimit (RLIMIT_FSIZE, &lim), 0);
  errno = 0;
  assert_int_equal (adaptra_profile_save (p2, path, why, sizeof why), -1);
  assert_int_equal (errno, EFBIG);
  assert_non_null (strstr (why, "write"));
  assert_int_equal (setrlimit (RLIMIT_FSIZE, &old), 0);
  signal (SIGXFSZ, SIG_DFL);
  assert_int_equal (files_in (tmpdir), 1);
  assert_loads_as (path, p1);

  /* The rename fails: the target is a non-empty directory. */
  snprintf (path, sizeof path, "%s/dir", tmpdir);
  assert_int_equal (mkdir (path, 0700), 0);
  snprintf (path, sizeof path, "%s/dir/x", tmpdir);
  assert_int_equal (adaptra_profile_save (p1, path, why, sizeof why), 0);
  snprintf (path, sizeof path, "%s/dir", tmpdir);
  assert_int_equal (adaptra_profile_save (p2, path, why, sizeof why), -1);
  assert_non_null (strstr (why, "rename"));
  assert_int_equal (files_in (tmpdir), 2);
  snprintf (path, sizeof path, "%s/dir", tmpdir);
  assert_int_equal (files_in (path), 1);
  snprintf (path, sizeof path, "%s/dir/x", tmpdir);
  unlink (path);
  snprintf (path, sizeof path, "%s/dir", tmpdir);
  rmdir (path);

  snprintf (path, sizeof path, "%s/missing/profile", tmpdir);
  errno = 0;
  assert_int_equal (adaptra_profile_save (p1, path, why, sizeof why), -1);
  assert_int_equal (errno, ENOENT);

  /* A bare name saves in the working directory. */
  {
    char cwd[512];

    assert_non_null (getcwd (cwd, sizeof cwd));
    assert_int_equal (chdir (tmpdir), 0);
    assert_int_equal (adaptra_profile_save (p1, "bare", why, sizeof why), 0);
    assert_int_equal (chdir (cwd), 0);
    assert_int_equal (files_in (tmpdir), 2);
    snprintf (path, sizeof path, "%s/bare", tmpdir);
    assert_loads_as (path, p1);
    unlink (path);
  }

  /* And a successful save replaces the old file. */
  snprintf (path, sizeof path, "%s/profile", tmpdir);
  assert_int_equal (adaptra_profile_save (p2, path, why, sizeof why), 0);
  assert_loads_as (path, p2);
  assert_int_equal (files_in (tmpdir), 1);
  unlink (path);
  adaptra_profile_free (p1);
  adaptra_profile_free (p2);
  free (t);
}

/* Odd export names give safe, distinct names inside DIR. */
static void
test_file_name (void **state)
{
  static const char *names[] = {
    "", "vm1.img", "vm1_img", "../../etc/passwd", "a/b", "a_b", ".",
    "..", "-rf", "line\nbreak", "\xff\xfe", "vm1.img ",
  };
  char got[sizeof names / sizeof names[0]][ADAPTRA_PROFILE_NAME_MAX];
  char longname[ADAPTRA_PROFILE_IDENTITY_MAX + 1], small[20];
  size_t i, j, n = sizeof names / sizeof names[0];

  (void) state;
  for (i = 0; i < n; i++) {
    const char *c;

    assert_int_equal (adaptra_profile_file_name (names[i], 1 << 30, got[i],
                                                 sizeof got[i]), 0);
    assert_true (got[i][0] != '.');
    for (c = got[i]; *c; c++)
      assert_non_null (strchr ("abcdefghijklmnopqrstuvwxyz"
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.",
                               *c));
    assert_non_null (strstr (got[i], ADAPTRA_PROFILE_SUFFIX));
    for (j = 0; j < i; j++)
      assert_string_not_equal (got[i], got[j]);
  }
  assert_string_equal (got[1], "export-vm1_img-"
                       "9e95e4a88c46af62-1073741824.profile");
  memset (longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  assert_int_equal (adaptra_profile_file_name (longname, UINT64_MAX, got[0],
                                               sizeof got[0]), 0);
  assert_true (strlen (got[0]) < ADAPTRA_PROFILE_NAME_MAX);
  /* Another size, another file. */
  assert_int_equal (adaptra_profile_file_name ("vm1.img", 1 << 29, got[0],
                                               sizeof got[0]), 0);
  assert_string_not_equal (got[0], got[1]);
  assert_int_equal (adaptra_profile_file_name ("vm1.img", 1, small,
                                               sizeof small), -1);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_round_trip),
    cmocka_unit_test (test_torn),
    cmocka_unit_test (test_hostile),
    cmocka_unit_test (test_load_errors),
    cmocka_unit_test (test_lock),
    cmocka_unit_test (test_update_concurrent),
    cmocka_unit_test (test_save_atomic),
    cmocka_unit_test (test_file_name),
  };

  return cmocka_run_group_tests (tests, make_tmpdir, remove_tmpdir);
}
