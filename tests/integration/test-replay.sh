#!/usr/bin/env bash
# adaptra: adaptive read-ahead for nbdkit
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# The fleet benchmark's trace replayer (scripts/bench/replay.c, built
# here as tests/integration/replay) replays what a trace says, in the
# order it says.  Behaviour only, no timing:
#
#  - trace A (scripts/bench/traces/boot-web.csv.gz, a real guest's
#    boot) through adaptra: every read of the trace is sent once,
#    nothing else is, and the filter saw exactly those bytes;
#  - causality, on a four-request trace under nbdkit's log filter: a
#    read that started after another had finished waits for it in the
#    replay, reads that overlapped in the trace overlap in the replay,
#    and a write is not sent;
#  - an offset with a sign is a malformed line.

source "$(dirname "$0")/functions.sh"
requires adaptra-stat --help
requires gzip --version

here=$(cd "$(dirname "$0")" && pwd)
replay=$(pwd)/tests/integration/replay
trace="$here/../../scripts/bench/traces/boot-web.csv.gz"
img="$tmpdir/disk.img"
truncate -s 2G "$img"

# Trace A: the reads, their bytes, and the rest.
read -r reads bytes others < <(gzip -dc "$trace" | awk -F, '
  NR > 1 && $2 == "R" { n++; b += $4 }
  NR > 1 && $2 != "R" { o++ }
  END { print n, b, o }')
run_nbdkit -U - file "$img" adaptra-stats="$tmpdir/stats.sock" --run "
  $client $replay $trace \"\$uri\" > $tmpdir/out &&
  $client adaptra-stat $tmpdir/stats.sock --raw > $tmpdir/stats"
cat "$tmpdir/out"
grep -q "^RESULT wall_s=[0-9.]* reads=$reads skipped=$others bytes=$bytes " \
  "$tmpdir/out" ||
  { echo "FAIL: expected $reads reads, $bytes bytes, $others skipped"; exit 1; }
test "$(awk '$1 == "client_requests" { print $2 }' "$tmpdir/stats")" -eq "$reads"
test "$(awk '$1 == "client_bytes" { print $2 }' "$tmpdir/stats")" -eq "$bytes"

# Causality.  Connection 1 reads 0 (0-10 ms); connection 2 reads 1M
# from 5 ms, overlapping it, and 2M from 20 ms, after the first read
# ended; a write in between is dropped.  Each read takes 300 ms here.
cat > "$tmpdir/dep.csv" <<'CSV'
t_ms,op,offset,length,conn,dur_ms
0.000,R,0,4096,1,10.000
5.000,R,1048576,4096,2,100.000
12.000,W,3145728,4096,1,1.000
20.000,R,2097152,4096,2,1.000
CSV
nbdkit -U - --filter=log --filter=delay file "$img" \
  logfile="$tmpdir/nbd.log" rdelay=300ms \
  --run "$replay $tmpdir/dep.csv \"\$uri\"" > "$tmpdir/out"
grep -q " reads=3 skipped=1 bytes=12288 " "$tmpdir/out"
fails grep -q "Write" "$tmpdir/nbd.log"
# Line numbers in the log: where the read at offset $1 starts, and
# (with $2 = end) where it returns.
at ()
{
  local start who
  start=$(grep -n "Read id=[0-9]* offset=$1 " "$tmpdir/nbd.log" | head -1)
  if [ "${2:-}" = end ]; then
    who=$(echo "$start" | grep -o "connection=[0-9]*")
    grep -n "$who \.\.\.Read $(echo "$start" | grep -o "id=[0-9]*") " \
      "$tmpdir/nbd.log" | cut -d: -f1
  else
    echo "$start" | cut -d: -f1
  fi
}
start0=$(at 0x0)
end0=$(at 0x0 end)
start1=$(at 0x100000)
start2=$(at 0x200000)
test -n "$start0" && test -n "$start1" && test -n "$start2" && test -n "$end0"
# The overlapping read started before the first ended ...
test "$start1" -lt "$end0" ||
  { cat "$tmpdir/nbd.log"; echo "FAIL: overlapping reads serialised"; exit 1; }
# ... the dependent one only after.
test "$start2" -gt "$end0" ||
  { cat "$tmpdir/nbd.log"; echo "FAIL: dependency not kept"; exit 1; }

# A sign is a malformed line (scanf's %u takes "-4096" as 2^64 - 4096),
# refused with its number before any connection.
printf 't_ms,op,offset,length,conn,dur_ms\n0.000,R,-4096,4096,1,1.000\n' \
  > "$tmpdir/neg.csv"
fails "$replay" "$tmpdir/neg.csv" "nbd+unix:///?socket=$tmpdir/none" \
  2> "$tmpdir/err"
grep -q "neg.csv:2: not t_ms,.* without a sign" "$tmpdir/err" ||
  { cat "$tmpdir/err"; echo "FAIL: a negative offset was not refused"; exit 1; }
echo "test-replay: ok"
