#!/usr/bin/env bash
# test-stats-ops.sh: the statistics an operator meets.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# What an operator meets: adaptra-stat's options and messages, a group
# that may read the statistics but not change the server, Prometheus
# output that promtool accepts during traffic, and the socket file's
# life: removed on a failed start, given to adaptra-stats-owner, gone
# after nbdkit forked into the background and stopped.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'
requires runuser --version
requires promtool --version
if [ "$(id -u)" -ne 0 ]; then
  echo "$0: SKIP: the permission and owner checks need root"
  exit 77
fi

chmod 0711 "$tmpdir"
img="$tmpdir/disk.img"
sock="$tmpdir/stats.sock"
head -c $((64 * 1024 * 1024)) /dev/urandom > "$img"
chmod 0644 "$img"

# adaptra-stat without a server: version, help, refused combinations.
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' config.h)
test -n "$version"
test "$(adaptra-stat --version)" = "adaptra-stat (adaptra) $version"
adaptra-stat --help | grep -q -- '--clients'
for combo in "--json --prometheus" "--streams --clients" \
             "--trace --command stats" "--watch 1 --prometheus" \
             "--raw --json" "--trace --watch 1"; do
  # shellcheck disable=SC2086
  fails adaptra-stat "$sock" $combo 2> "$tmpdir/combo"
  grep -q 'do not go together' "$tmpdir/combo" ||
    { echo "FAIL: $combo: $(cat "$tmpdir/combo")"; exit 1; }
done

cat > "$tmpdir/run.sh" <<RUN
$(checks_prelude)
sock=$sock
scan "\$1" 0 32

# Human units by default, the server's numbers with --raw.
adaptra-stat "\$sock" > $tmpdir/human
grep -Eq '^client_bytes +32\.0 MiB$' $tmpdir/human
grep -Eq '^backend_latency_ms +[0-9]+\.[0-9]{3}$' $tmpdir/human
adaptra-stat "\$sock" --raw | grep -Eq '^client_bytes +33554432$'
adaptra-stat "\$sock" --clients | grep -q '^id '

# An NBD socket is named as such.
fails adaptra-stat "\$1" 2> $tmpdir/nbd.err
grep -q 'is an NBD socket, not an adaptra control socket' $tmpdir/nbd.err

# --watch --json: JSON lines, counts as integers; a reset in the
# middle gives no negative rate.
timeout -k 5 -s INT 60 adaptra-stat "\$sock" --watch 0.3 --json \
  > $tmpdir/watch.json &
watcher=\$!
sleep 0.5
scan "\$1" 32 48
sleep 0.7
# The interval of the reset: counters lower than before, though the
# scan after it moved them.
adaptra-stat "\$sock" --command reset
scan "\$1" 48 56
sleep 0.8
kill -INT \$watcher
wait \$watcher || :
/usr/bin/python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) >= 3, rows
for r in rows:
    assert all(v >= 0 for v in r.values()), r
    # Counts are integers, as in the server JSON; rates need not be.
    assert all(type(r[k]) is int for k in ("streams", "window_max_bytes")), r
assert any(r["client_bytes_per_s"] > 0 for r in rows), rows' $tmpdir/watch.json

# Prometheus output during traffic passes promtool.
# (The reader scans until told to stop.)
/usr/bin/python3 -c '
import nbd, os, sys
h = nbd.NBD(); h.connect_unix(sys.argv[1])
off = 0
while not os.path.exists(sys.argv[2]):
    h.pread(64 << 10, off); off = (off + (64 << 10)) % (64 << 20)
    if off == 1 << 20: open(sys.argv[2] + ".started", "w").close()
h.shutdown()' "\$1" $tmpdir/stop &
scanner=\$!
wait_for "the scan's first MiB" test -e $tmpdir/stop.started
adaptra-stat "\$sock" --prometheus > $tmpdir/metrics
adaptra-stat "\$sock" --command 'metrics clients' > $tmpdir/metrics-clients
touch $tmpdir/stop
wait \$scanner
promtool check metrics < $tmpdir/metrics
promtool check metrics < $tmpdir/metrics-clients
grep -q '^adaptra_backend_latency_seconds ' $tmpdir/metrics
grep -q '^adaptra_connection_read_bytes_total{' $tmpdir/metrics-clients

# The group may read, not change: set, reset and trace are refused.
test "\$(stat -c %a "\$sock")" = 660
runuser -u nobody -g root -- adaptra-stat "\$sock" --json > /dev/null
for cmd in 'set ratio 30' reset 'trace on'; do
  fails runuser -u nobody -g root -- adaptra-stat "\$sock" --command "\$cmd" \
    > $tmpdir/denied
  grep -q '^error: permission denied: ' $tmpdir/denied
done
fails runuser -u nobody -g root -- adaptra-stat "\$sock" --trace 2> $tmpdir/denied
grep -q 'permission denied' $tmpdir/denied
adaptra-stat "\$sock" --command 'get ratio' | grep -qx 'ratio 50'
adaptra-stat "\$sock" --command 'control' | grep -qx 'control_denied 4'
adaptra-stat "\$sock" --command 'set ratio 40'

# --watch when the server stops: one sentence.
adaptra-stat "\$sock" --watch 0.2 > $tmpdir/stopped.out 2> $tmpdir/stopped.err &
echo \$! > $tmpdir/watcher.pid
wait_for "a line of --watch" test -s $tmpdir/stopped.out
RUN

run_checks "$tmpdir/run.sh" file "$img" adaptra-pool=32M \
  adaptra-stats="$sock" adaptra-stats-mode=0660
watcher=$(cat "$tmpdir/watcher.pid")
wait_for "the exit of --watch" gone "$watcher" || :
if [ "$(cat "$tmpdir/stopped.err")" != \
     "adaptra-stat: $sock: the server closed the connection (has nbdkit stopped?)" ]; then
  echo "FAIL: --watch on a server that stopped said: $(cat "$tmpdir/stopped.err")"
  exit 1
fi
test ! -e "$sock"

# A failed start (nbdkit's own socket is in use, after adaptra bound
# its socket) leaves no socket file.
/usr/bin/python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1] + ".tmp"); s.listen(1)
os.rename(sys.argv[1] + ".tmp", sys.argv[1]); time.sleep(3600)' "$tmpdir/busy.sock" &
busy=$!
cleanup_fns+=("kill $busy 2>/dev/null")
wait_for "the busy socket" test -S "$tmpdir/busy.sock"
fails run_nbdkit -f -U "$tmpdir/busy.sock" memory 1M adaptra-stats="$sock" \
  2> "$tmpdir/busy.err"
grep -q 'Address already in use' "$tmpdir/busy.err" || { cat "$tmpdir/busy.err"; exit 1; }
test ! -e "$sock"

# A missing directory is named.
fails run_nbdkit -f -U "$tmpdir/nbd.sock" memory 1M \
  adaptra-stats="$tmpdir/none/stats.sock" 2> "$tmpdir/nodir.err"
grep -q "adaptra-stats=$tmpdir/none/stats.sock: directory $tmpdir/none does not exist" \
  "$tmpdir/nodir.err" || { cat "$tmpdir/nodir.err"; exit 1; }

# Under -u/-g with adaptra-stats-owner the socket is the user's; it is
# there while nbdkit runs in the background, its owner may change the
# server, and it is gone once nbdkit stops.
mkdir "$tmpdir/run"
chown nobody:nogroup "$tmpdir/run"
run_nbdkit -u nobody -g nogroup -P "$tmpdir/run/pid" -U "$tmpdir/run/nbd.sock" \
  memory 1M adaptra-stats="$tmpdir/run/stats.sock" \
  adaptra-stats-owner=nobody:nogroup
# (nbdkit's parent may exit before its daemon writes the pid file.)
wait_for "the pid file of nbdkit -u" test -s "$tmpdir/run/pid"
pid=$(cat "$tmpdir/run/pid")
cleanup_fns+=("kill $pid 2>/dev/null")
test "$(stat -c %U:%G:%a "$tmpdir/run/stats.sock")" = nobody:nogroup:600
runuser -u nobody -- adaptra-stat "$tmpdir/run/stats.sock" \
  --command 'set ratio 20' | grep -qx ok
kill "$pid"
wait_for "the exit of nbdkit -u" gone "$pid" || :
test ! -e "$tmpdir/run/stats.sock" ||
  { echo "FAIL: the socket outlived nbdkit -u"; exit 1; }
echo "test-stats-ops: ok"
