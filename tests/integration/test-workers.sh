#!/usr/bin/env bash
# test-workers.sh: prefetch threads and backend handles follow the load: few idle, bounded for one stream.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# A remote-like export (5 ms a read) over a plugin that serialises
# requests per handle (the noparallel filter), so that the workers read
# through a set of handles of their own (plugin/handles.h):
#
#   - the idle server runs few prefetch threads (ADAPTRA_WORKERS_MIN,
#     4) and holds no handle;
#   - one sequential reader keeps at most 8 handles open;
#   - idle again, the threads end down to those few and the handles
#     close.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
requires /usr/bin/python3 -c 'import nbd'
requires nbdkit --filter=noparallel null --version
requires nbdkit --filter=delay null --version

size=$((48 * 1024 * 1024))
head -c "$size" /dev/urandom > "$tmpdir/disk.img"
start_server remote --filter=noparallel --filter=delay \
  file "$tmpdir/disk.img" rdelay=5ms

few=4
gauge () { counter "$1"; }
test "$(gauge workers_running)" -le "$few"
test "$(gauge backend_handles)" -eq 0

# The gauges' highest values while one client reads the image in order.
# The reader can finish between two samples on a loaded machine (a
# sample asks the statistics socket twice, the read takes a fraction of
# a second), so half way it waits for one sample, taken while the
# handles it used are open (they close 2 s unused, HANDLES_IDLE_NS).
: > "$tmpdir/samples"
/usr/bin/python3 -c '
import nbd, os, sys, time
data = open(sys.argv[2], "rb").read()
h = nbd.NBD(); h.connect_uri(sys.argv[1])
size = h.get_size()
for off in range(0, size, 64 << 10):
    if off == size // 2:
        open(sys.argv[3] + "/half", "w").close()
        for _ in range(300):
            if os.path.exists(sys.argv[3] + "/sampled"):
                break
            time.sleep(0.01)
    assert h.pread(64 << 10, off) == data[off:off + (64 << 10)]
h.shutdown()' "nbd+unix:///?socket=$sock" "$tmpdir/disk.img" "$tmpdir" &
reader=$!
cleanup_fns+=("kill $reader 2>/dev/null")
while kill -0 "$reader" 2> /dev/null; do
  half=false
  [ -e "$tmpdir/half" ] && half=true
  echo "$(gauge backend_handles) $(gauge workers_running)" >> "$tmpdir/samples"
  "$half" && touch "$tmpdir/sampled"
  sleep 0.05
done
wait "$reader"
read -r handles threads < <(awk '
  $1 > h { h = $1 } $2 > t { t = $2 } END { print h + 0, t + 0 }' \
  "$tmpdir/samples")
echo "test-workers: one stream: at most $handles handles, $threads threads"
test "$handles" -ge 1
test "$handles" -le 8

# Idle: the threads end (after 2 s without a job) and the handles close
# (after 2 s unused), within 10 s.
for _ in $(seq 100); do
  [ "$(gauge workers_running)" -le "$few" ] &&
    [ "$(gauge backend_handles)" -eq 0 ] && break
  sleep 0.1
done
test "$(gauge workers_running)" -le "$few"
test "$(gauge backend_handles)" -eq 0
echo "test-workers: ok"
