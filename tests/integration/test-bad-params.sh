#!/usr/bin/env bash
# test-bad-params.sh: every bad parameter refused in one line.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Every parameter given nonsense is refused at start-up, with one error
# line naming the parameter and the value (as given, or in bytes for a
# size), and valid edge values are accepted.  (nbdkit's own parse
# helpers would print a line of their own first: the filter checks a
# value before it hands it to them.)

source "$(dirname "$0")/functions.sh"

cases=0

# start PARAM...: nbdkit with the filter over a 1M RAM disk, which
# must exit at once; sets $rc and leaves stderr in $tmpdir/err.
start ()
{
  rc=0
  timeout 20 env LD_PRELOAD="$preload" "$NBDKIT" -U - \
    --filter="$ADAPTRA_FILTER" memory 1M "$@" --run "$client true" \
    > /dev/null 2> "$tmpdir/err" || rc=$?
  # Sanitizer runs may add reports; they would fail the checks below.
}

# names NAME VALUES: does exactly one line of the error name
# adaptra-NAME=VALUE, as the user typed it (an extended regexp)?
names ()
{
  test "$(grep -cE -- "adaptra-$1=($2)( |:|$)" "$tmpdir/err")" -eq 1
}

# rejects NAME VALUES PARAM...: start with PARAMs must fail with one
# line naming adaptra-NAME=VALUES (an extended regexp of alternatives).
rejects ()
{
  local name=$1 values=$2 lines
  shift 2
  cases=$((cases + 1))
  start "$@"
  lines=$(wc -l < "$tmpdir/err")
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || ! names "$name" "$values" ||
     [ "$lines" -ne 1 ]; then
    echo "FAIL: $* (exit $rc): expected one line naming adaptra-$name=$values:"
    cat "$tmpdir/err"
    exit 1
  fi
}


# Sizes: negative, huge, non-numeric, empty, too small.
for p in pool page min max; do
  rejects $p '-1' adaptra-$p=-1
  rejects $p 'abc' adaptra-$p=abc
  rejects $p '99E' adaptra-$p=99E
  rejects $p '18446744073709551615' adaptra-$p=18446744073709551615
  rejects $p '' adaptra-$p=
done
rejects pool '0' adaptra-pool=0
# A value not typed (the page's default) is said as one would type it.
grep -q ' of adaptra-page=4K$' "$tmpdir/err"
rejects pool '100' adaptra-pool=100
rejects pool '1P' adaptra-pool=1P
# Pages: not a power of 2, out of range.
rejects page '0' adaptra-page=0
rejects page '3000' adaptra-page=3000
rejects page '256' adaptra-page=256
rejects page '2M' adaptra-page=2M
rejects page '4095' adaptra-page=4095
# Windows: min > max, below a page, more than the pool allows.
rejects max '512K' adaptra-min=1M adaptra-max=512K
rejects min '0' adaptra-min=0
rejects min '1' adaptra-min=1
rejects min '128M' adaptra-min=128M
rejects max '1G' adaptra-max=1G
rejects max '0' adaptra-max=0
rejects max '0K' adaptra-max=0K
# Pool smaller than one window, or than 64 pages.
rejects max '512K' adaptra-pool=1M adaptra-max=512K
rejects pool '32M' adaptra-page=1M adaptra-pool=32M
# Unsigned: negative, non-numeric, huge, out of range.
for p in ratio streams workers profile-workers; do
  rejects $p '-1' adaptra-$p=-1
  rejects $p 'many' adaptra-$p=many
  rejects $p '4294967296' adaptra-$p=4294967296
  rejects $p '1e3' adaptra-$p=1e3
done
rejects ratio '0' adaptra-ratio=0
rejects ratio '101' adaptra-ratio=101
rejects streams '0' adaptra-streams=0
rejects streams '65537' adaptra-streams=65537
rejects workers '65' adaptra-workers=65
rejects profile-workers '65' adaptra-profile-workers=65
# Boot profiles' budgets: at least ADAPTRA_PROFILE_BOOT_MIN_BYTES, at
# most ADAPTRA_PROFILE_PAGES_MAX pages, at most an hour.
rejects profile-time '-1' adaptra-profile-time=-1
rejects profile-time 'many' adaptra-profile-time=many
rejects profile-time '4294967296' adaptra-profile-time=4294967296
rejects profile-time '0' adaptra-profile-time=0
rejects profile-time '3601' adaptra-profile-time=3601
rejects profile-max '-1' adaptra-profile-max=-1
rejects profile-max 'abc' adaptra-profile-max=abc
rejects profile-max '512K' adaptra-profile-max=512K
rejects profile-max '17G' adaptra-profile-max=17G
rejects profile-max '0' adaptra-profile-max=0
rejects mode 'fast' adaptra-mode=fast
rejects mode '' adaptra-mode=
rejects mode 'ADAPTIVE' adaptra-mode=ADAPTIVE
# The statistics socket and its mode.
rejects stats-mode '999' adaptra-stats-mode=999
rejects stats-mode 'abc' adaptra-stats-mode=abc
rejects stats-mode '-1' adaptra-stats-mode=-1
rejects stats-mode '' adaptra-stats-mode=
long=/tmp/$(printf 'x%.0s' $(seq 120))
cases=$((cases + 1))
start adaptra-stats="$long"
grep -q "adaptra-stats: socket path is too long" "$tmpdir/err"
rejects stats '/nonexistent/dir/stats.sock' \
  adaptra-stats=/nonexistent/dir/stats.sock
grep -q ": directory /nonexistent/dir does not exist$" "$tmpdir/err"
# The socket's owner: unknown user or group, nothing, an id that
# would wrap to another (4294967296 to root) or mean "leave it".
rejects stats-owner 'no-such-user-x' adaptra-stats-owner=no-such-user-x
rejects stats-owner '4294967296' adaptra-stats-owner=4294967296
rejects stats-owner '0:4294967295' adaptra-stats-owner=0:4294967295
rejects stats-owner 'root:no-such-group-x' \
  adaptra-stats-owner=root:no-such-group-x
rejects stats-owner '' adaptra-stats-owner=
# The socket's idle limit: whole seconds within 3..86400, in decimal.
for v in 0 2 86401 -1 '' abc 10s 0x10 18446744073709551626; do
  rejects stats-idle "$v" "adaptra-stats-idle=$v"
done
rejects stats-idle '1\.5' adaptra-stats-idle=1.5
rejects stats-idle '\+10' adaptra-stats-idle=+10
rejects stats-idle ' 10' 'adaptra-stats-idle= 10'

# Refused, naming the parameter (these were refused without naming it
# before: see docs/RELIABILITY.md).
rejects stats '' adaptra-stats=
rejects pool '256T' adaptra-page=128K adaptra-min=128K \
  adaptra-pool=256T

# A typo in a name is refused by the filter, with the name it most
# looks like, not passed to the plugin (which names none of adaptra's).
rejects pol '1G' adaptra-pol=1G
grep -q ': did you mean adaptra-pool? (nbdkit --filter=adaptra null --help lists them)$' \
  "$tmpdir/err"
rejects stat '/x' adaptra-stat=/x
grep -q 'did you mean adaptra-stats?' "$tmpdir/err"
# (names adaptra-NAME only: the key here is spelt otherwise.)
cases=$((cases + 1))
start adaptra_ratio=30
[ "$rc" -ne 0 ] && [ "$(wc -l < "$tmpdir/err")" -eq 1 ] &&
  grep -q '^nbdkit: error: adaptra_ratio=30 is not a parameter of adaptra: did you mean adaptra-ratio?' \
    "$tmpdir/err"
rejects xyzzy '1' adaptra-xyzzy=1
grep -q 'is not a parameter of adaptra (nbdkit --filter=adaptra null --help lists the adaptra-\* ones)$' \
  "$tmpdir/err"

# Valid edge values start.
accepts ()
{
  cases=$((cases + 1))
  start "$@"
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $* was refused (exit $rc):"
    cat "$tmpdir/err"
    exit 1
  fi
}
accepts adaptra-page=512 adaptra-min=512 adaptra-pool=512K
# adaptra-min not given follows the page (its default, 16K, or one
# page); given, it is checked against the page in either order.
accepts adaptra-page=64K
accepts adaptra-page=1M adaptra-pool=64M
rejects min '16K' adaptra-page=64K adaptra-min=16K
rejects min '16K' adaptra-min=16K adaptra-page=64K
accepts adaptra-page=128K adaptra-min=128K adaptra-pool=64M
accepts adaptra-ratio=1 adaptra-streams=1 adaptra-workers=0 adaptra-mode=off
accepts adaptra-ratio=100 adaptra-streams=65536 adaptra-workers=64
accepts adaptra-workers=64 adaptra-profile-workers=64
accepts adaptra-profile-max=1M adaptra-profile-time=1
accepts adaptra-profile-max=16G adaptra-profile-time=3600
accepts adaptra-page=8K adaptra-min=16K adaptra-profile-max=32G
# The legacy fixed window (128K, not a parameter) adapts to pages
# larger than it and to pools too small for four of it.
accepts adaptra-page=1M adaptra-min=1M adaptra-pool=64M
accepts adaptra-mode=fixed adaptra-pool=256K
# What nbdkit's parse helpers take: sectors, bytes, a plus sign, hex.
accepts adaptra-pool=131072s adaptra-min=16384b adaptra-max=+1M
accepts adaptra-stats-idle=3
accepts adaptra-stats-idle=86400
accepts adaptra-ratio=0x32 adaptra-workers=' 2' 

echo "test-bad-params: $cases cases right"
echo "test-bad-params: ok"
