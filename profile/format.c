/* format.c: the boot profile file: encode, decode, load, save, name.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Fixed little-endian layout, written whole to a temporary
 * file and renamed: rename(2) replaces the name atomically, so a
 * reader sees the old file or the new one, and the fsyncs (file
 * before the rename, directory after) make the same true after a
 * power cut.  The loader trusts nothing: lengths are checked against
 * the file's size in 64-bit arithmetic before anything is allocated,
 * every extent against the export, and the extents against each other
 * (sorted copy: disjoint), so a hostile file costs at most
 * ADAPTRA_PROFILE_FILE_MAX bytes of reading and is then refused.
 *
 * All of the profile library's file I/O is here; the engine does none.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "extents.h"

#define FNV_OFFSET UINT64_C (0xcbf29ce484222325)
#define FNV_PRIME UINT64_C (0x100000001b3)

static uint64_t
fnv1a (uint64_t h, const unsigned char *p, size_t n)
{
  while (n-- > 0) {
    h ^= *p++;
    h *= FNV_PRIME;
  }
  return h;
}

static void
put32 (unsigned char *p, uint32_t v)
{
  unsigned i;

  for (i = 0; i < 4; i++)
    p[i] = (unsigned char) (v >> (8 * i));
}

static void
put64 (unsigned char *p, uint64_t v)
{
  put32 (p, (uint32_t) v);
  put32 (p + 4, (uint32_t) (v >> 32));
}

static uint32_t
get32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
    (uint32_t) p[3] << 24;
}

static uint64_t
get64 (const unsigned char *p)
{
  return get32 (p) | (uint64_t) get32 (p + 4) << 32;
}

/* ------------------------------------------------------------------ */
/* The file. */

void
adaptra_profile_seal (unsigned char *buf, size_t len)
{
  uint64_t h = fnv1a (FNV_OFFSET, buf, 40);

  h = fnv1a (h, buf + ADAPTRA_PROFILE_HEADER, len - ADAPTRA_PROFILE_HEADER);
  put64 (buf + 40, h);
}

int
adaptra_profile_encode (const struct adaptra_profile *p, unsigned char **buf,
                        size_t *len)
{
  size_t idlen = strlen (p->identity);
  size_t n = ADAPTRA_PROFILE_HEADER + idlen +
    p->count * ADAPTRA_PROFILE_EXTENT_BYTES;
  unsigned char *b = calloc (1, n), *q;
  size_t i;

  if (!b)
    return -1;
  memcpy (b, ADAPTRA_PROFILE_MAGIC, 8);
  put32 (b + 8, ADAPTRA_PROFILE_VERSION);
  put32 (b + 12, p->page_size);
  put64 (b + 16, p->export_size);
  put32 (b + 24, p->boots);
  put32 (b + 28, (uint32_t) idlen);
  put32 (b + 32, (uint32_t) p->count);
  memcpy (b + ADAPTRA_PROFILE_HEADER, p->identity, idlen);
  q = b + ADAPTRA_PROFILE_HEADER + idlen;
  for (i = 0; i < p->count; i++, q += ADAPTRA_PROFILE_EXTENT_BYTES) {
    put64 (q, p->extents[i].start);
    put32 (q + 8, p->extents[i].pages);
    q[12] = p->extents[i].seen;
    q[13] = p->extents[i].missed;
  }
  adaptra_profile_seal (b, n);
  *buf = b;
  *len = n;
  return 0;
}

struct adaptra_profile *
adaptra_profile_decode (const void *buf, size_t len,
                        const struct adaptra_profile_key *want,
                        char *why, size_t whylen)
{
  const unsigned char *b = buf, *q;
  struct adaptra_profile *p;
  struct adaptra_profile_key key;
  uint32_t version, idlen, count;
  uint64_t expect;
  char *identity;
  size_t i;

  if (len < ADAPTRA_PROFILE_HEADER) {
    snprintf (why, whylen, "truncated: %zu bytes, header is %d", len,
              ADAPTRA_PROFILE_HEADER);
    return NULL;
  }
  if (memcmp (b, ADAPTRA_PROFILE_MAGIC, 8) != 0) {
    snprintf (why, whylen, "not an adaptra profile (bad magic)");
    return NULL;
  }
  version = get32 (b + 8);
  if (version != ADAPTRA_PROFILE_VERSION) {
    snprintf (why, whylen, "format version %" PRIu32 ", this adaptra reads %d",
              version, ADAPTRA_PROFILE_VERSION);
    return NULL;
  }
  idlen = get32 (b + 28);
  count = get32 (b + 32);
  if (idlen > ADAPTRA_PROFILE_IDENTITY_MAX ||
      count > ADAPTRA_PROFILE_EXTENTS_MAX || get32 (b + 36) != 0) {
    snprintf (why, whylen, "identity of %" PRIu32 " bytes or %" PRIu32
              " extents over the limits, or reserved bits set", idlen, count);
    return NULL;
  }
  /* Both bounded above: no overflow in 64 bits. */
  expect = ADAPTRA_PROFILE_HEADER + (uint64_t) idlen +
    (uint64_t) count * ADAPTRA_PROFILE_EXTENT_BYTES;
  if (expect != len) {
    snprintf (why, whylen, "%zu bytes, the header says %" PRIu64
              " (torn or trailing data)", len, expect);
    return NULL;
  }
  {
    uint64_t h = fnv1a (FNV_OFFSET, b, 40);

    h = fnv1a (h, b + ADAPTRA_PROFILE_HEADER, len - ADAPTRA_PROFILE_HEADER);
    if (h != get64 (b + 40)) {
      snprintf (why, whylen, "checksum mismatch");
      return NULL;
    }
  }
  if (memchr (b + ADAPTRA_PROFILE_HEADER, '\0', idlen)) {
    snprintf (why, whylen, "NUL in the export identity");
    return NULL;
  }
  identity = malloc (idlen + 1);
  if (!identity) {
    snprintf (why, whylen, "out of memory");
    return NULL;
  }
  memcpy (identity, b + ADAPTRA_PROFILE_HEADER, idlen);
  identity[idlen] = '\0';
  key = (struct adaptra_profile_key) {
    .identity = identity, .page_size = get32 (b + 12),
    .export_size = get64 (b + 16),
  };
  if (adaptra_profile_key_check (&key, why, whylen) == -1) {
    free (identity);
    return NULL;
  }
  if (want && !profile_same_key (&key, want)) {
    snprintf (why, whylen, "profile of another export or page size "
              "(%" PRIu64 " bytes, page %" PRIu32 ")", key.export_size,
              key.page_size);
    free (identity);
    return NULL;
  }
  p = adaptra_profile_new (&key);
  free (identity);
  if (!p || (count > 0 &&
             !(p->extents = malloc (count * sizeof *p->extents)))) {
    adaptra_profile_free (p);
    snprintf (why, whylen, "out of memory");
    return NULL;
  }
  p->boots = get32 (b + 24);
  q = b + ADAPTRA_PROFILE_HEADER + idlen;
  for (i = 0; i < count; i++, q += ADAPTRA_PROFILE_EXTENT_BYTES) {
    if (q[14] != 0 || q[15] != 0) {
      snprintf (why, whylen, "extent %zu: reserved bytes set", i);
      adaptra_profile_free (p);
      return NULL;
    }
    p->extents[i] = (struct adaptra_profile_extent) {
      .start = get64 (q), .pages = get32 (q + 8), .seen = q[12],
      .missed = q[13],
    };
    /* At most 2^18 extents of under 2^32 pages: no overflow. */
    p->pages += p->extents[i].pages;
  }
  p->count = count;
  if (adaptra_profile_check (p, why, whylen) == -1) {
    adaptra_profile_free (p);
    return NULL;
  }
  return p;
}

struct adaptra_profile *
adaptra_profile_load (const char *path, const struct adaptra_profile_key *want,
                      char *why, size_t whylen)
{
  struct adaptra_profile *p;
  unsigned char *buf;
  struct stat st;
  size_t got = 0;
  int fd, err;

  /* Non-blocking: opening a FIFO for reading would wait for a writer.
   * A regular file ignores the flag.
   */
  fd = open (path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd == -1) {
    /* No profile yet is the common case: no message to build.
     * (strerror in nbdkit's threads, under ThreadSanitizer, leaves
     * glibc's locale lock held and nbdkit hangs at exit.)
     */
    err = errno;
    if (err == ENOENT)
      snprintf (why, whylen, "no such file");
    else
      snprintf (why, whylen, "%s", strerror (err));
    errno = err;
    return NULL;
  }
  if (fstat (fd, &st) == -1 || !S_ISREG (st.st_mode) ||
      st.st_size > (off_t) ADAPTRA_PROFILE_FILE_MAX) {
    snprintf (why, whylen, "not a regular file of at most %zu bytes",
              (size_t) ADAPTRA_PROFILE_FILE_MAX);
    close (fd);
    errno = EINVAL;
    return NULL;
  }
  /* One byte more than the file should hold: a file that grew since
   * the fstat reads as too long and is refused.
   */
  buf = malloc ((size_t) st.st_size + 1);
  if (!buf) {
    close (fd);
    snprintf (why, whylen, "out of memory");
    return NULL;
  }
  for (;;) {
    ssize_t r = read (fd, buf + got, (size_t) st.st_size + 1 - got);

    if (r == -1 && errno == EINTR)
      continue;
    if (r == -1) {
      err = errno;
      snprintf (why, whylen, "%s", strerror (err));
      free (buf);
      close (fd);
      errno = err;
      return NULL;
    }
    if (r == 0 || (got += (size_t) r) == (size_t) st.st_size + 1)
      break;
  }
  close (fd);
  p = adaptra_profile_decode (buf, got, want, why, whylen);
  free (buf);
  if (!p)
    errno = EINVAL;
  return p;
}

/* Write all of buf to fd. */
static int
write_all (int fd, const unsigned char *buf, size_t len)
{
  while (len > 0) {
    ssize_t r = write (fd, buf, len);

    if (r == -1 && errno == EINTR)
      continue;
    if (r == -1)
      return -1;
    buf += r;
    len -= (size_t) r;
  }
  return 0;
}

int
adaptra_profile_save (const struct adaptra_profile *p, const char *path,
                      char *why, size_t len)
{
  const char *slash = strrchr (path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t dirlen = slash ? (size_t) (slash - path) : 0;
  char *tmp = NULL, *dir = NULL;
  unsigned char *buf = NULL;
  size_t n;
  int fd = -1, dfd, err = 0;
  const char *step = "encode";

  /* The directory: "." for a bare name, "/" for "/NAME". */
  if (adaptra_profile_encode (p, &buf, &n) == -1 ||
      asprintf (&dir, "%.*s", slash ? (int) (dirlen ? dirlen : 1) : 1,
                slash ? path : ".") == -1) {
    dir = NULL;
    err = ENOMEM;
    goto out;
  }
  if (asprintf (&tmp, "%s%s.%s.XXXXXX", dir, strcmp (dir, "/") ? "/" : "",
                base) == -1) {
    tmp = NULL;
    err = ENOMEM;
    goto out;
  }
  step = "create";
  fd = mkstemp (tmp);
  if (fd == -1) {
    err = errno;
    free (tmp);
    tmp = NULL;
    goto out;
  }
  step = "write";
  if (write_all (fd, buf, n) == -1) {
    err = errno;
    goto out;
  }
  step = "fsync";
  if (fsync (fd) == -1) {
    err = errno;
    goto out;
  }
  step = "close";
  err = close (fd) == -1 ? errno : 0;
  fd = -1;
  if (err)
    goto out;
  step = "rename";
  if (rename (tmp, path) == -1) {
    err = errno;
    goto out;
  }
  free (tmp);
  tmp = NULL;
  /* The new name is in place; make it survive a power cut. */
  step = "fsync directory";
  dfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd == -1 || fsync (dfd) == -1)
    err = errno;
  if (dfd != -1)
    close (dfd);
 out:
  if (fd != -1)
    close (fd);
  if (tmp) {
    unlink (tmp);
    free (tmp);
  }
  free (dir);
  free (buf);
  if (err) {
    snprintf (why, len, "%s: %s: %s", path, step, strerror (err));
    errno = err;
    return -1;
  }
  return 0;
}

int
adaptra_profile_file_name (const char *identity, uint64_t export_size,
                           char *buf, size_t len)
{
  char human[33];
  size_t i;
  int n;

  for (i = 0; identity[i] && i < sizeof human - 1; i++) {
    char c = identity[i];

    human[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9') || c == '_' || c == '-' ? c : '_';
  }
  human[i] = '\0';
  n = snprintf (buf, len, "export-%s-%016" PRIx64 "-%" PRIu64 "%s", human,
                fnv1a (FNV_OFFSET, (const unsigned char *) identity,
                       strlen (identity)),
                export_size, ADAPTRA_PROFILE_SUFFIX);
  return n < 0 || (size_t) n >= len ? -1 : 0;
}

/* The lock file of path: ".NAME.lock" in its directory.  malloc'd, or
 * NULL.
 */
static char *
lock_name (const char *path)
{
  const char *slash = strrchr (path, '/');
  char *name;

  if (asprintf (&name, "%.*s.%s.lock", slash ? (int) (slash - path + 1) : 0,
                path, slash ? slash + 1 : path) == -1)
    return NULL;
  return name;
}

/* Rename the stale lock file seen away (to a name of our own, so
 * that of two breakers only one succeeds) and remove it.  Should the
 * name have held a new lock by then (a breaker came first and another
 * server locked since), that one is put back.
 */
static void
break_lock (const char *lock, const struct stat *seen)
{
  struct stat now;
  char *stale;
  int fd;

  if (asprintf (&stale, "%s.stale.XXXXXX", lock) == -1)
    return;
  fd = mkstemp (stale);
  if (fd != -1) {
    close (fd);
    /* rename fails when another breaker was first; stale is then our
     * empty file.  If what we renamed is not the lock we saw stale, it
     * is a live one: it goes back.
     */
    if (rename (lock, stale) == 0 && stat (stale, &now) == 0 &&
        (now.st_ino != seen->st_ino || now.st_dev != seen->st_dev) &&
        link (stale, lock) == -1) {
      /* Yet another server has locked meanwhile, the rare race this
       * cannot close: its lock stands.
       */
    }
    unlink (stale);
  }
  free (stale);
}

int
adaptra_profile_lock (const char *path, char *why, size_t len)
{
  char *lock = lock_name (path);
  struct timespec pause = { 0, 0 };
  unsigned waited_ms = 0, step_ms = 1;
  struct stat st;
  int fd, err;

  if (!lock) {
    snprintf (why, len, "%s: out of memory", path);
    errno = ENOMEM;
    return -1;
  }
  for (;;) {
    fd = open (lock, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC,
               0644);
    if (fd != -1) {
      char owner[128];
      int n;

      /* Who holds it, for a person looking at a stuck lock. */
      n = snprintf (owner, sizeof owner, "pid %ld\n", (long) getpid ());
      if (write (fd, owner, (size_t) n) == -1) {
        /* The lock is the name; its content is only a hint. */
      }
      close (fd);
      free (lock);
      return 0;
    }
    err = errno;
    if (err != EEXIST)
      break;
    if (stat (lock, &st) == 0 &&
        time (NULL) - st.st_mtime > ADAPTRA_PROFILE_LOCK_STALE_S) {
      break_lock (lock, &st);
      continue;
    }
    if (waited_ms >= ADAPTRA_PROFILE_LOCK_WAIT_MS) {
      err = ETIMEDOUT;
      break;
    }
    /* Back off: 1, 2, 4 .. 64 ms between tries. */
    pause.tv_nsec = (long) step_ms * 1000000;
    nanosleep (&pause, NULL);
    waited_ms += step_ms;
    if (step_ms < 64)
      step_ms *= 2;
  }
  snprintf (why, len, "%s: %s", lock, strerror (err));
  free (lock);
  errno = err;
  return -1;
}

void
adaptra_profile_unlock (const char *path)
{
  char *lock = lock_name (path);

  if (lock)
    unlink (lock);
  free (lock);
}

int
adaptra_profile_update (const char *path, const struct adaptra_profile *fresh,
                        uint64_t budget_pages, char *why, size_t len)
{
  struct adaptra_profile_key key = profile_key_of (fresh);
  struct adaptra_profile *old, *merged;
  char ignored[256];
  int r = -1;

  if (adaptra_profile_lock (path, why, len) == -1)
    return -1;
  /* An invalid or foreign file is replaced: its reason was logged by
   * whoever tried to follow it.
   */
  old = adaptra_profile_load (path, &key, ignored, sizeof ignored);
  merged = adaptra_profile_merge (old, fresh, budget_pages);
  if (merged == NULL) {
    snprintf (why, len, "%s: out of memory", path);
    errno = ENOMEM;
  }
  else
    r = adaptra_profile_save (merged, path, why, len);
  adaptra_profile_unlock (path);
  adaptra_profile_free (merged);
  adaptra_profile_free (old);
  return r;
}
