#!/usr/bin/env bash
# test-docs.sh: README and man page match the parameter and command tables.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# nbdkit --help is generated from the one parameter table
# (core/config.c) and the control socket's "help" from the one command
# table (control/control.c); check_docs.py compares both with
# README.md's parameter table and protocol list and with the man page's
# SYNOPSIS, PARAMETERS and STATISTICS AND CONTROL.

source "$(dirname "$0")/functions.sh"
: "${srcdir:=.}"

run_nbdkit null --help > "$tmpdir/nbdkit-help"

sock=$tmpdir/stats.sock
run_nbdkit -U "$tmpdir/nbd.sock" null adaptra-stats="$sock" \
  --run "$client adaptra-stat '$sock' --command help" > "$tmpdir/control-help"

/usr/bin/python3 "$srcdir/tests/integration/check_docs.py" \
  "$tmpdir/nbdkit-help" "$tmpdir/control-help" \
  "$srcdir/README.md" "$srcdir/plugin/nbdkit-adaptra-filter.pod"
