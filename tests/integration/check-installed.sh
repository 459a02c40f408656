#!/usr/bin/env bash
# check-installed.sh: installed files work like any nbdkit filter's.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Checks that installed files work like any nbdkit filter's: nbdkit
# loads the filter and serves through it, --help lists every parameter
# the man page documents (and no other), adaptra-stat and
# adaptra-profile (installed beside it) run, and the man pages render
# without warnings.  Run by test-install.sh on a
# DESTDIR install and by "make installcheck" on the real one.
#
#   check-installed.sh FILTER.so ADAPTRA-STAT MAN1DIR FILTER.pod
#
# NBDKIT_PRELOAD, if set, is preloaded into nbdkit (a sanitizer build's
# runtime, which the uninstrumented nbdkit needs to load the filter),
# and not into the clients.

set -euo pipefail
: "${NBDKIT:=nbdkit}"
nbdkit_run ()
{
  LD_PRELOAD="${NBDKIT_PRELOAD:-}" "$NBDKIT" "$@"
}
filter=$1 stat_tool=$2 man1dir=$3 pod=$4

work=$(mktemp -d /tmp/adaptra-installed.XXXXXX)
trap 'rm -rf "$work"' EXIT

test -f "$filter"
test -x "$stat_tool"

# The filter loads and serves (nbdkit needs the path when the filter
# is not in its own filterdir).
nbdkit_run -U - --filter="$filter" memory 1G \
  --run 'env -u LD_PRELOAD nbdinfo --size "$uri"' > "$work/size"
test "$(cat "$work/size")" -eq $((1024 * 1024 * 1024))
nbdkit_run --filter="$filter" memory 1G --version | grep -q '^adaptra '

# --help and the man page list the same parameters.
nbdkit_run --filter="$filter" memory 1G --help |
  grep -oE '^adaptra-[a-z-]+=' | sort > "$work/help-params"
grep -oE '^=item B<adaptra-[a-z-]+=' "$pod" |
  sed 's/^=item B<//' | sort > "$work/man-params"
test -s "$work/help-params"
diff -u "$work/man-params" "$work/help-params"
echo "parameters: $(tr '\n' ' ' < "$work/help-params")"

"$stat_tool" --help > /dev/null
"$(dirname "$stat_tool")/adaptra-profile" --help > /dev/null

# The pages render, with their NAME line and no groff warnings.
for page in nbdkit-adaptra-filter adaptra-stat adaptra-profile; do
  test -f "$man1dir/$page.1"
  MANWIDTH=80 MANPAGER=cat man --warnings -l "$man1dir/$page.1" \
    > "$work/$page.txt" 2> "$work/$page.warnings"
  grep -q "^NAME" "$work/$page.txt"
  grep -q "$page - " "$work/$page.txt"
  if [ -s "$work/$page.warnings" ]; then
    cat "$work/$page.warnings"
    exit 1
  fi
done
echo "check-installed: $filter works"
