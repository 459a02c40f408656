#!/usr/bin/env bash
# test-stat-glance.sh: adaptra-stat opens with a summary, units in names.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# adaptra-stat's default output opens with the summary an operator
# reads first (hit %, amplification, evicted unread %, client and
# backend throughput, pool used and size, streams reading and idle),
# then the counters.  During a slow read the throughputs are not zero
# and the stream is reading; once the reader has stopped for
# STREAM_IDLE_MS (adaptra-stat.c) the stream counts as idle.  Every name carries
# its unit and the value is in it (no _ns name with milliseconds), the
# --watch header names its units, and every column of the summary,
# --watch, --streams and --clients is documented in adaptra-stat(1).

source "$(dirname "$0")/functions.sh"
: "${srcdir:=.}"
pod=$srcdir/plugin/adaptra-stat.pod
idle_ms=$(sed -n 's/^#define STREAM_IDLE_MS \([0-9]*\)$/\1/p' \
  "$srcdir/plugin/adaptra-stat.c")
test -n "$idle_ms"

img=$tmpdir/disk.img
head -c $((64 * 1024 * 1024)) /dev/urandom > "$img"
sock=$tmpdir/nbd.sock
stats=$tmpdir/stats.sock
# The delay filter makes each plugin read take 10 ms, and windows are
# at most 128K, so the scan below lasts for seconds; bypass=never keeps
# adaptra reading ahead.
run_nbdkit -U "$sock" -P "$tmpdir/pid" --filter=delay file "$img" \
  delay-read=10ms adaptra-max=128K adaptra-bypass=never \
  adaptra-stats="$stats"
cleanup_fns+=('kill "$(cat "$tmpdir/pid")"')
wait_for "the statistics socket" test -S "$stats"

scan "$sock" 0 64 &
reader=$!
# Once its stream reads, the scan lasts for seconds more.
reading ()
{
  test "$(adaptra-stat "$stats" --raw |
            awk '$1 == "streams_reading" { print $2 }')" -ge 1
}
wait_for "a reading stream" reading
adaptra-stat "$stats" --raw > "$tmpdir/raw"
adaptra-stat "$stats" > "$tmpdir/human"
adaptra-stat "$stats" --streams > "$tmpdir/streams"
adaptra-stat "$stats" --clients > "$tmpdir/clients"
# -k: under ASan, LeakSanitizer's check at exit once spun for 15 minutes
# with its tracer attached (a CI run on a loaded machine); the output
# below is what this test checks, not how the process ended.
timeout -k 10 -s INT 1.6 adaptra-stat "$stats" --watch 0.5 > "$tmpdir/watch" || :
timeout -k 10 -s INT 1.6 adaptra-stat "$stats" --watch 0.5 --raw \
  > "$tmpdir/watch-raw" || :
kill "$reader" 2>/dev/null || :
wait "$reader" 2>/dev/null || :
cat "$tmpdir/human"

summary="readahead_hit_pct amplification evicted_unread_pct
client_read_bytes_per_sec backend_read_bytes_per_sec pool_used_bytes
pool_size_bytes streams_reading streams_idle backend_handles_open
backend_reads_in_flight"
# The summary comes first, in this order.
nsummary=$(echo $summary | wc -w)
sed -n "2,$((nsummary + 1))p" "$tmpdir/raw" | awk '{ print $1 }' \
  > "$tmpdir/names"
echo $summary | tr ' ' '\n' | diff -u - "$tmpdir/names"
head -n 1 "$tmpdir/raw" | grep -qx '# summary'
sed -n "$((nsummary + 2))p" "$tmpdir/raw" | grep -qx '# counters and gauges'
value () { awk -v n="$1" '$1 == n { print $2; exit }' "$tmpdir/raw"; }
# Read during the scan, through a stream that is reading.
test "$(value client_read_bytes_per_sec)" -gt 0
test "$(value backend_read_bytes_per_sec)" -gt 0
test "$(value streams_reading)" -ge 1
test "$(value pool_used_bytes)" -gt 0
test "$(value pool_used_bytes)" -le "$(value pool_size_bytes)"
# The file plugin does not serialise per handle: its prefetch threads
# share the connections' handles and open none of their own.
test "$(value backend_handles_open)" -eq 0
test "$(value backend_reads_in_flight)" -ge 0
# Human output: bytes with their unit after them, nanoseconds as _ms.
grep -Eq '^pool_size_bytes +[0-9.]+ MiB$' "$tmpdir/human"
grep -Eq '^client_read_bytes_per_sec +[0-9.]+ [KMG]?i?B/s$' "$tmpdir/human"
grep -Eq '^backend_latency_ms +[0-9.]+$' "$tmpdir/human"
! grep -E '_ns ' "$tmpdir/human"
grep -Eq '^backend_latency_ns +[0-9]+$' "$tmpdir/raw"

# --watch: a header naming the units, then numbers only.
head -n 1 "$tmpdir/watch" | grep -q 'client_MiB/s'
head -n 1 "$tmpdir/watch-raw" | grep -q 'client_B/s'
test "$(sed -n 2p "$tmpdir/watch" | grep -c '[A-Za-z]')" -eq 0

# Every column and summary name is documented in adaptra-stat(1).
{
  echo $summary | tr ' ' '\n'
  head -n 1 "$tmpdir/watch" | tr -s ' ' '\n'
  head -n 1 "$tmpdir/watch-raw" | tr -s ' ' '\n'
  head -n 1 "$tmpdir/streams" | tr -s ' ' '\n'
  head -n 1 "$tmpdir/clients" | tr -s ' ' '\n'
} | grep . | sort -u > "$tmpdir/columns"
missing=0
while read -r col; do
  grep -qF "C<$col>" "$pod" || { echo "adaptra-stat(1) lacks C<$col>"; missing=1; }
done < "$tmpdir/columns"
test "$missing" -eq 0

# Idle: no read for STREAM_IDLE_MS.
sleep $((idle_ms / 1000 + 1))
adaptra-stat "$stats" --raw > "$tmpdir/raw"
test "$(value streams_reading)" -eq 0
test "$(value streams_idle)" -ge 1
echo "test-stat-glance: ok"
