#!/usr/bin/env bash
# test-nbdcopy-multi.sh: many connections and requests in flight, counters.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Several connections over a delayed plugin, and the counters that
# show read-ahead served them, or stayed out of the way.
#
# nbdcopy splits the image into 128 MiB parts and gives each part to
# one of its connections, so a 256 MiB copy is two streams on two
# connections.  With one request at a time on each, each connection
# must get read-ahead hits of its own (sampled from
# the clients table while the copy runs, since a client's row goes
# when it disconnects).  With 16 requests in flight on each, nbdcopy
# reads ahead itself, more than the backend's bandwidth-delay product,
# and read-ahead must stay out of its way (core/depth.h): next to no
# hits.  A stream that hops between connections -- a
# client that sends consecutive requests on whichever connection is
# free -- is then read by two libnbd handles taking turns, and must
# still be recognised as one sequential stream.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
requires nbdcopy --version
requires /usr/bin/python3 -c 'import nbd'

size=$((256 * 1024 * 1024))
img="$tmpdir/disk.img"
head -c "$size" /dev/urandom > "$img"

# 16 requests of 256 KiB in flight on each connection: 4 MiB a
# connection, over the 2 ms backend's product.  Only requests that
# come before their queue shows get windows: the first, and on a busy
# machine, where nbdkit's threads take the requests slowly, some more
# (0.3-20% of the copy on a loaded 2-CPU machine; 97% before
# core/depth.c).  On a server of its own: pages that it leaves in the
# pool would count as hits below.
#
# Up to three copies, each on a fresh server; the phase fails if every
# one went over the bound.  On a busy machine nbdkit's threads may hand
# the filter one connection's requests one at a time for the whole of
# its part, so that no queue shows and read-ahead serves all of it:
# about one copy in seven in sanitizer builds beside busy loops, and
# once in a CI run whose other tests loaded the machine
# (docs/bench/history/beside-the-matrix.md: "A deep client under CPU
# load", "A deep client's queue, probed and held").  A filter that
# does not see a deep client at all goes over the bound every time.
deep_copy ()
{
  start_adaptra "deep$1" --filter=delay file "$img" delay-read=2ms \
    adaptra-pool=32M
  nbdcopy --connections=4 --requests=16 --request-size=262144 \
    "$uri" "$tmpdir/copy.img"
  cmp "$img" "$tmpdir/copy.img"
}
for try in 1 2 3; do
  deep_copy "$try"
  if expect_few_readahead_hits $((size / 2)) \
       "nbdcopy, 16 requests in flight (copy $try of 3)"; then
    break
  fi
  test "$try" -lt 3
done

# One request at a time on each connection.
start_adaptra multi --filter=delay file "$img" delay-read=2ms \
  adaptra-pool=32M
nbdcopy --connections=4 --requests=1 --request-size=262144 \
  "$uri" "$tmpdir/copy.img" &
copier=$!
while kill -0 "$copier" 2>/dev/null; do
  adaptra-stat "$stats" --command clients
  sleep 0.2
done > "$tmpdir/clients"
wait "$copier"
cmp "$img" "$tmpdir/copy.img"
# Without read-ahead the hits would be none, and with a connection's
# stream not recognised at most half: 80% tells those apart.
expect_readahead_hits $((size * 8 / 10)) "nbdcopy"
# Columns: id client requests bytes ra_hit_pages ...; the id is per connection.
busy=$(awk '$1 ~ /^[0-9]+$/ && $5 > 0 { print $1 }' "$tmpdir/clients" |
         sort -u | wc -l)
echo "nbdcopy: $busy connections had read-ahead hits"
test "$busy" -ge 2

# One stream over two connections taking turns, 128K requests.  On a
# server of its own, its pool cold, so that the random reads counted
# are this stream's alone: where its first request hits pages left in
# the pool, the stream starts only from history, at its fourth request.
start_adaptra alternating --filter=delay file "$img" delay-read=2ms \
  adaptra-pool=32M
/usr/bin/python3 -c '
import nbd, sys
handles = [nbd.NBD() for _ in range(2)]
for h in handles:
    h.connect_unix(sys.argv[1])
with open(sys.argv[2], "rb") as f:
    for i, off in enumerate(range(0, 32 << 20, 128 << 10)):
        f.seek(off)
        if handles[i % 2].pread(128 << 10, off) != f.read(128 << 10):
            sys.exit("mismatch at %d" % off)
for h in handles:
    h.shutdown()' "$sock" "$img"
expect_readahead_hits $((32 * 1024 * 1024 * 9 / 10)) "alternating connections"
random=$(counter readrandom)
echo "alternating connections: $random random reads"
test "$random" -le 1
stop_servers
echo "test-nbdcopy-multi: ok"
