#!/usr/bin/env bash
# Start and stop of a preset with many tasks: runs a preset of COUNT spinners for 1 s,
# ROUNDS times, and prints schedlab's own figures (observer.start_s: spawn to open
# gate; observer.stop_s: kill and reap every task) and the whole command's wall time.
# Goal: start + stop of 256 tasks under 2 s.
#
#   benches/many-tasks.sh [COUNT=256] [ROUNDS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-256}
rounds=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet
cat >"$work/many.toml" <<TOML
name = "many"
summary = "$count spinners"
note = "start and stop cost"
[metric]
headline = "share"
task = "spin"
[[task]]
name = "spin"
worker = "spin"
count = $count
TOML
printf '%-6s %8s %8s %10s %8s\n' ROUND START_S STOP_S TOTAL_S WALL_S
for i in $(seq 1 "$rounds"); do
  t0=$(date +%s.%N)
  target/release/schedlab run "$work/many.toml" --duration 1s --json "$work/r.json" >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  python3 - "$work/r.json" "$i" "$t0" "$t1" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))["observer"]
print("%-6s %8.2f %8.2f %10.2f %8.2f" % (sys.argv[2], o["start_s"], o["stop_s"],
      o["start_s"] + o["stop_s"], float(sys.argv[4]) - float(sys.argv[3])))
PY
done
