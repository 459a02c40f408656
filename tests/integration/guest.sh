# guest.sh: helpers for the tests whose Linux guest attaches adaptra with the kernel's nbd-client.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Helpers for the tests in which a Linux guest, booted under qemu TCG
# from Debian's cloud kernel and the initramfs of tests/guest/, attaches
# an export of adaptra with the kernel's own NBD client.  Sourced after
# functions.sh and clients.sh.  The guest reaches the server through
# qemu's user-mode network (its 10.0.2.2 is the host's 127.0.0.1), so
# the server listens on TCP (start_adaptra_tcp).

requires qemu-system-x86_64 --version
requires mkfs.ext4 -V
requires debugfs -V
requires ss -V

# The longest a guest may take, boot to power-off; under TCG on an idle
# two-core machine each guest of the tests takes well under a tenth.
GUEST_TIMEOUT=600
# The guest's memory, MiB: the kernel, the initramfs and a page cache
# for the data it reads.
GUEST_MEMORY=256

# The kernel and initramfs (tests/guest/build-guest, cached), or skip.
guest_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../guest" && pwd)
guest_dir=$("$guest_src/build-guest") || {
  rc=$?
  [ "$rc" -eq 77 ] && echo "$0: SKIP: the guest cannot be built here"
  exit "$rc"
}

# make_tree DIR MIB: a tree of random files in DIR, about MIB MiB in
# all, as a file system holds them: many small files, some of a few
# hundred KiB, a few large ones.
make_tree ()
{
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import os, random, sys
top, total = sys.argv[1], int(sys.argv[2]) << 20
r = random.Random(26)
sizes = ([r.randrange(1, 16 << 10) for _ in range(300)] +
         [r.randrange(64 << 10, 1 << 20) for _ in range(24)])
sizes += [(total - sum(sizes)) // 4] * 4
for i, size in enumerate(sizes):
    d = os.path.join(top, "d%d" % (i % 7), "s%d" % (i % 3))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%03d" % i), "wb") as f:
        f.write(os.urandom(size))
EOF
}

# tree_sums DIR: "SUM <sha256>  ./<path>" for every file under DIR, as
# the guest prints them.
tree_sums ()
{
  (cd "$1" && find . -type f | sort | xargs sha256sum) | sed 's/^/SUM /'
}

# run_guest CMDLINE...: boot the guest with CMDLINE added to the
# kernel's command line until it powers off; its serial console goes to
# $tmpdir/console.  Fails unless it printed GUEST-DONE and no GUEST-FAIL.
run_guest ()
{
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  timeout "$GUEST_TIMEOUT" qemu-system-x86_64 -machine pc,accel=tcg \
    -m "$GUEST_MEMORY" -nodefaults -display none -no-reboot \
    -serial "file:$tmpdir/console" \
    -kernel "$guest_dir/vmlinuz" -initrd "$guest_dir/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 $*" \
    -netdev user,id=net0 -device virtio-net-pci,netdev=net0,romfile= ||
    rc=$?
  t1=$(date +%s.%N)
  tr -d '\r' < "$tmpdir/console" > "$tmpdir/console.txt"
  grep -v '^SUM ' "$tmpdir/console.txt" || :
  echo "guest: qemu exited with $rc after $(echo "$t1 $t0" |
    awk '{ printf "%.1f", $1 - $2 }') s"
  ! grep -q '^GUEST-FAIL' "$tmpdir/console.txt" &&
    grep -q '^GUEST-DONE' "$tmpdir/console.txt" && [ "$rc" -eq 0 ]
}

# expect_guest_sums DIR: fail unless the guest printed the checksum of
# every file under DIR and nothing else.
expect_guest_sums ()
{
  tree_sums "$1" > "$tmpdir/sums.host"
  grep '^SUM ' "$tmpdir/console.txt" > "$tmpdir/sums.guest" || :
  if ! diff "$tmpdir/sums.host" "$tmpdir/sums.guest"; then
    echo "FAIL: the guest read other bytes than the host's tree holds"
    return 1
  fi
  echo "guest: $(wc -l < "$tmpdir/sums.guest") files read intact"
}
