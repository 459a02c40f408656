#!/usr/bin/env bash
# test-demo.sh: scripts/demo, the README's first command, as written.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# scripts/demo --once over a small image of the test's own: it must
# serve it through adaptra, print how to attach clients (the directory
# nbdfuse mounts in may exist), the two throughputs and the counters,
# and exit 0; without --once it serves on, a client attaches as it
# printed, and SIGTERM (Ctrl-C's trap) stops it.  Its --help is the
# comment at its top, no line of code; bad input (two images, a
# directory, a port that is no port) stops it at once with a line
# naming what was given.  What it installs when something is missing
# (install-deps --demo) is what the build needs, not the whole test
# suite's list.  The demo runs nbdkit itself, without the sanitizer
# runtime preloaded, so sanitizer builds skip the runs.

source "$(dirname "$0")/functions.sh"
: "${srcdir:=.}"
demo=$srcdir/scripts/demo

# What the demo installs (install-deps --demo) is what building needs,
# every package debian/control's Build-Depends names (its clean-chroot
# build proves those enough), and libnbd-bin for nbdcopy and nbdinfo:
# a part of the test suite's list, not the whole.
"$srcdir/scripts/install-deps" --demo --list | sort > "$tmpdir/demo-deps"
"$srcdir/scripts/install-deps" --list | sort > "$tmpdir/all-deps"
test -z "$(comm -23 "$tmpdir/demo-deps" "$tmpdir/all-deps")"
test "$(wc -l < "$tmpdir/demo-deps")" -lt "$(wc -l < "$tmpdir/all-deps")"
grep -qx libnbd-bin "$tmpdir/demo-deps"
if [ -f "$srcdir/debian/control" ]; then
  for dep in $(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$srcdir/debian/control" |
                 grep -oE '^(Build-Depends:)? +[a-z0-9][a-z0-9.+-]*' |
                 awk '{print $NF}' | grep -v '^debhelper-compat$'); do
    grep -qx "$dep" "$tmpdir/demo-deps" ||
      { echo "FAIL: install-deps --demo lacks $dep (Build-Depends)"; exit 1; }
  done
fi
calls=$(grep -c 'scripts/install-deps' "$demo")
if [ "$calls" -eq 0 ] ||
   [ "$(grep -c 'scripts/install-deps" --demo' "$demo")" -ne "$calls" ]; then
  echo "FAIL: scripts/demo calls install-deps without --demo"
  exit 1
fi

case "${ADAPTRA_SANITIZERS:-no}" in
  no) ;;
  *) echo "$0: SKIP: the demo's nbdkit has no sanitizer runtime"; exit 77 ;;
esac
requires nbdcopy --version
requires nbdinfo --version

# The build tree's filter and adaptra-stat, not a build of the demo's.
export ADAPTRA_FILTER
ADAPTRA_STAT=$(command -v adaptra-stat)
export ADAPTRA_STAT
export ADAPTRA_DEMO_DELAY=1ms
# A port nothing listens on, so that the TCP line shows too.
ADAPTRA_DEMO_PORT=$(/usr/bin/python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ADAPTRA_DEMO_PORT

# refuses CODE PATTERN ARGS...: the demo exits CODE at once and says
# PATTERN (an extended regexp) on standard error, nothing on output.
refuses ()
{
  local code=$1 pattern=$2 rc=0
  shift 2
  timeout 20 "$demo" "$@" > "$tmpdir/out" 2> "$tmpdir/err" || rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qE -- "$pattern" "$tmpdir/err" ||
     [ -s "$tmpdir/out" ]; then
    echo "FAIL: scripts/demo $* (exit $rc, expected $code and '$pattern'):"
    cat "$tmpdir/out" "$tmpdir/err"
    exit 1
  fi
}

"$demo" --help > "$tmpdir/help"
grep -qF 'scripts/demo [--once] [IMAGE]' "$tmpdir/help"
grep -q 'stops at once with --once\.$' "$tmpdir/help"
if grep -qE '^(set|top=|[a-z_]+=)' "$tmpdir/help"; then
  echo "FAIL: scripts/demo --help prints code:"
  cat "$tmpdir/help"
  exit 1
fi

head -c $((8 * 1024 * 1024)) /dev/urandom > "$tmpdir/a.img"
refuses 2 "one IMAGE only \('$tmpdir/a.img', then 'b.img'\)" \
  "$tmpdir/a.img" b.img
refuses 1 "cannot read image '$tmpdir' \(a file or a block device\)" \
  "$tmpdir"
refuses 1 "cannot read image '$tmpdir/none.img'" "$tmpdir/none.img"
refuses 2 "unknown option '--twice'" --twice
ADAPTRA_DEMO_PORT=70000 refuses 2 "ADAPTRA_DEMO_PORT=70000 is not a port" \
  "$tmpdir/a.img"

timeout 120 "$demo" --once "$tmpdir/a.img" > "$tmpdir/out" 2>&1 || {
  echo "FAIL: scripts/demo --once exited $?:"
  cat "$tmpdir/out"
  exit 1
}
cat "$tmpdir/out"
expect ()
{
  grep -qE -- "$1" "$tmpdir/out" ||
    { echo "FAIL: scripts/demo --once did not print '$1'"; exit 1; }
}
expect "^demo: serving $tmpdir/a.img \(8388608 bytes\) through adaptra,"
expect "^  TCP: +nbd://127.0.0.1:$ADAPTRA_DEMO_PORT$"
expect "^  mkdir -p /tmp/mnt && nbdfuse /tmp/mnt/disk 'nbd\+unix:///\?socket="
expect "^  qemu-system-x86_64 -drive 'file=nbd\+unix:///\?socket=[^']*,format=raw'"
expect '^demo: with adaptra   : read 8 MiB in [0-9.]+ s: [0-9.]+ MiB/s$'
expect '^demo: without adaptra: read 8 MiB in [0-9.]+ s: [0-9.]+ MiB/s$'
expect '^readahead +[1-9]'
expect '^pgreadahead_hit +[1-9]'
expect '^amplification +'

# Without --once it keeps serving: the qemu-img line it printed works
# as printed, and SIGTERM (Ctrl-C's trap) stops it cleanly.
requires qemu-img --version
timeout 120 "$demo" "$tmpdir/a.img" > "$tmpdir/serving" 2>&1 &
job=$!
cleanup_fns+=("kill $job 2>/dev/null")
for _ in $(seq 1200); do
  grep -q '^demo: serving until Ctrl-C$' "$tmpdir/serving" && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
grep -q '^demo: serving until Ctrl-C$' "$tmpdir/serving" ||
  { echo "FAIL: the demo did not keep serving:"; cat "$tmpdir/serving"; exit 1; }
line=$(sed -n "s/^  \(qemu-img info '.*'\)$/\1/p" "$tmpdir/serving")
eval "$line" > "$tmpdir/info"
grep -q '^virtual size: 8 MiB (8388608 bytes)$' "$tmpdir/info"
kill -TERM "$job"
rc=0
wait "$job" || rc=$?
if [ "$rc" -ne 0 ] || ! grep -q '^demo: stopping$' "$tmpdir/serving"; then
  echo "FAIL: the demo did not stop cleanly (exit $rc):"
  cat "$tmpdir/serving"
  exit 1
fi
echo "test-demo: ok"
