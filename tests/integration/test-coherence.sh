#!/usr/bin/env bash
# test-coherence.sh: right bytes under every export name and sharing mode.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
#  1. adaptra-share=connection over a plugin that offers multi-conn
#     does not offer it (each connection's pages are its own); the
#     default mode offers it and keeps it: a write and flush on one
#     connection is read by another that had the old bytes in the pool.
#  2. A connection that closes while its volume's prefetch hangs in
#     the backend does not hold up another export's handshake (it
#     waited for the read under the exports lock).
#  3. A client reading an image that grows: a newcomer sees the new
#     size and passes through, and its writes reach the first client,
#     which had the old bytes in the pool.
#  4. 16400 export names, one after another (the file plugin serves
#     the image under any name): at most EXPORTS_IDLE_MAX of them keep
#     a volume, and a write through yet another name reaches a client
#     of the default export.
#  5. 17 unprivileged control clients: 15 are served, the rest are told
#     that the last slot is kept, and root still gets in (as root only).

source "$(dirname "$0")/functions.sh"
srcdir=$(cd "$(dirname "$0")" && pwd)
requires /usr/bin/python3 -c 'import nbd'

img="$tmpdir/disk.img"
head -c $((4 * 1024 * 1024)) /dev/urandom > "$img"

# stop NAME: stop the server started as NAME.
stop ()
{
  kill "$(cat "$tmpdir/$1.pid")"
}

# --- 1. multi-conn and adaptra-share ----------------------------------
for mode in auto connection; do
  start_server "share-$mode" file "$img" adaptra-share=$mode
  $client /usr/bin/python3 - "$sock" "$mode" <<'PY'
import os, sys, nbd
sock, mode = sys.argv[1], sys.argv[2]
a, b = nbd.NBD(), nbd.NBD()
a.connect_unix(sock)
b.connect_unix(sock)
multi = a.can_multi_conn()
if mode == "connection":
    assert not multi, "share=connection offers multi-conn"
    print("share=connection: no multi-conn")
    sys.exit(0)
assert multi, "the file plugin's multi-conn is not passed on"
a.pread(1 << 20, 0)             # both connections' pages in the pool
b.pread(1 << 20, 0)
new = os.urandom(65536)
a.pwrite(new, 8192)
a.flush()
assert b.pread(65536, 8192) == new, "multi-conn: b reads the old bytes"
print("share=%s: multi-conn kept: b reads a's write" % mode)
PY
  stop "share-$mode"
done

# --- 2. a disconnect during a hung prefetch ---------------------------
# A plugin (sh) that serves every export name the same image and
# whose reads past the first page hang while $tmpdir/hang exists;
# $tmpdir/hung says one hangs now.
# (The sanitizer runtime preloaded into nbdkit would crash bash.)
cat > "$tmpdir/hang.sh" <<SH
#!/usr/bin/env -S -u LD_PRELOAD bash
case "\$1" in
  thread_model) echo parallel ;;
  open) echo h ;;
  get_size) stat -c %s "$img" ;;
  pread)
    if [ "\$4" -ge 4096 ] && [ -e "$tmpdir/hang" ]; then
      touch "$tmpdir/hung"
      while [ -e "$tmpdir/hang" ]; do sleep 0.05; done
    fi
    dd if="$img" iflag=skip_bytes,count_bytes skip="\$4" count="\$3" \
       status=none ;;
  *) exit 2 ;;
esac
SH
chmod +x "$tmpdir/hang.sh"
touch "$tmpdir/hang"
cleanup_fns+=("rm -f '$tmpdir/hang'")
start_server hang sh "$tmpdir/hang.sh" adaptra-share=export
$client /usr/bin/python3 - "$sock" "$tmpdir" "$img" <<'PY'
import os, sys, threading, time, nbd
sock, tmp, img = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(img, "rb").read()
a = nbd.NBD(); a.set_export_name("a"); a.connect_unix(sock)
assert a.pread(4096, 0) == data[:4096]   # its window's prefetch hangs
for _ in range(600):
    if os.path.exists(os.path.join(tmp, "hung")):
        break
    time.sleep(0.05)
else:
    sys.exit("FAIL: no prefetch reached the backend")
del a                           # its close waits for the hung read
b = nbd.NBD(); b.set_export_name("b")
done = threading.Event()
def connect():
    b.connect_unix(sock)
    done.set()
threading.Thread(target=connect, daemon=True).start()
# Not a timing bound: on the old code the handshake never ends while
# the read hangs.  Then the read is released either way.
ok = done.wait(30)
os.unlink(os.path.join(tmp, "hang"))
if not ok:
    sys.exit("FAIL: export b's handshake waited for export a's hung read")
assert b.pread(65536, 4096) == data[4096:4096 + 65536]
b.shutdown()
print("a disconnect during a hung prefetch left another export's "
      "handshake alone")
PY
stop hang

# --- 3. an image grown under a connected client -------------------------
cp "$img" "$tmpdir/grow.img"
start_server grow file "$tmpdir/grow.img"
$client /usr/bin/python3 - "$sock" "$tmpdir/grow.img" <<'PY'
import os, sys, nbd
sock, path = sys.argv[1], sys.argv[2]
a = nbd.NBD(); a.connect_unix(sock)
old = a.pread(1 << 20, 0)          # in the pool
size = a.get_size()
os.truncate(path, size + (1 << 20))
b = nbd.NBD(); b.connect_unix(sock)
assert b.get_size() == size + (1 << 20), "the newcomer sees the old size"
new = os.urandom(65536)
b.pwrite(new, 4096)
assert a.pread(65536, 4096) == new, "a reads the bytes from before b's write"
print("grown image: a pass-through connection's write reached the pool")
PY
stop grow

# --- 4. export names without end ---------------------------------------
start_server names file "$img" adaptra-pool=16M
$client /usr/bin/python3 - "$sock" "$stats" "$srcdir" <<'PY'
import os, sys, nbd
sock, stats = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from control import ask
a = nbd.NBD(); a.connect_unix(sock)
a.pread(1 << 20, 0)                # in the pool
for i in range(16400):
    h = nbd.NBD(); h.set_export_name("name-%d" % i); h.connect_unix(sock)
    del h
# Rows: id, export, share, size, clients, ...; the last connections may
# not have been closed yet.
rows = [l.split() for l in ask(stats, "exports").splitlines()[1:] if l]
idle = sum(r[4] == "0" for r in rows)
assert idle <= 64, "%d volumes without clients kept" % idle
w = nbd.NBD(); w.set_export_name("yet-another"); w.connect_unix(sock)
new = os.urandom(65536)
w.pwrite(new, 8192)
assert a.pread(65536, 8192) == new, "a write through a new name is lost"
print("16400 export names: %d volumes kept, a new name's write seen"
      % len(rows))
PY
stop names

# --- 5. a control slot kept for the privileged ---------------------------
if [ "$(id -u)" -eq 0 ] && id nobody > /dev/null 2>&1; then
  chmod o+x "$tmpdir"
  start_server slots memory 1M adaptra-stats-mode=0666
  $client /usr/bin/python3 - "$stats" "$(id -u nobody)" "$(id -g nobody)" \
    "$srcdir" <<'PY'
import os, sys
path, nobody, nogroup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from control import ask_on, connect
os.setegid(nogroup)             # the server sees the connecting euid
os.seteuid(nobody)
users = [connect(path) for _ in range(17)]
os.seteuid(0)
os.setegid(0)
replies = [ask_on(s, "help") for s in users]
served = sum(not r.startswith("error:") for r in replies)
refused = [r for r in replies if r.startswith("error: too many clients")]
assert served == 15 and len(refused) == 2, (served, replies[-1])
assert "kept for root" in refused[0], refused[0]
root = connect(path)
r = ask_on(root, "control")
assert "control_clients 16" in r and \
    "control_clients_privileged_slots 1" in r, r
print("17 unprivileged control clients: 15 served, root still served")
PY
  stop slots
else
  echo "5. skipped: needs root and the user nobody"
fi

echo "test-coherence: ok"
