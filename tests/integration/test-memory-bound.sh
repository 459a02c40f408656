#!/usr/bin/env bash
# test-memory-bound.sh: memory stays bounded by the pool.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Memory stays bounded by the pool.  1,000 slow sequential streams
# (20 connections with 50 streams each, 16K reads in flight for all of
# them at once, over a backend that takes 10 ms a read) share a 64 MiB
# pool for a while; then nbdcopy scans 1 GiB through the same pool.
# nbdkit's peak RSS (VmHWM) must stay within
#
#   RSS with the connections open and nothing read yet
#   + adaptra-pool + 48 bytes per page (descriptors and index, as
#     documented in nbdkit-adaptra-filter(1))
#   + the clients' requests in flight (nbdkit's own buffers)
#   + 16 MiB of slack (thread stacks, malloc arenas, stream table).
#
# Part 3: boot profiles' recorders are inside the pool.  16 boots (one
# connection each, to 16 export names) record at once while their reads
# fill a 512 MiB pool; their recorders want about 2 MiB each, all of
# their budget (adaptra-pool / ADAPTRA_PROFILE_MEMORY_SHARE), which the
# pool lends them.  nbdkit's peak RSS must be within the budget above,
# and that of the same reads without adaptra-profile within 12 MiB: the
# recorders' tables beside the pool would add 32 MiB, and the peak of
# one run varies by a few MiB (malloc's arenas, hence MALLOC_ARENA_MAX=1
# here, and the moment the pool fills), so the slack is bigger than
# that noise and well under the recorders' share.
#
# The memory plugin serves zeroes here without allocating anything, so
# nbdkit's memory is the filter's and the server's.  A stream starts on
# evidence of three earlier reads still in the pool, so 1,000 streams
# of 16K requests need 4 x 1,000 x 16K = 64M of history: with larger
# requests in this pool they would never be detected (all reads random).

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'
requires nbdcopy --version

sock="$tmpdir/nbd.sock"
pidfile="$tmpdir/nbdkit.pid"
pool=$((64 * 1024 * 1024))
page=4096
seconds=${ADAPTRA_TEST_SECONDS:-15}

# Under AddressSanitizer, freed blocks wait in a quarantine (256 MiB by
# default) before reuse, which is ASan's memory and not the filter's:
# turn it off so that the same bound holds.
asan_options=${ASAN_OPTIONS:-}
if [ "${ADAPTRA_SANITIZERS:-no}" = address ]; then
  asan_options+=:quarantine_size_mb=0:thread_local_quarantine_size_kb=0
fi

# start SIZE: nbdkit over a RAM disk of SIZE, 10 ms a read, 64M pool.
start ()
{
  rm -f "$sock" "$pidfile"
  ASAN_OPTIONS=$asan_options LD_PRELOAD="$preload" "$NBDKIT" -f -U "$sock" -P "$pidfile" \
    --filter="$ADAPTRA_FILTER" --filter=delay memory "$1" delay-read=10ms \
    adaptra-pool=$pool adaptra-page=$page adaptra-streams=1024 \
    adaptra-stats="$tmpdir/stats.sock" 2> "$tmpdir/nbdkit.log" &
  for _ in $(seq 300); do [ -s "$pidfile" ] && [ -S "$sock" ] && break; sleep 0.1; done
  pid=$(cat "$pidfile")
  cleanup_fns+=("kill -9 $pid 2>/dev/null")
}
kib () { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$pid/status"; }
stop ()
{
  kill -TERM "$pid"
  wait "$pid"
}
budget_kib ()
{
  echo $(( $1 + (pool + pool / page * 48 + $2 + 16 * 1024 * 1024) / 1024 ))
}
# check WHAT BASE PEAK CLIENT_BYTES: the peak against the budget.
# Backend reads that cannot land in their frames go through transfer
# slots that are part of adaptra-pool (core/bounce.c), so nothing
# adaptra holds grows with the connections or the threads.
check ()
{
  local budget
  budget=$(budget_kib "$2" "$4")
  echo "$1: RSS before $2 KiB, peak $3 KiB, budget $budget KiB" \
       "(pool $((pool / 1024)) KiB)"
  if [ "$3" -gt "$budget" ]; then
    echo "FAIL: $1: peak RSS $3 KiB is over the budget of $budget KiB"
    exit 1
  fi
}

# Part 1: 1,000 slow streams.  The client prints "ready" once its
# connections are open, then waits for a line on stdin before reading.
start 16G
coproc streams {
  $client /usr/bin/python3 - "$sock" "$seconds" <<'PY'
import sys, time, nbd
sock, seconds = sys.argv[1], float(sys.argv[2])
CONNS, PER_CONN, SIZE = 20, 50, 16384
handles = []
for c in range(CONNS):
    h = nbd.NBD()
    h.connect_unix(sock)
    handles.append(h)
print("ready", flush=True)
sys.stdin.readline()
span = (16 << 30) // (CONNS * PER_CONN)
pos = [[(c * PER_CONN + s) * span for s in range(PER_CONN)]
       for c in range(CONNS)]
reads = 0
failed = 0
def retire(err):
    global failed
    failed += err.value != 0
    return 1                            # retire the command
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    for c, h in enumerate(handles):
        for s in range(PER_CONN):
            h.aio_pread(nbd.Buffer(SIZE), pos[c][s], completion=retire)
            pos[c][s] += SIZE
    for h in handles:
        while h.aio_in_flight() > 0:
            h.poll(-1)
    reads += CONNS * PER_CONN
    time.sleep(0.2)
for h in handles:
    h.shutdown()
print("reads %d failed %d" % (reads, failed), flush=True)
PY
}
read -r ready <&"${streams[0]}"
test "$ready" = ready
base=$(kib VmRSS)
echo go >&"${streams[1]}"
sleep 3
live=$($client adaptra-stat "$tmpdir/stats.sock" |
       awk '$1 == "streams_active" { print $2 }')
echo "1,000 streams: $live streams live after 3 s"
test "$live" -ge 900
read -r result <&"${streams[0]}"
wait "$streams_PID"
echo "1,000 streams: $result"
case "$result" in *" failed 0") ;; *) echo "FAIL: reads failed"; exit 1 ;; esac
peak=$(kib VmHWM)
stop
check "1,000 streams" "$base" "$peak" $((1000 * 16384))

# Part 2: nbdcopy scans 1 GiB (reading every byte: --no-extents).
start 1G
base=$(kib VmRSS)
$client nbdcopy --no-extents "nbd+unix:///?socket=$sock" null:
peak=$(kib VmHWM)
stop
# nbdcopy: 4 connections, each served by 16 nbdkit threads with a
# request of up to 256K.
check "1 GiB scan" "$base" "$peak" $((4 * 16 * 256 * 1024))
# Part 3: 16 boots recording at once, against the same reads without
# profiles.  The pattern plugin serves data (no holes to skip) without
# allocating; adaptra-bypass=never: the pool fills although the plugin
# is as fast as the pool.
pool=$((512 * 1024 * 1024))
boots_slack=$((12 * 1024))
# boots_peak [PROFILE_DIR]: nbdkit's RSS with the 16 connections open,
# and its peak while each reads 256 MiB of its own, in KiB.
boots_peak ()
{
  local base peak
  rm -f "$sock" "$pidfile"
  MALLOC_ARENA_MAX=1 ASAN_OPTIONS=$asan_options LD_PRELOAD="$preload" "$NBDKIT" -f -U "$sock" \
    -P "$pidfile" --filter="$ADAPTRA_FILTER" pattern 4G \
    adaptra-pool=$pool adaptra-page=$page adaptra-bypass=never \
    ${1:+adaptra-profile="$1"} 2> "$tmpdir/nbdkit.log" &
  for _ in $(seq 300); do [ -s "$pidfile" ] && [ -S "$sock" ] && break; sleep 0.1; done
  pid=$(cat "$pidfile")
  cleanup_fns+=("kill -9 $pid 2>/dev/null")
  coproc boots {
    $client /usr/bin/python3 - "$sock" <<'PY'
import sys, nbd
sock = sys.argv[1]
CONNS, SPAN, REQUEST = 16, 256 << 20, 256 << 10
handles = []
for c in range(CONNS):
    h = nbd.NBD()
    h.set_export_name("boot%d" % c)
    h.connect_unix(sock)
    handles.append(h)
print("ready", flush=True)
sys.stdin.readline()
for pos in range(0, SPAN, REQUEST):
    for c, h in enumerate(handles):
        h.aio_pread(nbd.Buffer(REQUEST), c * SPAN + pos)
    for h in handles:
        while h.aio_in_flight() > 0:
            h.poll(-1)
for h in handles:
    h.shutdown()
print("done", flush=True)
PY
  }
  read -r ready <&"${boots[0]}"
  test "$ready" = ready
  base=$(kib VmRSS)
  echo go >&"${boots[1]}"
  read -r ready <&"${boots[0]}"
  test "$ready" = done
  wait "$boots_PID"
  peak=$(kib VmHWM)
  stop
  echo "$base $peak"
}
# 16 connections, each served by 16 nbdkit threads with a request of
# 256K.
boots_clients=$((16 * 16 * 256 * 1024))
read -r base peak <<< "$(boots_peak)"
check "16 boots, no profiles" "$base" "$peak" $boots_clients
without=$((peak - base))
mkdir "$tmpdir/profiles"
read -r base peak <<< "$(boots_peak "$tmpdir/profiles")"
recorded=$(find "$tmpdir/profiles" -name '*.profile' | wc -l)
check "16 boots recording ($recorded profiles)" "$base" "$peak" $boots_clients
with=$((peak - base))
echo "16 boots: peak RSS over the connections' $with KiB recording," \
     "$without KiB without profiles"
test "$recorded" -eq 16
if [ "$with" -gt $((without + boots_slack)) ]; then
  echo "FAIL: 16 boots recording: $with KiB over $without KiB +" \
       "$boots_slack KiB: the recorders' memory is beside the pool"
  exit 1
fi
echo "test-memory-bound: ok"
