#!/usr/bin/env python3
# check_doc_commands.py: the documents' adaptra-stat command lines run as written.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Every adaptra-stat command the documents show is run against a live
# server's statistics socket, with its path put in place of the one
# written (/run/adaptra.sock, PATH, SOCKET, ...):
#
#   - indented example lines that start with "adaptra-stat" (a comment
#     after "#" and a trailing "&" dropped, SECS read as 1, each
#     alternative of "[--a | --b]" run once, and once without it);
#   - inline code (`...` in Markdown, C<...> in POD) that starts with
#     "adaptra-stat" and has --command: the commands a reader copies.
#
# Each must exit 0 without an "error:" reply; --watch and --trace run
# until an interrupt a moment later, must print nothing on stderr, and
# --watch must have printed its lines.
# Prints each failure and exits 1 on any.
#
#   check_doc_commands.py STATS-SOCKET DOCUMENT...

import re
import shlex
import subprocess
import sys

# How long --watch and --trace run before the interrupt, in seconds,
# beyond --watch's interval (--watch N prints its first line after N
# seconds): 2.5 s in all for --watch 1 missed the first line of
# --watch 2 and of --watch 1 in an ASan build at load 20.
FOLLOW_SECONDS = 2.5
FOLLOW_KILL_SECONDS = 10
# Well under the clients the statistics socket serves at once
# (plugin/server.h: SERVER_MAX_CLIENTS).
FOLLOW_AT_ONCE = 8

sock = sys.argv[1]
errors = []


def variants(line):
    """The line with its first [a | b] group dropped and replaced by
    each alternative in turn (then theirs, recursively)."""
    m = re.search(r"\[([^\]]*)\]", line)
    if not m:
        return [line]
    out = []
    for alt in [""] + [a.strip() for a in m.group(1).split("|")]:
        out += variants(line[:m.start()] + alt + line[m.end():])
    return out


def commands(path):
    text = open(path).read()
    pod = path.endswith(".pod")
    found = []
    for m in re.finditer(r"^ +(adaptra-stat\b.*)$", text, re.M):
        line = re.sub(r"\s+#.*$", "", m.group(1))
        line = re.sub(r"\s*&$", "", line)
        found += variants(line)
    span = r"C<(adaptra-stat [^>]*)>" if pod else r"`(adaptra-stat [^`]*)`"
    for m in re.finditer(span, text):
        if "--command" in m.group(1):
            found.append(" ".join(m.group(1).split()))
    return found


def start(path, line):
    """Start the command of line; returns (what, follows?, --watch?,
    process)."""
    args = shlex.split(line.replace(" SECS", " 1"))
    # The path as written, where the command has one, is the first word
    # that is not an option.
    if len(args) > 1 and not args[1].startswith("-"):
        args[1] = sock
    follow = "--watch" in args or "--trace" in args
    seconds = FOLLOW_SECONDS
    interval = args[args.index("--watch") + 1:][:1] if "--watch" in args else []
    if interval and re.fullmatch(r"[0-9.]+", interval[0]):
        seconds += float(interval[0])
    # (-k: LeakSanitizer's exit-time scan may spin in a sanitizer
    # build's client, docs/RELIABILITY.md; such a run is judged by its
    # output, not its exit status.)
    cmd = (["timeout", "-k", str(FOLLOW_KILL_SECONDS), "-s", "INT",
            str(seconds)] if follow else []) + args
    return (f"{path}: '{line}'", follow, "--watch" in args,
            subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True))


def finish(what, follow, watch, p):
    out, err = p.communicate()
    if p.returncode != 0 and not follow or err.strip():
        errors.append(f"{what} exits {p.returncode}: {err.strip()}")
    elif re.search(r"^error:", out, re.M):
        errors.append(f"{what} replies {out.strip()}")
    elif watch and not out.strip():
        errors.append(f"{what} printed nothing")


# The ones that follow the server take FOLLOW_SECONDS (and --watch's
# interval) each: they run
# FOLLOW_AT_ONCE at a time, the others one after another.
found = [(path, line) for path in sys.argv[2:] for line in commands(path)]
follow = [f for f in found if "--watch" in f[1] or "--trace" in f[1]]
for f in found:
    if f not in follow:
        finish(*start(*f))
for i in range(0, len(follow), FOLLOW_AT_ONCE):
    for r in [start(*f) for f in follow[i:i + FOLLOW_AT_ONCE]]:
        finish(*r)
if not found:
    errors.append("no adaptra-stat command found in the documents")
for e in errors:
    print(e)
print(f"{len(found)} adaptra-stat commands from the documents run")
sys.exit(1 if errors else 0)
