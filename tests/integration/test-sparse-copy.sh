#!/usr/bin/env bash
# test-sparse-copy.sh: sparse copies read no more below adaptra than without.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Copy a sparse image (160 MiB of data in 64 KiB-4 MiB extents over
# 1 GiB) with nbdcopy (defaults, and one request at a time) and
# qemu-img convert, over a backend of 2 ms a read, once straight from
# the plugin and once through adaptra; compare every byte of each
# copy, and assert that the bytes read from the plugin below adaptra
# are at most MAX_RATIO_PCT percent of those without it, and for
# qemu-img, the extents the plugin names in its block status answers
# at most MAX_EXTENTS_RATIO times those without it.  The clients
# skip the extents that block status calls zero, and read-ahead must
# skip them too (core/holes.h).  The plugin is the file plugin, then
# the nbd plugin over qemu-nbd serving the image as qcow2, whose block
# status comes from the qcow2 layer.  The counter filter of the
# benchmark sits right above the plugin.

source "$(dirname "$0")/functions.sh"
requires nbdcopy --version
requires qemu-img --version
requires qemu-nbd --version
: "${ADAPTRA_COUNTER:?run the tests with make check}"
: "${ADAPTRA_BENCH:?run the tests with make check}"

# The issue's target for the bytes read below adaptra: 1.02x.
MAX_RATIO_PCT=102

# qemu asks for one extent at a time, to the image's end (NBD's
# REQ_ONE): adaptra walks each stretch of the image about once for the
# map, besides passing the client's own queries through (core/holes.h:
# ADAPTRA_HOLES_WALK_HORIZONS), about twice the extents the plugin
# names without it.  Asking the plugin for the whole range at each
# query named half the image's extents per query, 77 times as many.
MAX_EXTENTS_RATIO=3

# nbdcopy asks block status 128 MiB at a time, and one request at a
# time, it reads each range's data while adaptra's windows run ahead
# of it: this image has enough ranges (8) and data for the windows to
# grow past a range's end before the client asks for the next (they
# read 27% more than nbdcopy itself before core/holes.h's horizon).
img="$tmpdir/sparse.img"
"$ADAPTRA_BENCH/make-sparse-image" "$img" 1G 160M

# The plugin and its parameters, for copy below.
plugin=(file "$img")

# copy WITH-ADAPTRA(0|1) NAME CLIENT-COMMAND: serve the image with the
# counter, a 2 ms delay and nbdkit's log filter below (and adaptra
# above, if asked), run the command with $uri and $out, compare $out
# with the image, and print the bytes the counter saw read and the
# extents the plugin named in its block status answers.
copy ()
{
  local with=$1 name=$2 cmd=$3
  local counter="$tmpdir/counter-$name-$with" out="$tmpdir/out-$name-$with"
  local log="$tmpdir/log-$name-$with"
  local server=(-U - --filter="$ADAPTRA_COUNTER" --filter=delay --filter=log
                "${plugin[@]}" counter-file="$counter" rdelay=2ms
                logfile="$log" --run "out=$out; $client $cmd")
  if [ "$with" = 1 ]; then
    run_nbdkit "${server[@]}" >&2
  else
    LD_PRELOAD="$preload" "$NBDKIT" "${server[@]}" >&2
  fi
  cmp "$img" "$out" >&2
  rm -f "$out"
  # Each extent of an answer is logged as OFFSET LENGTH "TYPE".
  echo "$(awk '$1 == "read_bytes" { print $2 }' "$counter")" \
       "$(grep '\.\.\.Extents ' "$log" | grep -o '"[a-z,]*"' | wc -l)"
}

# check NAME CLIENT-COMMAND [MAX-EXTENTS-RATIO]
check ()
{
  local name=$1 cmd=$2 max_extents=${3:-} without with
  read -r without without_extents < <(copy 0 "$name" "$cmd")
  read -r with with_extents < <(copy 1 "$name" "$cmd")
  echo "$name: $without bytes read without adaptra, $with with it;" \
       "$without_extents extents named without, $with_extents with it"
  if [ "$without" -le 0 ] || [ $((with * 100)) -gt $((without * MAX_RATIO_PCT)) ]; then
    echo "FAIL: $name read $with bytes below adaptra, more than" \
         "$MAX_RATIO_PCT% of $without" >&2
    exit 1
  fi
  if [ -n "$max_extents" ] &&
     { [ "$without_extents" -le 0 ] ||
       [ "$with_extents" -gt $((without_extents * max_extents)) ]; }; then
    echo "FAIL: $name: the plugin named $with_extents extents below" \
         "adaptra, more than $max_extents times $without_extents" >&2
    exit 1
  fi
}

copies ()
{
  check "$1-nbdcopy" 'nbdcopy "$uri" "$out"'
  check "$1-nbdcopy-requests-1" \
    'nbdcopy --connections=1 --requests=1 "$uri" "$out"'
  check "$1-qemu-img" 'qemu-img convert -f raw -O raw "$uri" "$out"' \
    "$MAX_EXTENTS_RATIO"
}

copies file

qcow2="$tmpdir/sparse.qcow2"
qsock="$tmpdir/qemu-nbd.sock"
qemu-img convert -f raw -O qcow2 "$img" "$qcow2"
qemu-nbd --persistent --shared=16 --format=qcow2 --read-only \
  --socket="$qsock" "$qcow2" &
cleanup_fns+=("kill $!")
for _ in $(seq 100); do [ -S "$qsock" ] && break; sleep 0.1; done
plugin=(nbd socket="$qsock")
copies qcow2
