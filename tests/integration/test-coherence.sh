#!/usr/bin/env bash
# test-coherence.sh: right bytes under every export name and sharing mode.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
#  1. adaptra-share=connection over a plugin that offers multi-conn
#     does not offer it (each connection's pages are its own); the
#     default mode offers it and keeps it: a write and flush on one
#     connection is read by another that had the old bytes in the pool.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'

img="$tmpdir/disk.img"
head -c $((4 * 1024 * 1024)) /dev/urandom > "$img"

# start NAME ARGS...: an adaptra server on $tmpdir/NAME.sock (statistics
# on $tmpdir/NAME.stats), never stepping aside: these checks are of
# pages, which a fast plugin would not get.  Sets $sock and $stats.
start ()
{
  local name=$1 pidfile="$tmpdir/$1.pid"
  shift
  sock="$tmpdir/$name.sock"
  stats="$tmpdir/$name.stats"
  LD_PRELOAD="$preload" "$NBDKIT" -f -U "$sock" -P "$pidfile" \
    --filter="$ADAPTRA_FILTER" "$@" adaptra-stats="$stats" \
    adaptra-bypass=never 2> "$tmpdir/$name.log" &
  cleanup_fns+=("kill $! 2>/dev/null; wait $! 2>/dev/null")
  for _ in $(seq 300); do
    [ -s "$pidfile" ] && [ -S "$sock" ] && [ -S "$stats" ] && return 0
    sleep 0.1
  done
  echo "FAIL: server $name did not start"; cat "$tmpdir/$name.log"; exit 1
}

# stop NAME: stop the server started as NAME.
stop ()
{
  kill "$(cat "$tmpdir/$1.pid")"
}

# --- 1. multi-conn and adaptra-share ----------------------------------
for mode in auto connection; do
  start "share-$mode" file "$img" adaptra-share=$mode
  $client /usr/bin/python3 - "$sock" "$mode" <<'PY'
import os, sys, nbd
sock, mode = sys.argv[1], sys.argv[2]
a, b = nbd.NBD(), nbd.NBD()
a.connect_unix(sock)
b.connect_unix(sock)
multi = a.can_multi_conn()
if mode == "connection":
    assert not multi, "share=connection offers multi-conn"
    print("share=connection: no multi-conn")
    sys.exit(0)
assert multi, "the file plugin's multi-conn is not passed on"
a.pread(1 << 20, 0)             # both connections' pages in the pool
b.pread(1 << 20, 0)
new = os.urandom(65536)
a.pwrite(new, 8192)
a.flush()
assert b.pread(65536, 8192) == new, "multi-conn: b reads the old bytes"
print("share=%s: multi-conn kept: b reads a's write" % mode)
PY
  stop "share-$mode"
done

echo "test-coherence: ok"
