#!/usr/bin/env bash
# test-faults.sh: faults below the filter never reach a client.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Faults below the filter.  nbdkit's error filter sits under adaptra
# and fails 10% of reads (ENOSPC) and writes (EPERM) while its inject
# files exist; the delay filter below it makes reads slow, so that
# failures hit prefetches in flight while clients wait for them.
# faults_client.py does the load and the checks: right bytes or the
# backend's errno, never a prefetch's error on a client's read,
# counters equal to what the error filter injected, and a clean pool
# once the faults stop.  Run with workers and without.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'

srcdir=$(cd "$(dirname "$0")" && pwd)
img="$tmpdir/disk.img"
head -c $((64 * 1024 * 1024)) /dev/urandom > "$img"
seconds=${ADAPTRA_TEST_SECONDS:-8}

for workers in 4 0; do
  sock="$tmpdir/stats.sock"
  log="$tmpdir/nbdkit-$workers.log"
  touch "$tmpdir/inject-pread" "$tmpdir/inject-pwrite"
  echo "== adaptra-workers=$workers"
  # A hang is a failure too.
  timeout -k 10 300 env LD_PRELOAD="$preload" "$NBDKIT" -U - \
    --filter="$ADAPTRA_FILTER" --filter=error --filter=delay \
    file "$img" \
    error-pread=ENOSPC error-pread-rate=10% \
    error-pread-file="$tmpdir/inject-pread" \
    error-pwrite=EPERM error-pwrite-rate=10% \
    error-pwrite-file="$tmpdir/inject-pwrite" \
    delay-read=1ms \
    adaptra-pool=8M adaptra-workers=$workers adaptra-stats="$sock" \
    --run "$client /usr/bin/python3 $srcdir/faults_client.py \"\$uri\" \
             $img $sock $log $seconds \
             $tmpdir/inject-pread $tmpdir/inject-pwrite" \
    2> "$log" || { tail -n 30 "$log"; exit 1; }
  # The faults never made the server log anything but the injections
  # and the failed reads it passed on.
  if grep -v -e 'error into p\(read\|write\)' -e 'adaptra: pread of' \
       "$log" | grep -q .; then
    echo "unexpected lines in the server's log:"
    grep -v -e 'error into p\(read\|write\)' -e 'adaptra: pread of' "$log" |
      head -n 20
    exit 1
  fi
  test ! -e "$sock"
done
echo "test-faults: ok"
