# benchlib.sh: shell helpers of the guest benchmarks: a server with or without adaptra, figures, medians.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Sourced by scripts/bench/kernel-nbd and scripts/bench/golden after
# tests/integration/functions.sh and clients.sh, which need
# $ADAPTRA_FILTER: the build tree's filter.

# serve STACK ARGS...: nbdkit on a free TCP port of 127.0.0.1 ($port,
# $uri) serving ARGS (filters, plugin, parameters), with adaptra on
# top when STACK is adaptra (its statistics on $stats) and nothing
# when it is none; stop it with unserve.
serve ()
{
  local stack=$1 filter=() params=()
  shift
  stats=$tmpdir/bench.stats
  if [ "$stack" = adaptra ]; then
    filter=(--filter="$ADAPTRA_FILTER")
    params=(adaptra-stats="$stats")
  fi
  rm -f "$tmpdir/bench.pid"
  "$NBDKIT" -f -p 0 -i 127.0.0.1 -P "$tmpdir/bench.pid" "${filter[@]}" \
    "$@" "${params[@]}" &
  server=$!
  cleanup_fns+=("kill $server 2>/dev/null")
  while [ ! -s "$tmpdir/bench.pid" ]; do
    kill -0 "$server"
    sleep 0.1
  done
  port=$(listening_port "$(cat "$tmpdir/bench.pid")")
  uri=nbd://127.0.0.1:$port
}
unserve ()
{
  kill "$(cat "$tmpdir/bench.pid")"
  wait "$server" || :
}

# seconds_since T0: the seconds since T0 (date +%s.%N).
seconds_since ()
{
  echo "$(date +%s.%N) $1" | awk '{ printf "%.2f", $1 - $2 }'
}

# record KEY VALUE [UNIT]: print one run's figure (in UNIT, seconds
# unless given) and keep it for medians.
declare -A runs units
record ()
{
  runs[$1]="${runs[$1]:-} $2"
  units[$1]=${3:-s}
  printf '%-32s %s %s\n' "$1" "$2" "${units[$1]}"
}

# medians: the median of each KEY's figures, sorted by KEY; a figure
# of "-" (none that run) is left out, and a KEY with no other is "-".
medians ()
{
  local key
  for key in "${!runs[@]}"; do
    printf '%-32s %s %s\n' "$key" "$(echo "${runs[$key]}" | tr ' ' '\n' |
      sed '/^-\{0,1\}$/d' | sort -g | awk '{ v[NR] = $1 }
        END { print NR == 0 ? "-" : (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')" \
      "${units[$key]}"
  done | sort
}
