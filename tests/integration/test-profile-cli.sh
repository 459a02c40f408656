#!/usr/bin/env bash
# test-profile-cli.sh: adaptra-profile on a directory of profiles.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# adaptra-profile on a directory of profiles: list names the export of
# each valid file and the loader's reason for each invalid one, marks
# a valid file under the wrong name, show prints the weights and the
# extents, delete removes only plain profile names inside DIR, export
# writes one portable file that import installs in another directory
# under the name the filter looks for (with another export name if
# asked), refusing invalid files.  The profiles are the fuzz seed
# corpus (written by profile/format.c).

source "$(dirname "$0")/functions.sh"

corpus=$(dirname "$0")/../fuzz/corpus/profile

# --version as adaptra-stat's; a bad command line says what is wrong
# before the usage, and exits 1.
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' config.h)
test -n "$version"
test "$(adaptra-profile --version)" = "adaptra-profile (adaptra) $version"
for args in "bogus" "show $tmpdir"; do
  rc=0
  # shellcheck disable=SC2086
  adaptra-profile $args 2> "$tmpdir/err-${args%% *}" || rc=$?
  test "$rc" -eq 1
  grep -q '^usage: adaptra-profile list DIR$' "$tmpdir/err-${args%% *}"
done
head -n 1 "$tmpdir/err-bogus" |
  grep -qx "adaptra-profile: unknown command 'bogus'"
head -n 1 "$tmpdir/err-show" | grep -qx 'adaptra-profile: show takes DIR FILE'

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
# One line naming the file, once, and why.
cat "$tmpdir/err"
grep -qx "adaptra-profile: $dir/torn.profile: .*torn.*" "$tmpdir/err"
test "$(wc -l < "$tmpdir/err")" -eq 1

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

# Export from one host's directory, import into another's.
staging=$tmpdir/staging
fleet=$tmpdir/fleet
mkdir "$staging" "$fleet"
cp "$corpus/merged-two-boots" "$staging/$name"
adaptra-profile export "$staging" "$name" "$tmpdir/vm1.adaptra-profile"
test "$(adaptra-profile import "$fleet" "$tmpdir/vm1.adaptra-profile")" = \
  "$name"
cmp "$staging/$name" "$fleet/$name"
# Served under another name there: the profile follows it.
other=$(adaptra-profile name golden 1073741824)
test "$(adaptra-profile import "$fleet" "$tmpdir/vm1.adaptra-profile" \
          golden)" = "$other"
adaptra-profile list "$fleet" > "$tmpdir/list"
cat "$tmpdir/list"
grep -qx "$other \"golden\" size=1073741824 page=4096 boots=2 extents=48 pages=120 MiB=0.5" \
  "$tmpdir/list"
test -z "$(find "$fleet" -name '.*')"
# Invalid files go nowhere.
head -c 100 "$corpus/recorded" > "$tmpdir/torn.adaptra-profile"
fails adaptra-profile import "$fleet" "$tmpdir/torn.adaptra-profile" \
  2> "$tmpdir/err"
grep -qx "adaptra-profile: $tmpdir/torn.adaptra-profile: .*torn.*" \
  "$tmpdir/err"
cp "$tmpdir/torn.adaptra-profile" "$staging/torn.profile"
fails adaptra-profile export "$staging" torn.profile "$tmpdir/out" \
  2> "$tmpdir/err"
grep -qx "adaptra-profile: $staging/torn.profile: .*torn.*" "$tmpdir/err"
# Too short for a header: the file is named too.
head -c 3 "$corpus/recorded" > "$staging/short.profile"
fails adaptra-profile show "$staging" short.profile 2> "$tmpdir/err"
grep -qx "adaptra-profile: $staging/short.profile: truncated: 3 bytes, header is 48" \
  "$tmpdir/err"
test ! -e "$tmpdir/out"
test "$(adaptra-profile list "$fleet" | wc -l)" -eq 2
echo "test-profile-cli: ok"
