/* profile.c: boot profiles: recorder, file, merge and matcher.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Boot profiles: recording first touches, the file, merging boots,
 * and following a profile ahead of a client.  The contract of each
 * function is in profile.h; this is how.
 *
 * Terms and the whole algorithm: docs/DESIGN.md §8.
 *
 * Recorder.  First touches are found with a hash set of the pages
 * recorded (open addressing, kept at most half full, so 16 bytes per
 * page) beside the extents (16 bytes per extent, one per page at
 * worst): a sorted structure would cost a memmove per random read,
 * and a bitmap of the export 32 MiB for a 1 TiB image at 4 KiB.
 *
 * File.  Fixed little-endian layout, written whole to a temporary
 * file and renamed: rename(2) replaces the name atomically, so a
 * reader sees the old file or the new one, and the fsyncs (file
 * before the rename, directory after) make the same true after a
 * power cut.  The loader trusts nothing: lengths are checked against
 * the file's size in 64-bit arithmetic before anything is allocated,
 * every extent against the export, and the extents against each other
 * (sorted copy: disjoint), so a hostile file costs at most
 * ADAPTRA_PROFILE_FILE_MAX bytes of reading and is then refused.
 *
 * Merge.  Per page, by walking each side's extents against the other
 * side sorted by start (binary search), cutting extents where the
 * other side's coverage starts or ends.  Adjacent pieces with the
 * same weights are joined again, so a stable profile does not
 * fragment over boots.
 *
 * Matcher.  The profile's pages in order get ordinals 0 .. pages-1
 * (a prefix sum over the extents); two bitmaps over the ordinals
 * (proposed, read: 1 MiB at the 2^22-page limit) make every count
 * exact.  Three cursors move forward only:
 *
 *      settled S        position P         proposed up to C
 *   ---------|--------------|--------------------|----------> ordinals
 *            <-- reorder --->                    <- lead from P ->
 *
 * S = P - reorder: proposed pages below S that were not read are
 * wasted (and become hits again should the client read them later).
 * C never trails P.  Proposals stop when the last `window` counted
 * reads are less than half matches, and for good past the waste
 * budget: every page is proposed only while the settled waste is
 * within budget and at most lead + reorder pages are unsettled, which
 * is the bound on waste stated in profile.h.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adaptra/engine.h"
#include "minmax.h"
#include "range.h"
#include "adaptra/profile.h"

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
/* Profiles in memory. */

int
adaptra_profile_key_check (const struct adaptra_profile_key *key,
                           char *why, size_t len)
{
  if (key->page_size < 512 || key->page_size > 1024 * 1024 ||
      adaptra_log2_exact (key->page_size) < 0) {
    snprintf (why, len, "page size %" PRIu32 " is not a power of 2 "
              "from 512 to 1M", key->page_size);
    return -1;
  }
  if (key->export_size == 0 || key->export_size > ADAPTRA_VOLUME_SIZE_MAX) {
    snprintf (why, len, "export size %" PRIu64 " is not from 1 to 2^50",
              key->export_size);
    return -1;
  }
  if (!key->identity ||
      strlen (key->identity) > ADAPTRA_PROFILE_IDENTITY_MAX) {
    snprintf (why, len, "export identity missing or over %d bytes",
              ADAPTRA_PROFILE_IDENTITY_MAX);
    return -1;
  }
  return 0;
}

struct adaptra_profile *
adaptra_profile_new (const struct adaptra_profile_key *key)
{
  struct adaptra_profile *p;
  char why[128];

  if (adaptra_profile_key_check (key, why, sizeof why) == -1) {
    errno = EINVAL;
    return NULL;
  }
  p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  p->identity = strdup (key->identity);
  if (!p->identity) {
    free (p);
    return NULL;
  }
  p->page_size = key->page_size;
  p->export_size = key->export_size;
  p->boots = 1;
  return p;
}

void
adaptra_profile_free (struct adaptra_profile *p)
{
  if (!p)
    return;
  free (p->identity);
  free (p->extents);
  free (p);
}

static struct adaptra_profile_key
key_of (const struct adaptra_profile *p)
{
  return (struct adaptra_profile_key) {
    .identity = p->identity, .page_size = p->page_size,
    .export_size = p->export_size,
  };
}

static bool
same_key (const struct adaptra_profile_key *a,
          const struct adaptra_profile_key *b)
{
  return a->page_size == b->page_size && a->export_size == b->export_size &&
    strcmp (a->identity, b->identity) == 0;
}

static uint64_t
export_pages (const struct adaptra_profile *p)
{
  return adaptra_pages_in (p->export_size,
                           (unsigned) adaptra_log2_exact (p->page_size));
}

/* Append an extent, joining it to the last one where it continues it
 * with the same weights.  Returns 0, or -1 (ENOMEM, or EOVERFLOW past
 * the extent limit).  *cap is the allocated size of p->extents.
 */
static int
append (struct adaptra_profile *p, size_t *cap,
        const struct adaptra_profile_extent *x)
{
  struct adaptra_profile_extent *last =
    p->count > 0 ? &p->extents[p->count - 1] : NULL;

  if (last && last->start + last->pages == x->start &&
      last->seen == x->seen && last->missed == x->missed &&
      (uint64_t) last->pages + x->pages <= UINT32_MAX) {
    last->pages += x->pages;
    p->pages += x->pages;
    return 0;
  }
  if (p->count == ADAPTRA_PROFILE_EXTENTS_MAX) {
    errno = EOVERFLOW;
    return -1;
  }
  if (p->count == *cap) {
    size_t n = *cap ? 2 * *cap : 64;
    struct adaptra_profile_extent *a;

    a = realloc (p->extents, n * sizeof *a);
    if (!a)
      return -1;
    p->extents = a;
    *cap = n;
  }
  p->extents[p->count++] = *x;
  p->pages += x->pages;
  return 0;
}

/* qsort has no context argument, so sort (start, index) pairs. */
struct keyed {
  uint64_t start;
  uint32_t index;
};

static int
by_keyed_start (const void *a, const void *b)
{
  uint64_t x = ((const struct keyed *) a)->start;
  uint64_t y = ((const struct keyed *) b)->start;

  return x < y ? -1 : x > y;
}

/* An array of p's extent indices sorted by start, or NULL (ENOMEM). */
static uint32_t *
sorted_index (const struct adaptra_profile_extent *x, size_t n)
{
  struct keyed *k = malloc ((n ? n : 1) * sizeof *k);
  uint32_t *idx = malloc ((n ? n : 1) * sizeof *idx);
  size_t i;

  if (!k || !idx) {
    free (k);
    free (idx);
    return NULL;
  }
  for (i = 0; i < n; i++)
    k[i] = (struct keyed) { .start = x[i].start, .index = (uint32_t) i };
  qsort (k, n, sizeof *k, by_keyed_start);
  for (i = 0; i < n; i++)
    idx[i] = k[i].index;
  free (k);
  return idx;
}

int
adaptra_profile_check (const struct adaptra_profile *p, char *why, size_t len)
{
  struct adaptra_profile_key key = key_of (p);
  uint64_t npages, total = 0;
  uint32_t *idx;
  size_t i;

  if (adaptra_profile_key_check (&key, why, len) == -1)
    return -1;
  if (p->boots == 0) {
    snprintf (why, len, "0 boots");
    return -1;
  }
  if (p->count > ADAPTRA_PROFILE_EXTENTS_MAX) {
    snprintf (why, len, "%zu extents, over %" PRIu32, p->count,
              ADAPTRA_PROFILE_EXTENTS_MAX);
    return -1;
  }
  npages = export_pages (p);
  for (i = 0; i < p->count; i++) {
    const struct adaptra_profile_extent *x = &p->extents[i];

    if (x->pages == 0 || x->start >= npages || x->pages > npages - x->start) {
      snprintf (why, len, "extent %zu (page %" PRIu64 " + %" PRIu32
                ") empty or past the export's %" PRIu64 " pages",
                i, x->start, x->pages, npages);
      return -1;
    }
    if (x->seen == 0 || x->seen > p->boots || x->missed >= x->seen ||
        x->missed > ADAPTRA_PROFILE_MISSED_MAX) {
      snprintf (why, len, "extent %zu: seen %u, missed %u in %" PRIu32
                " boots", i, x->seen, x->missed, p->boots);
      return -1;
    }
    total += x->pages;
  }
  if (total > ADAPTRA_PROFILE_PAGES_MAX || total != p->pages) {
    snprintf (why, len, "%" PRIu64 " pages (limit %" PRIu64 ")", total,
              ADAPTRA_PROFILE_PAGES_MAX);
    return -1;
  }
  idx = sorted_index (p->extents, p->count);
  if (!idx) {
    snprintf (why, len, "out of memory");
    return -1;
  }
  for (i = 1; i < p->count; i++) {
    const struct adaptra_profile_extent *a = &p->extents[idx[i - 1]];
    const struct adaptra_profile_extent *b = &p->extents[idx[i]];

    if (a->start + a->pages > b->start) {
      snprintf (why, len, "extents %" PRIu32 " and %" PRIu32 " overlap",
                idx[i - 1], idx[i]);
      free (idx);
      return -1;
    }
  }
  free (idx);
  return 0;
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
  if (want && !same_key (&key, want)) {
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

  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd == -1) {
    err = errno;
    snprintf (why, whylen, "%s: %s", path, strerror (err));
    errno = err;
    return NULL;
  }
  if (fstat (fd, &st) == -1 || !S_ISREG (st.st_mode) ||
      st.st_size > (off_t) ADAPTRA_PROFILE_FILE_MAX) {
    snprintf (why, whylen, "%s: not a regular file of at most %zu bytes",
              path, (size_t) ADAPTRA_PROFILE_FILE_MAX);
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
      snprintf (why, whylen, "%s: %s", path, strerror (err));
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

/* ------------------------------------------------------------------ */
/* Merge. */

/* The position in idx (x's extents sorted by start) of the first
 * extent that ends after page start: the first that may hold it.
 */
static size_t
first_overlap (const struct adaptra_profile_extent *x, const uint32_t *idx,
               size_t n, uint64_t start)
{
  size_t lo = 0, hi = n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct adaptra_profile_extent *m = &x[idx[mid]];

    if (m->start + m->pages <= start)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Append extent a to out in pieces, cut where the extents of other
 * (sorted by idx; NULL: none) begin and end.  fn decides each piece:
 * given the extent of other that covers it (or NULL), it fills the
 * piece's weights, or returns false to drop it.  Returns 0, or -1
 * with errno (ENOMEM; EOVERFLOW when out is full of extents).
 */
typedef bool (*piece_fn) (const struct adaptra_profile_extent *a,
                          const struct adaptra_profile_extent *cover,
                          struct adaptra_profile_extent *out);

static int
cut (struct adaptra_profile *out, size_t *cap,
     const struct adaptra_profile_extent *a,
     const struct adaptra_profile *other, const uint32_t *idx, piece_fn fn)
{
  uint64_t p = a->start, end = a->start + a->pages;
  size_t i = other ? first_overlap (other->extents, idx, other->count, p) : 0;
  struct adaptra_profile_extent piece;

  while (p < end) {
    const struct adaptra_profile_extent *o =
      other && i < other->count ? &other->extents[idx[i]] : NULL;
    uint64_t to;

    if (o && o->start <= p) {
      to = min_u64 (o->start + o->pages, end);
      i++;
    }
    else {
      to = o && o->start < end ? o->start : end;
      o = NULL;
    }
    if (fn (a, o, &piece)) {
      piece.start = p;
      piece.pages = (uint32_t) (to - p);
      if (append (out, cap, &piece) == -1)
        return -1;
    }
    p = to;
  }
  return 0;
}

/* A page of the fresh boot: seen once more than old had it. */
static bool
fresh_piece (const struct adaptra_profile_extent *a,
             const struct adaptra_profile_extent *old,
             struct adaptra_profile_extent *out)
{
  (void) a;
  out->seen = old ? (old->seen < ADAPTRA_PROFILE_SEEN_MAX ? old->seen + 1
                     : ADAPTRA_PROFILE_SEEN_MAX) : 1;
  out->missed = 0;
  return true;
}

/* A page of old that fresh did not touch: missed once more, kept
 * while missed < seen and missed <= ADAPTRA_PROFILE_MISSED_MAX.
 */
static bool
old_piece (const struct adaptra_profile_extent *a,
           const struct adaptra_profile_extent *fresh,
           struct adaptra_profile_extent *out)
{
  unsigned missed = a->missed + 1u;

  if (fresh || missed >= a->seen || missed > ADAPTRA_PROFILE_MISSED_MAX)
    return false;
  out->seen = a->seen;
  out->missed = (uint8_t) missed;
  return true;
}

struct adaptra_profile *
adaptra_profile_merge (const struct adaptra_profile *old,
                       const struct adaptra_profile *fresh,
                       uint64_t budget_pages)
{
  struct adaptra_profile_key key = key_of (fresh);
  struct adaptra_profile_key okey;
  struct adaptra_profile *out = adaptra_profile_new (&key);
  uint32_t *oidx = NULL, *fidx = NULL;
  size_t cap = 0, i;
  int r = 0;

  if (!out)
    return NULL;
  if (old) {
    okey = key_of (old);
    if (!same_key (&key, &okey))
      old = NULL;
  }
  if (old && (!(oidx = sorted_index (old->extents, old->count)) ||
              !(fidx = sorted_index (fresh->extents, fresh->count))))
    goto fail;
  /* Past 2^18 extents (cut into pieces, two profiles of up to 2^18
   * each may need more) the rest is dropped, as the budget would.
   */
  for (i = 0; r == 0 && i < fresh->count; i++)
    r = cut (out, &cap, &fresh->extents[i], old, oidx, fresh_piece);
  for (i = 0; r == 0 && old && i < old->count; i++)
    r = cut (out, &cap, &old->extents[i], fresh, fidx, old_piece);
  if (r == -1 && errno != EOVERFLOW)
    goto fail;
  out->boots = old ? (old->boots < UINT32_MAX ? old->boots + 1 : old->boots)
    : 1;
  /* Cut from the end: old-only pages, then the latest boot's last. */
  if (budget_pages > ADAPTRA_PROFILE_PAGES_MAX)
    budget_pages = ADAPTRA_PROFILE_PAGES_MAX;
  while (out->pages > budget_pages) {
    struct adaptra_profile_extent *last = &out->extents[out->count - 1];
    uint64_t over = out->pages - budget_pages;

    if (last->pages > over) {
      last->pages -= (uint32_t) over;
      out->pages -= over;
    }
    else {
      out->pages -= last->pages;
      out->count--;
    }
  }
  free (oidx);
  free (fidx);
  return out;

 fail:
  free (oidx);
  free (fidx);
  adaptra_profile_free (out);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Recorder. */

struct adaptra_recorder {
  struct adaptra_profile *p;    /* the recording */
  size_t cap;                   /* allocated extents */
  unsigned page_shift;
  uint64_t budget_pages;
  uint64_t deadline_ns;
  bool done;
  uint64_t *set;                /* page + 1 of recorded pages; 0: empty */
  size_t set_size;              /* a power of 2 */
};

struct adaptra_recorder *
adaptra_recorder_new (const struct adaptra_profile_key *key,
                      uint64_t budget_pages, uint64_t budget_ns,
                      uint64_t now_ns)
{
  struct adaptra_recorder *r;

  if (budget_pages == 0) {
    errno = EINVAL;
    return NULL;
  }
  r = calloc (1, sizeof *r);
  if (!r)
    return NULL;
  r->p = adaptra_profile_new (key);
  r->set_size = 1024;
  r->set = calloc (r->set_size, sizeof *r->set);
  if (!r->p || !r->set) {
    adaptra_recorder_free (r);
    return NULL;
  }
  r->page_shift = (unsigned) adaptra_log2_exact (key->page_size);
  r->budget_pages = budget_pages < ADAPTRA_PROFILE_PAGES_MAX ? budget_pages
    : ADAPTRA_PROFILE_PAGES_MAX;
  r->deadline_ns = now_ns + budget_ns < now_ns ? UINT64_MAX
    : now_ns + budget_ns;
  return r;
}

void
adaptra_recorder_free (struct adaptra_recorder *r)
{
  if (!r)
    return;
  adaptra_profile_free (r->p);
  free (r->set);
  free (r);
}

static size_t
slot_of (uint64_t page, size_t size)
{
  /* Fibonacci hashing: consecutive pages spread over the table. */
  return (size_t) ((page * UINT64_C (0x9e3779b97f4a7c15)) >> 20) &
    (size - 1);
}

/* Add page to the set; returns 1 if it was new, 0 if present, -1 on
 * ENOMEM.
 */
static int
set_add (struct adaptra_recorder *r, uint64_t page)
{
  size_t i;

  for (i = slot_of (page, r->set_size); r->set[i];
       i = (i + 1) & (r->set_size - 1))
    if (r->set[i] == page + 1)
      return 0;
  /* Grow at half full: the new page is rehashed with the rest. */
  if (2 * (r->p->pages + 1) > r->set_size) {
    size_t n = 2 * r->set_size, j;
    uint64_t *t = calloc (n, sizeof *t);

    if (!t)
      return -1;
    for (j = 0; j < r->set_size; j++)
      if (r->set[j]) {
        size_t k;

        for (k = slot_of (r->set[j] - 1, n); t[k]; k = (k + 1) & (n - 1))
          ;
        t[k] = r->set[j];
      }
    free (r->set);
    r->set = t;
    r->set_size = n;
    for (i = slot_of (page, n); r->set[i]; i = (i + 1) & (n - 1))
      ;
  }
  r->set[i] = page + 1;
  return 1;
}

bool
adaptra_recorder_read (struct adaptra_recorder *r, uint64_t offset,
                       uint64_t count, uint64_t now_ns)
{
  struct adaptra_span span;
  uint64_t page;

  if (r->done)
    return false;
  if (now_ns >= r->deadline_ns) {
    r->done = true;
    return false;
  }
  count = adaptra_clamp_to_size (offset, count, r->p->export_size);
  span = adaptra_span_of (offset, count, r->page_shift);
  for (page = span.first; page < span.last; page++) {
    struct adaptra_profile_extent x = {
      .start = page, .pages = 1, .seen = 1, .missed = 0,
    };
    int added = set_add (r, page);

    /* Out of memory ends the recording where it is: still a valid
     * profile, only shorter.
     */
    if (added == -1 || (added == 1 && append (r->p, &r->cap, &x) == -1)) {
      r->done = true;
      return false;
    }
    if (r->p->pages == r->budget_pages) {
      r->done = true;
      return false;
    }
  }
  return true;
}

uint64_t
adaptra_recorder_pages (const struct adaptra_recorder *r)
{
  return r->p->pages;
}

struct adaptra_profile *
adaptra_recorder_profile (const struct adaptra_recorder *r)
{
  struct adaptra_profile_key key = key_of (r->p);
  struct adaptra_profile *p = adaptra_profile_new (&key);

  if (!p)
    return NULL;
  if (r->p->count > 0) {
    p->extents = malloc (r->p->count * sizeof *p->extents);
    if (!p->extents) {
      adaptra_profile_free (p);
      return NULL;
    }
    memcpy (p->extents, r->p->extents, r->p->count * sizeof *p->extents);
  }
  p->count = r->p->count;
  p->pages = r->p->pages;
  return p;
}

/* ------------------------------------------------------------------ */
/* Matcher. */

struct recent {
  bool match;
  uint64_t now_ns;
  uint64_t position;            /* P after the read */
};

struct adaptra_matcher {
  struct adaptra_matcher_config cfg;
  unsigned page_shift;
  uint64_t export_size;
  size_t count;
  struct adaptra_profile_extent *x;    /* profile order */
  uint64_t *ord;                /* ordinal of each extent's first page */
  uint32_t *idx;                /* extents sorted by start */
  uint64_t total;               /* pages */
  unsigned min_seen;            /* effective: min (cfg, boots) */
  uint64_t *proposed, *read;    /* bitmaps over ordinals */
  uint64_t reorder, lead_max, lead_min;        /* pages */
  uint64_t P, C, S;
  uint64_t far;                 /* ordinal past the last far read, or
                                   UINT64_MAX */
  struct recent ring[ADAPTRA_MATCHER_WINDOW_MAX];
  unsigned ring_next, ring_len;
  /* For the percentage rule: settled proposals and their waste, but
   * for those a jump settled (bitmap jumped).
   */
  uint64_t *jumped;
  uint64_t pct_settled, pct_wasted;
  struct adaptra_matcher_counters c;
};

void
adaptra_matcher_defaults (struct adaptra_matcher_config *cfg)
{
  *cfg = (struct adaptra_matcher_config) {
    .lead_bytes = 8 << 20,
    .lead_min_bytes = 1 << 20,
    .lead_ns = UINT64_C (2000000000),
    .reorder_bytes = 1 << 20,
    .window = 16,
    .waste_bytes = 16 << 20,
    .waste_pct = 50,
    .waste_sample_bytes = 4 << 20,
    .min_seen = 2,
  };
}

const char *
adaptra_matcher_state_name (enum adaptra_matcher_state s)
{
  switch (s) {
  case ADAPTRA_MATCHER_WAITING: return "waiting";
  case ADAPTRA_MATCHER_FOLLOWING: return "following";
  case ADAPTRA_MATCHER_BACKED_OFF: return "backed-off";
  case ADAPTRA_MATCHER_GAVE_UP: return "gave-up";
  }
  return "?";
}

static bool
bit (const uint64_t *map, uint64_t i)
{
  return map[i / 64] >> (i % 64) & 1;
}

static void
set_bit (uint64_t *map, uint64_t i)
{
  map[i / 64] |= UINT64_C (1) << (i % 64);
}

void
adaptra_matcher_free (struct adaptra_matcher *m)
{
  if (!m)
    return;
  free (m->x);
  free (m->ord);
  free (m->idx);
  free (m->proposed);
  free (m->read);
  free (m->jumped);
  free (m);
}

struct adaptra_matcher *
adaptra_matcher_new (const struct adaptra_profile *p,
                     const struct adaptra_matcher_config *cfg)
{
  struct adaptra_matcher *m;
  char why[160];
  size_t i, words;

  if (cfg->window < 1 || cfg->window > ADAPTRA_MATCHER_WINDOW_MAX ||
      adaptra_profile_check (p, why, sizeof why) == -1) {
    errno = EINVAL;
    return NULL;
  }
  m = calloc (1, sizeof *m);
  if (!m)
    return NULL;
  m->cfg = *cfg;
  m->page_shift = (unsigned) adaptra_log2_exact (p->page_size);
  m->export_size = p->export_size;
  m->count = p->count;
  m->total = p->pages;
  words = (size_t) (p->pages / 64 + 1);
  m->x = malloc ((p->count + 1) * sizeof *m->x);
  m->ord = malloc ((p->count + 1) * sizeof *m->ord);
  m->idx = sorted_index (p->extents, p->count);
  m->proposed = calloc (words, sizeof *m->proposed);
  m->read = calloc (words, sizeof *m->read);
  m->jumped = calloc (words, sizeof *m->jumped);
  if (!m->x || !m->ord || !m->idx || !m->proposed || !m->read ||
      !m->jumped) {
    adaptra_matcher_free (m);
    return NULL;
  }
  if (p->count > 0)
    memcpy (m->x, p->extents, p->count * sizeof *m->x);
  m->ord[0] = 0;
  for (i = 0; i < p->count; i++)
    m->ord[i + 1] = m->ord[i] + p->extents[i].pages;
  m->min_seen = cfg->min_seen < p->boots ? cfg->min_seen : p->boots;
  m->reorder = cfg->reorder_bytes >> m->page_shift;
  m->lead_max = cfg->lead_bytes >> m->page_shift;
  m->lead_min = cfg->lead_min_bytes >> m->page_shift;
  if (m->lead_min > m->lead_max)
    m->lead_min = m->lead_max;
  m->far = UINT64_MAX;
  m->c.state = ADAPTRA_MATCHER_WAITING;
  return m;
}

/* Index of the extent holding ordinal o (< total). */
static size_t
extent_at (const struct adaptra_matcher *m, uint64_t o)
{
  size_t lo = 0, hi = m->count;

  /* The last extent whose first ordinal is <= o. */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;

    if (m->ord[mid] <= o)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Move S up to P - reorder, counting proposed pages left unread.
 * The pages a jump (a far match) passed count as waste but not in the
 * percentage rule: that rule is for a client that follows the profile
 * yet reads little of it, and a jump costs at most lead + reorder on
 * its own (so a 16 MiB budget allows about two with the defaults).
 */
static void
settle (struct adaptra_matcher *m, bool jump)
{
  uint64_t to = m->P > m->reorder ? m->P - m->reorder : 0;

  for (; m->S < to; m->S++)
    if (bit (m->proposed, m->S)) {
      bool unread = !bit (m->read, m->S);

      m->c.wasted += unread;
      if (jump)
        set_bit (m->jumped, m->S);
      else {
        m->pct_settled++;
        m->pct_wasted += unread;
      }
    }
}

static bool
over_waste (const struct adaptra_matcher *m)
{
  uint64_t budget = m->cfg.waste_bytes >> m->page_shift;
  uint64_t sample = m->cfg.waste_sample_bytes >> m->page_shift;

  return m->c.wasted > budget ||
    (m->pct_settled >= sample && m->pct_settled > 0 &&
     m->pct_wasted * 100 > m->pct_settled * m->cfg.waste_pct);
}

static void
update_state (struct adaptra_matcher *m)
{
  unsigned i, matches = 0;

  if (m->c.state == ADAPTRA_MATCHER_GAVE_UP)
    return;
  if (over_waste (m)) {
    m->c.state = ADAPTRA_MATCHER_GAVE_UP;
    return;
  }
  if (m->ring_len == 0)
    return;
  for (i = 0; i < m->ring_len; i++)
    matches += m->ring[i].match;
  m->c.state = 2 * matches >= m->ring_len ? ADAPTRA_MATCHER_FOLLOWING
    : ADAPTRA_MATCHER_BACKED_OFF;
}

void
adaptra_matcher_read (struct adaptra_matcher *m, uint64_t offset,
                      uint64_t count, uint64_t now_ns)
{
  struct adaptra_span span;
  uint64_t hi = max_u64 (m->P + m->reorder, m->C);
  uint64_t lo = m->P > m->reorder ? m->P - m->reorder : 0;
  uint64_t near_top = 0, far_top = 0;
  bool fresh = false, near = false, jump = false, in_profile = false;
  size_t i;

  count = adaptra_clamp_to_size (offset, count, m->export_size);
  span = adaptra_span_of (offset, count, m->page_shift);
  if (span.first == span.last)
    return;
  /* The extents overlapping the read's pages, by start. */
  for (i = first_overlap (m->x, m->idx, m->count, span.first);
       i < m->count && m->x[m->idx[i]].start < span.last; i++) {
    size_t e = m->idx[i];
    uint64_t a = max_u64 (m->x[e].start, span.first);
    uint64_t b = min_u64 (m->x[e].start + m->x[e].pages, span.last);
    uint64_t o;

    in_profile = true;
    for (o = m->ord[e] + (a - m->x[e].start);
         o < m->ord[e] + (b - m->x[e].start); o++) {
      if (bit (m->read, o))
        continue;
      set_bit (m->read, o);
      fresh = true;
      if (bit (m->proposed, o)) {
        m->c.hit++;
        if (o < m->S) {
          m->c.wasted--;
          m->pct_wasted -= !bit (m->jumped, o);
        }
      }
      if (o >= lo && o < hi) {
        near = true;
        near_top = max_u64 (o + 1, near_top);
      }
      else if (m->far != UINT64_MAX && o >= m->P &&
               o + m->reorder >= m->far && o < m->far + m->reorder) {
        /* Ahead, but close to the last far read: two reads agree
         * that the client jumped there.
         */
        jump = true;
        near_top = max_u64 (o + 1, near_top);
      }
      else
        far_top = o + 1 > far_top ? o + 1 : far_top;
    }
  }
  if (in_profile && !fresh)
    return;                     /* a re-read: neutral */
  if (near || jump) {
    m->P = max_u64 (m->P, near_top);
    m->C = max_u64 (m->C, m->P);
    m->far = UINT64_MAX;
    m->c.reads_matched++;
    settle (m, jump);
  }
  else {
    /* Far in the profile: remember where, the client may have jumped. */
    m->far = far_top > 0 ? far_top : UINT64_MAX;
    m->c.reads_missed++;
  }
  m->ring[m->ring_next] = (struct recent) {
    .match = near || jump, .now_ns = now_ns, .position = m->P,
  };
  m->ring_next = (m->ring_next + 1) % m->cfg.window;
  if (m->ring_len < m->cfg.window)
    m->ring_len++;
  update_state (m);
}

/* The lead in pages now: the client's rate through the profile over
 * the window's reads times lead_ns, within [lead_min, lead_max].
 */
static uint64_t
lead (const struct adaptra_matcher *m, uint64_t now_ns)
{
  unsigned oldest = m->ring_len < m->cfg.window ? 0 : m->ring_next;
  const struct recent *r = &m->ring[oldest];
  double pages;

  if (m->ring_len < 2 || now_ns <= r->now_ns || m->P <= r->position)
    return m->lead_min;
  pages = (double) (m->P - r->position) * (double) m->cfg.lead_ns /
    (double) (now_ns - r->now_ns);
  if (pages < (double) m->lead_min)
    return m->lead_min;
  if (pages > (double) m->lead_max)
    return m->lead_max;
  return (uint64_t) pages;
}

/* Add pages [page, page + n) to out (merging with the last range
 * where they continue it).  Returns false when out is full.
 */
static bool
add_range (const struct adaptra_matcher *m, struct adaptra_profile_range *out,
           size_t *n, size_t max, uint64_t page, uint64_t pages)
{
  uint64_t off = page << m->page_shift;
  uint64_t len = adaptra_clamp_to_size (off, pages << m->page_shift,
                                        m->export_size);

  if (*n > 0 && out[*n - 1].offset + out[*n - 1].count == off)
    out[*n - 1].count += len;
  else if (*n == max)
    return false;
  else
    out[(*n)++] = (struct adaptra_profile_range) { .offset = off,
                                                   .count = len };
  return true;
}

size_t
adaptra_matcher_next (struct adaptra_matcher *m, uint64_t now_ns,
                      uint64_t max_bytes, struct adaptra_profile_range *out,
                      size_t max)
{
  uint64_t end, room = max_bytes >> m->page_shift;
  size_t n = 0;

  if (m->c.state != ADAPTRA_MATCHER_FOLLOWING || max == 0)
    return 0;
  end = min_u64 (m->P + lead (m, now_ns), m->total);
  /* Extent by extent, the runs of pages the client has not read. */
  while (m->C < end && room > 0) {
    size_t e = extent_at (m, m->C);
    uint64_t stop = min_u64 (m->ord[e + 1], end);
    uint64_t run, o;

    if (m->x[e].seen < m->min_seen) {
      m->C = stop;
      continue;
    }
    while (m->C < stop && bit (m->read, m->C))
      m->C++;
    for (run = m->C; run < stop && run - m->C < room &&
           !bit (m->read, run); run++)
      ;
    if (run == m->C)
      continue;
    if (!add_range (m, out, &n, max, m->x[e].start + (m->C - m->ord[e]),
                    run - m->C))
      break;
    for (o = m->C; o < run; o++)
      set_bit (m->proposed, o);
    m->c.proposed += run - m->C;
    room -= run - m->C;
    m->C = run;
  }
  return n;
}

void
adaptra_matcher_counters (const struct adaptra_matcher *m,
                          struct adaptra_matcher_counters *c)
{
  uint64_t o;

  *c = m->c;
  c->position = m->P;
  c->pending = 0;
  for (o = m->S; o < m->C; o++)
    c->pending += bit (m->proposed, o) && !bit (m->read, o);
}
