#!/usr/bin/env bash
# test-set-race.sh: tunables changed at run time while writes race read-ahead.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# An operator's "set" lands while clients read and write: bypass
# switched on and off (pages kept from before a bypass must not hide a
# write made during it), the mode switched between adaptive, fixed
# and off, windows resized.  Over a multi-conn RAM disk 2 ms away
# (the delay filter), three connections scan at different request
# sizes while a fourth writes, zeroes and trims just ahead of them,
# and the control socket takes a random "set" every few milliseconds.
# Each read is checked against a shadow copy (a lock keeps a write
# from landing in the middle of a read, not the background prefetches
# from running), and the whole disk is compared at the end.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'

# Seconds of load: each read ahead, then written over, many times.
SECONDS_OF_LOAD=6
size=$((32 * 1024 * 1024))

start_server race memory size=$size adaptra-pool=8M \
  --filter=delay rdelay=2ms
$client /usr/bin/python3 - "$sock" "$stats" "$size" "$SECONDS_OF_LOAD" <<'PY'
import random, subprocess, sys, threading, time, nbd
sock, stats, size, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    float(sys.argv[4])
SETTINGS = ["bypass always", "bypass never", "bypass auto", "mode off",
            "mode fixed", "mode adaptive", "ratio 10", "ratio 90",
            "max 256K", "max auto", "min 4K", "min 16K"]

def connect():
    h = nbd.NBD()
    h.connect_unix(sock)
    return h

data = bytearray(size)
lock = threading.Lock()
stop = threading.Event()
failures = []
readers = [(connect(), n) for n in (4096, 65536, 131072)]
cursor = [i * size // len(readers) for i in range(len(readers))]
writer = connect()

def read(i):
    h, count = readers[i]
    while not stop.is_set():
        off = cursor[i] if cursor[i] + count <= size else 0
        with lock:
            want = bytes(data[off:off + count])
            got = h.pread(count, off)
        if got != want:
            failures.append(f"reader {i}: wrong bytes at {off}+{count}")
            stop.set()
        cursor[i] = off + count

def tune():
    rng = random.Random(2)
    while not stop.is_set():
        setting = rng.choice(SETTINGS)
        r = subprocess.run(["adaptra-stat", stats, "--command",
                            "set " + setting], capture_output=True, text=True)
        if r.stdout.strip() != "ok":
            failures.append(f"set {setting}: {r.stdout.strip()} {r.stderr}")
            stop.set()
        time.sleep(0.02)

threads = [threading.Thread(target=read, args=(i,))
           for i in range(len(readers))] + [threading.Thread(target=tune)]
for t in threads:
    t.start()
rng = random.Random(1)
writes = 0
end = time.monotonic() + seconds
while time.monotonic() < end and not stop.is_set():
    # Just ahead of a reader: into what is being read ahead.
    off = min(size - 1, cursor[rng.randrange(len(readers))]
              + rng.randrange(0, 2 << 20))
    count = min(rng.randrange(1, 100000), size - off)
    op = rng.choice("wzt")
    with lock:
        if op == "w":
            buf = rng.randbytes(count)
            writer.pwrite(buf, off)
            data[off:off + count] = buf
        elif op == "z":
            writer.zero(count, off)
            data[off:off + count] = bytes(count)
        else:
            writer.trim(count, off)     # the memory plugin reads zeros
            data[off:off + count] = bytes(count)
    writes += 1
    time.sleep(0.002)
stop.set()
for t in threads:
    t.join()
if failures:
    sys.exit("FAIL: " + "; ".join(failures))
h = connect()
for off in range(0, size, 1 << 20):
    if h.pread(1 << 20, off) != data[off:off + (1 << 20)]:
        sys.exit(f"FAIL: the disk differs from the shadow in {off}+1M")
print(f"{writes} writes raced {len(readers)} readers and the settings")
PY
echo "test-set-race: ok"
