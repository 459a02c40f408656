#!/usr/bin/env bash
# test-nbdroot.sh: a diskless Linux guest boots with its root file system on /dev/nbd0 through adaptra.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# A diskless guest boots with its root file system on /dev/nbd0 served
# through adaptra: its initramfs (tests/guest/init) attaches the export
# named by nbdroot=, as Debian's nbd-client initramfs support does,
# mounts it and switches root into it.  The root's /sbin/init
# (tests/guest/root-init) reads a tree of files, writes their checksums
# to the root file system, remounts it read-only and powers off.  The
# checksums it printed, and the file it wrote as the image holds it
# afterwards, must match the host's tree.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
source "$(dirname "$0")/guest.sh"

# The size of the root's tree of files, MiB.
TREE_MIB=16

img=$tmpdir/root.img
make_root_image "$img" "$TREE_MIB"

start_adaptra_tcp root --filter=delay file "$img" delay-read=2ms
run_guest "root=/dev/nbd0 nbdroot=10.0.2.2,$port,nbd0"
expect_guest_sums "$tmpdir/root/data"
stop_servers

# What the guest wrote is on the export: /var/sums, read back from the
# image by debugfs.
debugfs -R 'cat /var/sums' "$img" 2> /dev/null | sed 's/^/SUM /' \
  > "$tmpdir/sums.written"
diff "$tmpdir/sums.host" "$tmpdir/sums.written"
echo "test-nbdroot: ok"
