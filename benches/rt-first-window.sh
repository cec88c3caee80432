#!/usr/bin/env bash
# rt-throttle's first throttled window, schedlab against the same experiment as a plain
# C program (benches/reference/rt_first_window.c), side by side in one run: each round
# waits GAP seconds with no RT task running, then runs C, waits again, then runs
# schedlab's rt-throttle, 3 s each. Prints every round's first window (how long the fair
# thread first held CPU 0: 50 ms promised at 950000/1000000), and for each side how many
# first windows were stretched past 100 ms. With GAP=0.3 the period timer is still
# running from the round before and nothing stretches (0 of 60 here); with GAP=2 about
# one start in six does.
#
#   benches/rt-first-window.sh [ROUNDS=20] [GAP=2]
#
# Needs root (SCHED_FIFO; no knob is changed), cc, python3. RT throttling must be on.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
gap=${2:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -pthread -o "$work/rt-ref" benches/reference/rt_first_window.c
cargo build --release --quiet
bin=target/release/schedlab

schedlab_first() { # the fair thread's first stretch on the CPU, from the run's CSV
  "$bin" run rt-throttle --duration 3s --warmup 0s --csv "$work/run.csv" >/dev/null 2>&1
  python3 - "$work/run.csv" <<'EOF'
import csv, sys
# The first stretch as the check finds it (src/check/throttle.rs).
ran, prev = [], 0.0
for row in csv.DictReader(open(sys.argv[1])):
    if row["task"] == "fair" and row["cpu_share"]:
        t = float(row["t_s"]); ran.append((float(row["cpu_share"]), t - prev)); prev = t
big = next((k for k, (share, _) in enumerate(ran) if share > 0.1), None)
if big is None:
    print("0.000"); sys.exit()
k = big - 1 if big > 0 and ran[big - 1][0] > 0.005 else big
first = 0.0
while k < len(ran) and ran[k][0] > 0.005:
    first += ran[k][0] * ran[k][1]; k += 1
print(f"{first:.3f}{'+' if k == len(ran) else ''}")
EOF
}

printf '%-6s %12s %12s\n' ROUND "C first s" "schedlab"
c_long=0
s_long=0
for i in $(seq 1 "$rounds"); do
  sleep "$gap"
  c=$("$work/rt-ref" 3 | awk '{print $2}')
  sleep "$gap"
  s=$(schedlab_first)
  printf '%-6s %12s %12s\n' "$i" "$c" "$s"
  python3 -c "import sys; sys.exit(0 if float('${c%+}') > 0.1 else 1)" && c_long=$((c_long + 1))
  python3 -c "import sys; sys.exit(0 if float('${s%+}') > 0.1 else 1)" && s_long=$((s_long + 1))
done
echo "first window over 100 ms after ${gap} s without RT tasks: C ${c_long} of ${rounds}, schedlab ${s_long} of ${rounds}"
