# control_limits.py: test helper: the control socket's bounds.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Test helper: the control socket's bounds, from clients that misbehave.
#
#   control_limits.py idle CONTROL_SOCKET IDLE_SECS
#       (no traffic) a silent client, one that trickles a byte every
#       quarter of the server's idle limit (control_idle_secs), and a
#       tracer that never reads are closed about that limit after their
#       last command; a client with a command every third of it is not,
#       nor is adaptra-stat --trace, which keeps itself alive.
#   control_limits.py full NBD_SOCKET CONTROL_SOCKET
#       16 tracers that never read hold every slot: the 17th gets an
#       error reply ending in an empty line; a scan's trace lines then
#       fill the tracers' buffers, they are dropped and counted, and
#       the socket serves again.

import select
import signal
import subprocess
import sys
import time

import nbd

import control as helpers
from control import ask_on, check, connect, reply


# How long the scans may take to get the tracers dropped: a bound for a
# failure, not the time it takes (one scan, on a quiet machine).
DROP_SECS = 300


def closed(s):
    """Has the server closed s?  (Reads and drops what is pending.)"""
    s.setblocking(False)
    try:
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        s.settimeout(10)


def hung_up(s):
    """Has the server closed s?  (Reads nothing: for a client that
    must not read.)"""
    p = select.poll()
    p.register(s, select.POLLRDHUP)
    return any(ev & (select.POLLRDHUP | select.POLLHUP)
               for _, ev in p.poll(0))


def control(s):
    """The "control" counters as a dict."""
    out = {}
    for line in ask_on(s, "control").splitlines():
        f = line.split()
        if len(f) == 2 and f[0].startswith("control_"):
            out[f[0]] = int(f[1])
    return out


def idle(ctl, expected):
    start = time.monotonic()
    active = connect(ctl)
    idle_secs = control(active)["control_idle_secs"]
    check(idle_secs == expected, "control_idle_secs %d, not the %d asked"
          % (idle_secs, expected))
    silent = connect(ctl)
    trickle = connect(ctl)
    tracer = connect(ctl)
    check(ask_on(tracer, "trace on") == "ok\n\n", "trace on")
    stat = subprocess.Popen(["adaptra-stat", ctl, "--trace"],
                            stdout=subprocess.DEVNULL)
    closed_at = {}
    next_trickle = next_command = start
    while time.monotonic() - start < idle_secs + 12:
        now = time.monotonic()
        if now >= next_trickle and "trickle" not in closed_at:
            try:
                trickle.send(b"h")      # never a whole line
            except OSError:
                pass
            next_trickle = now + idle_secs / 4
        if now >= next_command:
            check(ask_on(active, "get mode").startswith("mode "),
                  "the active client is served at %.0f s" % (now - start))
            next_command = now + idle_secs / 3
        for name, s in (("silent", silent), ("trickle", trickle),
                        ("tracer", tracer)):
            if name not in closed_at and closed(s):
                closed_at[name] = now - start
        time.sleep(0.5)
    for name in ("silent", "trickle", "tracer"):
        check(name in closed_at, "%s client still open after %d s"
              % (name, idle_secs + 12))
        check(idle_secs - 3 <= closed_at[name] <= idle_secs + 6,
              "%s client closed after %.1f s, not about %d s"
              % (name, closed_at[name], idle_secs))
    check(ask_on(active, "help").startswith("adaptra control protocol"),
          "the active client outlived the idle limit")
    check(stat.poll() is None, "adaptra-stat --trace ended (status %s) "
          "on a server without traffic" % stat.poll())
    stat.send_signal(signal.SIGTERM)
    check(stat.wait(10) == 0, "adaptra-stat --trace ended cleanly")
    check(control(active)["control_closed_idle"] == 3,
          "three idle closes counted")


def full(nbd_sock, ctl):
    admin = connect(ctl)
    # Small windows: many trace lines per MiB scanned.
    check(ask_on(admin, "set max 16K") == "ok\n\n", "set max 16K")
    tracers = [admin]
    for _ in range(15):
        t = connect(ctl)
        check(ask_on(t, "trace on") == "ok\n\n", "trace on")
        tracers.append(t)
    check(ask_on(admin, "trace on") == "ok\n\n", "trace on (admin)")
    # The 17th: an error that says what to do, the closing empty line,
    # then the connection closes.
    extra = connect(ctl)
    extra.sendall(b"help\n")
    r = reply(extra)
    check(r.startswith("error: too many clients: 16 are connected")
          and "close one" in r and r.endswith("\n\n")
          and r.count("\n") == 2, "17th client: %r" % r)
    check(extra.recv(100) == b"", "17th client closed after its error")

    # A scan whose trace lines the tracers never read: each falls more
    # than the server lets it behind and is dropped.  (Asking whether
    # the server closed them reads nothing: a tracer that read what was
    # pending between the scans could keep up on a loaded machine.)
    h = nbd.NBD()
    h.connect_unix(nbd_sock)
    size = h.get_size()
    deadline = time.monotonic() + DROP_SECS
    dropped = False
    while not dropped and time.monotonic() < deadline:
        for off in range(0, size, 16384):
            h.pread(16384, off)
        dropped = all(hung_up(t) for t in tracers)
    check(dropped, "tracers that never read were dropped in %d s" % DROP_SECS)
    s = connect(ctl)
    c = control(s)
    check(c["control_dropped_output"] == 16, "drops counted: %r" % c)
    check(c["control_refused"] >= 1, "refusal counted: %r" % c)
    check(c["control_clients"] == 1, "slots free again: %r" % c)
    check(ask_on(s, "set max auto") == "ok\n\n", "set max auto")
    h.shutdown()


if sys.argv[1] == "idle":
    idle(sys.argv[2], int(sys.argv[3]))
else:
    full(sys.argv[2], sys.argv[3])
print("control_limits %s: %d checks passed" % (sys.argv[1], helpers.checks))
