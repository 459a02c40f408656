# functions.sh: what the Debian tests share, sourced by each of them.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause

# skip WHY: exit 77, which make check and scripts/check count as skipped.
skip () { echo "$0: SKIP: $*"; exit 77; }
# fail WHY: the test failed.
fail () { echo "$0: FAIL: $*" >&2; exit 1; }
# step WHAT: prints what was just done and its seconds (since the last step).
step_start=$SECONDS
step ()
{
  echo "$(basename "$0" .sh): $* (+$((SECONDS - step_start)) s)"
  step_start=$SECONDS
}
