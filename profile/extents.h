/* extents.h: what the profile library's files share about a profile.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Internal to profile/: the public contract is include/adaptra/
 * profile.h.  None of these is thread-safe; the caller serialises
 * calls on each profile.
 */

#ifndef ADAPTRA_PROFILE_EXTENTS_H
#define ADAPTRA_PROFILE_EXTENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptra/profile.h"

/* The key p belongs to (pointing into p). */
extern struct adaptra_profile_key profile_key_of (
  const struct adaptra_profile *p);

extern bool profile_same_key (const struct adaptra_profile_key *a,
                              const struct adaptra_profile_key *b);

/* The export's size in pages of p's page size. */
extern uint64_t profile_export_pages (const struct adaptra_profile *p);

/* Append an extent, joining it to the last one where it continues it
 * with the same weights.  Returns 0, or -1 (ENOMEM, or EOVERFLOW past
 * the extent limit).  *cap is the allocated size of p->extents.
 */
extern int profile_append (struct adaptra_profile *p, size_t *cap,
                           const struct adaptra_profile_extent *x);

/* An array of the n extents' indices sorted by start, or NULL
 * (ENOMEM).
 */
extern uint32_t *profile_sorted_index (const struct adaptra_profile_extent *x,
                                       size_t n);

/* The position in idx (x's extents sorted by start) of the first
 * extent that ends after page start: the first that may hold it.
 */
extern size_t profile_first_overlap (const struct adaptra_profile_extent *x,
                                     const uint32_t *idx, size_t n,
                                     uint64_t start);

#endif /* ADAPTRA_PROFILE_EXTENTS_H */
