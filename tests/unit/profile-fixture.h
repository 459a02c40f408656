/* profile-fixture.h: shared helpers of the profile library's unit tests.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

#ifndef ADAPTRA_PROFILE_FIXTURE_H
#define ADAPTRA_PROFILE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "adaptra/profile.h"

#define PAGE 4096
#define EXPORT_PAGES 65536                      /* 256 MiB */
#define EXPORT_SIZE ((uint64_t) EXPORT_PAGES * PAGE - 100)     /* ragged */
#define MS UINT64_C (1000000)
#define SEC UINT64_C (1000000000)

/* The key of every test profile: "vm1.img", PAGE, EXPORT_SIZE. */
extern const struct adaptra_profile_key key;

struct rd {
  uint64_t offset, count;
};

/* A boot: n reads from seed.  A quarter re-read an earlier read.
 * malloc'd.
 */
extern struct rd *boot_trace (uint32_t seed, size_t n);

/* n reads that never overlap: each in its own 8-page slot of the
 * export, the slots in a shuffled order.  malloc'd.
 */
extern struct rd *slot_trace (size_t n);

/* The recorder's profile of trace t (one read a millisecond). */
extern struct adaptra_profile *record (const struct rd *t, size_t n,
                                       uint64_t budget_pages);

/* A profile of the given extents; seen/missed as given, boots. */
extern struct adaptra_profile *make (const struct adaptra_profile_extent *x,
                                     size_t n, uint32_t boots);

extern void assert_extents (const struct adaptra_profile *p,
                            const struct adaptra_profile_extent *x,
                            size_t n);
extern void assert_same (const struct adaptra_profile *a,
                         const struct adaptra_profile *b);

/* A fresh directory (cmocka group setup and teardown). */
extern char tmpdir[64];
extern int make_tmpdir (void **state);
extern int remove_tmpdir (void **state);

/* Entries in dir, but . and .. */
extern unsigned files_in (const char *dir);

#endif /* ADAPTRA_PROFILE_FIXTURE_H */
