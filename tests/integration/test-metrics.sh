#!/usr/bin/env bash
# test-metrics.sh: adaptra-metrics serves /metrics to Prometheus over HTTP.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# With adaptra-metrics=PORT the filter answers GET /metrics on the
# loopback address only, in the Prometheus text format (promtool check
# metrics passes it, during reads), with adaptra_build_info and the
# pool's size and use; other paths get 404, other methods 405.  A
# taken port and a bad value stop nbdkit at start-up with one line
# naming the parameter.

source "$(dirname "$0")/functions.sh"
requires promtool --version
requires curl --version

# A port nobody listens on now (the kernel's pick, released).
port=$(/usr/bin/python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port/metrics
sock=$tmpdir/nbd.sock

# bypass=never: the RAM disk is fast enough for adaptra to step aside.
run_nbdkit -U "$sock" -P "$tmpdir/pid" memory 64M adaptra-pool=64M \
  adaptra-bypass=never adaptra-metrics="$port"
cleanup_fns+=('kill "$(cat "$tmpdir/pid")"')
for _ in $(seq 100); do [ -s "$tmpdir/pid" ] && break; sleep 0.1; done

# Loopback only, by default.
ss -ltnH "sport = :$port" > "$tmpdir/listening"
cat "$tmpdir/listening"
test "$(wc -l < "$tmpdir/listening")" -eq 1
grep -q " 127\.0\.0\.1:$port " "$tmpdir/listening"

# A scrape during reads, one after: both well formed, with the version
# and the pool (64M of pages less a sixteenth for transfer buffers).
scan "$sock" 0 32 &
reader=$!
curl -sSf -D "$tmpdir/headers" "$url" > "$tmpdir/during"
wait "$reader"
curl -sSf "$url" > "$tmpdir/after"
grep -qi '^content-type: text/plain; version=0.0.4' "$tmpdir/headers"
for f in during after; do
  promtool check metrics < "$tmpdir/$f"
done
grep -qx "adaptra_build_info{version=\"[0-9.]*\"} 1" "$tmpdir/after"
size=$(awk '$1 == "adaptra_pool_size_bytes" { print $2 }' "$tmpdir/after")
used=$(awk '$1 == "adaptra_pool_used_bytes" { print $2 }' "$tmpdir/after")
echo "pool: $used of $size bytes used"
test "$size" -gt $((56 * 1024 * 1024))
test "$size" -le $((64 * 1024 * 1024))
test "$used" -ge $((32 * 1024 * 1024))
test "$used" -le "$size"
# The client's bytes are counted.
awk '$1 == "adaptra_client_bytes_total" { exit !($2 >= 32 * 1048576) }' \
  "$tmpdir/after"

# Other paths and methods.
test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/")" \
  -eq 404
test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url")" -eq 405

# The port is taken now: a second server refuses to start, in one line
# quoting the value as given (the port alone).
fails run_nbdkit -U - memory 1M adaptra-metrics="$port" \
  --run true 2> "$tmpdir/err"
cat "$tmpdir/err"
test "$(grep -c "adaptra-metrics=$port: cannot listen" "$tmpdir/err")" -eq 1

# refused VALUE LINE: adaptra-metrics=VALUE stops nbdkit with one line,
# which holds LINE (a fixed string).
refused ()
{
  fails run_nbdkit -U - memory 1M adaptra-metrics="$1" --run true \
    2> "$tmpdir/err"
  test "$(wc -l < "$tmpdir/err")" -eq 1
  grep -qF -- "$2" "$tmpdir/err" || { cat "$tmpdir/err"; exit 1; }
}

# Bad values, each refused in one line naming it and the forms taken.
# An IPv6 address needs its brackets ("::1" is no port 1 of "::").
for bad in "" "abc" "127.0.0.1:" ":9100" "127.0.0.1:x" "::1" "::1:9100" \
           "[::1" "[::1]" "[127.0.0.1:9100" "[]:9100"; do
  refused "$bad" "adaptra-metrics=$bad is not [ADDR:]PORT (give PORT, ADDR:PORT"
done
# A port out of 1-65535 is refused, not taken modulo 65536 (99999
# would listen on 34463) nor as "any free port" (0).
for bad in 0 65536 99999 127.0.0.1:0 "[::1]:70000" 99999999999999999999; do
  refused "$bad" "adaptra-metrics=$bad: port ${bad##*:} is not in 1-65535"
done
# An IPv6 address in brackets is listened on, where the host has IPv6.
if [ -s /proc/net/if_inet6 ]; then
  run_nbdkit -U - memory 1M adaptra-metrics="[::1]:$port" \
    --run "ss -ltnH 'sport = :$port'" > "$tmpdir/listening"
  grep -q " \[::1\]:$port " "$tmpdir/listening"
fi
echo "test-metrics: ok"
