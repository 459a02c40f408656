#!/usr/bin/env bash
# test-profile-clients.sh: boot profiles survive the clients guests use.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Real clients do more than one connection reading a boot:
#  1. a boot read over 4 connections at once (multi-conn qemu, nbdcopy,
#     nbd-client -C) is one boot: the profile holds every page it read
#     and counts one boot, not 4 that each missed the others' pages;
#  2. a probe after the boots (qemu-img info, a short scan) is not a
#     boot: the profile keeps its boots and pages;
#  3. a FIFO at the profile's path does not hang the handshake: the
#     connection reads, the profile is ignored with a warning, and the
#     server stops on SIGTERM;
#  4. connections further apart than adaptra-profile-time are two
#     boots, even while the first is still open.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
requires /usr/bin/python3 -c 'import nbd'
requires qemu-img --version

img="$tmpdir/disk.img"
profiles="$tmpdir/profiles"
mkdir "$profiles"
head -c $((64 * 1024 * 1024)) /dev/urandom > "$img"
size=$(stat -c %s "$img")
file="$profiles/$(adaptra-profile name "" "$size")"

# boot.py SOCKET SEED CONNS: one boot of 400 scattered reads of 4-64
# KiB, read i on connection i % CONNS, the connections reading at
# once and closing together; prints the boot's distinct 4 KiB pages.
cat > "$tmpdir/boot.py" <<'PY'
import random, sys, threading, nbd
sock, seed, conns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
reads = []
for i in range(400):
    count = rng.choice([4096, 8192, 16384, 65536])
    reads.append((rng.randrange(0, (64 << 20) - count >> 12) << 12, count))
handles = []
for _ in range(conns):
    h = nbd.NBD()
    h.connect_unix(sock)
    handles.append(h)
def run(k):
    for off, count in reads[k::conns]:
        handles[k].pread(count, off)
threads = [threading.Thread(target=run, args=(k,)) for k in range(conns)]
for t in threads: t.start()
for t in threads: t.join()
for h in handles: h.shutdown()
print(len({p for off, count in reads for p in range(off >> 12, (off + count) >> 12)}))
PY

# start NAME ARGS...: a server on $tmpdir/NAME.sock over the image
# (start_adaptra), its log in $tmpdir/NAME.log.  stop_servers stops it
# once its clients are gone; it must exit on SIGTERM.
start ()
{
  start_adaptra "$1" file "$img" adaptra-profile="$profiles" "${@:2}" \
    2> "$tmpdir/$1.log"
}

# field NAME: boots= or pages= of the export's profile.
field () { adaptra-profile list "$profiles" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }

# expect_profile WHAT BOOTS [PAGES]: list the profile; fail unless it
# counts BOOTS boots (and holds PAGES pages), saying WHAT made them.
expect_profile ()
{
  adaptra-profile list "$profiles"
  test "$(field boots)" -eq "$2" ||
    { echo "FAIL: $1 made $(field boots) boots, not $2"; exit 1; }
  [ $# -lt 3 ] || test "$(field pages)" -eq "$3" ||
    { echo "FAIL: after $1 the profile kept $(field pages) of $3 pages"
      exit 1; }
}

# --- 1. a boot over 4 connections ------------------------------------
start multi
distinct=$($client /usr/bin/python3 "$tmpdir/boot.py" "$sock" 1 4)
stop_servers
expect_profile "a boot over 4 connections" 1 "$distinct"

# --- 2. probes after a second boot -----------------------------------
start probe
$client /usr/bin/python3 "$tmpdir/boot.py" "$sock" 1 1 > /dev/null
# The boot's last connection has closed: the probes are sessions of
# their own.
$client qemu-img info "nbd+unix:///?socket=$sock" > /dev/null
$client /usr/bin/python3 -c '
import nbd, sys
h = nbd.NBD(); h.connect_unix(sys.argv[1])
for off in range(0, 64 << 10, 4096): h.pread(4096, off)
h.shutdown()' "$sock"
stop_servers
expect_profile "a second boot and probes" 2 "$distinct"

# --- 3. a FIFO at the profile's path ---------------------------------
rm "$file"
mkfifo "$file"
start fifo
timeout 20 $client /usr/bin/python3 -c '
import nbd, sys
h = nbd.NBD(); h.connect_unix(sys.argv[1]); h.pread(4096, 0); h.shutdown()' \
  "$sock" || { echo "FAIL: the read hung on a FIFO profile"; exit 1; }
stop_servers
grep -q 'adaptra: warning: profile .* ignored: .*not a regular file' \
  "$tmpdir/fifo.log" ||
  { cat "$tmpdir/fifo.log"; echo "FAIL: no warning"; exit 1; }
# --- 4. the window: a connection after it starts a boot of its own --
rm -f "$file"
start window adaptra-profile-time=1
$client /usr/bin/python3 - "$sock" <<'PY'
import random, sys, time, nbd
def boot(h, seed):
    rng = random.Random(seed)
    for _ in range(100):
        h.pread(65536, rng.randrange(0, 1024) << 16)
a = nbd.NBD(); a.connect_unix(sys.argv[1]); boot(a, 1)
time.sleep(1.5)
b = nbd.NBD(); b.connect_unix(sys.argv[1]); boot(b, 2)
a.shutdown(); b.shutdown()
PY
stop_servers
expect_profile "connections 1.5 s apart" 2

# Sanitizer builds: no report from any server.
if grep -E 'Sanitizer|runtime error' "$tmpdir"/*.log; then
  echo "FAIL: a sanitizer report"; exit 1
fi
echo "test-profile-clients: ok"
