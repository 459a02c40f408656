#!/usr/bin/env bash
# test-ceph-rbd.sh: adaptra in front of an RBD image of a single-node Ceph cluster, exported by qemu-storage-daemon.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# A fleet's golden images live in a distributed store: here one RBD
# image in a single-node Ceph cluster that the test starts and stops
# itself (ceph.sh: one monitor, one bluestore OSD on a sparse file, on
# 127.0.0.1), exported over NBD by qemu-storage-daemon, read through
# nbdkit's nbd plugin with adaptra on top:
#
#   reader | nbdkit adaptra | nbd plugin | qemu-storage-daemon | librbd | OSD
#
# Every byte read must be the image's, and read-ahead hits must serve
# at least a quarter of a sequential read of it.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
source "$(dirname "$0")/ceph.sh"
requires qemu-storage-daemon --version
requires qemu-img --version
# qemu's rbd driver is in Debian's qemu-block-extra.
requires sh -c 'qemu-img --help | grep -qw rbd'

SIZE_MIB=64
size=$((SIZE_MIB * 1024 * 1024))
head -c "$size" /dev/urandom > "$tmpdir/golden.raw"

t0=$(date +%s)
ceph_start
echo "ceph: up in $(($(date +%s) - t0)) s"
# qemu's NBD server asks librbd for block status on every structured
# read unless the image has the layering feature alone.
rbd -c "$ceph_conf" import --no-progress --image-feature layering \
  "$tmpdir/golden.raw" rbd/golden

qsd_sock=$tmpdir/qsd.sock
qemu-storage-daemon \
  --blockdev "driver=rbd,node-name=golden,pool=rbd,image=golden,conf=$ceph_conf,read-only=on" \
  --nbd-server "addr.type=unix,addr.path=$qsd_sock" \
  --export type=nbd,id=golden,node-name=golden,name=golden \
  < /dev/null > "$tmpdir/qsd.out" 2>&1 &
qsd=$!
cleanup_fns+=("kill $qsd 2>/dev/null")
for i in $(seq 100); do
  [ -S "$qsd_sock" ] && break
  kill -0 "$qsd" || { cat "$tmpdir/qsd.out"; exit 1; }
  sleep 0.1
done

start_adaptra ceph -r nbd socket="$qsd_sock" export=golden
qemu-img compare -f raw -F raw "$uri" "$tmpdir/golden.raw"
expect_readahead_hits $((size / 4)) "RBD image"
stop_servers
kill "$qsd"
wait "$qsd" || :
echo "test-ceph-rbd: ok"
