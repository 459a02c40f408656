#!/usr/bin/env bash
# test-qemu-img.sh: qemu-img convert and compare through the filter.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# qemu-img convert and qemu-img compare read an image from an
# nbd+unix:// URI through the filter, over a plugin slowed by nbdkit's
# delay filter so that read-ahead matters.  The copy must be
# byte-exact, compare must find a changed byte, read-ahead must have
# served most of compare's sequential reads, and convert, which keeps
# its own queue deep, must read at most 2% more than the image below
# the filter.  The pool is smaller than the image, so that compare
# cannot find the image left by convert.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
requires qemu-img --version

size=$((96 * 1024 * 1024))
img="$tmpdir/disk.img"
head -c "$size" /dev/urandom > "$img"

start_adaptra qemu --filter=delay file "$img" delay-read=2ms \
  adaptra-pool=32M

# convert: qemu-img keeps several coroutines reading in parallel.  How
# many of its reads find their pages read ahead depends on how busy the
# machine is (a starved prefetch worker is overtaken); without
# read-ahead it would be none, so a quarter is the bar.
# qemu-img convert keeps 8 requests of up to 2 MiB in flight: it reads
# ahead itself, and read-ahead stays out of its way (core/depth.h): no
# byte is read below the filter that the copy does not read.  How
# many of its reads are read-ahead hits is not bounded here: its queue
# goes shallow now and then (its writes wait in order), and read-ahead
# then comes back, as depth.h says it must; served from the pool, its
# queue no longer shows.  On this 2-CPU machine 2 runs in 10 served
# 47-57 of the 96 MiB from read-ahead so at a load of 1.4, every byte
# read once.  test-depth pins the classification itself.
qemu-img convert -f raw -O raw "$uri" "$tmpdir/copy.img"
cmp "$img" "$tmpdir/copy.img"
backend=$(counter backend_bytes)
echo "qemu-img convert: $backend bytes read below the filter for $size"
test "$((backend * 100))" -le "$((size * 102))" ||
  { echo "FAIL: qemu-img convert read more than 102% of the image"; exit 1; }

# compare: identical, then one byte changed near the end is found.
reset_counters
qemu-img compare -f raw -F raw "$uri" "$img"
expect_readahead_hits $((size / 4)) "qemu-img compare"
flip_byte "$tmpdir/copy.img" $((size - 3 * 4096))
rc=0
qemu-img compare -f raw -F raw "$uri" "$tmpdir/copy.img" > "$tmpdir/diff" ||
  rc=$?
cat "$tmpdir/diff"
test "$rc" -eq 1
grep -q "Content mismatch at offset $((size - 3 * 4096))" "$tmpdir/diff"
stop_servers
echo "test-qemu-img: ok"
