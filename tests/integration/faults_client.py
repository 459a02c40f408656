# faults_client.py: the client side of test-faults.sh.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# The client side of test-faults.sh.  Usage:
#
#   faults_client.py URI IMAGE STATS_SOCKET LOG SECONDS INJECT_FILE...
#
# nbdkit runs adaptra above the error filter, which fails reads with
# ENOSPC and writes with EPERM while the INJECT_FILEs exist.  Four
# connections, each owning a quarter of the export, scan it, read at
# random and write, for SECONDS; a shadow copy says what every read must
# return.  Then the checks:
#
# - every read that succeeded returned the right bytes;
# - every read that failed failed with the backend's errno (ENOSPC),
#   and every failed write with EPERM, leaving the data as it was;
# - the filter's backend_errors counter equals the errors the error
#   filter logged, and prefetch_failed is part of them;
# - a failed prefetch never failed a client's read: client reads failed
#   at most as often as the backend failed the clients' own requests
#   (backend_errors - prefetch_failed);
# - with the INJECT_FILEs removed, the whole export reads back right:
#   no failed read left anything behind in the pool.

import errno
import os
import random
import sys
import threading
import time

import nbd

from control import ask

uri, image, stats_path, log_path = sys.argv[1:5]
seconds = float(sys.argv[5])
inject_files = sys.argv[6:]
seed = int(os.environ.get("ADAPTRA_TEST_SEED", time.time()))
print("faults_client: seed %d" % seed, flush=True)

CONNECTIONS = 4
with open(image, "rb") as f:
    shadow = bytearray(f.read())
size = len(shadow)
quarter = size // CONNECTIONS


def fail(msg):
    print("faults_client: seed %d: FAIL: %s" % (seed, msg), flush=True)
    os._exit(1)


def stats():
    values = {}
    for line in ask(stats_path, "stats").splitlines():
        words = line.split()
        if len(words) == 2 and words[1].isdigit():
            values[words[0]] = int(words[1])
    return values


class Tally:
    def __init__(self):
        self.reads_ok = self.reads_failed = 0
        self.writes_ok = self.writes_failed = 0
        self.bytes_checked = 0


def checked_read(h, t, offset, count, what):
    try:
        buf = h.pread(count, offset)
    except nbd.Error as e:
        if e.errnum != errno.ENOSPC:
            fail("%s [%d, +%d): errno %s, not the backend's ENOSPC"
                 % (what, offset, count, e.errno))
        t.reads_failed += 1
        return
    if buf != shadow[offset:offset + count]:
        bad = next(i for i in range(count)
                   if buf[i] != shadow[offset + i])
        fail("%s [%d, +%d): byte at offset %d differs"
             % (what, offset, count, offset + bad))
    t.reads_ok += 1
    t.bytes_checked += count


def worker(k, t, deadline):
    rng = random.Random(seed * 31 + k)
    h = nbd.NBD()
    h.connect_uri(uri)
    lo = k * quarter
    pos = lo
    while time.monotonic() < deadline:
        dice = rng.randrange(100)
        if dice < 70:
            # Sequential: the next chunk of this connection's scan.
            count = rng.choice([4096, 65536, 131072])
            if pos + count > lo + quarter:
                pos = lo
            checked_read(h, t, pos, count, "scan")
            pos += count
        elif dice < 90:
            count = rng.randrange(1, 65536)
            offset = lo + rng.randrange(quarter - count)
            checked_read(h, t, offset, count, "random read")
        else:
            # A write just ahead of the scan, into its read-ahead.
            count = rng.randrange(1, 65536)
            offset = min(pos + rng.randrange(262144), lo + quarter - count)
            data = rng.randbytes(count)
            try:
                h.pwrite(data, offset)
            except nbd.Error as e:
                if e.errnum != errno.EPERM:
                    fail("write [%d, +%d): errno %s, not EPERM"
                         % (offset, count, e.errno))
                t.writes_failed += 1
                continue
            shadow[offset:offset + count] = data
            t.writes_ok += 1
    h.shutdown()


tallies = [Tally() for _ in range(CONNECTIONS)]
deadline = time.monotonic() + seconds
threads = [threading.Thread(target=worker, args=(k, tallies[k], deadline))
           for k in range(CONNECTIONS)]
for th in threads:
    th.start()
for th in threads:
    th.join()

reads_ok = sum(t.reads_ok for t in tallies)
reads_failed = sum(t.reads_failed for t in tallies)
writes_ok = sum(t.writes_ok for t in tallies)
writes_failed = sum(t.writes_failed for t in tallies)
bytes_checked = sum(t.bytes_checked for t in tallies)

# Let prefetches still in flight finish before counting.
for _ in range(100):
    st = stats()
    if st.get("prefetch_flight_bytes", 0) == 0 and \
       st.get("pages_in_flight", 0) == 0:
        break
    time.sleep(0.05)
with open(log_path) as f:
    log = f.read()
injected_reads = log.count("error into pread")
injected_writes = log.count("error into pwrite")
print("faults_client: reads %d ok, %d failed; writes %d ok, %d failed; "
      "%d bytes checked" % (reads_ok, reads_failed, writes_ok, writes_failed,
                            bytes_checked))
print("faults_client: injected %d read and %d write errors; backend_errors "
      "%d, prefetch_failed %d" % (injected_reads, injected_writes,
                                  st["backend_errors"], st["prefetch_failed"]),
      flush=True)

if reads_failed == 0 or writes_failed == 0 or st["prefetch_failed"] == 0:
    fail("the faults did not reach clients' reads, writes and prefetches")
if st["backend_errors"] != injected_reads:
    fail("backend_errors %d, but the error filter failed %d reads"
         % (st["backend_errors"], injected_reads))
if reads_failed > st["backend_errors"] - st["prefetch_failed"]:
    fail("%d client reads failed, but only %d of the clients' own backend "
         "reads did: a failed prefetch failed a client's read"
         % (reads_failed, st["backend_errors"] - st["prefetch_failed"]))

# Faults off: every byte must now read back right.
for path in inject_files:
    os.unlink(path)
h = nbd.NBD()
h.connect_uri(uri)
t = Tally()
for offset in range(0, size, 1 << 20):
    checked_read(h, t, offset, min(1 << 20, size - offset), "after the faults")
if t.reads_failed:
    fail("%d reads failed with no faults injected" % t.reads_failed)
h.shutdown()
print("faults_client: ok", flush=True)
