#!/usr/bin/env bash
# test-kernel-nbd.sh: the Linux kernel's NBD client reads an ext4 tree through adaptra.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# The Linux kernel's own NBD client reads an ext4 file system through
# adaptra: a qemu TCG guest (Debian's cloud kernel, the initramfs of
# tests/guest/) attaches the export with nbd-client as /dev/nbd0 over
# passt or qemu's user-mode network (tests/integration/guest.sh),
# mounts it, reads the tree and prints the checksum of every file,
# which must match the host's tree, and how its read went (the walk,
# and its CPU busy and waiting), which scripts/bench/kernel-nbd
# records.  The backend is 2 ms away (the delay filter), and
# read-ahead must have served most of the large files' bytes.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
source "$(dirname "$0")/guest.sh"

# The tree's size, MiB, and the share of it read-ahead hits must serve.
TREE_MIB=32
HIT_PERCENT=50

img=$tmpdir/data.img
make_data_image "$img" "$TREE_MIB"

start_adaptra_tcp data --filter=delay file "$img" delay-read=2ms
run_guest "adaptra.data=10.0.2.2,$port"
expect_guest_sums "$tmpdir/tree"
guest_read_figures | sed 's/^/guest: seconds of the read: /'
expect_readahead_hits $((TREE_MIB * 1024 * 1024 * HIT_PERCENT / 100)) \
  "kernel nbd-client"
stop_servers
echo "test-kernel-nbd: ok"
