#!/usr/bin/env python3
# check_docs.py: the README and the man page against the two tables.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# The parameters (nbdkit --help, generated from adaptra_params) and the
# control commands (the socket's "help", generated from control.c's
# table) must be exactly what README.md and nbdkit-adaptra-filter.pod
# say: every parameter's name, form and default in the README's table,
# the man page's SYNOPSIS and its =item (whose text says "Default
# C<...>" for a parameter with a default, and no default otherwise);
# every command form in the README's list of the protocol and the man
# page's =items.  Prints each difference and exits 1 on any.
#
#   check_docs.py NBDKIT-HELP CONTROL-HELP README.md FILTER.pod

import re
import sys

help_file, control_file, readme_file, pod_file = sys.argv[1:5]
errors = []


def compare(what, expected, got):
    """expected comes from a table, got from a document."""
    for k in sorted(set(expected) | set(got)):
        if k not in got:
            errors.append(f"{what}: lacks {k} {expected[k]!r}")
        elif k not in expected:
            errors.append(f"{what}: has {k} {got[k]!r}, which is no longer")
        elif expected[k] != got[k]:
            errors.append(f"{what}: {k} is {got[k]!r}, not {expected[k]!r}")


def unpod(text):
    """Plain text of POD formatting codes: B<x> -> x."""
    while True:
        new = re.sub(r"[BCIFL]<([^<>]*)>", r"\1", text)
        if new == text:
            return text
        text = new


def pod_section(pod, head):
    m = re.search(rf"^=head1 {head}\n(.*?)(?=^=head1 |\Z)", pod, re.M | re.S)
    if not m:
        errors.append(f"man page: no =head1 {head}")
        return ""
    return m.group(1)


# --- parameters ------------------------------------------------------
table = {}
for line in open(help_file):
    m = re.match(r"^adaptra-([a-z-]+)=(\S+)(?: \(default (\S+)\))?$", line)
    if m:
        table[m.group(1)] = (m.group(2), m.group(3) or "none")
if not table:
    errors.append("nbdkit --help lists no adaptra- parameter")

readme = open(readme_file).read()
rows = {}
for m in re.finditer(r"^\| `adaptra-([a-z-]+)=([^`]+)` \| (?:`([^`]+)`|none) \|",
                     readme, re.M):
    rows[m.group(1)] = (m.group(2).replace("\\|", "|"), m.group(3) or "none")
compare("README.md's parameter table", table, rows)

pod = open(pod_file).read()
synopsis = {}
for m in re.finditer(r"\[adaptra-([a-z-]+)=((?:[^\[\]\s]|\[[^\]]*\])+)\]",
                     pod_section(pod, "SYNOPSIS")):
    synopsis[m.group(1)] = m.group(2)
compare("man page SYNOPSIS", {k: v[0] for k, v in table.items()}, synopsis)

items = {}
params = pod_section(pod, "PARAMETERS")
for m in re.finditer(r"^=item (B<adaptra-[^\n]*)\n(.*?)(?=^=item |^=back|\Z)",
                     params, re.M | re.S):
    name, _, form = unpod(m.group(1)).partition("=")
    body = " ".join(m.group(2).split())
    d = re.search(r"Default C<([^>]+)>", body)
    items[name[len("adaptra-"):]] = (form, d.group(1) if d else "none")
compare("man page PARAMETERS", table, items)

# Every =item starts a paragraph: pod2man prints "=item" literally
# after a line without a blank line before it.
for m in re.finditer(r"^[^\n]+\n(=item [^\n]*)", pod, re.M):
    errors.append(f"man page: no blank line before '{m.group(1)}'")


# --- control commands ------------------------------------------------
def expand(form):
    """All the command lines a form stands for: 'exports [json]' is
    'exports' and 'exports json', 'trace on|off' 'trace on' and 'trace
    off'; a word in capitals stays as it is."""
    words = form.replace("[", " [ ").replace("]", " ] ").split()
    lines = [[]]
    optional_from = None
    for w in words:
        if w == "[":
            optional_from = len(lines)
            lines = lines + [list(l) for l in lines]
            continue
        if w == "]":
            optional_from = None
            continue
        alts = w.split("|")
        grow = lines[optional_from:] if optional_from is not None else lines
        keep = lines[:optional_from] if optional_from is not None else []
        grown = [l + [a] for l in grow for a in alts]
        lines = keep + grown
        if optional_from is not None:
            optional_from = len(keep)
    return {" ".join(l) for l in lines}


commands = set()
for line in open(control_file).read().splitlines()[1:]:
    m = re.match(r"^(\S+(?: \S+)*?)\s{2,}\S", line)
    if m:
        commands |= expand(m.group(1))
if not commands:
    errors.append("the control socket's help lists no command")


def compare_set(what, got):
    for c in sorted(commands - got):
        errors.append(f"{what}: lacks the command '{c}'")
    for c in sorted(got - commands):
        errors.append(f"{what}: has the command '{c}', which is no longer")


got = set()
control = pod_section(pod, "STATISTICS AND CONTROL")
control = control.split("=head2")[0]
for m in re.finditer(r"^=item (B<.*)$", control, re.M):
    for form in unpod(m.group(1)).split(", "):
        got |= expand(form)
compare_set("man page STATISTICS AND CONTROL", got)

m = re.search(r"one command a\s+line\s+—(.*?)Each\s+reply", readme, re.S)
got = set()
if m:
    # What the parentheses say of a command is not a command.
    listed = re.sub(r"\([^()]*\)", "", m.group(1))
    for form in re.findall(r"`([^`]+)`", listed):
        got |= expand(form)
compare_set("README.md's protocol list", got)

for e in errors:
    print(e)
print(f"{len(table)} parameters, {len(commands)} command forms: "
      f"{len(errors)} differences")
sys.exit(1 if errors else 0)
