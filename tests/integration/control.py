# Test helper: one request on adaptra's statistics and control socket.
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


def ask(path, command):
    """The reply to command, up to (without) its closing empty line."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    s.sendall(command.encode() + b"\n")
    reply = b""
    while not reply.endswith(b"\n\n"):
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("control socket closed mid-reply")
        reply += chunk
    s.close()
    return reply.decode()[:-2]


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
