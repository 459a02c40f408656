# functions.sh: shared helpers for the shell integration tests.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Shared helpers for the shell integration tests, sourced by each one.
# Like nbdkit's tests/functions.sh: a missing prerequisite exits 77,
# which automake's driver reports as SKIP with the reason in the log.

set -euo pipefail

: "${NBDKIT:=nbdkit}"
: "${ADAPTRA_FILTER:?run the tests with make check}"

# requires CMD ARGS...: skip the test unless CMD ARGS runs.
requires ()
{
  if ! "$@" >/dev/null 2>&1; then
    echo "$0: SKIP: '$*' does not run here"
    exit 77
  fi
}

# A private temporary directory, removed on exit with everything in it.
tmpdir=$(mktemp -d /tmp/adaptra-test.XXXXXX)
cleanup_fns=()
cleanup ()
{
  local fn
  for fn in "${cleanup_fns[@]}"; do eval "$fn" || :; done
  rm -rf "$tmpdir"
}
trap cleanup EXIT

# The sanitizer runtime must be preloaded into the uninstrumented nbdkit.
preload=""
case "${ADAPTRA_SANITIZERS:-no}" in
  address) preload="${ADAPTRA_ASAN_RUNTIME:-} ${ADAPTRA_KEEP_LOADED:-}" ;;
  thread) preload="${ADAPTRA_TSAN_RUNTIME:-} ${ADAPTRA_KEEP_LOADED:-}" ;;
esac

# run_nbdkit ARGS...: nbdkit with the build tree's filter on top, with
# ARGS after it (more filters, the plugin and parameters, --run ...).
# A --run command inherits the preload: start clients with "$client".
run_nbdkit ()
{
  LD_PRELOAD="$preload" "$NBDKIT" --filter="$ADAPTRA_FILTER" "$@"
}

# serve NAME ARGS...: nbdkit with the build tree's filter over ARGS
# (the plugin and its parameters), its statistics on $tmpdir/NAME.stats,
# listening on $tmpdir/NAME.sock, or with adaptra_listen set (to
# nbdkit's options, say -p 0 -i 127.0.0.1) there instead; stopped at
# exit.  nbdkit stays in the foreground (-f) of a background job of
# the test, so that its exit status can be checked and its messages
# reach the caller's standard error.  Returns once it serves (nbdkit
# writes its pid file once it listens), or 1 if it exits or takes 30 s
# first.  Sets $sock, $stats and $server, "JOB PID NAME": the job to
# wait for, and nbdkit's own pid to signal (the job is a subshell
# running nbdkit).
adaptra_listen=()
serve ()
{
  local name=$1 pidfile="$tmpdir/$1.pid" job i
  local at_exit="\$(cat '$pidfile' 2>/dev/null)"    # nbdkit's pid then
  shift
  sock="$tmpdir/$name.sock"
  stats="$tmpdir/$name.stats"
  local listen=(-U "$sock")
  [ "${#adaptra_listen[@]}" -eq 0 ] || listen=("${adaptra_listen[@]}")
  rm -f "$pidfile"
  run_nbdkit -f -P "$pidfile" "${listen[@]}" "$@" adaptra-stats="$stats" &
  job=$!
  cleanup_fns+=("kill $at_exit 2>/dev/null; wait $job 2>/dev/null")
  for i in $(seq 300); do
    if [ -s "$pidfile" ] && [ -S "$stats" ]; then
      server="$job $(cat "$pidfile") $name"
      return 0
    fi
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: server $name did not start"
  return 1
}

# start_server NAME ARGS...: serve NAME ARGS, its log in
# $tmpdir/NAME.log.  It never steps aside: the tests that use it check
# pages, which a plugin as fast as the pool would not get.
start_server ()
{
  serve "$@" adaptra-bypass=never 2> "$tmpdir/$1.log" ||
    { cat "$tmpdir/$1.log"; exit 1; }
}

# fails CMD...: CMD must exit non-zero.  (A bare "! CMD" would not
# stop a set -e script when CMD succeeds.)
fails ()
{
  if "$@"; then
    echo "FAIL: '$*' succeeded" >&2
    exit 1
  fi
}

# wait_for WHAT CMD...: run CMD every 0.1 s until it succeeds, for at
# most WAIT_SECS (120 unless set); then say what it waited for, and
# fail.  Wait for a state this way, never for a time: a loaded machine
# only makes the wait longer.  (CMD's output and errors are dropped.)
: "${WAIT_SECS:=120}"
wait_for ()
{
  local what=$1 i
  shift
  for i in $(seq $((WAIT_SECS * 10))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "FAIL: waited $WAIT_SECS s for $what" >&2
  return 1
}

# gone PID: has process PID exited?  (For wait_for.)
gone () { ! kill -0 "$1" 2>/dev/null; }

# scan NBD-SOCKET FROM TO: read [FROM, TO) MiB in 64K requests.
scan ()
{
  /usr/bin/python3 -c '
import nbd, sys
h = nbd.NBD(); h.connect_unix(sys.argv[1])
for off in range(int(sys.argv[2]) << 20, int(sys.argv[3]) << 20, 64 << 10):
    h.pread(64 << 10, off)
h.shutdown()' "$@"
}

# checks_prelude: the first lines of a script of checks for run_checks:
# strict and traced, with fails, wait_for (and WAIT_SECS) and scan.
checks_prelude ()
{
  echo "set -euxo pipefail"
  declare -f fails wait_for scan
  echo "WAIT_SECS=$WAIT_SECS"
}

# run_checks SCRIPT ARGS...: nbdkit with the filter over ARGS (the
# plugin and parameters) runs "bash SCRIPT NBD-SOCKET"; fail unless
# both succeed.
run_checks ()
{
  local script=$1 rc=0
  shift
  run_nbdkit -U - "$@" --run "$client bash $script \"\$unixsocket\"" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: nbdkit (or the checks it ran) exited with status $rc"
    exit 1
  fi
}

# Prefix for client commands run by nbdkit --run: drops the sanitizer
# preload, which the uninstrumented clients must not get.
client="env -u LD_PRELOAD"

# The client round trips test-sim.sh sweeps (--sweep client-rtt=...)
# for W3's bounds that hold whatever the client: 20 to 40 us in 2 us
# steps.  Not the filter's client: test-sim-calibration.sh simulates
# each workload with the client its filter runs measured
# (sim-calibration.csv, sim/filter-delays).
SIM_CLIENT_RTTS=$(seq -s, -f %gus 20 2 40)
