#!/usr/bin/env bash
# test-nbdcopy.sh: nbdcopy through the filter, byte for byte.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Copy a 48 MiB random image through the filter with nbdcopy (several
# connections, many requests in flight) and check it is byte-exact.

source "$(dirname "$0")/functions.sh"
requires nbdcopy --version

img="$tmpdir/disk.img"
out="$tmpdir/copy.img"
head -c $((48 * 1024 * 1024)) /dev/urandom > "$img"

run_nbdkit -U - file "$img" \
  --run "$client"' nbdcopy --connections=4 --requests=64 "$uri" '"$out"

cmp "$img" "$out"
echo "nbdcopy: 48 MiB copied byte-exact"
