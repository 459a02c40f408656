#!/usr/bin/env bash
# test-profile-fleet.sh: several servers share one profile directory.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# A fleet's servers (here 3 nbdkit processes; on several hosts, over
# NFS) record boots of one image into one profile directory.  In each
# of 4 rounds every server serves a boot and the 3 boots end at the
# same moment, so their merges race: every merge must count (12
# boots), and a reader that loads the file all along must find every
# version whole (its checksum right) with boots never going back.  A
# fourth server, started before any profile existed, follows the
# profile the others wrote at its first connection.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'

servers=3
rounds=4
img="$tmpdir/disk.img"
profiles="$tmpdir/profiles"
mkdir "$profiles"
head -c $((32 * 1024 * 1024)) /dev/urandom > "$img"
file="$profiles/$(adaptra-profile name "" "$(stat -c %s "$img")")"

# start NAME: a server on $tmpdir/NAME.sock, statistics on NAME.stats
# (start_server: adaptra must not step aside from the file, as fast as
# the pool, or it would prefetch nothing).
start ()
{
  start_server "$1" file "$img" adaptra-profile="$profiles" \
    adaptra-pool=32M adaptra-workers=2 adaptra-profile-workers=2
}

# boots.py SOCKET...: one boot on each server at once (300 scattered
# reads of 4-64 KiB, the same on each), all connections closed at the
# same moment.
cat > "$tmpdir/boots.py" <<'PY'
import random, sys, threading, nbd
socks = sys.argv[1:]
rng = random.Random(1)
reads = []
for i in range(300):
    count = rng.choice([4096, 8192, 16384, 65536])
    reads.append((rng.randrange(0, (32 << 20) - count >> 12) << 12, count))
done = threading.Barrier(len(socks))
def boot(sock):
    h = nbd.NBD()
    h.connect_unix(sock)
    for off, count in reads:
        h.pread(count, off)
    done.wait()
    h.shutdown()
threads = [threading.Thread(target=boot, args=(s,)) for s in socks]
for t in threads: t.start()
for t in threads: t.join()
PY

# reader.py FILE STOP: load FILE until STOP exists; each version must
# be whole (length and FNV-1a checksum as the format says) and boots
# must never go back.  Prints the versions seen.
cat > "$tmpdir/reader.py" <<'PY'
import os, struct, sys, time
path, stop = sys.argv[1], sys.argv[2]
def fnv(h, data):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h
seen, last, prev = 0, 0, None
while not os.path.exists(stop):
    time.sleep(0.001)       # the rounds take seconds: leave them the CPU
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        continue
    if data == prev:
        continue
    prev = data
    boots, idlen, count = struct.unpack_from("<III", data, 24)
    if data[:8] != b"ADAPROF\n" or len(data) != 48 + idlen + 16 * count:
        sys.exit("FAIL: a torn version (%d bytes)" % len(data))
    (sum_,) = struct.unpack_from("<Q", data, 40)
    if fnv(fnv(0xcbf29ce484222325, data[:40]), data[48:]) != sum_:
        sys.exit("FAIL: a version with a bad checksum")
    if boots < last:
        sys.exit("FAIL: boots went back from %d to %d" % (last, boots))
    last = boots
    seen += 1
print(seen)
PY

for s in $(seq 0 $servers); do start "s$s"; done
$client /usr/bin/python3 "$tmpdir/reader.py" "$file" "$tmpdir/stop" \
  > "$tmpdir/versions" &
reader=$!
socks=$(for s in $(seq 1 $servers); do echo "$tmpdir/s$s.sock"; done)
for _ in $(seq $rounds); do
  # shellcheck disable=SC2086
  $client /usr/bin/python3 "$tmpdir/boots.py" $socks
done
touch "$tmpdir/stop"
wait "$reader" || { echo "FAIL: the reader saw a bad version"; exit 1; }
echo "the reader checked $(cat "$tmpdir/versions") versions"
adaptra-profile list "$profiles"
boots=$(adaptra-profile list "$profiles" | sed -n 's/.* boots=\([0-9]*\).*/\1/p')
test "$boots" -eq $((servers * rounds)) ||
  { echo "FAIL: $boots of $((servers * rounds)) boots merged"; exit 1; }
test "$(cat "$tmpdir/versions")" -ge 1
test -z "$(find "$profiles" -name '.*')" ||
  { echo "FAIL: temporary or lock files left"; ls -a "$profiles"; exit 1; }

# The server that has not served a boot yet follows the fleet's profile.
$client /usr/bin/python3 "$tmpdir/boots.py" "$tmpdir/s0.sock"
proposed=$(adaptra-stat "$tmpdir/s0.stats" --raw |
             awk '$1 == "profile_pages_proposed" { print $2 }')
echo "s0: $proposed profile pages proposed"
test "$proposed" -gt 0 ||
  { echo "FAIL: s0 did not follow the shared profile"; exit 1; }
# Sanitizer builds: no report from any server.
if grep -E 'Sanitizer|runtime error' "$tmpdir"/*.log; then
  echo "FAIL: a sanitizer report"; exit 1
fi
echo "test-profile-fleet: ok"
