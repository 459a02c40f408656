#!/usr/bin/env bash
# test-design-constants.sh: DESIGN.md names only constants, parameters and files that exist.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# docs/DESIGN.md names constants (`ADAPTRA_STREAM_LAG`) instead of
# restating their values, parameters (`adaptra-workers`) instead of
# their defaults, and the files that hold each mechanism.  A rename in
# the code must not leave the document pointing at nothing: this test
# fails, listing them, for every name in backquotes that is
#   - an upper-case constant that no #define or enum in the sources
#     declares,
#   - an adaptra-NAME that is neither a row of the parameter table
#     (core/config.c) nor one of the tools,
#   - a path or file name that is not in the tree.

set -euo pipefail
: "${srcdir:=.}"
doc=${1:-$srcdir/docs/DESIGN.md}
code_dirs=()
for d in core control plugin profile sim include tests/unit; do
  [ -d "$srcdir/$d" ] || continue
  code_dirs+=("$srcdir/$d")
done

# Every span in backquotes, one a line.
spans=$(grep -o '`[^`]*`' "$doc" | tr -d '`' | sort -u)
missing=()

# Constants: NAME_WITH_UNDERSCORES anywhere in a span, or a span that
# is one upper-case word.  The C library's and POSIX's names are not
# ours to declare.
system_names='^(NDEBUG|O_EXCL|O_CREAT|O_TRUNC|EXIT_FAILURE|EXIT_SUCCESS|CLOCK_THREAD_CPUTIME_ID)$'
for name in $( (grep -oE '\b[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\b' <<< "$spans"
                grep -E '^[A-Z][A-Z0-9]{2,}$' <<< "$spans") |
              grep -vE "$system_names" | sort -u); do
  grep -rqE --include='*.[ch]' \
    "^[[:space:]]*#[[:space:]]*define[[:space:]]+$name\b|^[[:space:]]+$name[[:space:]]*(=[^=]|,|$)" \
    "${code_dirs[@]}" || missing+=("constant $name")
done

for name in $(grep -oE '\badaptra-[a-z][a-z-]*[a-z]' <<< "$spans" | sort -u); do
  grep -qE "^[[:space:]]*\{ \"${name#adaptra-}\"," "$srcdir/core/config.c" ||
    [ -e "$srcdir/plugin/$name.c" ] || [ -e "$srcdir/sim/$name.c" ] ||
    missing+=("parameter or tool $name")
done

while read -r span; do
  case $span in
    */*)
      [ -e "$srcdir/$span" ] || missing+=("file $span") ;;
    *)
      [ -n "$(find "${code_dirs[@]}" -name "$span" -print -quit)" ] ||
        missing+=("file $span") ;;
  esac
done < <(grep -E '^[A-Za-z0-9_./-]+\.(c|h|md|sh|py|pod)$' <<< "$spans" || true)

if [ ${#missing[@]} -gt 0 ]; then
  echo "$doc names what does not exist:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "$doc: every constant, parameter and file it names exists"
