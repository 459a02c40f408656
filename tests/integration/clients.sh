# adaptra: adaptive read-ahead for nbdkit
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Helpers for the tests that drive real clients (qemu-img, nbdcopy,
# nbdfuse, fio, curl) against a server that outlives each client, so
# that the counters can be read after the clients are done.  Sourced
# after functions.sh.  adaptra-stat is found on the PATH that make
# check sets up (the build tree's plugin/).

# start_adaptra NAME ARGS...: start nbdkit in the background with the
# filter on top and ARGS after it, serving on $tmpdir/NAME.sock with
# statistics on $tmpdir/NAME.stats; stopped when the test exits.
# Sets $sock, $stats and $uri.
start_adaptra ()
{
  local name=$1
  shift
  sock="$tmpdir/$name.sock"
  stats="$tmpdir/$name.stats"
  uri="nbd+unix:///?socket=$sock"
  run_nbdkit -U "$sock" -P "$tmpdir/$name.pid" "$@" adaptra-stats="$stats"
  # nbdkit writes the pid file once it listens; the stats socket is
  # bound before that, while the filter loads.
  local i
  for i in $(seq 100); do
    [ -s "$tmpdir/$name.pid" ] && [ -S "$stats" ] && break
    sleep 0.1
  done
  test -S "$stats"
  cleanup_fns+=("kill $(cat "$tmpdir/$name.pid")")
}

# counter NAME: print counter NAME (as in "stats json") of the server
# started last.
counter ()
{
  adaptra-stat "$stats" --json |
    /usr/bin/python3 -c '
import json, sys
print(json.load(sys.stdin)["counters"][sys.argv[1]])' "$1"
}

# expect_readahead_hits BYTES WHAT: fail unless read-ahead hits served
# at least BYTES of the clients' reads since the last reset.
expect_readahead_hits ()
{
  local hits page
  hits=$(counter pgreadahead_hit)
  page=$(adaptra-stat "$stats" --command 'get page' | awk '{print $2}')
  echo "$2: $((hits * page)) bytes served by read-ahead hits"
  if [ "$((hits * page))" -lt "$1" ]; then
    echo "$2: FAIL: expected at least $1 bytes of read-ahead hits"
    adaptra-stat "$stats"
    return 1
  fi
}

# reset_counters: zero the counters of the server started last.
reset_counters ()
{
  adaptra-stat "$stats" --command reset >/dev/null
}

# flip_byte FILE OFFSET: invert the byte at OFFSET, so that FILE surely
# differs from what it was.
flip_byte ()
{
  /usr/bin/python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    b = f.read(1)[0]
    f.seek(int(sys.argv[2]))
    f.write(bytes([b ^ 0xff]))' "$1" "$2"
}
