#!/usr/bin/env bash
# test-runas.sh: start-up checks the directories as nbdkit's -u user.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# nbdkit checks the filter's parameters as root and changes to -u USER
# (-g GROUP) later.  A boot profile directory or a statistics socket
# directory that user cannot write must stop nbdkit at start-up, in one
# line naming the parameter, the user and the directory, rather than
# fail at each connection's end (profiles) or leave the socket behind
# (statistics).  The same directories given to the user are accepted.

source "$(dirname "$0")/functions.sh"
[ "$(id -u)" -eq 0 ] || { echo "$0: SKIP: needs root (nbdkit -u)"; exit 77; }
requires id nobody

dir=$tmpdir/dir
mkdir "$dir"
chmod 0755 "$tmpdir" "$dir"

# start 'OPTIONS' PARAMS...: nbdkit with OPTIONS (-u, -g) and the
# filter over null with PARAMS, which exits at once; sets $rc and
# leaves stderr in $tmpdir/err.
start ()
{
  local options=$1
  shift
  rc=0
  # shellcheck disable=SC2086 # OPTIONS are words
  run_nbdkit -U - $options null "$@" --run "$client true" \
    2> "$tmpdir/err" || rc=$?
}

# refused PARAM ARGS...: one error line naming PARAM, the user, $dir.
refused ()
{
  local param=$1
  shift
  start "$@"
  cat "$tmpdir/err"
  [ "$rc" -ne 0 ] || { echo "FAIL: $* started"; exit 1; }
  [ "$(wc -l < "$tmpdir/err")" -eq 1 ] &&
    grep -q "$param: nbdkit runs as user nobody (-u).* may not write the directory $dir " \
      "$tmpdir/err" || { echo "FAIL: $*: not the one line expected"; exit 1; }
}

# Root's directory, 0755: nobody may not write it.
refused adaptra-profile "-u nobody" adaptra-profile="$dir"
refused adaptra-stats "-u nobody -g nogroup" adaptra-stats="$dir/stats.sock"
# -u in a cluster of short options, as nbdkit's getopt_long reads it.
refused adaptra-profile "-ru nobody" adaptra-profile="$dir"
refused adaptra-profile "-frunobody" adaptra-profile="$dir"
# Group write is enough for the -g group, and only for it.
chgrp nogroup "$dir"
chmod 0775 "$dir"
start "-u nobody -g nogroup" adaptra-profile="$dir"
[ "$rc" -eq 0 ] || { cat "$tmpdir/err"; echo "FAIL: group nogroup refused"; exit 1; }
refused adaptra-profile "-u nobody -g daemon" adaptra-profile="$dir"
# The user's own directory.
chown nobody "$dir"
chmod 0700 "$dir"
start "-u nobody" adaptra-profile="$dir" adaptra-stats="$dir/stats.sock"
[ "$rc" -eq 0 ] || { cat "$tmpdir/err"; echo "FAIL: nobody's own directory refused"; exit 1; }
# Without -u nothing changes user: root's checks only.
chown root "$dir"
start "" adaptra-profile="$dir"
[ "$rc" -eq 0 ] || { cat "$tmpdir/err"; echo "FAIL: without -u"; exit 1; }
echo "test-runas: ok"
