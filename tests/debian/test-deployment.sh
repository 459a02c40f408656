#!/usr/bin/env bash
# test-deployment.sh: docs/DEPLOYMENT.md's non-root recipe, as written.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs the commands docs/DEPLOYMENT.md shows between its
# "deployment-test: begin" and "end" marks, taken from the document so
# that they cannot drift, with only these paths put in for this
# machine: the image, /run/adaptra (a fresh /run/adaptra-test.*), the
# build tree's filter for --filter=adaptra, and a free port for 9101.
# Then checks what the document promises: the system user and group
# adaptra, the directory and sockets' owners and modes, that a member
# of the group adaptra can connect, read the image, read statistics
# and scrape /metrics but not change the server, that any other user
# cannot connect and adaptra-stat names the directory that stops it,
# and that nbdkit removes its statistics socket when it stops.  The
# document's Prometheus scrape configuration passes promtool check
# config.
#
#   tests/debian/test-deployment.sh     (after make, from the top)
#
# Needs root (it creates system users and removes those it created);
# exits 77 (skip) without it, or without a tool it needs.

set -euo pipefail

source "$(dirname "$0")/functions.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
doc=$top/docs/DEPLOYMENT.md
: "${ADAPTRA_FILTER:=$top/plugin/.libs/nbdkit-adaptra-filter.so}"
stat_tool=$top/plugin/adaptra-stat

[ "$(id -u)" -eq 0 ] || skip "needs root (adduser, runuser)"
for tool in adduser deluser runuser nbdkit nbdinfo curl promtool python3; do
  command -v "$tool" > /dev/null || skip "$tool is not installed"
done
[ -f "$ADAPTRA_FILTER" ] && [ -x "$stat_tool" ] || skip "build first (make)"

work=$(mktemp -d /tmp/adaptra-deploy.XXXXXX)
chmod 0755 "$work"
rundir=$(mktemp -d /run/adaptra-test.XXXXXX)
rmdir "$rundir"                 # the recipe creates it
port=$(python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
had_adaptra=no
id adaptra > /dev/null 2>&1 && had_adaptra=yes
users=()
cleanup ()
{
  local u
  if [ -s "$rundir/nbdkit.pid" ]; then
    kill "$(cat "$rundir/nbdkit.pid")" 2>/dev/null || :
  fi
  for u in "${users[@]}"; do deluser --quiet --system "$u" > /dev/null 2>&1 || :; done
  if [ "$had_adaptra" = no ]; then
    deluser --quiet --system adaptra > /dev/null 2>&1 || :
    delgroup --quiet --system adaptra > /dev/null 2>&1 || :
  fi
  rm -rf "$work" "$rundir"
}
trap cleanup EXIT

# The commands, continuation lines joined, with this machine's paths.
awk '/<!-- deployment-test: begin -->/ { on = 1; next }
     /<!-- deployment-test: end -->/ { on = 0 }
     on && /^    / { sub(/^    /, ""); print }' "$doc" |
  sed -e ':a' -e '/\\$/N; s/\\\n */ /; ta' \
      -e "s|/var/lib/images/disk.img|$work/disk.img|g" \
      -e "s|/run/adaptra|$rundir|g" \
      -e "s|--filter=adaptra |--filter=$ADAPTRA_FILTER |g" \
      -e "s|127.0.0.1:9101|127.0.0.1:$port|g" > "$work/commands"
[ "$(wc -l < "$work/commands")" -ge 4 ] ||
  fail "docs/DEPLOYMENT.md shows no recipe between its marks"
grep -q "^runuser -u adaptra " "$work/commands" || fail "no runuser line"

size=$((16 * 1024 * 1024))
head -c "$size" /dev/urandom > "$work/disk.img"
while IFS= read -r cmd; do
  echo "+ $cmd"
  bash -c "$cmd" || fail "the recipe's command failed: $cmd"
done < "$work/commands"
for _ in $(seq 100); do
  [ -S "$rundir/nbd.sock" ] && [ -S "$rundir/stats.sock" ] &&
    [ -s "$rundir/nbdkit.pid" ] && break
  sleep 0.1
done

# Owners and modes: the directory and both sockets are adaptra's, with
# group access and nothing for others.
expect_mode ()
{
  local got
  got=$(stat -c '%U:%G %a' "$1")
  [ "$got" = "$2" ] || fail "$1 is $got, not $2"
}
getent group adaptra > /dev/null || fail "no group adaptra"
[ "$(id -gn adaptra)" = adaptra ] || fail "adaptra's group is not adaptra"
expect_mode "$rundir" "adaptra:adaptra 750"
expect_mode "$rundir/nbd.sock" "adaptra:adaptra 770"
expect_mode "$rundir/stats.sock" "adaptra:adaptra 660"
[ "$(stat -c %U /proc/"$(cat "$rundir/nbdkit.pid")")" = adaptra ] ||
  fail "nbdkit does not run as adaptra"

# A member of the group, and another user.
for u in adaptra-t-in adaptra-t-out; do
  adduser --quiet --system --no-create-home --home /nonexistent "$u"
  users+=("$u")
done
adduser --quiet adaptra-t-in adaptra
uri="nbd+unix:///?socket=$rundir/nbd.sock"
as () { local u=$1; shift; runuser -u "$u" -- "$@"; }

[ "$(as adaptra-t-in nbdinfo --size "$uri")" -eq "$size" ] ||
  fail "a member of adaptra cannot read the export"
as adaptra-t-in nbdcopy "$uri" - | cmp - "$work/disk.img" ||
  fail "a member of adaptra read other bytes"
as adaptra-t-in "$stat_tool" "$rundir/stats.sock" --json > "$work/stats.json" ||
  fail "a member of adaptra cannot read statistics"
grep -q "\"client_bytes\":$size[,}]" "$work/stats.json" ||
  fail "the statistics do not show the read: $(cat "$work/stats.json")"
if as adaptra-t-in "$stat_tool" "$rundir/stats.sock" \
     --command 'set ratio 30' > "$work/set.out" 2>&1; then
  fail "a member of adaptra may change the server"
fi
grep -q 'permission denied' "$work/set.out" || fail "set: $(cat "$work/set.out")"
curl -sSf "http://127.0.0.1:$port/metrics" > "$work/metrics"
grep -q '^adaptra_build_info{version="' "$work/metrics" ||
  fail "no adaptra_build_info in the scrape"

if as adaptra-t-out nbdinfo --size "$uri" > /dev/null 2>&1; then
  fail "a user outside the group adaptra can connect"
fi
if as adaptra-t-out "$stat_tool" "$rundir/stats.sock" > /dev/null \
     2> "$work/out.err"; then
  fail "a user outside the group adaptra can read statistics"
fi
grep -q "may not enter the directory $rundir " "$work/out.err" ||
  fail "adaptra-stat does not name the directory: $(cat "$work/out.err")"

# Stopping removes the statistics socket.
pid=$(cat "$rundir/nbdkit.pid")
kill "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$pid" 2>/dev/null || fail "nbdkit did not stop"
[ ! -e "$rundir/stats.sock" ] || fail "nbdkit left its statistics socket"
rm -f "$rundir/nbdkit.pid"

# The Prometheus configuration shown is valid.
awk '/<!-- prometheus-config -->/ { on = 1; next }
     on && /^    / { sub(/^    /, ""); print; seen = 1; next }
     on && seen && NF { exit }' "$doc" > "$work/prometheus.yml"
grep -q "targets: \['127.0.0.1:9101'\]" "$work/prometheus.yml" ||
  fail "docs/DEPLOYMENT.md's scrape configuration is not where expected"
promtool check config "$work/prometheus.yml" || fail "promtool check config"
echo "test-deployment: ok"
