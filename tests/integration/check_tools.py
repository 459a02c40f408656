#!/usr/bin/env python3
# check_tools.py: a tool's --help against its man page.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# TOOL --help must exit 0, and the long options it names must be
# exactly those the man page's =item lines name (B<--x>), but for
# --help itself, which every tool takes.  Where either names
# --version, TOOL --version must exit 0 and print VERSION.  Where the
# man page has a COMMANDS section (adaptra-profile), the usage lines of
# --help must be its SYNOPSIS lines, each command with its arguments.
# Prints each difference and exits 1 on any.
#
#   check_tools.py TOOL TOOL.pod VERSION

import os
import re
import subprocess
import sys

tool, pod_file, version = sys.argv[1:4]
name = os.path.basename(tool)
errors = []


def run(*args):
    p = subprocess.run([tool, *args], capture_output=True, text=True,
                       timeout=20)
    return p.returncode, p.stdout + p.stderr


rc, help_text = run("--help")
if rc != 0:
    errors.append(f"{name} --help exits {rc}")
pod = open(pod_file).read()

option = r"(?<![\w-])--[a-z][a-z-]*"
in_help = set(re.findall(option, help_text))
items = "\n".join(re.findall(r"^=item (.*)$", pod, re.M))
in_pod = set(re.findall(r"B<(--[a-z][a-z-]*)>", items))
for o in sorted(in_help - in_pod - {"--help"}):
    errors.append(f"{name} --help names {o}, which its man page has no "
                  f"=item for")
for o in sorted(in_pod - in_help):
    errors.append(f"{name}'s man page has an =item for {o}, which --help "
                  f"does not name")

if "--version" in in_help | in_pod:
    rc, out = run("--version")
    if rc != 0 or version not in out.split():
        errors.append(f"{name} --version exits {rc} and prints {out!r}, "
                      f"not the version {version}")


def pod_section(head):
    m = re.search(rf"^=head1 {head}\n(.*?)(?=^=head1 |\Z)", pod, re.M | re.S)
    return m.group(1) if m else None


if pod_section("COMMANDS") is not None:
    synopsis = {l.strip() for l in pod_section("SYNOPSIS").splitlines()
                if l.startswith(" ")}
    usage = {re.sub(r"^usage:\s*", "", l).strip()
             for l in help_text.splitlines()
             if re.match(rf"^(usage:)?\s*{re.escape(name)} ", l)}
    for l in sorted(usage - synopsis):
        errors.append(f"{name} --help has the usage '{l}', which its man "
                      f"page's SYNOPSIS lacks")
    for l in sorted(synopsis - usage):
        errors.append(f"{name}'s man page's SYNOPSIS has '{l}', which "
                      f"--help lacks")

for e in errors:
    print(e)
print(f"{name}: {len(in_help)} options in --help, {len(in_pod)} in the "
      f"man page: {len(errors)} differences")
sys.exit(1 if errors else 0)
