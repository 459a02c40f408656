/* libFuzzer harness for the profile loader (core/profile.c): every
 * input is a profile file.
 *
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Beyond "no crash, no sanitizer report", the loader's contract is
 * checked, on the input and on the input with its checksum made
 * right: a refusal always says why, in one line; what it accepts
 * passes adaptra_profile_check, encodes back to the very same bytes
 * (nothing in a file is ignored), loads again under its own key and
 * under no other; and the merge and the matcher, fed the accepted
 * profile and reads drawn from the input, keep their invariants (the
 * merge's result passes the check; every proposed page is a hit,
 * wasted or pending, and proposals stay inside the export and within
 * max_bytes).
 */

#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptra/profile.h"
#include "expect.h"

static void
check_matcher (const struct adaptra_profile *p, const uint8_t *data,
               size_t size)
{
  struct adaptra_matcher_config cfg;
  struct adaptra_matcher_counters c;
  struct adaptra_profile_range r[4];
  struct adaptra_matcher *m;
  size_t i, k, n;
  uint64_t now = 0;

  adaptra_matcher_defaults (&cfg);
  cfg.min_seen = data[size - 1] % 3;
  m = adaptra_matcher_new (p, &cfg);
  expect (m != NULL, "matcher refuses a valid profile");
  /* The profile's own extents in order, then pages the input's last
   * bytes pick: a follower, then a stranger.
   */
  for (i = 0; i < p->count + 64 && i < 4096; i++, now += 1000000) {
    uint64_t off, len, room, bytes = 0;

    if (i < p->count) {
      off = p->extents[i].start * p->page_size;
      len = (uint64_t) (1 + i % 3) * p->page_size;
    }
    else {
      off = (uint64_t) data[(i * 7) % size] * 8191 * p->page_size %
        p->export_size;
      len = 1 + data[(i * 13) % size] * 97;
    }
    /* What the engine would take now: anything, or a few pages. */
    room = data[i % size] & 1 ? UINT64_MAX
      : (uint64_t) data[(i * 3) % size] * 1000;
    adaptra_matcher_read (m, off, len, now);
    n = adaptra_matcher_next (m, now, room, r, 4);
    expect (n <= 4, "more ranges than asked for");
    for (k = 0; k < n; k++) {
      expect (r[k].count > 0 && r[k].offset < p->export_size &&
              r[k].count <= p->export_size - r[k].offset,
              "a proposal outside the export");
      bytes += r[k].count;
    }
    expect (bytes <= room, "more bytes than max_bytes");
    adaptra_matcher_counters (m, &c);
    expect (c.proposed == c.hit + c.wasted + c.pending,
            "proposed != hit + wasted + pending");
  }
  adaptra_matcher_free (m);
}

/* The contract on one file. */
static void
check_file (const uint8_t *data, size_t size)
{
  struct adaptra_profile *p, *q, *m;
  struct adaptra_profile_key key, other;
  unsigned char *buf;
  size_t len;
  char why[512] = "";

  p = adaptra_profile_decode (data, size, NULL, why, sizeof why);
  if (!p) {
    expect (why[0] != '\0' && strchr (why, '\n') == NULL,
            "a refusal without a one-line reason");
    return;
  }
  expect (adaptra_profile_check (p, why, sizeof why) == 0,
          "accepted a profile that fails the check");
  expect (adaptra_profile_encode (p, &buf, &len) == 0, "encode failed");
  expect (len == size && memcmp (buf, data, size) == 0,
          "re-encoding differs from the input");
  free (buf);
  key = (struct adaptra_profile_key) {
    .identity = p->identity, .page_size = p->page_size,
    .export_size = p->export_size,
  };
  q = adaptra_profile_decode (data, size, &key, why, sizeof why);
  expect (q != NULL, "refused under its own key");
  adaptra_profile_free (q);
  other = key;
  other.export_size = key.export_size == 1 ? 2 : key.export_size - 1;
  q = adaptra_profile_decode (data, size, &other, why, sizeof why);
  expect (q == NULL, "accepted under another export size");

  m = adaptra_profile_merge (p, p, UINT64_MAX);
  expect (m != NULL && adaptra_profile_check (m, why, sizeof why) == 0,
          "merge of a valid profile fails the check");
  expect (m->pages == p->pages, "merging a profile with itself lost pages");
  adaptra_profile_free (m);
  m = adaptra_profile_merge (NULL, p, 1 + size % 64);
  expect (m != NULL && m->pages <= 1 + size % 64, "merge over its budget");
  adaptra_profile_free (m);

  check_matcher (p, data, size);
  adaptra_profile_free (p);
}

/* The input as it is, and resealed: random bytes almost never carry
 * the right FNV-1a, and the checks past it deserve the fuzzing too.
 */
int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  unsigned char *copy;

  check_file (data, size);
  if (size < ADAPTRA_PROFILE_HEADER)
    return 0;
  copy = malloc (size);
  if (!copy)
    return 0;
  memcpy (copy, data, size);
  adaptra_profile_seal (copy, size);
  if (memcmp (copy, data, size) != 0)
    check_file (copy, size);
  free (copy);
  return 0;
}
