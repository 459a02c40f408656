#!/usr/bin/env bash
# test-fio.sh: fio's nbd engine through the filter.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# fio's nbd engine through the filter: a sequential write laying down
# checksummed blocks, a sequential read that verifies every block
# (served from read-ahead), and random 4K reads that must start no
# window at all.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
requires fio --version
requires fio --enghelp=nbd

size=$((64 * 1024 * 1024))
img="$tmpdir/disk.img"
truncate -s "$size" "$img"

start_adaptra fio --filter=delay file "$img" delay-read=2ms \
  adaptra-pool=32M

# fio through the server started last.  No verify state file: fio
# would leave it in the current directory.
fio_nbd ()
{
  fio --ioengine=nbd --uri="$uri" --size="$size" --iodepth=8 \
    --verify_state_save=0 "$@"
}

# Writes go through to the plugin and drop what the pool holds.
fio_nbd --name=seq --bs=64k --rw=write \
  --verify=crc32c --do_verify=0 --output="$tmpdir/write.out"

reset_counters
fio_nbd --name=seq --bs=64k --rw=read \
  --verify=crc32c --verify_only --output="$tmpdir/verify.out"
grep -q 'err= 0' "$tmpdir/verify.out"
expect_readahead_hits $((size * 9 / 10)) "fio sequential verify"

# The same verification must fail on a corrupted block, or it proves
# nothing: flip a byte a quarter into the image, behind the pool
# (which holds only the image's second half after the scan above).
flip_byte "$img" $((size / 4 + 1000))
if fio_nbd --name=seq --bs=64k --rw=read \
     --verify=crc32c --verify_only --output="$tmpdir/corrupt.out" \
     2> "$tmpdir/corrupt.err"; then
  echo "fio verified a corrupted image"
  exit 1
fi
grep -q "verify: bad header\\|crc32c: verify failed" "$tmpdir/corrupt.err"

# Random reads, on a second server whose pool is empty: pages left by
# the sequential reads would let a random read that lands just after
# one of them continue a stream from the pool (the context method).
start_adaptra fio-random --filter=delay file "$img" delay-read=2ms \
  adaptra-pool=32M
fio_nbd --name=rand --bs=4k --rw=randread --number_ios=500 \
  --randrepeat=1 --output="$tmpdir/rand.out"
grep -q 'err= 0' "$tmpdir/rand.out"
echo "fio random: readahead $(counter readahead)," \
  "readrandom $(counter readrandom)"
# A read right after the client's previous one starts a stream (the
# seed's prev_pos rule, recognise.c: adjacent_read).  Random reads do
# that by chance: at depth 8, two of the 500 land on adjacent pages
# within a few requests of each other in about one run of six, and
# whether the first has completed when the second is decided is up to
# the threads.  So a window or two of at most 8 pages each; a random
# reader taken for streams would start hundreds.
test "$(counter readahead)" -le 2
test "$(counter pgreadahead)" -le 16
test "$(counter readrandom)" -ge 200
stop_servers
echo "test-fio: ok"
