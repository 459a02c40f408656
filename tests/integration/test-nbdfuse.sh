#!/usr/bin/env bash
# test-nbdfuse.sh: nbdfuse mounts the export, cmp reads it.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# nbdfuse mounts the export as a file and cmp reads it through FUSE.
# The kernel's own read-ahead then decides what reaches adaptra
# (128K requests, issued ahead of cmp), and adaptra must still
# recognise the stream and serve most of it from read-ahead.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
requires nbdfuse --version
requires fusermount3 --version
if ! [ -c /dev/fuse ] || ! [ -r /dev/fuse ] || ! [ -w /dev/fuse ]; then
  echo "$0: SKIP: /dev/fuse is not available to $(id -un) here"
  exit 77
fi

size=$((64 * 1024 * 1024))
img="$tmpdir/disk.img"
head -c "$size" /dev/urandom > "$img"

start_adaptra fuse --filter=delay file "$img" delay-read=2ms \
  adaptra-pool=32M

mnt="$tmpdir/mnt"
mkdir "$mnt"
# nbdfuse stays in the foreground until the file system is unmounted;
# it writes its pid file once the mount is ready.
nbdfuse -r -P "$tmpdir/nbdfuse.pid" "$mnt/disk" "$uri" &
nbdfuse_pid=$!
cleanup_fns+=("fusermount3 -u -z '$mnt' 2>/dev/null")
for _ in $(seq 100); do
  [ -s "$tmpdir/nbdfuse.pid" ] && break
  sleep 0.1
done
test "$(stat -c %s "$mnt/disk")" -eq "$size"

cmp "$img" "$mnt/disk"
expect_readahead_hits $((size * 8 / 10)) "nbdfuse"
test "$(counter readrandom)" -le 2

fusermount3 -u "$mnt"
wait "$nbdfuse_pid"
stop_servers
echo "test-nbdfuse: ok"
