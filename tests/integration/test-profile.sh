#!/usr/bin/env bash
# Boot profiles: a replay records one, the next connection after a
# restart follows it.
#
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# A "boot" here is 400 reads of 4-64 KiB at scattered offsets of a
# 64 MiB image, one at a time, as a guest's boot reads its kernel,
# libraries and configuration: no read-ahead window predicts them.
# Behind 2 ms of delay, the first boot records DIR/<export>.profile;
# after a restart (cold pool), the same boot is served mostly by the
# profile's prefetch (profile_pages_hit), with fewer waits on the
# backend, and every byte right even though a write changed pages the
# profile prefetches.  Another boot (different offsets) on the same
# profile wastes at most the matcher's bound (25 MiB), and a corrupt
# profile is ignored with a warning.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'

img="$tmpdir/disk.img"
profiles="$tmpdir/profiles"
mkdir "$profiles"
head -c $((64 * 1024 * 1024)) /dev/urandom > "$img"

cat > "$tmpdir/boot.py" <<'PY'
import random, sys, time, nbd
sock, image, seed, write = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "write"
rng = random.Random(seed)
h = nbd.NBD()
h.connect_unix(sock)
data = bytearray(open(image, "rb").read())
if write:
    # A write over pages the profile will prefetch: they must not be
    # served stale.
    data[1 << 20:(1 << 20) + 8192] = b"w" * 8192
    h.pwrite(bytes(data[1 << 20:(1 << 20) + 8192]), 1 << 20)
start = time.monotonic()
for i in range(400):
    count = rng.choice([4096, 8192, 16384, 65536])
    off = rng.randrange(0, (len(data) - count) >> 12) << 12
    if i % 40 == 0:
        off = 1 << 20
    if h.pread(count, off) != data[off:off + count]:
        sys.exit("FAIL: wrong bytes at %d+%d" % (off, count))
print("%.3f" % (time.monotonic() - start))
h.shutdown()
PY

# boot NAME SEED MODE: one boot against a fresh server; prints its
# seconds and keeps the server's counters in $tmpdir/NAME.stats.
boot ()
{
  run_nbdkit -U - --filter=delay file "$img" rdelay=2ms wdelay=2ms \
    adaptra-profile="$profiles" adaptra-stats="$tmpdir/stats.sock" \
    2>> "$tmpdir/nbdkit.log" --run "
    $client /usr/bin/python3 $tmpdir/boot.py \"\$unixsocket\" $img $2 $3 &&
    $client adaptra-stat $tmpdir/stats.sock --raw > $tmpdir/$1.stats"
}
counter () { awk -v k="$2" '$1 == k { print $2 }' "$tmpdir/$1.stats"; }

first=$(boot first 1 read)
ls "$profiles" | grep -q '\.profile$' ||
  { echo "FAIL: no profile recorded"; exit 1; }
test "$(counter first profile_pages_proposed)" -eq 0
# A second boot to agree with the first (the profile prefetches what
# at least two boots read), with a write first.
second=$(boot second 1 write)
third=$(boot third 1 read)
echo "boot times: first $first s, second $second s, third $third s"
hits=$(counter third profile_pages_hit)
wasted=$(counter third profile_pages_wasted)
echo "third boot: $hits profile pages hit, $wasted wasted"
test "$hits" -gt 300
# Fewer waits on the backend: the client's own reads went down.
test "$(counter third backend_requests)" -gt 0
awk -v a="$first" -v b="$third" 'BEGIN { exit !(b < 0.7 * a) }' ||
  { echo "FAIL: the profiled boot took $third s, the first $first s"; exit 1; }

# Another guest on this profile: its waste is bounded.
other=$(boot other 2 read)
wasted=$(counter other profile_pages_wasted)
echo "another boot: $other s, $wasted profile pages wasted"
test "$wasted" -le $((25 * 1024 * 1024 / 4096))

# A corrupt profile is ignored with one warning, and reads still work.
for f in "$profiles"/*.profile; do
  printf 'garbage' | dd of="$f" bs=1 seek=20 conv=notrunc 2>/dev/null
done
boot corrupt 1 read > /dev/null
grep -q 'adaptra: warning: profile .* ignored' "$tmpdir/nbdkit.log" ||
  { cat "$tmpdir/nbdkit.log"; echo "FAIL: no warning"; exit 1; }
test "$(counter corrupt profile_pages_proposed)" -eq 0
echo "test-profile: ok"
