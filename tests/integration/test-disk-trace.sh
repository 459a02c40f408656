#!/usr/bin/env bash
# test-disk-trace.sh: the bench's disk model logs its head, and scripts/bench/seeks counts the seeks.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Five reads of a 64 MiB disk through the benchmark's disk model
# (scripts/bench/disk-model-filter.c) with disk-trace: two in a row
# from the start (no seek), a jump to the middle (a turn), a short hop
# past it (within 16 MiB) and back to the start (a turn).  The trace
# must hold the five reads in their order with the seeks the model's
# formula gives (seek = min + (max - min) x distance / size, times are
# not measured), and scripts/bench/seeks must count two turns and one
# short seek.  No adaptra: this is the bench's instrument.

source "${srcdir:-.}/tests/integration/functions.sh"
: "${ADAPTRA_DISKMODEL:?run the tests with make check}"
: "${ADAPTRA_BENCH:?run the tests with make check}"
requires qemu-io --version

trace=$tmpdir/head
KIB=1024
MIB=$((1024 * KIB))
cmds=""
for r in 0 $((64 * KIB)) $((32 * MIB)) $((33 * MIB)) 0; do
  cmds+=" -c 'read $r 64k'"
done

LD_PRELOAD="$preload" "$NBDKIT" -U - --filter="$ADAPTRA_DISKMODEL" \
  memory size=64M disk-bandwidth=1G disk-min-seek=0.5ms disk-max-seek=8ms \
  disk-trace="$trace" --run "qemu-io -r -f raw \"\$uri\" $cmds" > /dev/null

# offset count seek-in-us, one line a read, in order.
got=$(awk '{ printf "%d:%d:%.0f\n", $4, $5, $6 * 1e6 }' "$trace" | tr '\n' ' ')
# 32M - 128K, 1M - 64K, 33M + 64K at 7.5 ms / 64M.
want="0:$((64 * KIB)):0 $((64 * KIB)):$((64 * KIB)):0"
want+=" $((32 * MIB)):$((64 * KIB)):4235 $((33 * MIB)):$((64 * KIB)):610"
want+=" 0:$((64 * KIB)):4375 "
if [ "$got" != "$want" ]; then
  echo "FAIL: the head's trace is '$got', not '$want'" >&2
  exit 1
fi

summary=$(python3 "$ADAPTRA_BENCH/seeks" "$trace" --startup 0)
echo "$summary"
grep -q '^seeks after: 3, ' <<< "$summary" &&
  grep -q '^seeks   of which turns: 2, ' <<< "$summary" &&
  grep -q '^seeks   of which within 16 MiB: 1, ' <<< "$summary" ||
  { echo "FAIL: scripts/bench/seeks did not count 2 turns, 1 short" >&2; exit 1; }
