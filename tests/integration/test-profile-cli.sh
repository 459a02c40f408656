#!/usr/bin/env bash
# test-profile-cli.sh: adaptra-profile on a directory of profiles.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# adaptra-profile on a directory of profiles: list names the export of
# each valid file and the loader's reason for each invalid one, marks
# a valid file under the wrong name, show prints the weights and the
# extents, delete removes only plain profile names inside DIR.  The
# profiles are the fuzz seed corpus (written by profile/format.c).

source "$(dirname "$0")/functions.sh"

corpus=$(dirname "$0")/../fuzz/corpus/profile
dir=$tmpdir/profiles
mkdir "$dir"

name=$(adaptra-profile name vm1.img 1073741824)
test "$name" = export-vm1_img-9e95e4a88c46af62-1073741824.profile
cp "$corpus/recorded" "$dir/$name"
cp "$corpus/merged-two-boots" "$dir/copied.profile"
head -c 100 "$corpus/recorded" > "$dir/torn.profile"
echo 'not a profile' > "$dir/readme.txt"
echo x > "$dir/.$name.Ab12Cd"          # a save in progress

adaptra-profile list "$dir" > "$tmpdir/list"
cat "$tmpdir/list"
test "$(wc -l < "$tmpdir/list")" -eq 3
grep -qx "$name \"vm1.img\" size=1073741824 page=4096 boots=1 extents=40 pages=120 MiB=0.5" \
  "$tmpdir/list"
grep -q '^copied.profile "vm1.img" .* boots=2 .*(misnamed' "$tmpdir/list"
grep -q '^torn.profile invalid: .*torn' "$tmpdir/list"

adaptra-profile show "$dir" copied.profile > "$tmpdir/show"
grep -qx 'boots: 2' "$tmpdir/show"
grep -qx 'pages seen in 2 boots: 110' "$tmpdir/show"
grep -qx 'pages seen in 1 boot: 10' "$tmpdir/show"
# One line per extent after the table's header.
test "$(sed -n '/^#/,$p' "$tmpdir/show" | wc -l)" -eq 49
if adaptra-profile show "$dir" torn.profile 2> "$tmpdir/err"; then
  echo "show accepted a torn file"; exit 1
fi
grep -q torn "$tmpdir/err"

# Paths and other names are refused before anything is removed.
touch "$tmpdir/outside.profile"
for bad in ../outside.profile readme.txt ".$name.Ab12Cd" /etc/passwd; do
  if adaptra-profile delete "$dir" torn.profile "$bad" 2>/dev/null; then
    echo "delete accepted $bad"; exit 1
  fi
done
test -f "$tmpdir/outside.profile"
test -f "$dir/torn.profile"
adaptra-profile delete "$dir" torn.profile copied.profile
test "$(adaptra-profile list "$dir" | wc -l)" -eq 1
if adaptra-profile delete "$dir" torn.profile 2>/dev/null; then
  echo "deleting a missing file succeeded"; exit 1
fi
if adaptra-profile list "$tmpdir/none" 2>/dev/null; then
  echo "list of a missing directory succeeded"; exit 1
fi
echo "test-profile-cli: ok"
