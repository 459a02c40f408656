#!/usr/bin/env bash
# adaptra: adaptive read-ahead for nbdkit
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# "make install" into a staging directory (DESTDIR), then the staged
# files must work like any nbdkit filter's: nbdkit loads the filter
# from the filterdir path and serves, --help lists every parameter the
# man page documents (and no other), adaptra-stat runs, both man pages
# render without warnings, and "make uninstall" removes everything.
#
# make check runs this in the build directory, where the Makefile is.

source "$(dirname "$0")/functions.sh"
requires make --version
requires man --version
requires test -f Makefile

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
dest="$tmpdir/dest"
# The directories as this build's Makefile expands them (distcheck
# configures its own filterdir): an extra makefile only prints them.
echo 'print-dirs: ; @echo $(filterdir) $(bindir) $(mandir)' \
  > "$tmpdir/print-dirs.mk"
read -r filterdir bindir mandir < <(
  make -s --no-print-directory -f Makefile -f "$tmpdir/print-dirs.mk" \
    print-dirs)
test -n "$mandir"
make -s --no-print-directory install DESTDIR="$dest" \
  > "$tmpdir/install.log" 2>&1 || { cat "$tmpdir/install.log"; exit 1; }

filter="$dest$filterdir/nbdkit-adaptra-filter.so"
stat_tool="$dest$bindir/adaptra-stat"
test -f "$filter"
test -x "$stat_tool"
echo "installed: $filterdir/nbdkit-adaptra-filter.so, $bindir/adaptra-stat"
# Unless configured --with-filterdir (distcheck), the filter goes where
# nbdkit looks for --filter=adaptra.
if [ "$filterdir" != "$("$NBDKIT" --dump-config | sed -n 's/^filterdir=//p')" ]
then
  echo "(configured --with-filterdir: not nbdkit's own filterdir)"
fi

# The installed filter loads and serves (uninstrumented nbdkit, so no
# sanitizer preload: the installed filter is the same build).
"$NBDKIT" -U - --filter="$filter" memory 1G \
  --run "$client"' nbdinfo --size "$uri"' > "$tmpdir/size"
test "$(cat "$tmpdir/size")" -eq $((1024 * 1024 * 1024))
"$NBDKIT" --filter="$filter" memory 1G --version | grep -q '^adaptra '

# --help and the man page list the same parameters.
"$NBDKIT" --filter="$filter" memory 1G --help |
  grep -oE '^adaptra-[a-z-]+=' | sort > "$tmpdir/help-params"
grep -oE '^=item B<adaptra-[a-z-]+=' \
  "$srcdir/plugin/nbdkit-adaptra-filter.pod" |
  sed 's/^=item B<//' | sort > "$tmpdir/man-params"
test -s "$tmpdir/help-params"
diff -u "$tmpdir/man-params" "$tmpdir/help-params"
echo "parameters: $(tr '\n' ' ' < "$tmpdir/help-params")"

"$stat_tool" --help > /dev/null

# Both pages render, with their NAME section and no groff warnings.
for page in nbdkit-adaptra-filter adaptra-stat; do
  file="$dest$mandir/man1/$page.1"
  test -f "$file"
  MANWIDTH=80 MANPAGER=cat man --warnings -l "$file" \
    > "$tmpdir/$page.txt" 2> "$tmpdir/$page.warnings"
  grep -q "^NAME" "$tmpdir/$page.txt"
  grep -q "$page - " "$tmpdir/$page.txt"
  if [ -s "$tmpdir/$page.warnings" ]; then
    cat "$tmpdir/$page.warnings"
    exit 1
  fi
done

make -s --no-print-directory uninstall DESTDIR="$dest" \
  > "$tmpdir/uninstall.log" 2>&1 || { cat "$tmpdir/uninstall.log"; exit 1; }
left=$(find "$dest" -type f | wc -l)
test "$left" -eq 0
echo "test-install: ok"
