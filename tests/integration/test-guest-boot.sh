#!/usr/bin/env bash
# test-guest-boot.sh: a guest boots from a disk served through adaptra.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# A guest boots from a disk served through adaptra: qemu-system-x86_64
# under TCG (no KVM needed), its BIOS loading the boot sector over NBD
# from an nbd+unix:// URI.  The boot sector (boot-sector.S, assembled
# here) reads the next 8 MiB through the BIOS in 32K steps, as a boot
# loader loads a kernel, and prints a hash of it on the serial port,
# which must match the image's; read-ahead must have served the reads.
# docs/DEPLOYMENT.md shows how to boot a full Debian guest the same way.

source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/clients.sh"
requires qemu-system-x86_64 --version
requires as --version
requires ld --version

here=$(cd "$(dirname "$0")" && pwd)
as --32 -o "$tmpdir/boot.o" "$here/boot-sector.S"
ld -m elf_i386 -Ttext 0x7c00 --oformat binary -o "$tmpdir/boot.bin" \
  "$tmpdir/boot.o"
test "$(stat -c %s "$tmpdir/boot.bin")" -eq 512

img="$tmpdir/disk.img"
head -c $((9 * 1024 * 1024)) /dev/urandom > "$img"
dd if="$tmpdir/boot.bin" of="$img" conv=notrunc status=none
# The hash boot-sector.S computes, over the 8 MiB after sector 0.
expected=$(/usr/bin/python3 -c '
import struct, sys
with open(sys.argv[1], "rb") as f:
    f.seek(512)
    data = f.read(8 << 20)
h = 0
for (w,) in struct.iter_unpack("<I", data):
    h = (((h << 5) | (h >> 27)) & 0xffffffff) ^ w
print("SUM %08x" % h)' "$img")

start_adaptra boot --filter=delay file "$img" delay-read=2ms

# isa-debug-exit turns the boot sector's "out 0xf4" into qemu's exit
# status: 33 when it printed the hash, 35 on a read error.
rc=0
timeout 300 qemu-system-x86_64 -machine pc,accel=tcg -m 64 -nodefaults \
  -display none -no-reboot -serial "file:$tmpdir/serial" \
  -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
  -drive "file=$uri,format=raw,if=virtio" || rc=$?
cat "$tmpdir/serial"
test "$rc" -eq 33
test "$(tr -d '\r' < "$tmpdir/serial")" = "$expected"
expect_readahead_hits $((8 * 1024 * 1024 * 9 / 10)) "guest boot"
stop_servers
echo "test-guest-boot: ok"
