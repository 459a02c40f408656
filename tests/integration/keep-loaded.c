/* keep-loaded.c: keeps the filter loaded in sanitizer runs.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* Preloaded into nbdkit by sanitizer test runs: makes dlclose a no-op.
 *
 * nbdkit unloads the filter and plugin before it exits, and LeakSanitizer
 * then reports their leaks as "<unknown module>" with no stack.  Keeping
 * them mapped lets it name the file and function, and lets
 * tests/integration/lsan.supp suppress leaks that belong to nbdkit's own
 * plugins rather than to adaptra.
 */

#include <config.h>

int
dlclose (void *handle)
{
  return 0;
}
