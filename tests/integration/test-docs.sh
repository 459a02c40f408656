#!/usr/bin/env bash
# test-docs.sh: README and man page match the parameter and command tables.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# nbdkit --help is generated from the one parameter table
# (core/config.c) and the control socket's "help" from the one command
# table (control/control.c); check_docs.py compares both with
# README.md's parameter table and protocol list and with the man page's
# SYNOPSIS, PARAMETERS and STATISTICS AND CONTROL.  Every tool
# Makefile.am installs (bin_PROGRAMS) is named in the README and
# docs/DEPLOYMENT.md (the package's contents), in the Debian package's
# description and in the filter page's SEE ALSO; its --help names the
# options its man page has an =item for, its --version (where either
# names it) prints the version, and adaptra-profile's usage lines are
# its page's SYNOPSIS (check_tools.py).
# Every adaptra-stat command line the README, the documents in docs/
# and the man pages show runs as written against a live server
# (check_doc_commands.py).  Every tuning number, a #define with a
# numeric value in core/, plugin/, control/ or sim/, is named in
# docs/DESIGN.md, another document or a man page, but for the few that
# check_numbers.py lists as no tuning numbers (check_numbers.py).

source "$(dirname "$0")/functions.sh"
: "${srcdir:=.}"

/usr/bin/python3 "$srcdir/tests/integration/check_numbers.py" "$srcdir"

run_nbdkit null --help > "$tmpdir/nbdkit-help"

sock=$tmpdir/stats.sock
run_nbdkit -U "$tmpdir/nbd.sock" null adaptra-stats="$sock" \
  --run "$client adaptra-stat '$sock' --command help" > "$tmpdir/control-help"

/usr/bin/python3 "$srcdir/tests/integration/check_docs.py" \
  "$tmpdir/nbdkit-help" "$tmpdir/control-help" \
  "$srcdir/README.md" "$srcdir/plugin/nbdkit-adaptra-filter.pod"

programs=$(sed -n 's|^bin_PROGRAMS +\{0,1\}= *\([a-z]*/adaptra-[a-z]*\)$|\1|p' \
             "$srcdir/Makefile.am")
version=$(sed -n 's/^AC_INIT(\[adaptra\], \[\([^]]*\)\])$/\1/p' \
            "$srcdir/configure.ac")
test -n "$version"
test "$(echo "$programs" | wc -w)" -ge 3
tools=
for program in $programs; do
  tool=${program#*/}
  tools="$tools $tool"
  # (Built in the build tree, the current directory; the page beside
  # its source.)
  /usr/bin/python3 "$srcdir/tests/integration/check_tools.py" \
    "$program" "$srcdir/$program.pod" "$version"
  for doc in README.md docs/DEPLOYMENT.md; do
    grep -q "\`$tool\`" "$srcdir/$doc" ||
      { echo "$doc does not name $tool"; exit 1; }
  done
  # (A release tarball has no debian/: make dist leaves it out.)
  if [ -f "$srcdir/debian/control" ]; then
    sed -n '/^Description:/,$p' "$srcdir/debian/control" | grep -qw "$tool" ||
      { echo "debian/control's description does not name $tool"; exit 1; }
  fi
  sed -n '/^=head1 SEE ALSO/,/^=head1/p' \
      "$srcdir/plugin/nbdkit-adaptra-filter.pod" | grep -q "L<$tool(1)>" ||
    { echo "nbdkit-adaptra-filter(1)'s SEE ALSO lacks $tool(1)"; exit 1; }
done
echo "tools: $tools"

start_server docs null 1M
$client /usr/bin/python3 "$srcdir/tests/integration/check_doc_commands.py" \
  "$stats" "$srcdir/README.md" "$srcdir"/docs/*.md "$srcdir"/plugin/*.pod
