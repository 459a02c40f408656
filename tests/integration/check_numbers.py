#!/usr/bin/env python3
# check_numbers.py: every tuning number in the sources is named in a document.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# The project's rule: every number lives in one place, a named constant
# in the header of the mechanism that owns it, and the documents name
# it (docs/DESIGN.md in the section of its mechanism, the man pages
# where an operator meets a limit or a time-out).  This lists every
# object-like #define with a numeric value (a digit, a sign, a
# parenthesis or UINT64_C/INT64_C first) in core/, plugin/, control/,
# sim/, include/adaptra/ and profile/, and fails naming each one that
# neither README.md nor a document in docs/ nor a man page names, as a
# word.
#
# Not every such #define is a tuning number: NOT_TUNING below lists,
# once, those that decide nothing a user or operator could meet, each
# with why.  An entry whose #define is gone fails too, so that the list
# cannot outlive the code.
#
# Usage: check_numbers.py [SRCDIR]

import glob
import os
import re
import sys

CODE_DIRS = ("core", "plugin", "control", "sim", "include/adaptra", "profile")
DOC_GLOBS = ("README.md", "docs/*.md", "plugin/*.pod", "sim/*.pod")

DEFINE = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+([A-Z][A-Z0-9_]*)[ \t]+"
    r"(?:\(|UINT64_C|INT64_C|-?[0-9.])", re.MULTILINE)

NOT_TUNING = {
    # Sentinels: values that mean "none" or a kind of failure.
    "NO_FIELD": "a parameter row without a field of the config (core/config.c)",
    "FILL_TIMEOUT": "adaptra-stat's fill () return value for a time-out",
    "FILL_SIGNAL": "adaptra-stat's fill () return value for a signal",
    # Counts, units and values derived from named constants.
    "NCOMMANDS": "the length of the control command table, counted",
    "SEC": "a unit: nanoseconds in a second",
    "BUCKET_NS": "ADAPTRA_MODEL_LATENCY_NS / ADAPTRA_MODEL_BUCKETS, both named",
    # Formats and the hardware's sizes.
    "ADAPTRA_REPORT_JSON_VERSION": "the JSON layout's version, not a choice",
    "FNV_OFFSET": "FNV-1a 64's published offset basis (profile/format.c)",
    "FNV_PRIME": "FNV-1a 64's published prime (profile/format.c)",
    "ADAPTRA_PARAM_PREFIX_LEN": "the length of the string \"adaptra-\"",
    "ARENA_ALIGN": "the huge page size the arena is aligned to (x86-64's 2 MiB)",
    # Text layout: widths and columns of help and tables.
    "HELP_COLUMN": "column of the control socket's help text",
    "HELP_WIDTH": "wrap width of nbdkit --help's parameter text",
    "HELP_INDENT": "indent of nbdkit --help's parameter text",
    "NAME_WIDTH": "column of values in adaptra-stat's text output",
    "WATCH_HEADER_EVERY": "lines between headers of adaptra-stat --watch",
    "PLOT_POINTS": "samples in an adaptra-sim --plot, its resolution",
    # Buffers that hold what is valid whole and decide nothing.
    "HELP_MAX": "buffer of the generated nbdkit --help text",
    "CMDLINE_MAX": "buffer for nbdkit's /proc/self/cmdline",
    "FORM_MAX": "buffer of one command's form in the help text",
    "MAX_WORDS": "the request parser's words: a valid command has 3 at most",
    "MAX_WORD": "the request parser's word buffer, within SERVER_MAX_LINE",
    "RUN_ON_STACK": "a demand run's frames on the stack, sparing a malloc",
    "RANGES": "a batch of the matcher's ranges; the loop asks again while full",
    "ADAPTRA_WHY_LEN": "buffer of an engine error message, its longest whole",
    "ADAPTRA_TRACE_LINE_LEN": "buffer of a trace line, its widest numbers whole",
    "ADAPTRA_PROFILE_NAME_MAX": "buffer of a profile's file name, 100 bytes whole",
    "TYPO_NAME_MAX": "buffer of a name the typo check compares (every "
                     "name fits; a longer key is no typo of one), and of "
                     "the bad key and value its refusal quotes",
    # Initial sizes of tables that grow as they fill: they decide when
    # the first realloc comes, nothing a user meets.
    "RECORDER_SET_INITIAL": "the recorder's hash set, slots before it grows",
    "RECORDER_EXTENTS_INITIAL": "the recorder's extents before they grow",
    "BYTE_EPS": "adaptra-sim's float rounding slack: a thousandth of a byte",
}


def main():
    srcdir = sys.argv[1] if len(sys.argv) > 1 else "."
    defined = {}
    for d in CODE_DIRS:
        for path in sorted(glob.glob(os.path.join(srcdir, d, "*.[ch]"))):
            with open(path, encoding="utf-8") as f:
                for name in DEFINE.findall(f.read()):
                    defined.setdefault(name, os.path.relpath(path, srcdir))
    docs = []
    for pattern in DOC_GLOBS:
        for path in sorted(glob.glob(os.path.join(srcdir, pattern))):
            with open(path, encoding="utf-8") as f:
                docs.append(f.read())
    words = set(re.findall(r"[A-Za-z0-9_]+", "\n".join(docs)))

    problems = []
    for name in sorted(defined):
        if name in NOT_TUNING:
            continue
        if name not in words:
            problems.append("%s (%s) is named in no document"
                            % (name, defined[name]))
    for name in sorted(NOT_TUNING):
        if name not in defined:
            problems.append("NOT_TUNING lists %s, which no #define declares"
                            % name)
    if len(defined) < 50:
        problems.append("only %d numeric #defines found under %s: wrong SRCDIR?"
                        % (len(defined), srcdir))

    if problems:
        print("check_numbers.py: every tuning number must be named in "
              "docs/DESIGN.md or a man page:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print("check_numbers.py: %d numeric #defines, %d not tuning numbers, "
          "the rest named in the documents" % (len(defined), len(NOT_TUNING)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
