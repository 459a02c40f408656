#!/usr/bin/env bash
# test-lifecycle.sh: connections and the server stopping mid-prefetch.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Connections come and go while prefetches are in flight, and the server
# is stopped with SIGTERM while prefetches are in flight: no crash, no
# hang, no failed read, no growth of memory over hundreds of
# connections, exit status 0 and the statistics socket removed.  The delay filter below adaptra keeps every backend
# read in flight for 20 ms, so there is always something to abandon.
# Sanitizer builds add LeakSanitizer's check at the server's exit.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'

img="$tmpdir/disk.img"
sock="$tmpdir/nbd.sock"
stats="$tmpdir/stats.sock"
pidfile="$tmpdir/nbdkit.pid"
log="$tmpdir/nbdkit.log"
head -c $((64 * 1024 * 1024)) /dev/urandom > "$img"

LD_PRELOAD="$preload" "$NBDKIT" -f -U "$sock" -P "$pidfile" \
  --filter="$ADAPTRA_FILTER" --filter=delay file "$img" delay-read=20ms \
  adaptra-pool=16M adaptra-stats="$stats" 2> "$log" &
for _ in $(seq 300); do [ -s "$pidfile" ] && [ -S "$sock" ] && break; sleep 0.1; done
pid=$(cat "$pidfile")
cleanup_fns+=("kill -9 $pid 2>/dev/null")

rss () { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }

# cycles N: N connections, each starting a scan (so read-ahead starts)
# and leaving while its read-ahead is in flight: two in three leave
# politely with more reads queued, one in three hangs up without
# NBD_CMD_DISC.  (Not with reads queued: nbdkit 1.32.5 itself aborts,
# raw_send_socket: Assertion `sock >= 0', when a client hangs up with
# requests in flight over a slow plugin, with or without adaptra.)
# The reads of a live connection must all succeed: prints how many
# failed.
cycles ()
{
  $client /usr/bin/python3 - "$sock" "$1" <<'PY'
import sys, nbd
sock, n = sys.argv[1], int(sys.argv[2])
failed = 0
for i in range(n):
    h = nbd.NBD()
    h.connect_unix(sock)
    base = (i * 7919 * 65536) % (48 << 20)
    for k in range(4):
        try:
            h.pread(65536, base + k * 65536)
        except nbd.Error as e:
            if failed == 0:
                print("connection %d: read at %d failed: %s"
                      % (i, base + k * 65536, e), file=sys.stderr)
            failed += 1
    if i % 3:
        for k in range(4, 12):
            h.aio_pread(nbd.Buffer(65536), base + k * 65536)
        h.shutdown()
    del h
print(failed)
PY
}

failures=$(cycles 50)
before=$(rss)
failures=$((failures + $(cycles 300)))
after=$(rss)
echo "RSS after 50 connections ${before} KiB, after 350: ${after} KiB"
# The pool (16M) may fill up between the two samples; beyond that,
# connections must not leave memory behind.  (Not under sanitizers:
# ASan's quarantine holds freed memory; LeakSanitizer checks instead.)
if [ "${ADAPTRA_SANITIZERS:-no}" = no ] &&
   [ "$after" -gt $((before + 16 * 1024 + 8 * 1024)) ]; then
  echo "FAIL: RSS grew by $((after - before)) KiB over 300 connections"
  exit 1
fi
stream_rows=$($client adaptra-stat "$stats" --command streams | grep -c . || :)
echo "stream rows after the connections left: $stream_rows"

# Four connections scan and leave politely while the read-ahead they
# caused is still in flight (the delay filter holds every read for
# 20 ms): each one's finalize waits until the workers no longer use its
# plugin context, and a volume left with no connection keeps nothing
# queued or running.  Then the server is stopped with SIGTERM.
# (Connections still open at SIGTERM are not tested: nbdkit 1.32.5
# never frees their handles, which LeakSanitizer would blame on any
# filter.)
flight=$($client /usr/bin/python3 - "$sock" "$stats" "$pid" \
  "$(cd "$(dirname "$0")" && pwd)" <<'PY'
import os, signal, sys, threading, time, nbd
sock, stats, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from control import counter
def scan(k):
    h = nbd.NBD()
    h.connect_unix(sock)
    for off in range(k << 24, (k << 24) + (4 << 20), 131072):
        h.pread(131072, off)
    h.shutdown()
def in_flight():
    return counter(stats, "prefetch_flight_bytes")
threads = [threading.Thread(target=scan, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
# The server finalizes a connection a moment after the client leaves.
for attempt in range(100):
    flight = in_flight()
    if flight == 0:
        break
    time.sleep(0.05)
os.kill(pid, signal.SIGTERM)
print(flight)
PY
)
echo "prefetch bytes in flight after the connections left: $flight"
test "$flight" -eq 0
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  echo "FAIL: nbdkit still running 30 s after SIGTERM"
  exit 1
fi
status=0
wait "$pid" || status=$?
echo "nbdkit exit status after SIGTERM: $status"
if [ "$status" -ne 0 ]; then
  echo "FAIL: nbdkit exited with $status; its log:"
  grep -v 'aborting sleep\|Cannot send after transport' "$log" | tail -n 60
  exit 1
fi
test ! -e "$stats" || { echo "FAIL: $stats left behind"; exit 1; }
if grep -E 'Sanitizer|runtime error|Assertion|Segmentation' "$log"; then
  echo "FAIL: see the server's log above"
  exit 1
fi
if [ "$failures" -ne 0 ]; then
  echo "FAIL: $failures reads of live connections failed while other" \
       "connections went away"
  exit 1
fi
echo "test-lifecycle: ok"
