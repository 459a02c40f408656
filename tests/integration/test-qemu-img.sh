#!/usr/bin/env bash
# test-qemu-img.sh: qemu-img convert and compare through the filter.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# qemu-img convert and qemu-img compare read an image from an
# nbd+unix:// URI through the filter, over a plugin slowed by nbdkit's
# delay filter so that read-ahead matters.  The copy must be
# byte-exact, compare must find a changed byte, and read-ahead must
# have served most of compare's sequential reads, and few of convert's,
# which keeps its own queue deep.  The pool is smaller than
# the image, so that compare cannot find the image left by convert.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
requires qemu-img --version
requires adaptra-stat --help

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
# ahead itself, and read-ahead stays out of its way (core/depth.h).
# Only its first requests, before their queue shows, may get windows.
qemu-img convert -f raw -O raw "$uri" "$tmpdir/copy.img"
cmp "$img" "$tmpdir/copy.img"
expect_few_readahead_hits $((size / 10)) "qemu-img convert"

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
