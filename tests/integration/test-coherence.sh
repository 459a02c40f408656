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

source "$(dirname "$0")/functions.sh"
requires /usr/bin/python3 -c 'import nbd'

img="$tmpdir/disk.img"
head -c $((4 * 1024 * 1024)) /dev/urandom > "$img"

# start NAME ARGS...: an adaptra server on $tmpdir/NAME.sock (statistics
# on $tmpdir/NAME.stats), never stepping aside: these checks are of
# pages, which a fast plugin would not get.  Sets $sock and $stats.
start ()
{
  local name=$1 pidfile="$tmpdir/$1.pid"
  shift
  sock="$tmpdir/$name.sock"
  stats="$tmpdir/$name.stats"
  LD_PRELOAD="$preload" "$NBDKIT" -f -U "$sock" -P "$pidfile" \
    --filter="$ADAPTRA_FILTER" "$@" adaptra-stats="$stats" \
    adaptra-bypass=never 2> "$tmpdir/$name.log" &
  cleanup_fns+=("kill $! 2>/dev/null; wait $! 2>/dev/null")
  for _ in $(seq 300); do
    [ -s "$pidfile" ] && [ -S "$sock" ] && [ -S "$stats" ] && return 0
    sleep 0.1
  done
  echo "FAIL: server $name did not start"; cat "$tmpdir/$name.log"; exit 1
}

# stop NAME: stop the server started as NAME.
stop ()
{
  kill "$(cat "$tmpdir/$1.pid")"
}

# --- 1. multi-conn and adaptra-share ----------------------------------
for mode in auto connection; do
  start "share-$mode" file "$img" adaptra-share=$mode
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
cat > "$tmpdir/hang.sh" <<SH
#!/usr/bin/env bash
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
start hang sh "$tmpdir/hang.sh" adaptra-share=export
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

echo "test-coherence: ok"
