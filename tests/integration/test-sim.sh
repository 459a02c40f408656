#!/usr/bin/env bash
# test-sim.sh: adaptra-sim on small workloads, its JSON checked.
# Copyright (C) 2026 The adaptra authors
# SPDX-License-Identifier: BSD-3-Clause
#
# adaptra-sim on small workloads (well under a second each): its JSON
# has the documented keys with numbers in range; in a tight pool
# (100 streams of 16 KiB/s, 4 KiB reads, a 4M pool of about 960 pages)
# fixed 128K windows (3200 pages wanted) evict most of what they read
# ahead while adaptive windows evict almost nothing; runs are
# deterministic; --sweep gives one line per pool; --head traces the
# disk's head; a CSV trace, its gzipped copy, an nbdkit log filter
# trace and the fleet's guest traces replay; bad input (numbers with a
# sign, a trace longer than the clock) is one line naming the option,
# at once.  No timing is checked.

source "$(dirname "$0")/functions.sh"

: "${ADAPTRA_SIM:?run the tests with make check}"
requires python3 -c 'import json'

sim () { "$ADAPTRA_SIM" "$@"; }
# The figures of the JSON on stdin or in $1, without what the machine
# measured (wall time, memory).
figures () { sed -E 's/"(wall_s|peak_rss_bytes)": [0-9.]*//g' "$@"; }

tight=(--pool 4M --workload streams:100:16K:4K --duration 120)

# check FILE EXPR...: each python expression over d (the last line's
# JSON object) must hold; the failing one is printed.
check ()
{
  local file=$1
  shift
  python3 - "$file" "$@" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
for expr in sys.argv[2:]:
    if not eval("(" + expr + ")", {"d": d}):
        sys.exit("test-sim: failed: %s in %s" % (expr, d))
PY
}

keys='all(k in d for k in ["hit_pct", "evicted_unread_pct", "amplification",
  "client_bytes", "backend_bytes", "mean_latency_ms", "p99_latency_ms",
  "max_latency_ms", "client_rtt_us", "wall_s", "ra_hit_pct",
  "ra_pending_pct", "ra_settled_hit_pct", "peak_rss_bytes"])'
ranges='all(0 <= d[k] <= 100 for k in ["hit_pct", "evicted_unread_pct",
  "ra_hit_pct", "ra_pending_pct", "ra_settled_hit_pct"])
  and d["amplification"] >= 1 and d["client_bytes"] == 4096 * d["client_requests"]
  and d["client_requests"] > 100 * 100 and d["backend_bytes"] > 0
  and 0 <= d["mean_latency_ms"] <= d["p99_latency_ms"] + 5.1
  and d["p99_latency_ms"] <= d["max_latency_ms"] and d["client_rtt_us"] == 0
  and d["wall_s"] >= 0 and d["virtual_s"] == 120 and d["peak_rss_bytes"] > 0'

sim "${tight[@]}" --json > "$tmpdir/adaptive.json"
check "$tmpdir/adaptive.json" "$keys" "$ranges" \
  'd["mode"] == "adaptive"' \
  'd["hit_pct"] >= 95 and d["evicted_unread_pct"] <= 1' \
  'd["amplification"] <= 1.05'

sim "${tight[@]}" --mode fixed --json > "$tmpdir/fixed.json"
check "$tmpdir/fixed.json" "$keys" "$ranges" 'd["mode"] == "fixed"' \
  'd["evicted_unread_pct"] >= 50 and d["amplification"] > 2'
python3 - "$tmpdir/adaptive.json" "$tmpdir/fixed.json" <<'PY'
import json, sys
a, f = (json.loads(open(p).read().splitlines()[-1]) for p in sys.argv[1:])
if not f["evicted_unread_pct"] >= 10 * max(a["evicted_unread_pct"], 0.1):
    sys.exit("test-sim: fixed evicts %s%%, adaptive %s%%"
             % (f["evicted_unread_pct"], a["evicted_unread_pct"]))
PY

# The backend model's bandwidth holds: 16 closed-loop streams of 64 KiB
# reads (W2) read at most what a 200 MiB/s link delivers in 2 s and
# the 10 MiB its bucket holds at the start, read ahead or not; with a
# bucket of 2 MiB (BURST 0.01; one of 0 passes nothing), 200 MiB/s and
# those 2 MiB.  (A worker whose job a reader took once started the next
# job in the pipe's past, and this ran at 1.6x the pipe.)
for mode in adaptive fixed; do
  sim --pool 64M --mode $mode --workload streams:16:100G:64K:0 \
    --duration 2 --json > "$tmpdir/w2-$mode.json"
  check "$tmpdir/w2-$mode.json" \
    'd["backend_bytes"] <= (200 * 2 + 10) * 2**20' \
    'd["client_bytes"] >= 200 * 2**20 * 2 * 0.8'
  sim --pool 64M --mode $mode --workload streams:16:100G:64K:0 \
    --backend remote:5ms:200M:0.01 --duration 2 --json > "$tmpdir/w2-$mode.json"
  check "$tmpdir/w2-$mode.json" \
    'd["backend_bytes"] <= (200 * 2 + 2) * 2**20' \
    'd["client_bytes"] >= 200 * 2**20 * 2 * 0.8'
done

# A client's round trip outside the backend (--client-rtt) adds to every
# request's latency, and the delay filter's overshoot (--delay-overshoot,
# 128 us unless told) to every read's: W1 without read-ahead, 5 ms, 128
# us, 20 us of copy, 80 us.
sim --pool 64M --mode off --workload streams:1:100G:64K:0 --duration 1 \
  --client-rtt 80us --json > "$tmpdir/rtt.json"
check "$tmpdir/rtt.json" 'abs(d["mean_latency_ms"] - 5.2283) < 0.001'
sim --pool 64M --mode off --workload streams:1:100G:64K:0 --duration 1 \
  --client-rtt 80us --delay-overshoot 0 --json > "$tmpdir/rtt0.json"
check "$tmpdir/rtt0.json" 'abs(d["mean_latency_ms"] - 5.1003) < 0.001'

# A reader woken from a wait resumes --wake-delay later, and
# --wake-growth more per millisecond asleep: W1 with fixed windows,
# whose longest wait is a whole fetch (5 ms, the delay filter's 128 us
# overshoot, the copy): 5.1675 ms without, 1 ms more with a 1 ms
# wake-up, and 10% of the 5.1675 ms asleep more with a growth of 100
# us a millisecond.
for wake in "0 0 5.1675" "1ms 0 6.1675" "0 100us 5.6842"; do
  set -- $wake
  sim --pool 64M --mode fixed --workload streams:1:100G:64K:0 --duration 1 \
    --wake-delay "$1" --wake-growth "$2" --json > "$tmpdir/wake.json"
  check "$tmpdir/wake.json" "abs(d['max_latency_ms'] - $3) < 0.001"
done

# Deterministic: the same run twice gives the same figures.
sim "${tight[@]}" --json | figures > "$tmpdir/again1"
figures "$tmpdir/adaptive.json" > "$tmpdir/again2"
cmp "$tmpdir/again1" "$tmpdir/again2"

# A sweep: one JSON line per pool size, in order.
sim --workload streams:50:16K:4K --duration 30 --sweep pool=2M,8M --json \
  > "$tmpdir/sweep"
test "$(wc -l < "$tmpdir/sweep")" -eq 2
python3 - "$tmpdir/sweep" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["pool_bytes"] for r in rows] == [2 << 20, 8 << 20], rows
PY

# Several sweeps: every combination, the pool outermost, the round
# trip innermost, each run as the same run alone; as a table, a row
# each and their medians.
sim --workload streams:50:16K:4K --sweep client-rtt=0,80us \
  --sweep duration=10,20 --sweep pool=2M,8M --json > "$tmpdir/sweeps"
sim --workload streams:50:16K:4K --pool 8M --duration 20 --client-rtt 80us \
  --json | figures > "$tmpdir/alone"
tail -n 1 "$tmpdir/sweeps" | figures > "$tmpdir/last"
cmp "$tmpdir/alone" "$tmpdir/last"
python3 - "$tmpdir/sweeps" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = [(r["pool_bytes"] >> 20, r["virtual_s"], r["client_rtt_us"])
       for r in rows]
assert got == [(p, d, t) for p in (2, 8) for d in (10, 20)
               for t in (0, 80)], got
PY
sim --workload streams:50:16K:4K --pool 8M --duration 10 \
  --sweep client-rtt=0,80us,160us > "$tmpdir/table"
python3 - "$tmpdir/table" <<'PY'
import statistics, sys
lines = open(sys.argv[1]).read().splitlines()
head = lines[0].split()
rows = [l.split() for l in lines[1:]]
assert head[:3] == ["pool", "virtual_s", "rtt_us"] and len(rows) == 4, lines
assert [r[2] for r in rows[:3]] == ["0.0", "80.0", "160.0"], lines
assert rows[3][0] == "median", lines
for k in ("hit%", "mean_ms", "max_ms"):
    i = head.index(k)
    want = statistics.median(float(r[i]) for r in rows[:3])
    assert abs(float(rows[3][i - 2]) - want) < 0.01, (k, lines)
PY

# Random reads start no stream: no read-ahead, no more backend bytes
# than client bytes (fewer: a few reads hit a page read before).
sim --pool 16M --workload random:200:4K:1G --duration 20 --json \
  > "$tmpdir/random"
check "$tmpdir/random" 'd["windows"] == 0 and d["amplification"] <= 1' \
  'd["hit_pct"] < 5 and 3000 < d["client_requests"] < 5000'

# Interleaved streams on one client at depth 1 (the bench's W3), at
# the client round trips of SIM_CLIENT_RTTS: one read at a time, so in
# every run at most 200 MiB/s of 64 KiB reads and the 10 MiB the bucket
# starts with.  Read ahead, most are served at once, and since the
# streams share the link's late cap (readahead.c: raise_cap) a reader
# that waits, waits for a chunk, not a window: the median run's p99,
# less its round trip, is under a backend read of a 64 KiB chunk (5 ms
# and its 0.31 ms at 200 MiB/s), where streams that did not share the
# cap, with windows of up to 8 MiB, waited 6.5 ms.  (A reader that
# waits for the run at the head to end, while the model sees seeks,
# waits for its chunk's whole read: 5.02 ms.)  Whether a reader
# reaches a window just before or after it completes moves a single
# run's hit and p99 by tens of percent as the round trip moves by 2
# us; the median does not hang on it.  5 s: the first 10 MiB come at
# once, and a shorter run's p99 weighs them more.
sim --pool 64M --workload interleave:8:64K --duration 5 \
  --sweep client-rtt="$SIM_CLIENT_RTTS" --json > "$tmpdir/interleave"
python3 - "$tmpdir/interleave" "$SIM_CLIENT_RTTS" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
rtts = [float(r[:-2]) for r in sys.argv[2].split(",")]
assert [r["client_rtt_us"] for r in runs] == rtts, runs
for d in runs:
    for ok in [d["client_bytes"] / 2**20 <= 200 * 5 + 10,
               d["client_bytes"] / 5 / 2**20 > 150,
               d["amplification"] < 1.05]:
        assert ok, d
hit = statistics.median(d["hit_pct"] for d in runs)
p99 = statistics.median(d["p99_latency_ms"] - d["client_rtt_us"] / 1e3
                        for d in runs)
assert hit > 50, ("median hit", hit)
assert p99 < 5 + 65536 / (200 * 2**20) * 1e3, ("median p99", p99)
PY

# Traces: CSV, the same gzipped, and nbdkit's log filter format.
{
  echo "t_ms,op,offset,length,conn"
  for i in $(seq 0 399); do echo "$((i * 5)),read,$((i * 65536)),65536,1"; done
  echo "2000,write,0,4096,2"
} > "$tmpdir/trace.csv"
gzip -c "$tmpdir/trace.csv" > "$tmpdir/trace.csv.gz"
sim --trace "$tmpdir/trace.csv" --json > "$tmpdir/csv"
sim --trace "$tmpdir/trace.csv.gz" --json > "$tmpdir/gz"
check "$tmpdir/csv" 'd["client_requests"] == 400' \
  'd["client_bytes"] == 400 * 65536' 'd["hit_pct"] > 90'
test "$(figures "$tmpdir/csv")" = "$(figures "$tmpdir/gz")"
cat > "$tmpdir/nbdkit.log" <<'LOG'
2026-12-04 20:48:11.349542 Ready thread_model=3
2026-12-04 20:48:11.541829 connection=1 Connect export="" tls=0 size=0x100000 minsize=0x0 prefsize=0x0 maxsize=0x0 write=0 flush=0 rotational=0 trim=0 zero=0 fua=0 extents=0 cache=2 fast_zero=0
2026-12-04 20:48:11.564318 connection=1 Read id=1 offset=0x0 count=0x40000 ...
2026-12-04 20:48:11.564810 connection=1 ...Read id=1 return=0
2026-12-04 20:48:11.664318 connection=1 Read id=2 offset=0x40000 count=0x40000 ...
2026-12-04 20:48:11.664810 connection=1 ...Read id=2 return=0
2026-12-04 20:48:11.764318 connection=2 Write id=1 offset=0x0 count=0x200 fua=0 ...
2026-12-04 20:48:11.864318 connection=1 Read id=3 offset=0x0 count=0x1000 ...
LOG
# The run ends when its last read (at 0.3 s, which the write made a
# miss) completes, 5 ms later.
sim --trace "$tmpdir/nbdkit.log" --json > "$tmpdir/log"
check "$tmpdir/log" 'd["client_requests"] == 3' \
  'd["client_bytes"] == 2 * 0x40000 + 0x1000' \
  'abs(d["virtual_s"] - 0.305) < 0.001'

# A trace recorded faster than the model carries (64 MiB in 0.1 s,
# where 200 MiB/s and a 10 MiB bucket need 0.27 s) is replayed whole
# without --duration: the run goes on until its last read completes,
# and the backend read what the client did (not 0.42 of it, its reads
# left in flight at 0.1 s).
python3 -c "
print('t_ms,op,offset,length,conn')
for i in range(1024):
    print('%.3f,read,%d,65536,1' % (i * 0.1, i * 65536))
" > "$tmpdir/fast.csv"
sim --trace "$tmpdir/fast.csv" --pool 256M --json > "$tmpdir/fast.json"
check "$tmpdir/fast.json" \
  'd["client_requests"] == 1024' \
  'd["virtual_s"] >= 0.27' \
  '1 <= d["amplification"] <= 1.05'

# The fleet's guest traces (scripts/bench/traces) replay as they are:
# gzipped, with a sixth column (dur_ms, how long the request took
# where it was recorded: ignored) and F lines (a flush: no request,
# as the fleet's replayer skips it).  Every R line is a client read.
traces="$(dirname "$0")/../../scripts/bench/traces"
for t in "$traces"/boot-web.csv.gz "$traces"/boot-batch.csv.gz; do
  read -r reads bytes < <(gzip -dc "$t" |
    awk -F, '$2 == "R" { n++; b += $4 } END { print n, b }')
  sim --trace "$t" --backend disk --json > "$tmpdir/boot.json"
  check "$tmpdir/boot.json" "d['client_requests'] == $reads" \
    "d['client_bytes'] == $bytes"
done

# Bad input: one line on stderr naming the option and what was typed,
# and a failure status, at once (a refusal that hangs fails too).
rejects ()
{
  local pattern=$1 rc=0
  shift
  timeout 60 "$ADAPTRA_SIM" "$@" > /dev/null 2> "$tmpdir/err" || rc=$?
  if [ "$rc" -eq 0 ] || [ "$(wc -l < "$tmpdir/err")" -ne 1 ] ||
     ! grep -qE -- "$pattern" "$tmpdir/err"; then
    echo "test-sim: '$*' gave status $rc and:"
    cat "$tmpdir/err"
    exit 1
  fi
}
w=(--workload streams:1:1K:4K)
rejects '--pool=12X' --pool 12X "${w[@]}"
rejects '--page=3000' --page 3000 "${w[@]}"
rejects '--mode=turbo' --mode turbo "${w[@]}"
rejects '--max=.*1/4 of --pool' --max 1T "${w[@]}"
rejects '--backend=remote:5ms' --backend remote:5ms "${w[@]}"
rejects "--backend=remote:x:1M: cannot parse latency 'x'" \
  --backend remote:x:1M "${w[@]}"
rejects "--backend=remote:5ms:1M:x: cannot parse burst 'x'" \
  --backend remote:5ms:1M:x "${w[@]}"
rejects '--workload=streams:1:1K' --workload streams:1:1K
rejects "--workload=random:x:4K: IOPS 'x'" --workload random:x:4K
rejects "--workload=interleave:8:64K:256K: SPAN must hold" \
  --workload interleave:8:64K:256K
rejects '--duration=0' --duration 0 "${w[@]}"
rejects '--client-rtt=fast' --client-rtt fast "${w[@]}"
rejects "--sweep=pool=1M,zz: 'zz'" --sweep pool=1M,zz "${w[@]}"
rejects "--sweep=client-rtt=1us,zz: 'zz' is not a time" \
  --sweep client-rtt=1us,zz "${w[@]}"
rejects "--sweep=duration=0: '0'" --sweep duration=0 "${w[@]}"
rejects "--sweep=page=4K: expected" --sweep page=4K "${w[@]}"
rejects "--sweep=pool=2M: pool swept twice" --sweep pool=1M \
  --sweep pool=2M "${w[@]}"
rejects '--pool needs a value' "${w[@]}" --pool
rejects "unknown option '--frob'" --frob
rejects 'nothing to run'
rejects "--trace=$tmpdir/none" --trace "$tmpdir/none"
echo "1,read,0" > "$tmpdir/bad.csv"
rejects "--trace=$tmpdir/bad.csv: line 1" --trace "$tmpdir/bad.csv"
# scanf's unsigned conversions take "-4096" as 2^64 - 4096: a number
# with a sign is a malformed line, in CSV (dur_ms too) and in a log
# line.
for bad in "1,read,-4096,4096,1" "1,read,0,-4096,1" "1,read,0,4096,-1" \
  "1,read,0,4096,1,-0.5" \
  "2026-12-04 20:48:11.564318 connection=1 Read id=1 offset=0x-10 count=0x10"
do
  printf '0,read,0,4096,1\n%s\n' "$bad" > "$tmpdir/bad.csv"
  rejects "--trace=$tmpdir/bad.csv: line 2 .*without a sign" \
    --trace "$tmpdir/bad.csv"
done
# A trace the backend needs more than the model's clock for (40 GB at
# 1 byte a second, 1268 years; SIM_HORIZON_NS is 146) is refused: its
# times would not fit 64 bits of nanoseconds.  So is a time past it.
printf '0,write,0,40000000000,1\n1,read,0,4096,1\n' > "$tmpdir/long.csv"
rejects "--trace=$tmpdir/long.csv: its 40000004096 bytes .* 146 years" \
  --trace "$tmpdir/long.csv" --backend remote:1ms:1
for bad in "1e13,read,0,4096,1" "nan,read,0,4096,1"; do
  printf '0,read,0,4096,1\n%s\n' "$bad" > "$tmpdir/bad.csv"
  rejects "--trace=$tmpdir/bad.csv: line 2 " --trace "$tmpdir/bad.csv"
done
rejects "--head=$tmpdir/h: only the disk model" --head "$tmpdir/h" "${w[@]}"
rejects "--waits=$tmpdir/w: traces one run" --waits "$tmpdir/w" \
  --sweep pool=1M,2M "${w[@]}"
rejects "--waits=$tmpdir/none/w: No such" --waits "$tmpdir/none/w" "${w[@]}"
# Refused before the run, whether gnuplot is there or not.
rejects "--plot=$tmpdir/none/p.png: cannot write into $tmpdir/none: No such" \
  --plot "$tmpdir/none/p.png" "${w[@]}"

# --version says whose and which, as the other tools.
sim --version | grep -qE '^adaptra-sim \(adaptra\) [0-9]'

# --head writes the disk's head trace, a line a backend read, whose
# seeks add up to the run's seek_s.
sim --backend disk --pool 16M --workload interleave:4:64K --duration 1 \
  --head "$tmpdir/head" --json > "$tmpdir/disk.json"
python3 - "$tmpdir/disk.json" "$tmpdir/head" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
lines = [l.split() for l in open(sys.argv[2])]
assert all(len(l) == 6 for l in lines), lines[:3]
assert len(lines) >= d["backend_requests"] > 0, (len(lines), d)
seeks = sum(float(l[5]) for l in lines)
assert d["seek_s"] > 0 and abs(seeks - d["seek_s"]) < 1e-3 * len(lines), \
    (seeks, d["seek_s"])
PY

# --waits writes each client read that waited, a line each: one a
# read the run did not count as a hit, the longest its max latency.
sim --pool 64M --workload streams:1:100G:64K:0 --duration 1 \
  --client-rtt 30us --waits "$tmpdir/waits" --json > "$tmpdir/w1.json"
python3 - "$tmpdir/w1.json" "$tmpdir/waits" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
lines = [l.split() for l in open(sys.argv[2])]
misses = round(d["client_requests"] * (1 - d["hit_pct"] / 100))
assert len(lines) == misses > 0, (len(lines), d)
assert all(len(l) == 5 and int(l[3]) == 65536 for l in lines), lines[:3]
assert [float(l[0]) for l in lines] == sorted(float(l[0]) for l in lines)
assert abs(max(float(l[4]) for l in lines) - d["max_latency_ms"]) < 1e-3, d
PY

# --plot draws a PNG (where gnuplot runs).
if gnuplot -e 'set terminal pngcairo' > /dev/null 2>&1; then
  sim "${tight[@]}" --plot "$tmpdir/run.png" > /dev/null
  test "$(head -c 4 "$tmpdir/run.png" | od -An -c | tr -d ' ')" = '211PNG'
else
  echo "test-sim: gnuplot with pngcairo missing: --plot not checked"
fi
echo "test-sim: ok"
