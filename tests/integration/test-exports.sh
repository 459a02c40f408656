#!/usr/bin/env bash
# Exports and tenants: every client gets its own bytes, with any plugin.
#
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
#  1. file dir=: three images of unaligned, different sizes, six
#     connections (two an image) reading interleaved through a small
#     pool, every byte compared with the files; a client naming a
#     missing export gets the plugin's error and the others go on;
#     "exports" lists one shared volume an image.
#  2. tmpdisk (a private disk per connection): each connection reads
#     its disk (so the pool holds it), writes 1 MiB, reads its own
#     writes back, and never sees another connection's disk.
#  3. The nbd plugin forwarding client export names to a second nbdkit
#     that serves two exports (file dir=): each name gets its bytes.
#  4. A write through one export drops none of another export's pages.
#  5. A plugin that serialises requests: named exports are read ahead
#     in the readers' threads, with one warning, every byte right; a
#     writable default export too, and the warning says to serve it
#     read-only (-r), which gives it background read-ahead.
#  6. docs/DEPLOYMENT.md's "Updating an image": a new version of an
#     image, published under a new name of the same size while a guest
#     reads the old one, is read right by new guests, and the old
#     guest keeps reading the old version after its file is removed.

source "$(dirname "$0")/functions.sh"
srcdir=$(cd "$(dirname "$0")" && pwd)
requires /usr/bin/python3 -c 'import nbd'
requires "$NBDKIT" tmpdisk --version
requires "$NBDKIT" nbd --version

images="$tmpdir/images"
mkdir "$images"
head -c $((3 * 1024 * 1024 + 5)) /dev/urandom > "$images/a.img"
head -c $((5 * 1024 * 1024)) /dev/urandom > "$images/b.img"
head -c $((7 * 1024 * 1024 - 1)) /dev/urandom > "$images/c.img"

# --- 1. file dir= ----------------------------------------------------
start_server dir file dir="$images" adaptra-pool=2M
$client /usr/bin/python3 - "$sock" "$images" <<'PY'
import os, random, sys, nbd
sock, images = sys.argv[1], sys.argv[2]
names = ["a.img", "b.img", "c.img"]
data = {n: open(os.path.join(images, n), "rb").read() for n in names}
conns = []
for i in range(6):
    h = nbd.NBD()
    h.set_export_name(names[i % 3])
    h.connect_unix(sock)
    assert h.get_size() == len(data[names[i % 3]]), names[i % 3]
    conns.append([h, names[i % 3], 0])
rng = random.Random(7)
checked = 0
live = list(conns)
while live:
    for c in list(live):
        h, name, pos = c
        size = len(data[name])
        # Sequential with varied, unaligned request sizes, and now and
        # then a random read.
        if rng.random() < 0.1:
            count = rng.randrange(1, 65536)
            off = rng.randrange(0, size - count)
        else:
            count = min(rng.choice([512, 4096, 65536, 131072, 12345]),
                        size - pos)
            off = pos
            c[2] = pos + count
            if c[2] >= size:
                live.remove(c)
        got = h.pread(count, off)
        if got != data[name][off:off + count]:
            sys.exit("FAIL: %s: wrong bytes at %d+%d" % (name, off, count))
        checked += count
bad = nbd.NBD()
bad.set_export_name("missing.img")
try:
    bad.connect_unix(sock)
    sys.exit("FAIL: a missing export was served")
except nbd.Error:
    pass
for h, name, _ in conns:
    assert h.pread(4096, 0) == data[name][:4096]
    h.shutdown()
print("file dir=: %d bytes checked over 6 connections" % checked)
PY
exports=$($client adaptra-stat "$stats" --command exports)
echo "$exports"
for n in a b c; do
  echo "$exports" | grep -qE "^[0-9]+ +$n\.img +export " ||
    { echo "FAIL: no shared volume for $n.img"; exit 1; }
done
test "$(echo "$exports" | grep -c '\.img ')" -eq 3

# --- 4. a write through one export leaves another's pages -------------
$client /usr/bin/python3 - "$sock" "$stats" "$srcdir" <<'PY'
import sys, nbd
sock, stats = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from control import counter, quiet
a = nbd.NBD(); a.set_export_name("a.img"); a.connect_unix(sock)
b = nbd.NBD(); b.set_export_name("b.img"); b.connect_unix(sock)
before_b = b.pread(65536, 0)
quiet(stats)    # b's first read may have started a window
before = counter(stats, "backend_requests")
a.pwrite(b"x" * 65536, 0)
assert a.pread(65536, 0) == b"x" * 65536, "a does not read its write"
quiet(stats)    # and so may a's read-back
between = counter(stats, "backend_requests")
assert b.pread(65536, 0) == before_b, "b changed"
after = counter(stats, "backend_requests")
# a's read-back went to the plugin; b's pages stayed in the pool.
assert between > before and after == between, (before, between, after)
print("a write through a.img kept b.img's pages")
PY
kill "$(cat "$tmpdir/dir.pid")"

# --- 2. tmpdisk ------------------------------------------------------
start_server tmpdisk tmpdisk size=4M adaptra-pool=8M
$client /usr/bin/python3 - "$sock" "$stats" "$srcdir" <<'PY'
import os, sys, nbd
sock, stats = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from control import ask
conns = []
for i in range(3):
    h = nbd.NBD()
    h.connect_unix(sock)
    conns.append(h)
mine = [os.urandom(1 << 20) for _ in conns]
disks = [h.pread(4 << 20, 0) for h in conns]         # into the pool
for h, data in zip(conns, mine):
    h.pwrite(data, 0)
for i, (h, data) in enumerate(zip(conns, mine)):
    back = h.pread(1 << 20, 0)
    bad = sum(back[k:k + 65536] != data[k:k + 65536]
              for k in range(0, 1 << 20, 65536))
    if bad:
        sys.exit("FAIL: connection %d: %d of 16 chunks not its writes"
                 % (i, bad))
    rest = h.pread(3 << 20, 1 << 20)
    if rest != disks[i][1 << 20:]:
        sys.exit("FAIL: connection %d: its disk changed" % i)
    for j, other in enumerate(mine):
        if j != i and other[:65536] in back + rest:
            sys.exit("FAIL: connection %d sees connection %d's data" % (i, j))
late = nbd.NBD()
late.connect_unix(sock)
seen = late.pread(4 << 20, 0)
if any(d[:65536] in seen for d in mine):
    sys.exit("FAIL: a new connection sees an earlier one's data")
reply = ask(stats, "exports")
print(reply)
rows = [l.split() for l in reply.splitlines()[1:] if l]
if len(rows) != 4 or any(r[2:4] != ["connection", "4194304"] for r in rows):
    sys.exit("FAIL: not one per-connection volume for each of 4 connections")
print("tmpdisk: 3 connections read their own writes, and only theirs")
PY
kill "$(cat "$tmpdir/tmpdisk.pid")"

# --- 3. the nbd plugin in front of a multi-export server --------------
inner="$tmpdir/inner.sock"
"$NBDKIT" -f -U "$inner" -P "$tmpdir/inner.pid" file dir="$images" \
  2> "$tmpdir/inner.log" &
cleanup_fns+=("kill $! 2>/dev/null; wait $! 2>/dev/null")
for _ in $(seq 300); do [ -S "$inner" ] && break; sleep 0.1; done
start_server nbd nbd socket="$inner" dynamic-export=true adaptra-pool=4M
for n in a b c; do
  nbdcopy "nbd+unix:///$n.img?socket=$sock" "$tmpdir/copy-$n"
  cmp "$images/$n.img" "$tmpdir/copy-$n"
done
echo "nbd plugin: three forwarded exports copied, every byte equal"
test "$($client adaptra-stat "$stats" --command exports | grep -c '\.img ')" \
  -eq 3
# --- 5. a plugin that serialises requests -----------------------------
# Named exports get no background contexts there: read-ahead runs in
# the readers' threads, and adaptra says so once, at the first one.
kill "$(cat "$tmpdir/nbd.pid")"
start_server serial --filter=noparallel file dir="$images" adaptra-pool=4M
for n in a b; do
  nbdcopy --connections=1 "nbd+unix:///$n.img?socket=$sock" \
    "$tmpdir/copy-$n"
  cmp "$images/$n.img" "$tmpdir/copy-$n"
done
test "$(grep -c 'adaptra: warning: .*named exports runs in the readers' \
  "$tmpdir/serial.log")" -eq 1 ||
  { cat "$tmpdir/serial.log"; echo "FAIL: no single warning"; exit 1; }
$client adaptra-stat "$stats" --command exports |
  grep -qE '^[0-9]+ +a\.img +export +[0-9]+ +[0-9]+ +0 ' ||
  { echo "FAIL: a serialising plugin's named export has contexts"; exit 1; }
echo "serialising plugin: named exports right, read ahead by their readers"
# The default export of such a plugin, writable and without multi-conn:
# each connection has a volume of its own, read ahead by its reader,
# and the warning tells the user to serve it read-only (-r); served so,
# its connections share one volume read ahead in the background, with
# no warning.
kill "$(cat "$tmpdir/serial.pid")"
for ro in "" -r; do
  start_server "writable$ro" $ro --filter=noparallel --filter=multi-conn \
    file "$images/b.img" multi-conn-mode=disable adaptra-pool=4M
  nbdcopy --connections=1 "nbd+unix:///?socket=$sock" "$tmpdir/copy-b$ro"
  cmp "$images/b.img" "$tmpdir/copy-b$ro"
  # Read-only, the connections' one volume stays for the next.
  if [ -n "$ro" ]; then
    $client adaptra-stat "$stats" --command exports |
      grep -qE '^[0-9]+ +\(default\) +export ' ||
      { echo "FAIL: a read-only export's connections share no volume"; exit 1; }
  fi
  kill "$(cat "$tmpdir/writable$ro.pid")"
done
test "$(grep -c "adaptra: warning: .*read-ahead of writable connections runs in the readers' threads; serve the export read-only (nbdkit -r)" \
  "$tmpdir/writable.log")" -eq 1 ||
  { cat "$tmpdir/writable.log"; echo "FAIL: no hint to serve with -r"; exit 1; }
if grep 'adaptra: warning' "$tmpdir/writable-r.log"; then
  echo "FAIL: a warning for a read-only export"; exit 1
fi
echo "serialising plugin, writable: told to serve read-only"

# --- 6. a new version of an image under a new name --------------------
cp "$images/b.img" "$tmpdir/vm1-v1"
start_server update file dir="$images" adaptra-pool=4M --filter=delay rdelay=1ms
$client /usr/bin/python3 - "$sock" "$images" "$tmpdir/vm1-v1" <<'PY'
import os, sys, nbd
sock, images, v1_copy = sys.argv[1:4]
v1 = open(v1_copy, "rb").read()

def connect(name):
    h = nbd.NBD()
    h.set_export_name(name)
    h.connect_unix(sock)
    return h

def scan(h, size):
    return b"".join(h.pread(min(65536, size - o), o)
                    for o in range(0, size, 65536))

old = connect("b.img")
if scan(old, len(v1)) != v1:
    sys.exit("FAIL: the old version read wrong")
v2 = bytes(b ^ 0x5a for b in v1)        # same size, every byte changed
with open(os.path.join(images, "b-v2.img"), "wb") as f:
    f.write(v2)
for i in range(2):
    new = connect("b-v2.img")
    if scan(new, len(v2)) != v2:
        sys.exit("FAIL: guest %d of the new version read the old one" % i)
    new.shutdown()
os.unlink(os.path.join(images, "b.img"))
if scan(old, len(v1)) != v1:
    sys.exit("FAIL: the old guest lost its version")
old.shutdown()
print("update: the new version under a new name, the old one kept")
PY
echo "test-exports: ok"
