# Test helper: requests on adaptra's statistics and control socket.
#
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause

import socket
import sys
import time

# Checks passed so far (check), for the tests' closing lines.
checks = 0


def check(cond, what):
    """Fail the test with what unless cond."""
    global checks
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        sys.exit(1)
    checks += 1


def connect(path):
    """A connection to the control socket at path."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    return s


def reply(s):
    """The next whole reply on connection s, its closing empty line
    included."""
    buf = b""
    while not buf.endswith(b"\n\n"):
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("control socket closed after %r" % buf[:200])
        buf += chunk
    return buf.decode()


def ask_on(s, line):
    """The reply to line on connection s (reply)."""
    s.sendall(line.encode() + b"\n")
    return reply(s)


def ask(path, command):
    """The reply to command on a connection of its own, up to (without)
    its closing empty line."""
    s = connect(path)
    r = ask_on(s, command)
    s.close()
    return r[:-2]


def counter(path, name):
    """A counter or gauge of the "stats" reply, or None."""
    for line in ask(path, "stats").splitlines():
        w = line.split()
        if w[:1] == [name]:
            return int(w[1])
    return None


def quiet(path, timeout=10):
    """Wait until no page is being read ahead (prefetch in flight is
    zero), so that the counters read next move only for the requests
    the caller makes.  Fails after timeout seconds."""
    end = time.monotonic() + timeout
    while counter(path, "prefetch_flight_bytes") or \
            counter(path, "pages_in_flight"):
        if time.monotonic() > end:
            raise TimeoutError("prefetch still in flight")
        time.sleep(0.02)
