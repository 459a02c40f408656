# benchdefs.py: the benchmark's backend models, stacks and workloads.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause

"""What the benchmark runs: stacks under test, backend models and
workloads, shared by scripts/bench/run, matrix and report.

A server for one run is, closest to the client first:

    STACK-UNDER-TEST | counter | backend model | file IMG

Sizes are in bytes; throughput is in MiB/s (2**20 bytes per second)
everywhere, so the remote model's rate=1600M (bits, nbdkit's powers of
1024) is exactly 200 MiB/s.
"""

import csv
import datetime
import functools
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, ".build")
TOP = os.path.dirname(os.path.dirname(HERE))
MIB = 1 << 20

DEFAULT_FILTER = os.path.join(TOP, "plugin", ".libs",
                              "nbdkit-adaptra-filter.so")
DEFAULT_IMAGE = "/tmp/adaptra-bench/img-1g.raw"
IMAGE_SIZE = 1 << 30

# Stacks under test, in the order tables show them.  Each maps to the
# --filter options and parameters above the counter.  POOL is the
# memory budget of the caching stacks (the cache filter's
# cache-max-size, adaptra's adaptra-pool).
STACKS = ["none", "readahead", "cache", "readahead+cache",
          "adaptra-fixed", "adaptra"]

STACK_TITLES = {
    "none": "no filter",
    "readahead": "readahead",
    "cache": "cache",
    "readahead+cache": "readahead+cache",
    "adaptra-fixed": "adaptra fixed",
    "adaptra": "adaptra",
}


def adaptra_filter():
    """Path of the adaptra filter under test ($ADAPTRA_FILTER)."""
    return os.environ.get("ADAPTRA_FILTER", DEFAULT_FILTER)


@functools.lru_cache(maxsize=None)
def adaptra_help(path):
    """The filter's --help text ('' if it does not load)."""
    try:
        out = subprocess.run(["nbdkit", "--filter=" + path, "null", "--help"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout + out.stderr if out.returncode == 0 else ""


def adaptra_engine_present(path):
    """True once the engine's parameters exist; before that the filter
    is a pass-through and accepts no parameters."""
    return "adaptra-mode" in adaptra_help(path)


def adaptra_stack_args(stack, pool, path):
    """Parameters of an adaptra stack.  $ADAPTRA_ARGS_FIXED and
    $ADAPTRA_ARGS_ADAPTIVE override the defaults ({pool} is replaced by
    the pool size in bytes).  With a pass-through filter the defaults
    are empty."""
    env = "ADAPTRA_ARGS_FIXED" if stack == "adaptra-fixed" \
        else "ADAPTRA_ARGS_ADAPTIVE"
    if env in os.environ:
        return os.environ[env].replace("{pool}", str(pool)).split()
    if not adaptra_engine_present(path):
        return []
    mode = "fixed" if stack == "adaptra-fixed" else "adaptive"
    return ["adaptra-mode=" + mode, "adaptra-pool=%d" % pool]


def stack_options(stack, pool):
    """(filters, params) of a stack under test."""
    cache = ["cache-on-read=true", "cache-max-size=%d" % pool]
    if stack == "none":
        return [], []
    if stack == "readahead":
        return ["--filter=readahead"], []
    if stack == "cache":
        return ["--filter=cache"], cache
    if stack == "readahead+cache":
        return ["--filter=readahead", "--filter=cache"], cache
    if stack in ("adaptra", "adaptra-fixed"):
        path = adaptra_filter()
        return ["--filter=" + path], adaptra_stack_args(stack, pool, path)
    raise ValueError("unknown stack " + stack)


# Backend models: filters and parameters below the counter, and the
# bandwidth limit (MiB/s) and per-request latency (s) they impose.
MODELS = {
    "remote": {
        "filters": ["--filter=delay", "--filter=rate"],
        "params": ["rdelay=5ms", "rate=1600M", "burstiness=0.05"],
        "mibps": 200.0,
        "latency": 0.005,
        "about": "5 ms per read (delay) + 200 MiB/s total (rate, "
                 "burstiness=0.05)",
    },
    "disk": {
        "filters": ["--filter=" + os.path.join(BUILD,
                                                "nbdkit-diskmodel-filter.so")],
        "params": ["disk-bandwidth=150M", "disk-min-seek=0.5ms",
                   "disk-max-seek=8ms"],
        "mibps": 150.0,
        "latency": None,
        "about": "one head, seek 0.5 ms + 7.5 ms x distance/size, "
                 "150 MiB/s transfer",
    },
    "fast": {
        "filters": [],
        "params": [],
        "mibps": None,
        "latency": None,
        "about": "file in the page cache, no delay",
    },
    # The sparse copies' backends (issue 25): latency alone, as a
    # remote store without a bandwidth cap.
    "delay-2ms": {
        "filters": ["--filter=delay"],
        "params": ["rdelay=2ms"],
        "mibps": None,
        "latency": 0.002,
        "about": "2 ms per read (delay), no bandwidth cap",
    },
    "delay-10ms": {
        "filters": ["--filter=delay"],
        "params": ["rdelay=10ms"],
        "mibps": None,
        "latency": 0.010,
        "about": "10 ms per read (delay), no bandwidth cap",
    },
}


def fio_regions(name, streams, region, about):
    """A fio workload of STREAMS sequential readers (job NAME), one
    connection each, each reading its own REGION of the image (fio's
    size, e.g. '64m') once, 64 KiB at qd1."""
    return {
        "about": about,
        "kind": "fio", "pool": 64 * MIB,
        "jobs": [["--name=" + name, "--rw=read", "--bs=64k", "--iodepth=1",
                  "--numjobs=%d" % streams, "--size=" + region,
                  "--offset_increment=" + region, "--group_reporting"]],
    }


def seed_streams(title, rate_kib, pool_mib, spread):
    """The seed's read_threads as a paced workload named TITLE: 800
    streams (80 readers x 10) of RATE_KIB KiB/s each, 4 KiB reads, 8
    connections, started 10 ms apart, in a pool of POOL_MIB MiB; the
    runs' SPREAD."""
    return {
        "about": "%s: 800 streams x %d KiB/s (80 readers x 10), 4 KiB "
                 "reads, 8 connections, %d MiB pool"
                 % (title, rate_kib, pool_mib),
        "kind": "paced", "pool": pool_mib * MIB,
        "offered": 800 * rate_kib * 1024,
        "args": ["--streams", "800", "--group", "10", "--rate",
                 "%dK" % rate_kib, "--block", "4K", "--stagger", "0.01",
                 "--connections", "8"],
        "spread": spread,
    }


# Workloads.  kind: "fio" (job options), "interleave" / "paced" (our
# libnbd tools), "nbdcopy" / "qemu-img" (whole-image copies).  pool is
# the memory budget given to caching stacks for this workload.
WORKLOADS = {
    "W1": {
        "about": "1 sequential stream, 64 KiB reads, qd1 (fio)",
        "kind": "fio", "pool": 64 * MIB,
        "jobs": [["--name=seq", "--rw=read", "--bs=64k", "--iodepth=1"]],
    },
    "W2": fio_regions(
        "seq16", 16, "64m",
        "16 sequential streams, 1 connection each, own regions"),
    "W2-two": fio_regions(
        "seq2", 2, "512m",
        "2 sequential streams, 1 connection each, 512 MiB apart"),
    "W3": {
        "about": "8 sequential streams interleaved round-robin on ONE "
                 "connection, 64 KiB, qd1",
        "kind": "interleave", "pool": 64 * MIB,
        "args": ["--streams", "8", "--block", "64K", "--depth", "1"],
    },
    "W4-qd1": {
        "about": "random 4 KiB reads, qd1 (fio)",
        "kind": "fio", "pool": 64 * MIB, "qd": 1,
        "jobs": [["--name=rand", "--rw=randread", "--bs=4k", "--iodepth=1"]],
    },
    "W4-qd16": {
        "about": "random 4 KiB reads, qd16 (fio)",
        "kind": "fio", "pool": 64 * MIB, "qd": 16,
        "jobs": [["--name=rand", "--rw=randread", "--bs=4k",
                  "--iodepth=16"]],
    },
    "W5-200": {
        "about": "200 paced streams x 16 KiB/s, 4 KiB reads, "
                 "4 connections, 16 MiB pool",
        "kind": "paced", "pool": 16 * MIB, "offered": 200 * 16384,
        "args": ["--streams", "200", "--connections", "4", "--rate", "16K",
                 "--block", "4K"],
    },
    "W5-seed": seed_streams("the seed's read_threads", 1, 64, 10.0),
    # The seed's pressure 256 times faster: streams 64x faster in a
    # pool 4x smaller keep its ratio of stream speed to pool size
    # (800 x 1 KiB/s in 64 MiB drains the pool in 80 s; 800 x 64 KiB/s
    # in 16 MiB in 0.31 s), so a 2-minute run is 8.5 hours of the
    # seed's case.  12800 reads/s; each stream's region of a 1 GiB
    # image is 1.3 MiB, read through in 20 s, so run it on a larger
    # (sparse) image: --image of 8 GiB gives 10 MiB, 160 s.  The
    # 16 MiB pool leaves windows of about one page, a backend request
    # for each read: at 5 ms a request that needs 64 at once, and the
    # default 4 prefetch workers carry 800 a second; results with
    # adaptra-workers (ADAPTRA_ARGS_*) in docs/bench/history/simulator.md.
    "W5-seed256": seed_streams("the seed's case 256x faster", 64, 16,
                               1.0),
    "W6": {
        "about": "1 sequential stream (64 KiB qd1) + random 4 KiB qd1 "
                 "noise on another connection",
        "kind": "fio", "pool": 64 * MIB,
        "jobs": [["--name=seq", "--rw=read", "--bs=64k", "--iodepth=1",
                  "--size=512m"],
                 ["--name=noise", "--rw=randread", "--bs=4k", "--iodepth=1",
                  "--offset=512m", "--size=512m"]],
    },
    "W7-nbdcopy": {
        "about": "whole-image copy of a 256 MiB image (the truncate "
                 "filter below the stack), nbdcopy to null: (defaults)",
        "kind": "nbdcopy", "pool": 64 * MIB,
    },
    "W7-qemu-img": {
        "about": "whole-image copy of the same 256 MiB image, "
                 "qemu-img convert to null-co",
        "kind": "qemu-img", "pool": 64 * MIB,
    },
    # Copies of a sparse image (scripts/bench/make-sparse-image,
    # SPARSE_IMAGE): the clients ask for block status and skip the
    # zero extents.  "args" go to nbdcopy before its URIs.
    "S-nbdcopy": {
        "about": "sparse image copy, nbdcopy to null: (defaults)",
        "kind": "nbdcopy", "pool": 64 * MIB, "args": [],
    },
    "S-nbdcopy-C4": {
        "about": "sparse image copy, nbdcopy -C 4 to null:",
        "kind": "nbdcopy", "pool": 64 * MIB, "args": ["-C", "4"],
    },
    "S-nbdcopy-R1": {
        "about": "sparse image copy, nbdcopy one request at a time",
        "kind": "nbdcopy", "pool": 64 * MIB,
        "args": ["--connections=1", "--requests=1"],
    },
    "S-qemu-img": {
        "about": "sparse image copy, qemu-img convert to null-co",
        "kind": "qemu-img", "pool": 64 * MIB,
    },
}

# The sparse copies' image: 2 GiB with 334 MiB of data in 64 KiB-4 MiB
# extents (make-sparse-image's seed 1), as issue 25 measured.
SPARSE_IMAGE = "/tmp/adaptra-bench/sparse-2g.raw"
SPARSE_SIZE = "2G"
SPARSE_DATA = "334M"

WORKLOAD_ORDER = list(WORKLOADS)

CSV_COLUMNS = [
    "timestamp", "host", "label", "rep", "workload", "model", "stack",
    "stack_args", "seconds", "client_bytes", "client_mibps", "iops",
    "lat_mean_us", "lat_p99_us", "noise_iops", "noise_lat_p99_us",
    "late_reads", "backend_reads", "backend_bytes", "backend_cache_reqs",
    "backend_cache_bytes", "amplification", "limit", "limit_unit",
    "ratio_to_limit", "nbdkit_cpu_s", "nbdkit_rss_kib",
    "backend_peak_inflight", "ra_hit_pct", "evicted_unread",
    "evicted_unread_pct", "rescues", "drain_s", "load1", "status",
    "ra_pending_pages", "ra_settled_hit_pct", "settled_amplification",
    "lat_max_us",
]


def csv_row(**values):
    """A result row (CSV_COLUMNS, empty where not given) stamped with
    the time and this host, then VALUES."""
    row = {c: "" for c in CSV_COLUMNS}
    row["timestamp"] = datetime.datetime.now(datetime.timezone.utc) \
        .strftime("%Y-%m-%dT%H:%M:%SZ")
    row["host"] = os.uname().nodename
    row.update(values)
    return row


def append_row(path, row):
    """Append ROW to the CSV file PATH, with a header if it is new."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=CSV_COLUMNS, lineterminator="\n")
        if new:
            wr.writeheader()
        wr.writerow(row)


def parse_size(text):
    """'256M' -> 268435456 (powers of 1024, like nbdkit)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    suffix = text[-1:] if text[-1:] in units else ""
    return int(float(text[:len(text) - len(suffix)]) * units[suffix])


def workload_limit(workload, model):
    """(limit, unit) that a run of WORKLOAD on MODEL is measured
    against, or (None, '') when the model sets no meaningful limit."""
    w, m = WORKLOADS[workload], MODELS[model]
    if w["kind"] == "paced":
        # Nominal; run replaces it with what the schedule offered.
        return w["offered"] / MIB, "MiB/s offered"
    if "qd" in w:
        if m["latency"] is None:
            return None, ""
        return w["qd"] / m["latency"], "IOPS"
    if m["mibps"] is None:
        return None, ""
    return m["mibps"], "MiB/s"
