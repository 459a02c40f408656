#!/usr/bin/env bash
# test-deb.sh: the Debian package, built, installed, used and purged.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# The Debian package, end to end: builds nbdkit-adaptra-filter with
# dpkg-buildpackage -us -uc -b in a copy of the tracked files (or takes
# the one tests/debian/test-build-chroot.sh built, ADAPTRA_DEB_DIR
# below), checks it with lintian, installs it with dpkg -i, serves an
# image through the installed filter (--filter=adaptra, by name: nbdkit
# finds it only in its filterdir), compares what nbdcopy reads, checks
# adaptra-stat, the man pages and the example systemd units, then
# purges the package and checks that none of its files is left.
#
#   tests/debian/test-deb.sh
#
# It installs into the system, so it needs root, and scripts/check runs
# it alone after the other tests.  Exits 77 (skip) when not root, when
# a tool it needs is missing (scripts/install-deps installs them), when
# not in a git checkout, or when a filter named adaptra is already
# installed (the test would replace and then remove it).  Writes only
# under a temporary directory and, while it runs, the package's files
# (and dpkg's database).

set -euo pipefail

source "$(dirname "$0")/functions.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
pkg=nbdkit-adaptra-filter

[ "$(id -u)" -eq 0 ] || skip "needs root (dpkg -i, dpkg --purge)"
for tool in dpkg-buildpackage dh lintian git nbdkit nbdcopy man; do
  command -v "$tool" > /dev/null || skip "$tool is not installed"
done
git -C "$top" rev-parse --git-dir > /dev/null 2>&1 || skip "not a git checkout"

filterdir=$(nbdkit --dump-config | sed -n 's/^filterdir=//p')
so=$filterdir/nbdkit-adaptra-filter.so
[ -n "$filterdir" ] || fail "nbdkit --dump-config names no filterdir"
status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || :)
case $status in
  ""|*not-installed) ;;
  *) skip "$pkg is already on this system ($status)" ;;
esac
[ ! -e "$so" ] || skip "$so exists (make install?), and is not the package's"

work=$(mktemp -d /tmp/adaptra-deb.XXXXXX)
installed=no
sa_pid=
cleanup ()
{
  if [ -n "$sa_pid" ]; then kill "$sa_pid" 2>/dev/null || :; fi
  if [ "$installed" = yes ]; then dpkg --purge "$pkg" > /dev/null 2>&1 || :; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Build in a copy of the tracked files: dpkg-buildpackage builds in the
# tree it is given and writes the .deb, .changes and .buildinfo to its
# parent, here $work.  The checkout must not change.
tree_before=$(git -C "$top" status --porcelain --ignored)
src=$work/adaptra
mkdir "$src"
(cd "$top" && git ls-files -z | xargs -0 cp --parents -t "$src")
version=$(cd "$src" && dpkg-parsechangelog -S Version)
upstream=$(sed -n 's/^AC_INIT(\[adaptra\], \[\([^]]*\)\]).*/\1/p' "$top/configure.ac")
[ "${version%-*}" = "$upstream" ] ||
  fail "debian/changelog is at $version, configure.ac at $upstream"
arch=$(dpkg --print-architecture)
deb=$work/${pkg}_${version}_${arch}.deb
changes=$work/adaptra_${version}_${arch}.changes

# ADAPTRA_DEB_DIR=DIR: the package test-build-chroot.sh built from
# these files (scripts/check sets it for both), checked and installed
# here as this test's own build would be; without it, or when DIR has
# no package of this version, the test builds one.
if [ -n "${ADAPTRA_DEB_DIR:-}" ] && [ -f "$ADAPTRA_DEB_DIR/$(basename "$deb")" ] &&
   [ -f "$ADAPTRA_DEB_DIR/$(basename "$changes")" ]; then
  cp "$ADAPTRA_DEB_DIR"/*.deb "$ADAPTRA_DEB_DIR"/*.changes \
    "$ADAPTRA_DEB_DIR"/*.buildinfo "$work"/
  step "took $(basename "$deb") from $ADAPTRA_DEB_DIR (the chroot's build)"
else
  # Not in make's jobserver, if make started us.
  if ! (cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
          dpkg-buildpackage -us -uc -b -J) > "$work/build.log" 2>&1; then
    tail -n 60 "$work/build.log"
    fail "dpkg-buildpackage failed"
  fi
  [ -f "$deb" ] && [ -f "$changes" ] || fail "no $deb or $changes"
  [ "$(git -C "$top" status --porcelain --ignored)" = "$tree_before" ] ||
    fail "the build changed the checkout"
  step "built $(basename "$deb")"
fi

# Lintian on the .changes checks it, the .buildinfo and both .debs.
# Tags that stay are overridden in debian/*.lintian-overrides, each with
# its reason; any other error, warning or info fails.  (Not with
# --show-overrides: lintian 2.116 then fails on the overridden tags.)
lintian --pedantic --display-info --fail-on error,warning,info \
  "$changes" > "$work/lintian.log" 2>&1 ||
  { cat "$work/lintian.log"; fail "lintian"; }
grep -v '^running with root' "$work/lintian.log" || :
step "lintian"

# The package's regular files, as paths on the system.
dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -n 's|^\./\(.*[^/]\)$|/\1|p' \
  > "$work/files"
for f in "$so" /usr/bin/adaptra-stat \
    /usr/share/man/man1/nbdkit-adaptra-filter.1.gz \
    /usr/share/man/man1/adaptra-stat.1.gz \
    /usr/share/doc/$pkg/copyright \
    /usr/share/doc/$pkg/examples/adaptra.socket \
    /usr/share/doc/$pkg/examples/adaptra.service; do
  grep -qxF "$f" "$work/files" || fail "$f is not in the package"
done
! grep -E '\.la$' "$work/files" || fail "the package ships a .la file"

# Install.  A system whose dpkg excludes man pages or docs (Debian's
# slim images) would drop the files checked below: include ours.
installed=yes
dpkg -i --path-include="/usr/share/man/man1/*adaptra*" \
     --path-include="/usr/share/doc/$pkg/*" "$deb" > "$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log"; fail "dpkg -i"; }
[ "$(dpkg-query -W -f='${Status} ${Version}' "$pkg")" = \
  "install ok installed $version" ] || fail "$pkg $version is not installed"
[ "$(dpkg -S "$so")" = "$pkg: $so" ] || fail "$so is not the package's"
# The postinst's system user and group, which the example units use.
[ "$(id -gn adaptra 2>/dev/null)" = adaptra ] ||
  fail "the package created no system user and group adaptra"
step "installed"

# It depends on exactly the upstream version of the installed nbdkit,
# the one that accepts the filter (any Debian revision of it).
nbdkit_version=$(dpkg-query -W -f='${Version}' nbdkit)
nbdkit_upstream=${nbdkit_version%-*}
depends=$(dpkg-query -W -f='${Depends}' "$pkg")
case ", $depends," in
  *", nbdkit (>= $nbdkit_upstream), nbdkit (<< $nbdkit_upstream.~),"*) ;;
  *) fail "Depends: $depends: not tied to nbdkit $nbdkit_upstream" ;;
esac
[ "$(nbdkit --version)" = "nbdkit ${nbdkit_upstream#*:}" ] ||
  fail "nbdkit --version is not ${nbdkit_upstream#*:}"

# Serve an image through the installed filter, by name, and read it
# back with a libnbd client; the filter's own counters (through the
# installed adaptra-stat) show the bytes went through it.
size=$((64 * 1024 * 1024))
head -c "$size" /dev/urandom > "$work/disk.img"
nbdkit -U - --filter=adaptra file "$work/disk.img" \
  adaptra-stats="$work/stats.sock" \
  --run "nbdcopy \"\$uri\" '$work/copy.img' &&
         adaptra-stat '$work/stats.sock' --json > '$work/stats.json'"
cmp "$work/disk.img" "$work/copy.img" || fail "nbdcopy read other bytes"
grep -q "\"client_bytes\":$size[,}]" "$work/stats.json" ||
  fail "adaptra did not serve the $size bytes: $(cat "$work/stats.json")"
grep -q '"readahead":[1-9]' "$work/stats.json" ||
  fail "adaptra read nothing ahead: $(cat "$work/stats.json")"
step "served and read $size bytes through --filter=adaptra"

# The same under socket activation, as the example adaptra.socket and
# adaptra.service run it: nbdkit takes the listening socket from its
# environment (no -U) and serves every connection.
if command -v systemd-socket-activate > /dev/null; then
  rm -f "$work/copy.img"
  systemd-socket-activate -l "$work/nbd.sock" \
    nbdkit --filter=adaptra file "$work/disk.img" \
    adaptra-stats="$work/sa-stats.sock" > "$work/sa.log" 2>&1 &
  sa_pid=$!
  for _ in $(seq 100); do [ -S "$work/nbd.sock" ] && break; sleep 0.1; done
  nbdcopy --connections=2 "nbd+unix:///?socket=$work/nbd.sock" "$work/copy.img" ||
    { cat "$work/sa.log"; fail "nbdcopy under socket activation"; }
  cmp "$work/disk.img" "$work/copy.img" || fail "socket activation: other bytes"
  adaptra-stat "$work/sa-stats.sock" --json | grep -q "\"client_bytes\":$size[,}]" ||
    fail "socket activation: the bytes did not go through adaptra"
  kill "$sa_pid"
  wait "$sa_pid" || :
  sa_pid=
  [ ! -e "$work/sa-stats.sock" ] || fail "nbdkit left its statistics socket"
  step "served under socket activation"
else
  echo "test-deb: no systemd-socket-activate, socket activation not tried"
fi

# The tools and the pages.
[ "$(command -v adaptra-stat)" = /usr/bin/adaptra-stat ] ||
  fail "adaptra-stat is not /usr/bin/adaptra-stat"
adaptra-stat --help | grep -q '^usage: adaptra-stat ' || fail "adaptra-stat --help"
for page in nbdkit-adaptra-filter adaptra-stat; do
  [ "$(man -w "$page")" = "/usr/share/man/man1/$page.1.gz" ] ||
    fail "man -w $page: $(man -w "$page" 2>&1)"
done
# The example units parse and name existing commands and pages.
if command -v systemd-analyze > /dev/null; then
  systemd-analyze verify /usr/share/doc/$pkg/examples/adaptra.socket \
    /usr/share/doc/$pkg/examples/adaptra.service || fail "the example units"
fi
# docs/DEPLOYMENT.md shows the units' working lines: each is in the unit.
for unit in adaptra.socket adaptra.service; do
  sed 's/^[[:space:]]*//' "/usr/share/doc/$pkg/examples/$unit" > "$work/unit"
  awk -v head="\`$unit\`:" '
    $0 == head { on = 1; next }
    on && /^[^ ]/ { exit }
    on && NF { sub(/^ +/, ""); print }' "$top/docs/DEPLOYMENT.md" > "$work/shown"
  [ -s "$work/shown" ] || fail "docs/DEPLOYMENT.md does not show $unit"
  while IFS= read -r line; do
    grep -qxF -- "$line" "$work/unit" ||
      fail "docs/DEPLOYMENT.md shows '$line', not in $unit"
  done < "$work/shown"
done
step "adaptra-stat, man pages, units"

# Purge: nothing of the package is left, and nbdkit no longer finds it.
dpkg --purge "$pkg" > "$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg --purge"; }
installed=no
[ -z "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -v not-installed)" ] ||
  fail "$pkg is still known to dpkg"
while read -r f; do
  [ ! -e "$f" ] || fail "$f is left after dpkg --purge"
done < "$work/files"
[ ! -e "/usr/share/doc/$pkg" ] || fail "/usr/share/doc/$pkg is left"
! nbdkit --filter=adaptra null --version > /dev/null 2>&1 ||
  fail "nbdkit still loads --filter=adaptra"
step "purged: $(wc -l < "$work/files") files gone"
echo "test-deb: ok"
