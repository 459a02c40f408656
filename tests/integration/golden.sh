# golden.sh: helpers for golden images under per-guest qcow2 overlays, for the test and the benchmark.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced after functions.sh by test-qcow2-golden.sh and
# scripts/bench/golden.

requires qemu-img --version
requires qemu-io --version

# overlay NAME FORMAT URI: a fresh qcow2 overlay $tmpdir/NAME.qcow2 of
# $size bytes whose backing file is the export at URI, of FORMAT (-u:
# qemu-img does not open it, so it makes no connection of its own).
overlay ()
{
  rm -f "$tmpdir/$1.qcow2"
  qemu-img create -q -u -f qcow2 -b "$3" -F "$2" "$tmpdir/$1.qcow2" "$size"
}

# boot_commands SIZE N: a boot of N reads of 4-64 KiB at scattered
# offsets of a SIZE-byte disk, as a guest's boot reads its kernel,
# libraries and configuration, always the same ones: qemu-io's
# arguments in $boot_args, the distinct 4K pages read in $boot_pages.
boot_commands ()
{
  /usr/bin/python3 - "$1" "$2" > "$tmpdir/boot.cmds" <<'PY'
import random, sys
size, n = int(sys.argv[1]), int(sys.argv[2])
r = random.Random(26)
for _ in range(n):
    count = r.choice([4096, 8192, 16384, 65536])
    print("read -q %d %d" % (r.randrange(0, (size - count) >> 12) << 12, count))
PY
  boot_pages=$(awk '{ for (p = $3; p < $3 + $4; p += 4096) seen[p] = 1 }
    END { print length(seen) }' "$tmpdir/boot.cmds")
  mapfile -t boot_args < <(sed 's/^/-c\n/' "$tmpdir/boot.cmds")
}

# scan_commands SIZE CHUNK: a whole SIZE-byte disk read from start to
# end in CHUNK-byte reads, one at a time, as a guest's sequential
# reader behind the kernel's read-ahead reads it: qemu-io's arguments
# in $scan_args.
scan_commands ()
{
  mapfile -t scan_args < <(seq 0 "$2" $(($1 - 1)) |
    awk -v chunk="$2" '{ print "-c"; print "read -q " $1 " " chunk }')
}

# make_written_qcow2 IMG SIZE: a qcow2 image IMG of SIZE bytes whose
# clusters were written one by one in random order, as a guest's
# installer writes its disk in place: the file holds them in the order
# they were written, not in the disk's, so reading the disk in order
# reads the file at random.  Its bytes are patterns (a cluster's
# number), not the golden image's.
make_written_qcow2 ()
{
  local cluster=65536 args
  qemu-img create -q -f qcow2 -o cluster_size=$cluster "$1" "$2"
  mapfile -t args < <(/usr/bin/python3 - "$2" "$cluster" <<'PY'
import random, sys
size, cluster = int(sys.argv[1]), int(sys.argv[2])
order = list(range(size // cluster))
random.Random(26).shuffle(order)
for i in order:
    print("-c")
    print("write -q -P %d %d %d" % (i % 255 + 1, i * cluster, cluster))
PY
  )
  qemu-io -f qcow2 "${args[@]}" "$1"
}
