#!/usr/bin/env bash
# test-control-limits.sh: the control socket's bounds.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# The control socket's bounds: idle clients (measured from their last
# command, so trickling bytes does not help) are closed after the idle
# limit (adaptra-stats-idle), clients that do not read are dropped, the
# 17th client is told what to do, and adaptra-stat --trace takes the
# trace lines that arrive with the "ok" to "trace on" and keeps itself
# alive.  The idle check waits about the limit and 12 s more, in a
# server of its own, while the others run.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'

srcdir=$(cd "$(dirname "$0")" && pwd)
img="$tmpdir/disk.img"
head -c $((64 * 1024 * 1024)) /dev/urandom > "$img"

# The idle clients, against a server without traffic.  A limit of 10 s
# rather than the default minute, so the check takes 22 s, not 72: the
# clients that keep alive do so every 2.5 and 3.3 s, and
# adaptra-stat --trace every 3.3 s, well inside it.
idle_secs=10
run_nbdkit -U - memory 1M adaptra-stats="$tmpdir/idle.sock" \
  adaptra-stats-idle=$idle_secs \
  --run "$client /usr/bin/python3 $srcdir/control_limits.py idle $tmpdir/idle.sock $idle_secs" \
  > "$tmpdir/idle.log" 2>&1 &
idle_pid=$!

# adaptra-stat --trace reads the trace lines that came with the "ok":
# a fake server sends both in one write (after the idle limit, which
# adaptra-stat asks first).
/usr/bin/python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30)
s.bind(sys.argv[1] + ".tmp"); s.listen(1); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
c, _ = s.accept(); f = c.makefile("rb")
assert f.readline() == b"help\n"
c.sendall(b"adaptra control protocol 1\nstats ...\n\n")
assert f.readline() == b"control\n"
c.sendall(b"control_clients 1\ncontrol_idle_secs 60\n\n")
assert f.readline() == b"trace on\n"
c.sendall(b"ok\n\ntrace: readahead-state(client=0, stream=1, index=4, ra=8+8-2) = 8\n")
f.readline()     # until adaptra-stat goes
' "$tmpdir/fake.sock" &
fake=$!
wait_for "the fake server" test -S "$tmpdir/fake.sock"
adaptra-stat "$tmpdir/fake.sock" --trace > "$tmpdir/fake.out" \
  2> "$tmpdir/fake.err" &
tracer=$!
wait_for "the trace lines sent with 'ok'" grep -qx \
  'readahead-state(client=0, stream=1, index=4, ra=8+8-2) = 8' "$tmpdir/fake.out" ||
  :
kill $tracer; wait $tracer || :
wait $fake || :
if ! grep -qx 'readahead-state(client=0, stream=1, index=4, ra=8+8-2) = 8' \
       "$tmpdir/fake.out"; then
  echo "FAIL: adaptra-stat --trace lost the lines sent with 'ok'"
  cat "$tmpdir/fake.out" "$tmpdir/fake.err"
  exit 1
fi

cat > "$tmpdir/run.sh" <<RUN
$(checks_prelude)
sock=$tmpdir/stats.sock
# A scan of [FROM, TO) MiB in 16K requests, in a loop until killed
# (exec: so that killing the background job kills the scan).
busy ()
{
  exec /usr/bin/python3 -c '
import nbd, sys
h = nbd.NBD(); h.connect_unix(sys.argv[1])
while True:
    for off in range(int(sys.argv[2]) << 20, int(sys.argv[3]) << 20, 16 << 10):
        h.pread(16 << 10, off)' "\$@"
}
# --trace started during a busy scan, with lines waiting, prints them.
adaptra-stat "\$sock" --command 'set max 16K'
busy "\$1" 0 64 &
scanner=\$!
# client_requests so far; the number of trace lines of the busy scan.
requests ()
{
  adaptra-stat "\$sock" --raw | awk '\$1 == "client_requests" { print \$2 }'
}
scanning () { test "\$(requests)" -gt 100; }
traced () { grep -cE '^readahead-[a-z]+\(client=' $tmpdir/busy.trace || :; }
traced_10 () { test "\$(traced)" -ge 10; }
wait_for "a busy scan" scanning
adaptra-stat "\$sock" --trace > $tmpdir/busy.trace &
tracer=\$!
wait_for "10 trace lines of it" traced_10 || :
kill \$tracer; wait \$tracer || :
kill \$scanner; wait \$scanner || :
adaptra-stat "\$sock" --command 'set max auto'
traced_10

# Full server, non-reading tracers dropped.
/usr/bin/python3 $srcdir/control_limits.py full "\$1" "\$sock"
# adaptra-stat on a full server: one sentence.
/usr/bin/python3 -c '
import socket, sys, time
s = []
for _ in range(16):
    c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); s.append(c)
print("ready", flush=True)
time.sleep(3600)' "\$sock" > $tmpdir/holders &
holders=\$!
wait_for "16 slot holders" grep -q ready $tmpdir/holders
fails adaptra-stat "\$sock" 2> $tmpdir/full.err
kill \$holders; wait \$holders || :
# One sentence (the rest is set -x).
test "\$(grep -vc "^+" $tmpdir/full.err)" -eq 1 || { cat $tmpdir/full.err; exit 1; }
grep -q 'the server refused: too many clients: 16 are connected' $tmpdir/full.err
RUN

# The scans read ahead on a file in the page cache, where adaptra
# would otherwise step aside (adaptra-bypass) and trace little.
run_checks "$tmpdir/run.sh" file "$img" adaptra-pool=32M \
  adaptra-stats="$tmpdir/stats.sock" adaptra-bypass=never

rc=0
wait $idle_pid || rc=$?
cat "$tmpdir/idle.log"
if [ "$rc" -ne 0 ]; then
  echo "FAIL: the idle checks failed (status $rc)"
  exit 1
fi
echo "test-control-limits: ok"
