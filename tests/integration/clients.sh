# clients.sh: helpers for the tests that drive real clients.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Helpers for the tests that drive real clients (qemu-img, nbdcopy,
# nbdfuse, fio, curl) against a server that outlives each client, so
# that the counters can be read after the clients are done.  Sourced
# after functions.sh.  adaptra-stat, which reads the counters, is
# found on the PATH that make check sets up (the build tree's plugin/).
requires adaptra-stat --help

# start_adaptra NAME ARGS...: serve NAME ARGS (functions.sh), its
# messages and any sanitizer report in the test's log, until
# stop_servers.  Sets $sock, $stats and $uri.
servers=()
start_adaptra ()
{
  serve "$@"
  servers+=("$server")
  uri="nbd+unix:///?socket=$sock"
}

# start_adaptra_tcp NAME ARGS...: start_adaptra on a free TCP port of
# 127.0.0.1 (nbdkit -p 0 picks it), which it sets as $port.
start_adaptra_tcp ()
{
  adaptra_listen=(-p 0 -i 127.0.0.1)
  start_adaptra "$@"
  adaptra_listen=()
  local pid
  read -r _ pid _ <<< "${servers[-1]}"
  port=$(listening_port "$pid")
  uri="nbd://127.0.0.1:$port"
}

# listening_port PID: the TCP port process PID listens on.
listening_port ()
{
  ss -Hltnp | awk -v pid="pid=$1," '
    index($0, pid) { n = split($4, a, ":"); print a[n]; found = 1; exit }
    END { if (!found) { print "listening_port: none" > "/dev/stderr"; exit 1 } }'
}

# stop_server JOB PID NAME: SIGTERM to server NAME ($server of serve)
# once its clients are gone; fail unless it exits within WAIT_SECS
# (else SIGKILL it), and cleanly (a sanitizer report makes nbdkit exit
# non-zero).  nbdkit 1.32 never frees the handles of connections still
# open at SIGTERM, which LeakSanitizer would blame on the filter
# (docs/RELIABILITY.md): a client that has just exited may still be
# being closed, so wait until the filter has closed every client, and
# a moment more for nbdkit to free the layers below it.
stop_server ()
{
  local job=$1 pid=$2 name=$3 rc=0 i
  stats="$tmpdir/$name.stats"
  for i in $(seq 100); do
    [ "$(counter clients_active)" -eq 0 ] && break
    sleep 0.1
  done
  sleep 0.2
  kill "$pid"
  wait_for "nbdkit $name (pid $pid) to exit on SIGTERM" gone "$pid" ||
    { kill -KILL "$pid"; exit 1; }
  wait "$job" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "nbdkit $name (pid $pid) exited with status $rc"
    return 1
  fi
}

# stop_servers: stop_server every server start_adaptra started.
stop_servers ()
{
  local server
  for server in "${servers[@]}"; do
    stop_server $server || return 1
  done
  servers=()
}

# counter NAME: print counter or gauge NAME (as in "stats json") of the
# server started last.
counter ()
{
  adaptra-stat "$stats" --json |
    /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["counters"].get(sys.argv[1], d["gauges"].get(sys.argv[1])))' "$1"
}

# expect_readahead_hits BYTES WHAT: fail unless read-ahead hits served
# at least BYTES of the clients' reads since the last reset.
expect_readahead_hits () { readahead_hits_bound -lt "least" "$@"; }

# expect_few_readahead_hits BYTES WHAT: fail unless they served at most
# BYTES: for a client that reads ahead itself, which read-ahead leaves
# alone.
expect_few_readahead_hits () { readahead_hits_bound -gt "most" "$@"; }

# readahead_hits_bound FAIL-IF BOUND-WORD BYTES WHAT: the two above.
readahead_hits_bound ()
{
  local hits page
  hits=$(counter pgreadahead_hit)
  page=$(adaptra-stat "$stats" --command 'get page' | awk '{print $2}')
  echo "$4: $((hits * page)) bytes served by read-ahead hits"
  if [ "$((hits * page))" "$1" "$3" ]; then
    echo "$4: FAIL: expected at $2 $3 bytes of read-ahead hits"
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
