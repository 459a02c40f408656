#!/usr/bin/env bash
# test-block-status.sh: block status and reads at an odd-sized image's end, as the plugin answers.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# adaptra answers block status from the plugin's answers to queries
# of its own (plugin/filter.c, core/holes.h) and reads in pages, so an
# image whose size is no multiple of a page, with holes that start or
# end inside pages and one that reaches into the last page, is where
# its answers could part from the plugin's.  For pool pages of 512,
# 4K and 64K, one server with adaptra and one without serve the same
# sparse file of 5 MiB + 777 bytes; the extents (merged where adjacent
# ones have one type, which servers may split or join) from offset 0
# and from odd offsets, with and without NBD_CMD_FLAG_REQ_ONE, must be
# the same, and a scan in 3001-byte requests, reads of the last bytes
# and of whole pages across the end, and a backward scan must read
# the file's bytes.

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'

img="$tmpdir/odd.img"
/usr/bin/python3 - "$img" <<'PY'
import random, sys
size = 5 * 1024 * 1024 + 777
data = bytearray(random.Random(1).randbytes(size))
# Zeroed data (reads as zeros, allocated) and holes, some in odd places.
for start, end in [(65536, 200000), (size - 5000, size - 300)]:
    data[start:end] = bytes(end - start)
with open(sys.argv[1], "wb") as f:
    f.write(data)
PY
# Holes: one of whole pages, one that starts and ends inside 4K pages.
fallocate -p -o $((1 << 20)) -l $((2 << 20)) "$img"
fallocate -p -o $((4096 * 1100 + 512)) -l 70000 "$img"

plain="$tmpdir/plain.sock"
"$NBDKIT" -f -U "$plain" -P "$tmpdir/plain.pid" file "$img" \
  2> "$tmpdir/plain.log" &
cleanup_fns+=("kill $! 2>/dev/null; wait $! 2>/dev/null")
wait_for "the plain server" test -S "$plain"

for page in 512 4K 64K; do
  start_server "p$page" file "$img" adaptra-page=$page adaptra-pool=4M \
    --filter=delay rdelay=1ms
  $client /usr/bin/python3 - "$sock" "$plain" "$img" "$page" <<'PY'
import sys, nbd
sock, plain, img, page = sys.argv[1:5]
data = open(img, "rb").read()
size = len(data)

def connect(path):
    h = nbd.NBD()
    h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
    h.connect_unix(path)
    return h

def extents(h, start, flags):
    """The extents from start to the end, adjacent ones of a type merged."""
    out, off = [], start
    while off < size:
        got = []
        h.block_status(size - off, off,
                       lambda meta, o, e, err: got.extend(e) or 0, flags)
        for length, kind in zip(got[0::2], got[1::2]):
            if out and out[-1][2] == kind:
                out[-1][1] += length
            else:
                out.append([off, length, kind])
            off += length
    return out

a, b = connect(sock), connect(plain)
assert a.get_size() == size
for start in [0, 1, 4095, 65537, (1 << 20) + 1, 4096 * 1100 + 600,
              size - 5000, size - 777, size - 1]:
    for flags in (0, nbd.CMD_FLAG_REQ_ONE):
        got, want = extents(a, start, flags), extents(b, start, flags)
        if got != want:
            sys.exit(f"FAIL: page {page}: extents from {start}, flags "
                     f"{flags}: {got[:6]}, the plugin's {want[:6]}")

def check(what, off, count):
    if a.pread(count, off) != data[off:off + count]:
        sys.exit(f"FAIL: page {page}: {what} at {off}+{count}: wrong bytes")

off = 0
while off < size:
    count = min(3001, size - off)
    check("scan", off, count)
    off += count
for count in [1, 777, 4096, 65536 + 5, 70000]:
    check("the end", size - count, count)
for off in range(size - 65536, 0, -65536 * 3):
    check("backward scan", off, 65536)
print(f"page {page}: extents and the last bytes as the plugin's")
PY
  kill "$(cat "$tmpdir/p$page.pid")"
done
echo "test-block-status: ok"
