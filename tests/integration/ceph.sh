# ceph.sh: a single-node Ceph cluster (one mon, one bluestore OSD, no mgr) on 127.0.0.1 for a test.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced after functions.sh.  ceph_start brings up one monitor and one
# bluestore OSD on a sparse file, on 127.0.0.1, with no manager and no
# authentication, all under $tmpdir/ceph with $ceph_conf as its
# configuration; the test's cleanup stops the daemons.  Ceph's own
# defaults are tuned for clusters, so a few are set here (see ceph_start).

requires ceph-mon --version
requires ceph-osd --version
requires rbd --version
requires command -v monmaptool
requires command -v ceph-authtool

# The OSD's block file (sparse) and the memory it aims for: the
# smallest osd_memory_target Ceph accepts.
CEPH_OSD_BYTES=$((2 * 1024 * 1024 * 1024))
CEPH_OSD_MEMORY=$((896 * 1024 * 1024))
# The longest bring-up waits for the cluster to serve I/O, in seconds.
CEPH_TIMEOUT=120

# free_port: a TCP port of 127.0.0.1 that nothing listens on now.
free_port ()
{
  /usr/bin/python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ceph_daemon NAME ARGS...: start a Ceph daemon in the foreground of a
# background job, every standard stream redirected (a daemon holding
# the caller's stdout open would keep make check waiting); its pid is
# stopped at cleanup.
ceph_daemon ()
{
  local name=$1
  shift
  "$@" -f -c "$ceph_conf" < /dev/null > "$ceph_dir/$name.out" 2>&1 &
  cleanup_fns+=("kill $! 2>/dev/null; wait $! 2>/dev/null")
}

# ceph_start: the cluster, up and serving I/O.  A client with options
# of its own (librbd's cache, injected delays) reads a copy of
# $ceph_conf with a [client] section added.
ceph_start ()
{
  local fsid port osd_uuid i
  ceph_dir=$tmpdir/ceph
  ceph_conf=$ceph_dir/ceph.conf
  mkdir -p "$ceph_dir"/{mon,osd,run}
  fsid=$(uuidgen)
  port=$(free_port)
  cat > "$ceph_conf" <<CONF
[global]
fsid = $fsid
mon_host = v2:127.0.0.1:$port
public_network = 127.0.0.0/8
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
run_dir = $ceph_dir/run
admin_socket = $ceph_dir/run/\$name.asok
log_file = $ceph_dir/\$name.log
# One OSD: pools of one replica, placed on OSDs rather than hosts.
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_crush_chooseleaf_type = 0
osd_pool_default_pg_autoscale_mode = off
# The default interval (1 s) makes bring-up take 12 s instead of 4-5.
paxos_propose_interval = 0.01
# The monitor refuses to run on a nearly full disk otherwise.
mon_data_avail_crit = 1
[mon]
mon_data = $ceph_dir/mon
[osd]
osd_data = $ceph_dir/osd
osd_objectstore = bluestore
# Left unset, bluestore_block_path is osd_data/block: setting it to
# that same path fails with ELOOP.
bluestore_block_create = true
bluestore_block_size = $CEPH_OSD_BYTES
osd_memory_target = $CEPH_OSD_MEMORY
CONF
  ceph-authtool --create-keyring "$ceph_dir/mon.keyring" --gen-key -n mon. \
    --cap mon 'allow *' > /dev/null
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" \
    "$ceph_dir/monmap" > /dev/null
  ceph-mon -c "$ceph_conf" --mkfs -i a --monmap "$ceph_dir/monmap" \
    --keyring "$ceph_dir/mon.keyring"
  ceph_daemon mon ceph-mon -i a

  osd_uuid=$(uuidgen)
  timeout "$CEPH_TIMEOUT" ceph -c "$ceph_conf" osd new "$osd_uuid" > /dev/null
  ceph-osd -c "$ceph_conf" -i 0 --mkfs --osd-uuid "$osd_uuid" \
    > "$ceph_dir/osd-mkfs.out" 2>&1 || { cat "$ceph_dir/osd-mkfs.out"; return 1; }
  ceph_daemon osd ceph-osd -i 0

  ceph -c "$ceph_conf" osd pool create rbd 8 8 > /dev/null
  ceph -c "$ceph_conf" osd pool application enable rbd rbd > /dev/null
  # Up once an object can be written and read back.
  for i in $(seq "$CEPH_TIMEOUT"); do
    echo up > "$ceph_dir/probe"
    timeout 10 rados -c "$ceph_conf" -p rbd put probe "$ceph_dir/probe" \
      2> /dev/null && break
    sleep 1
  done
  [ "$i" -lt "$CEPH_TIMEOUT" ]
}
