#!/usr/bin/env bash
# test-stats-socket.sh: the statistics and control socket.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# The statistics and control socket: counters move as the workload
# implies, tunables are validated, junk is refused, the socket is
# private, stale sockets are replaced and live ones are not, and
# adaptra-stat's output parses.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'
requires runuser --version

srcdir=$(cd "$(dirname "$0")" && pwd)
# Others may traverse the directory but not read it, so that the
# permission test reaches the socket itself.
chmod 0711 "$tmpdir"
img="$tmpdir/disk.img"
sock="$tmpdir/stats.sock"
head -c $((64 * 1024 * 1024)) /dev/urandom > "$img"

# A stale socket (bound, never listened on, process gone) is replaced.
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$sock"
test -S "$sock"

cat > "$tmpdir/run.sh" <<RUN
$(checks_prelude)
sock=$sock
# The protocol, from a real client.
/usr/bin/python3 $srcdir/stats_client.py "\$1" "\$sock"

# adaptra-stat: text output has one "name value" per counter.
adaptra-stat "\$sock" > $tmpdir/text
grep -Eq '^readahead +[0-9]+$' $tmpdir/text
grep -Eq '^readahead_hit_pct +[0-9.]+$' $tmpdir/text
# --json parses with a real JSON parser.
adaptra-stat "\$sock" --json | /usr/bin/python3 -c '
import json, sys; d = json.load(sys.stdin); assert d["version"] == 1, d'
adaptra-stat "\$sock" --prometheus | grep -q '^# TYPE adaptra_readahead_total counter$'
adaptra-stat "\$sock" --command 'get mode' | grep -qx 'mode fixed'
# --watch prints a header and lines of ten numeric columns; during a
# scan some line shows client bytes, and the hit rate is a share.
# The watcher's first line says it took its first sample (before the
# scan); it is stopped (SIGINT, through timeout) once a line shows the
# scan.  (-k: LeakSanitizer's exit-time scan can hang in a sandbox that
# blocks its ptrace; the lines are printed by then.)
timeout -k 5 -s INT 60 adaptra-stat "\$sock" --watch 0.4 > $tmpdir/watch &
watcher=\$!
wait_for "the first line of --watch" test -s $tmpdir/watch
scan "\$1" 60 64
busy () { awk '/^ *[0-9]/ && \$2 + 0 > 0 { b = 1 } END { exit !b }' $tmpdir/watch; }
wait_for "a line of --watch with the scan" busy || :
kill -INT \$watcher
wait \$watcher || :
head -n 1 $tmpdir/watch | grep -q ' client_MiB/s '
test "\$(grep -cE '^ *[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ ' $tmpdir/watch)" -ge 2
awk '/^ *[0-9]/ { if (\$4 < 0 || \$4 > 100) bad = 1; if (\$2 + 0 > 0) busy = 1 }
     END { exit bad || !busy }' $tmpdir/watch
# --trace prints the read-ahead decisions of a scan as they happen.  A
# whole scan of the file misses in the 32M pool: the scans go on until
# one is traced (the first may end before the tracer's "trace on").
adaptra-stat "\$sock" --trace > $tmpdir/trace &
tracer=\$!
traced ()
{
  grep -Eq '^readahead-[a-z]+\(client=[0-9]+, stream=[0-9]+, index=[0-9]+, ra=[0-9]+\+[0-9]+-[0-9]+\) = [0-9]+$' $tmpdir/trace
}
traced_scan () { scan "\$1" 0 64; traced; }
wait_for "a traced scan" traced_scan "\$1" || :
kill \$tracer; wait \$tracer || :
traced
fails adaptra-stat "\$sock" --trace --watch 1 2> $tmpdir/both
grep -q 'do not go together' $tmpdir/both
# A bad command exits 1 with the server's error.
fails adaptra-stat "\$sock" --command 'set ratio 500' > $tmpdir/bad
grep -q '^error: adaptra-ratio=500' $tmpdir/bad

# Only the owner may connect (mode 0600).
test "\$(stat -c %a "\$sock")" = 600
fails runuser -u nobody -- adaptra-stat "\$sock" 2> $tmpdir/denied
grep -q 'permission denied' $tmpdir/denied

# A second server may not take over a live socket.
fails env LD_PRELOAD="$preload" $NBDKIT -U $tmpdir/other.sock --filter=$ADAPTRA_FILTER memory 1M \
    adaptra-stats=\$sock 2> $tmpdir/live
grep -q 'is in use by a running server' $tmpdir/live || { cat $tmpdir/live; exit 1; }
RUN

# The checks count read-ahead on a file in the page cache, where
# adaptra would otherwise step aside (adaptra-bypass).
run_checks "$tmpdir/run.sh" file "$img" adaptra-pool=32M \
  adaptra-stats="$sock" adaptra-bypass=never

# A clean exit removes the socket.
if [ -e "$sock" ]; then
  echo "FAIL: $sock is still there after nbdkit exited"
  exit 1
fi

# adaptra-stat's errors for a missing socket and a foreign one.
fails adaptra-stat "$sock" 2> "$tmpdir/missing"
grep -q 'is nbdkit running with adaptra-stats=' "$tmpdir/missing"
# (The socket gets its name only once it listens: a client that found
# it bound but not yet listening would be refused, not misled.)
/usr/bin/python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30)
s.bind(sys.argv[1] + ".tmp"); s.listen(1); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
c, _ = s.accept(); c.recv(100); c.sendall(b"HTTP/1.0 400 Bad\n\n"); c.close()' \
  "$tmpdir/foreign.sock" &
wait_for "the foreign socket" test -S "$tmpdir/foreign.sock"
fails adaptra-stat "$tmpdir/foreign.sock" 2> "$tmpdir/foreign"
wait
grep -q 'not an adaptra control socket' "$tmpdir/foreign" ||
  { cat "$tmpdir/foreign"; exit 1; }
echo "test-stats-socket: ok"
