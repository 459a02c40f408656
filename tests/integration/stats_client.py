# stats_client.py: test helper: the statistics socket's client side.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Test helper: drives an adaptra server (reads through libnbd, requests
# on the control socket) and checks what the counters say.  Run with
# the system python3, which has the nbd module.
#
#   stats_client.py NBD_SOCKET CONTROL_SOCKET

import json
import random
import re
import socket
import sys
import time

import nbd

import control as helpers
from control import check

nbd_sock, ctl_path = sys.argv[1], sys.argv[2]


class Control:
    """One connection to the control socket."""

    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.connect(ctl_path)
        self.buf = b""

    def send_raw(self, data):
        self.s.sendall(data)

    def reply(self):
        while b"\n\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("control socket closed")
            self.buf += chunk
        text, self.buf = self.buf.split(b"\n\n", 1)
        return text.decode()

    def ask(self, line):
        self.send_raw(line.encode() + b"\n")
        return self.reply()

    def stats(self):
        return json.loads(self.ask("stats json"))


def totals(s):
    return s["counters"]


ctl = Control()
h = nbd.NBD()
h.connect_unix(nbd_sock)
size = h.get_size()

# The banner identifies the protocol.
check(ctl.ask("help").startswith("adaptra control protocol 1\n"), "banner")

# A sequential scan: read-ahead hits dominate, nothing is random.
check(ctl.ask("reset") == "ok", "reset")
for off in range(0, 32 * 1024 * 1024, 128 * 1024):
    h.pread(128 * 1024, off)
s = stats = ctl.stats()
c = totals(s)
check(s["version"] == 1, "json version")
check(c["readahead"] > 0, "sequential scan issued windows: %r" % c)
# Nearly every page the client read came from read-ahead.  (Not every
# page read ahead was read: the last windows reach past where the scan
# stops.)
scan_pages = 32 * 1024 * 1024 // 4096
check(c["pgreadahead_hit"] >= 0.95 * scan_pages,
      "sequential: %d of %d pages read were read-ahead hits"
      % (c["pgreadahead_hit"], scan_pages))
check(c["readrandom"] <= 1, "sequential: readrandom %d" % c["readrandom"])
check(c["client_bytes"] == 32 * 1024 * 1024, "client bytes counted")
check(abs(s["derived"]["readahead_hit_pct"]
          - 100. * c["pgreadahead_hit"] / c["pgreadahead"]) < 0.01,
      "derived hit ratio")
check(sum(m["readahead"] for m in s["methods"].values()) == c["readahead"],
      "per-method windows add up to the total")

# Random 4K reads far apart: counted as random, no window at all.  They
# start 16 MiB past where the scan stopped, beyond its last window (at
# most a quarter of the 32M pool): a read just past a window whose
# pages nobody read may be its stream's reader that overtook its own
# requests, and rightly continue it.
check(ctl.ask("reset") == "ok", "reset again")
after_reset = totals(ctl.stats())
check(after_reset["readahead"] == 0 and after_reset["client_requests"] == 0,
      "reset zeroes the counters")
rng = random.Random(7)
pages = size // 4096
for _ in range(400):
    h.pread(4096, rng.randrange(pages // 2 + 4096, pages) * 4096)
c = totals(ctl.stats())
check(c["readahead"] == 0, "random reads grew a window: %r" % c)
# Every miss was a random read (the rest hit pages already here, some
# left by the scan's last window).
check(c["readrandom"] == c["cache_miss"] and c["readrandom"] >= 300,
      "random reads counted: %r" % c)

# Tunables: validated like the command line.
check(ctl.ask("set ratio 30") == "ok", "set ratio 30")
check(ctl.ask("get ratio") == "ratio 30", "get ratio")
check(ctl.ask("set ratio 0").startswith("error: adaptra-ratio=0"),
      "ratio 0 refused")
check(ctl.ask("set ratio abc").startswith("error: adaptra-ratio=abc"),
      "non-numeric ratio refused")
check(ctl.ask("set max 1G") ==
      "error: adaptra-max=1G is more than 1/4 of adaptra-pool=32M",
      "max larger than a quarter of the pool refused, in the units typed")
# A refusal says what is allowed.
check(ctl.ask("set rato 30") == "error: unknown parameter 'rato' "
      "(set changes min, max, ratio, mode or bypass)", "unknown set")
check(ctl.ask("get rato").startswith("error: unknown parameter 'rato' "
                                     "(get shows pool, page, min, max, "),
      "unknown get")
check(ctl.ask("get share").startswith("error: adaptra-share is not shown "
                                      "at run time: see the server's "
                                      "command line (get shows pool, "),
      "get of a parameter the engine does not keep")
check(ctl.ask("set max 2M") == "ok" and ctl.ask("get max") == "max 2097152",
      "set max 2M")
check(ctl.ask("set max auto") == "ok" and ctl.ask("get max") == "max auto",
      "set max auto")
check(ctl.ask("set mode fixed") == "ok", "set mode fixed")
check(ctl.ask("set mode sideways").startswith("error: adaptra-mode=sideways"),
      "bad mode refused")
check(ctl.ask("set pool 1G").startswith("error: adaptra-pool is fixed"),
      "pool cannot change at run time")
check(ctl.ask("get ratio") == "ratio 30", "failed sets changed nothing")

# Prometheus exposition: HELP/TYPE before samples, names and values.
families = {}
for line in ctl.ask("metrics").splitlines():
    m = re.match(r"# (HELP|TYPE) (adaptra_[a-z_]+) (.+)$", line)
    if m:
        families.setdefault(m.group(2), {})[m.group(1)] = m.group(3)
        continue
    m = re.match(r'(adaptra_[a-z_]+)(\{[a-z]+="[^"]*"(,[a-z]+="[^"]*")*\})? '
                 r'(\d+(\.\d+)?(e-?\d+)?)$', line)
    check(m is not None, "exposition line: %r" % line)
    fam = families.get(m.group(1), {})
    check("HELP" in fam and fam.get("TYPE") in ("counter", "gauge"),
          "sample after its HELP and TYPE: %r" % line)
    check((fam["TYPE"] == "counter") == m.group(1).endswith("_total"),
          "counter names end in _total: %r" % line)
check("adaptra_readahead_total" in families, "method family present")
check("adaptra_backend_latency_seconds" in families
      and not any(f.endswith(("_ns", "_per_sec")) for f in families),
      "gauges in base units: %r" % sorted(families))
check("client=" not in ctl.ask("metrics"),
      "no per-connection series unless asked for")
check(re.search(r'^adaptra_connection_read_requests_total\{'
                r'client="unix:pid=\d+",id="\d+"\} [1-9]',
                ctl.ask("metrics clients"), re.M),
      "metrics clients: per-connection family with a client label")
check("unix:pid=" in ctl.ask("clients"), "clients lists the connection")

# The streams table lists the sequential stream's client.
check("unix:pid=" in ctl.ask("streams"), "streams names the client")

# Junk: errors, then the connection still works.
check(ctl.ask("bogus").startswith("error: unknown command"), "unknown command")
ctl.send_raw(b"\x00\x01\xff\xfe\n")
check(ctl.reply() == "error: request contains binary data", "binary junk")
check(ctl.ask("stats json").startswith("{"), "still serving after junk")

# An over-long line gets an error and the connection is closed.
long = Control()
long.send_raw(b"x" * 5000 + b"\n")
check(long.reply().startswith("error: line too long"), "over-long line")
try:
    while long.s.recv(4096):
        pass
    closed = True
except OSError:
    closed = True
check(closed, "over-long line closes the connection")

# A client that half-closes still gets its replies.
half = Control()
half.send_raw(b"get ratio\nget mode")
half.s.shutdown(socket.SHUT_WR)
check(half.reply() == "ratio 30", "half-closed: first reply")
check(half.reply() == "mode fixed", "half-closed: unterminated last line")

# "trace on": a "trace: " line per read-ahead decision, sent between
# replies, until "trace off".
tr = Control()
check(tr.ask("trace on") == "ok", "trace on")
for off in range(40 << 20, 44 << 20, 64 << 10):
    h.pread(64 << 10, off)
deadline = time.monotonic() + 5
tr.s.settimeout(0.5)
while b"trace: readahead-" not in tr.buf and time.monotonic() < deadline:
    try:
        tr.buf += tr.s.recv(65536)
    except socket.timeout:
        pass
tr.s.settimeout(10)
trace_line = re.compile(r"trace: readahead-[a-z]+\(client=\d+, stream=\d+, "
                        r"index=\d+, ra=\d+\+\d+-\d+\) = \d+$")
text = tr.ask("trace off").split("\n")
check(text[-1] == "ok", "trace off: %r" % text[-1])
check(len(text) > 1 and all(trace_line.match(t) for t in text[:-1]),
      "trace lines: %r" % text[:3])
for off in range(44 << 20, 46 << 20, 64 << 10):
    h.pread(64 << 10, off)
time.sleep(0.3)
tr.s.settimeout(0.5)
try:
    extra = tr.s.recv(65536)
except socket.timeout:
    extra = b""
check(extra == b"", "nothing after trace off: %r" % extra[:80])
tr.s.settimeout(10)
check(tr.ask("trace sideways").startswith("error: "), "trace junk")

# The data path kept working throughout.
check(len(h.pread(4096, 0)) == 4096, "reads still served")
h.shutdown()
print("stats_client: %d checks passed" % helpers.checks)
