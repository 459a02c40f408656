#!/usr/bin/env bash
# test-qcow2-golden.sh: guests on qcow2 overlays over one qcow2 golden image served through adaptra.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# A golden image as fleets keep them: a qcow2 file served read-only by
# the file plugin through adaptra, opened by qemu as format=qcow2 over
# NBD, under a local qcow2 overlay per guest whose backing file is the
# export.  Run once on the raw image and once on its qcow2 conversion,
# 2 ms from the backend (the delay filter):
#
#   - GUESTS guests read their whole disk at once (qemu-img compare
#     against the raw image: every byte right), and read-ahead hits
#     must serve at least a quarter of a disk, as test-qemu-img.sh
#     asks of one raw reader, and at most 1/MISS_SHARE of the guests'
#     reads may miss the pool; a guest's write stays in its overlay;
#   - a boot (qemu-io: BOOT_READS reads of 4-64 KiB at scattered
#     offsets) three times, each on a fresh overlay and a restarted
#     server with adaptra-profile=DIR: the first boot records the
#     profile, the later ones follow it, and the third must find at
#     least half of its reads' pages prefetched by the profile.
#
# qcow2 reads its header and L1/L2 tables besides the data clusters,
# at other offsets of the file than a raw disk's; the streams and the
# profile must form all the same.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
source "$(dirname "$0")/golden.sh"

SIZE_MIB=64
GUESTS=3
BOOT_READS=300
# At most 1/MISS_SHARE of the guests' reads may miss the pool: the
# metadata, the start of each stream, and a few reads that overtake a
# window its workers have not started yet on a loaded machine (3-8 of
# 96 on 2 CPUs, 15 under a CI run beside two benchmarks).  A guest
# reads its disk in 2 MiB requests, so without streams every 2 MiB of
# the image would be a miss, a third to a quarter of all the reads.
MISS_SHARE=6
size=$((SIZE_MIB * 1024 * 1024))

head -c "$size" /dev/urandom > "$tmpdir/golden.raw"
qemu-img convert -f raw -O qcow2 "$tmpdir/golden.raw" "$tmpdir/golden.qcow2"

boot_commands "$size" "$BOOT_READS"

for fmt in raw qcow2; do
  echo "== $fmt golden image"
  start_adaptra "$fmt" -r --filter=delay file "$tmpdir/golden.$fmt" \
    delay-read=2ms
  jobs=()
  for g in $(seq "$GUESTS"); do
    overlay "guest$g" "$fmt" "$uri"
    qemu-img compare -f qcow2 -F raw "$tmpdir/guest$g.qcow2" \
      "$tmpdir/golden.raw" &
    jobs+=($!)
  done
  for job in "${jobs[@]}"; do wait "$job"; done
  expect_readahead_hits $((size / 4)) "$GUESTS $fmt guests"
  misses=$(counter cache_miss) requests=$(counter client_requests)
  echo "$GUESTS $fmt guests: $misses of $requests reads missed the pool"
  test "$((misses * MISS_SHARE))" -le "$requests"
  qemu-io -f qcow2 -c 'write -q -P 0x5a 1M 64k' "$tmpdir/guest1.qcow2"
  fails qemu-img compare -q -f qcow2 -F raw "$tmpdir/guest1.qcow2" \
    "$tmpdir/golden.raw"
  qemu-img compare -q -f qcow2 -F raw "$tmpdir/guest2.qcow2" \
    "$tmpdir/golden.raw"
  stop_servers

  mkdir "$tmpdir/profiles-$fmt"
  for boot in first second third; do
    start_adaptra "$fmt-$boot" -r --filter=delay file "$tmpdir/golden.$fmt" \
      delay-read=2ms adaptra-profile="$tmpdir/profiles-$fmt"
    overlay "$boot" "$fmt" "$uri"
    t0=$(date +%s.%N)
    qemu-io -f qcow2 "${boot_args[@]}" "$tmpdir/$boot.qcow2"
    echo "$fmt $boot boot: $(echo "$(date +%s.%N) $t0" |
      awk '{ printf "%.2f", $1 - $2 }') s, $(counter profile_pages_hit)" \
      "profile pages hit, $(counter backend_requests) backend requests"
    hits=$(counter profile_pages_hit)
    stop_servers
  done
  echo "$fmt: $hits of the boot's $boot_pages pages hit in the profile"
  test "$((hits * 2))" -ge "$boot_pages"
done
echo "test-qcow2-golden: ok"
