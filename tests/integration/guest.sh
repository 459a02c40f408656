# guest.sh: helpers for the tests whose Linux guest attaches adaptra with the kernel's nbd-client.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Helpers for the tests in which a Linux guest, booted under qemu TCG
# from Debian's cloud kernel and the initramfs of tests/guest/, attaches
# an export of adaptra with the kernel's own NBD client.  Sourced after
# functions.sh and clients.sh.  The guest reaches the server over TCP
# (start_adaptra_tcp): its 10.0.2.2 is the host's 127.0.0.1.
#
# The network is passt (Debian package passt) when it is installed,
# else qemu's user-mode network.  Both give the guest the same
# addresses; passt takes frames of GUEST_MTU bytes where qemu's takes
# Ethernet's 1500, and under TCG every frame costs the guest's emulated
# CPU an interrupt and a trip through its network stack, which 40 times
# fewer frames mostly save.  That cost is the test rig's, not adaptra's
# (with KVM and a virtio-net offloading to the host it goes away), but
# it is part of every figure the guests give, with adaptra or without.

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
# passt's largest MTU, the guest's when passt is its network.
GUEST_MTU=65520

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

# make_data_image IMG MIB: an ext4 image IMG holding a tree of MIB MiB
# (make_tree), which is also left in $tmpdir/tree.
make_data_image ()
{
  make_tree "$tmpdir/tree" "$2"
  truncate -s $(($2 * 2))M "$1"
  mkfs.ext4 -q -F -b 4096 -L data -d "$tmpdir/tree" "$1"
}

# make_root_image IMG MIB: an ext4 image IMG of a root file system for
# the diskless guest: busybox, tests/guest/root-init as /sbin/init and
# a tree of MIB MiB under /data, also left in $tmpdir/root.
make_root_image ()
{
  local root=$tmpdir/root app
  mkdir -p "$root"/{bin,sbin,dev,proc,var}
  cp /bin/busybox "$root/bin/busybox"
  for app in $(/bin/busybox --list); do
    [ -e "$root/bin/$app" ] || ln -s busybox "$root/bin/$app"
  done
  install -m 755 "$guest_src/root-init" "$root/sbin/init"
  make_tree "$root/data" "$2"
  truncate -s $(($2 * 4))M "$1"
  mkfs.ext4 -q -F -b 4096 -L root -d "$root" "$1"
}

# tree_sums DIR: "SUM <sha256>  ./<path>" for every file under DIR, as
# the guest prints them.
tree_sums ()
{
  (cd "$1" && find . -type f | sort | xargs sha256sum) | sed 's/^/SUM /'
}

# guest_network: which network run_guest gives the guest.
guest_network ()
{
  if command -v passt > /dev/null; then
    echo "passt, MTU $GUEST_MTU"
  else
    echo "qemu user-mode, MTU 1500 (no passt)"
  fi
}

# run_guest CMDLINE [QEMU-ARGS...]: boot the guest with CMDLINE added
# to the kernel's command line, and QEMU-ARGS to qemu's, until it powers
# off; its serial console goes to $tmpdir/console.txt.  Fails unless it
# printed GUEST-DONE and no GUEST-FAIL.
run_guest ()
{
  local t0 t1 rc=0 cmdline=$1 netdev=user,id=net0 passt_pid=
  shift
  if command -v passt > /dev/null; then
    # One guest a passt, gone with the guest's connection (-1); it
    # runs as the caller, where as root it would take "nobody".
    rm -f "$tmpdir/passt.sock"
    passt -q -f -1 --runas "$(id -u):$(id -g)" -s "$tmpdir/passt.sock" \
      -a 10.0.2.15 -n 24 -g 10.0.2.2 -m "$GUEST_MTU" 2> /dev/null &
    passt_pid=$!
    cleanup_fns+=("kill $passt_pid 2>/dev/null")
    until [ -S "$tmpdir/passt.sock" ]; do
      kill -0 "$passt_pid" || { echo "FAIL: passt did not start"; return 1; }
      sleep 0.05
    done
    netdev=stream,id=net0,server=off,addr.type=unix,addr.path=$tmpdir/passt.sock
    cmdline="adaptra.mtu=$GUEST_MTU $cmdline"
  fi
  t0=$(date +%s.%N)
  timeout "$GUEST_TIMEOUT" qemu-system-x86_64 -machine pc,accel=tcg \
    -m "$GUEST_MEMORY" -nodefaults -display none -no-reboot \
    -serial "file:$tmpdir/console" \
    -kernel "$guest_dir/vmlinuz" -initrd "$guest_dir/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 $cmdline" \
    -netdev "$netdev" -device virtio-net-pci,netdev=net0,romfile= \
    "$@" || rc=$?
  t1=$(date +%s.%N)
  if [ -n "$passt_pid" ]; then
    kill "$passt_pid" 2> /dev/null || :
    wait "$passt_pid" 2> /dev/null || :
  fi
  tr -d '\r' < "$tmpdir/console" > "$tmpdir/console.txt"
  grep -v '^SUM ' "$tmpdir/console.txt" || :
  echo "guest: qemu exited with $rc after $(echo "$t1 $t0" |
    awk '{ printf "%.1f", $1 - $2 }') s; network: $(guest_network)"
  ! grep -q '^GUEST-FAIL' "$tmpdir/console.txt" &&
    grep -q '^GUEST-DONE' "$tmpdir/console.txt" && [ "$rc" -eq 0 ]
}

# guest_figure KEY: the number after "KEY=" on the guest's console (the
# last such line), or fail.
guest_figure ()
{
  local v
  v=$(sed -n "s/^$1=\([0-9.]*\).*/\1/p" "$tmpdir/console.txt" | tail -n 1)
  [ -n "$v" ] || { echo "FAIL: the guest printed no $1=" >&2; return 1; }
  echo "$v"
}

# guest_read_figures: how the data guest's timed read went, "PART
# SECONDS" a line for READ (all of it), WALK (its walk of the
# directories), BUSY and WAIT (its CPU busy, and idle waiting for the
# server), as tests/guest/init prints them; fails if one is missing.
guest_read_figures ()
{
  local part v
  for part in READ WALK BUSY WAIT; do
    v=$(guest_figure "GUEST-$part seconds") || return 1
    echo "$part $v"
  done
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
