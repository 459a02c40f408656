#!/usr/bin/env bash
# test-build-chroot.sh: the package builds in a clean Debian 12 chroot.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# debian/control's Build-Depends are complete: a minimal Debian 12
# chroot (debootstrap's buildd variant: essential packages and
# build-essential) gets only the declared build dependencies (apt-get
# build-dep on the source tree), and dpkg-buildpackage -us -uc -b must
# then build the package, as a clean builder (sbuild, a CI builder)
# would.  A test-deb.sh on a development machine cannot see a missing
# Build-Depends, since the machine has everything.
#
#   tests/debian/test-build-chroot.sh
#
# Needs root, debootstrap, and a Debian mirror (the one apt uses here);
# exits 77 (skip) without them.  Writes under a temporary directory,
# which it removes, and keeps the bare chroot in /var/cache/adaptra/.  Prints the seconds of each step.
# With ADAPTRA_DEB_DIR=DIR, it leaves the package it built in DIR (the
# .debs, .changes and .buildinfo), where tests/debian/test-deb.sh takes
# it instead of building it again.

set -euo pipefail

source "$(dirname "$0")/functions.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
suite=bookworm

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot)"
command -v debootstrap > /dev/null || skip "debootstrap is not installed"
git -C "$top" rev-parse --git-dir > /dev/null 2>&1 || skip "not a git checkout"

# The mirror apt uses on this machine (deb822 or one-line sources).
mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' \
           /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] ||
  mirror=$(awk '$1 == "deb" && $3 == "'"$suite"'" { print $2; exit }' \
             /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || skip "no Debian mirror in apt's sources"

work=$(mktemp -d /tmp/adaptra-chroot.XXXXXX)
root=$work/root
cleanup ()
{
  umount "$root/proc" 2>/dev/null || :
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# The bare buildd chroot is kept as a tarball, as pbuilder keeps its
# base.tgz, and made again once it is older than BASE_MAX_DAYS: what
# the test proves, the declared Build-Depends, is installed afresh in
# every run.
base_cache=/var/cache/adaptra/$suite-buildd.tar
BASE_MAX_DAYS=7
if [ -n "$(find "$base_cache" -mtime -"$BASE_MAX_DAYS" 2>/dev/null)" ]; then
  mkdir -p "$root"
  tar -C "$root" -xf "$base_cache" ||
    fail "unpacking the cached chroot $base_cache"
else
  if ! debootstrap --variant=buildd "$suite" "$root" "$mirror" \
       > "$work/debootstrap.log" 2>&1; then
    tail -n 20 "$work/debootstrap.log"
    skip "debootstrap $suite $mirror failed (no mirror reachable?)"
  fi
  mkdir -p "$(dirname "$base_cache")"
  tar -C "$root" -cf "$base_cache.tmp" . && mv "$base_cache.tmp" "$base_cache"
fi
step "a bare buildd chroot of $suite (debootstrap, or its cached tarball)"
mount -t proc proc "$root/proc"

mkdir -p "$root/build/adaptra"
(cd "$top" && git ls-files -z | xargs -0 cp --parents -t "$root/build/adaptra")

# in_chroot CMD: runs CMD in the source tree inside the chroot.
in_chroot ()
{
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive HOME=/root LC_ALL=C.UTF-8 \
    /bin/sh -c "cd /build/adaptra && $1"
}

in_chroot 'apt-get update -q && apt-get build-dep -y -q ./' \
  > "$work/build-dep.log" 2>&1 ||
  { tail -n 30 "$work/build-dep.log"; fail "apt-get build-dep"; }
step "apt-get build-dep: $(grep -c '^Setting up ' "$work/build-dep.log") packages"

in_chroot 'dpkg-buildpackage -us -uc -b' > "$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log"
  # configure's own verdict (a missing library) is above config.log's dump.
  grep -m 1 '^configure: error:' "$work/build.log" || :
  fail "dpkg-buildpackage in a clean $suite"
}
ls "$root"/build/nbdkit-adaptra-filter_*.deb > /dev/null ||
  fail "no .deb was built"
step "dpkg-buildpackage: $(basename "$root"/build/nbdkit-adaptra-filter_*.deb)"
if [ -n "${ADAPTRA_DEB_DIR:-}" ]; then
  cp "$root"/build/*.deb "$root"/build/*.changes "$root"/build/*.buildinfo \
    "$ADAPTRA_DEB_DIR"/ || fail "copying the package to $ADAPTRA_DEB_DIR"
fi
echo "test-build-chroot: ok"
