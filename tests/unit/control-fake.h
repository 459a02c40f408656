/* control-fake.h: a fake engine behind the control protocol.
 * Copyright (C) 2026 The adaptra authors
 * SPDX-License-Identifier: BSD-3-Clause
 */

/* The engine's side of the control protocol (adaptra/control.h) for
 * test-control and the control fuzz harness (tests/fuzz): a snapshot
 * and fixed rows of streams, clients and exports, with names that need
 * escaping (a quote, a backslash, a newline), counts of the snapshots
 * and resets asked for, and one parameter to get, ratio.  set is the
 * caller's: the unit test records what it was asked, the harness
 * parses for real.
 */

#ifndef ADAPTRA_TEST_CONTROL_FAKE_H
#define ADAPTRA_TEST_CONTROL_FAKE_H

#include "adaptra/control.h"

struct control_fake {
  unsigned snapshots, resets;
  unsigned ratio;               /* what "get ratio" answers */
};

/* The operations over f (their opaque), with the caller's set.  A
 * caller that needs more state embeds f first in its own struct and
 * casts opaque back.
 */
extern struct adaptra_control_ops
control_fake_ops (struct control_fake *f,
                  int (*set) (void *opaque, const char *name,
                              const char *value, char *why, size_t len));

#endif /* ADAPTRA_TEST_CONTROL_FAKE_H */
