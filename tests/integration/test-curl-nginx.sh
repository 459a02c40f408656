#!/usr/bin/env bash
# test-curl-nginx.sh: a remote store over HTTP (curl plugin, nginx).
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# A remote store: nginx serves a disk image over HTTP with Range
# support on 127.0.0.1, nbdkit's curl plugin reads it, adaptra sits on
# top.  nbdcopy must read it byte-exact, mostly from read-ahead.
#
# The curl plugin's thread model is serialize_requests: one request at
# a time per plugin handle.  adaptra's prefetch workers open handles of
# their own, so read-ahead still overlaps the client's requests, and
# each window is fetched in few large ranged GETs rather than many
# small ones: backend requests must be far fewer than client requests.
#
# Backend handles: the workers' handles on curl open as they read, not
# in a client's handshake (a client that only connects costs nginx one
# HTTP connection, not one per worker), a sequential copy uses at most
# 8 of them (the engine's gate, sized by its model of the backend,
# bounds how many read at once), and they close when idle.  nginx logs
# each request's connection number, so its log counts the connections.
#
# nginx runs as a single process (no master, no daemon) as the user
# running the test, from a config generated here; nothing outside the
# tmpdir is touched, and the test stops it on exit.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
requires nginx -v
requires nbdkit curl --version
requires nbdcopy --version
requires /usr/bin/python3 -c 'import nbd'

size=$((64 * 1024 * 1024))
www="$tmpdir/www"
mkdir "$www"
head -c "$size" /dev/urandom > "$www/disk.img"

# A free port: bind port 0, note what the kernel chose, release it.
port=$(/usr/bin/python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

cat > "$tmpdir/nginx.conf" <<CONF
daemon off;
master_process off;
pid $tmpdir/nginx.pid;
error_log $tmpdir/nginx-error.log;
events { worker_connections 64; }
http {
  log_format conns '\$connection "\$request" \$status \$body_bytes_sent';
  access_log $tmpdir/nginx-access.log conns;
  client_body_temp_path $tmpdir/nginx-body;
  proxy_temp_path $tmpdir/nginx-proxy;
  fastcgi_temp_path $tmpdir/nginx-fastcgi;
  uwsgi_temp_path $tmpdir/nginx-uwsgi;
  scgi_temp_path $tmpdir/nginx-scgi;
  server {
    listen 127.0.0.1:$port;
    root $www;
  }
}
CONF
nginx -p "$tmpdir" -c "$tmpdir/nginx.conf" -e "$tmpdir/nginx-error.log" &
nginx_pid=$!
cleanup_fns+=("kill $nginx_pid; wait $nginx_pid")
url="http://127.0.0.1:$port/disk.img"
for _ in $(seq 100); do
  /usr/bin/python3 -c '
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=1)' "$url" 2>/dev/null && break
  sleep 0.1
done

# nginx is up, with Range support, as the curl plugin needs.
/usr/bin/python3 -c '
import sys, urllib.request
r = urllib.request.urlopen(urllib.request.Request(
    sys.argv[1], headers={"Range": "bytes=4096-8191"}))
assert r.status == 206 and len(r.read()) == 4096, r.status' "$url" ||
  { cat "$tmpdir/nginx-error.log"; exit 1; }

# A little latency per request, as from a store across a network.
# Read-only (-r), as the man page advises for curl: its multi-conn
# flag, and so sharing and background read-ahead, need it.
start_adaptra curl -r --filter=delay curl "$url" delay-read=2ms \
  adaptra-pool=32M

# connections: HTTP connections nginx has seen so far.
connections () { awk '{ print $1 }' "$tmpdir/nginx-access.log" | sort -u | wc -l; }
before=$(connections)
/usr/bin/python3 -c '
import nbd, sys
h = nbd.NBD(); h.connect_uri(sys.argv[1]); h.shutdown()' "$uri"
handshake=$(( $(connections) - before ))
echo "curl: a client's handshake opened $handshake HTTP connections"
test "$handshake" -le 1

before=$(connections)
nbdcopy --connections=1 --requests=4 --request-size=65536 \
  "$uri" "$tmpdir/copy.img"
cmp "$www/disk.img" "$tmpdir/copy.img"
expect_readahead_hits $((size * 9 / 10)) "curl"
creq=$(counter client_requests)
breq=$(counter backend_requests)
echo "curl: $creq client requests, $breq backend requests (ranged GETs)"
# A GET is a job of the model's chunk, which on a local nginx is small
# (its fixed cost is a fraction of a millisecond) and follows the load:
# 67-338 GETs for 1024 requests of 64 KiB on 2 CPUs at load 0-15.
# Without read-ahead's merging every request is a GET.
test "$((breq * 2))" -le "$creq"
# nginx saw the ranged GETs (206 Partial Content) adaptra sent.
test "$(grep -c '" 206 ' "$tmpdir/nginx-access.log")" -ge "$breq"
copy=$(( $(connections) - before ))
echo "curl: a sequential copy opened $copy HTTP connections"
test "$copy" -le $((1 + 8))

# A client that reads a scan's start and stays connected, idle: the
# workers' handles show in the stats while they read, then close.
/usr/bin/python3 -c '
import nbd, sys, time
h = nbd.NBD(); h.connect_uri(sys.argv[1])
for i in range(64):
    h.pread(65536, i * 65536)
time.sleep(8)
h.shutdown()' "$uri" &
idle_client=$!
cleanup_fns+=("kill $idle_client 2>/dev/null")
# poll_handles TEST: wait up to 10 s for "backend_handles TEST".
poll_handles ()
{
  local i
  for i in $(seq 100); do
    test "$(counter backend_handles)" "$@" && return 0
    sleep 0.1
  done
  echo "FAIL: backend_handles $(counter backend_handles), not $*"
  return 1
}
poll_handles -ge 1
poll_handles -eq 0
wait "$idle_client"
stop_servers
echo "test-curl-nginx: ok"
