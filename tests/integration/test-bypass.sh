#!/usr/bin/env bash
# Stepping aside: the decision, per export, in the statistics.
#
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# A file in the page cache is as fast as the pool: after a scan its
# export shows "bypass", nothing was read ahead after the switch, and
# every byte is right.  The same file behind 2 ms of delay (a remote
# store) keeps read-ahead on.  adaptra-bypass=never keeps it on for
# the fast file too, and "set bypass always" steps aside at run time.

source "$(dirname "$0")/functions.sh"

img="$tmpdir/disk.img"
head -c $((32 * 1024 * 1024)) /dev/urandom > "$img"
cat "$img" > /dev/null                  # into the page cache

# scan EXPORTS_ROW_FILE ARGS...: serve the file with ARGS, scan it with
# nbdcopy (compared), and keep the export's row of the "exports" table
# and the stats.  One request at a time: with its default 64 in flight
# nbdcopy reads ahead itself and read-ahead leaves it alone
# (core/depth.h), which would hide whether the volume steps aside.
# With SCANS=N the file is scanned again, up to N times in all, until
# the export steps aside: the decision is on the reads' times, and a
# read the scheduler preempts on a loaded machine looks slow.
scan ()
{
  local out=$1
  shift
  run_nbdkit -U - "$@" adaptra-stats="$tmpdir/stats.sock" --run "
    for i in \$(seq ${SCANS:-1}); do
      $client nbdcopy --connections=1 --requests=1 \"\$uri\" $tmpdir/copy.img &&
      cmp $img $tmpdir/copy.img &&
      $client adaptra-stat $tmpdir/stats.sock --command exports > $out &&
      $client adaptra-stat $tmpdir/stats.sock --raw > $out.stats || exit 1
      ! grep -q ' bypass ' $out || break
    done"
  cat "$out"
}

# counter STATS_FILE COUNTER: a counter of the saved stats.
counter () { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# Windows of at most 256K keep the backend reads small: the decision is
# on a read's time against 50 us + 1 ns a byte, and a test machine busy
# with other tests copies multi-megabyte windows out of the page cache
# slowly enough to miss the bound for them.  How soon and how often it
# steps aside depends on the machine's load; test-engine's
# test_step_aside pins both on a clock of its own.
SCANS=10 scan "$tmpdir/fast" file "$img" adaptra-max=256K
grep -qE '^0 +\(default\) +export .* bypass ' "$tmpdir/fast" ||
  { echo "FAIL: the fast file did not step aside in 10 scans"; exit 1; }
# Aside after the last scan, a switch on for each off; its reads went
# straight through.
test "$(counter "$tmpdir/fast.stats" volumes_bypassed)" -eq 1 &&
  test $(($(counter "$tmpdir/fast.stats" bypass_switches) % 2)) -eq 1 &&
  test "$(counter "$tmpdir/fast.stats" bypass_requests)" -gt 0 &&
  test "$(counter "$tmpdir/fast.stats" bypass_bytes)" -gt 0 ||
  { cat "$tmpdir/fast.stats"; echo "FAIL: not stepped aside"; exit 1; }

scan "$tmpdir/slow" --filter=delay file "$img" rdelay=2ms
grep -qE '^0 +\(default\) +export .* on ' "$tmpdir/slow" ||
  { echo "FAIL: the delayed file stepped aside"; exit 1; }
test "$(counter "$tmpdir/slow.stats" bypass_requests)" -eq 0
test "$(counter "$tmpdir/slow.stats" pgreadahead_hit)" -gt 4096

scan "$tmpdir/never" file "$img" adaptra-bypass=never
grep -qE '^0 +\(default\) +export .* on ' "$tmpdir/never" ||
  { echo "FAIL: adaptra-bypass=never stepped aside"; exit 1; }

run_nbdkit -U - --filter=delay file "$img" rdelay=1ms \
  adaptra-stats="$tmpdir/stats.sock" --run "
  $client adaptra-stat $tmpdir/stats.sock --command 'set bypass always' &&
  $client nbdcopy --connections=1 \"\$uri\" $tmpdir/copy.img &&
  cmp $img $tmpdir/copy.img &&
  $client adaptra-stat $tmpdir/stats.sock --command exports > $tmpdir/always"
grep -qE ' bypass ' "$tmpdir/always" ||
  { echo "FAIL: set bypass always did not step aside"; exit 1; }
echo "test-bypass: ok"
