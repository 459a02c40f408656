#!/usr/bin/env bash
# test-install.sh: make install into a staging directory.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# "make install" into a staging directory (DESTDIR): the files land in
# the configured directories, work (check-installed.sh), and "make
# uninstall" removes every one of them.
#
# make check runs this in the build directory, where the Makefile is.

source "$(dirname "$0")/functions.sh"
requires make --version
requires man --version
requires nbdinfo --version
requires test -f Makefile

here=$(cd "$(dirname "$0")" && pwd)
dest="$tmpdir/dest"
# A make of our own, not a child of make check's: no jobserver, no
# "Entering directory" lines in the output parsed below.
submake ()
{
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "$@"
}
# The directories as this build's Makefile expands them (distcheck
# configures its own filterdir): an extra makefile only prints them.
echo 'print-dirs: ; @echo $(filterdir) $(bindir) $(man1dir)' \
  > "$tmpdir/print-dirs.mk"
read -r filterdir bindir man1dir < <(
  submake -f Makefile -f "$tmpdir/print-dirs.mk" print-dirs)
test -n "$man1dir"
submake install DESTDIR="$dest" \
  > "$tmpdir/install.log" 2>&1 || { cat "$tmpdir/install.log"; exit 1; }

echo "installed: $filterdir/nbdkit-adaptra-filter.so, $bindir/adaptra-stat"
# Unless configured --with-filterdir (distcheck), the filter goes where
# nbdkit looks for --filter=adaptra.
if [ "$filterdir" != "$("$NBDKIT" --dump-config | sed -n 's/^filterdir=//p')" ]
then
  echo "(configured --with-filterdir: not nbdkit's own filterdir)"
fi

# The installed filter is this build: a sanitizer build needs the
# same preload as the build tree's.
NBDKIT_PRELOAD="$preload" bash "$here/check-installed.sh" \
  "$dest$filterdir/nbdkit-adaptra-filter.so" "$dest$bindir/adaptra-stat" \
  "$dest$man1dir" "$here/../../plugin/nbdkit-adaptra-filter.pod"

submake uninstall DESTDIR="$dest" \
  > "$tmpdir/uninstall.log" 2>&1 || { cat "$tmpdir/uninstall.log"; exit 1; }
left=$(find "$dest" -type f | wc -l)
test "$left" -eq 0
echo "test-install: ok"
