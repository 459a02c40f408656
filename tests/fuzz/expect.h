/* expect.h: the fuzz harnesses' contract check.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* A harness checks the contract of what it fuzzes beyond "no crash,
 * no sanitizer report": a broken one is a finding too, so it aborts,
 * and libFuzzer keeps the input as a crash-* file.
 */

#ifndef ADAPTRA_FUZZ_EXPECT_H
#define ADAPTRA_FUZZ_EXPECT_H

#include <stdio.h>
#include <stdlib.h>

static inline void
expect (int ok, const char *what)
{
  if (!ok) {
    fprintf (stderr, "contract broken: %s\n", what);
    abort ();
  }
}

#endif /* ADAPTRA_FUZZ_EXPECT_H */
