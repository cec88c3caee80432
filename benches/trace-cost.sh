#!/usr/bin/env bash
# What tracing costs the experiment: pipe-wakeup (OTHER, both pinned to CPU 0, a switch
# every few microseconds: the worst case) with and without --trace, side by side in one
# run, rounds alternating. Prints each round's MB/s, the traced/plain ratio per round,
# their median, and the tracer's own numbers (events/s, ns of CPU per event, lost).
#
#   benches/trace-cost.sh [ROUNDS=8] [SECONDS=2] [PRESET=pipe-wakeup] [EXTRA ARGS...]
#
# Needs root (tracefs is mounted for each traced run and unmounted after), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
secs=${2:-2}
preset=${3:-pipe-wakeup}
shift $(($# < 3 ? $# : 3))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet
bin=target/release/schedlab

run_json() { # out-file, then extra arguments
  local out=$1
  shift
  "$bin" run "$preset" "$@" --duration "${secs}s" --json - 2>/dev/null >"$out"
}

printf '%-6s %12s %12s %8s %12s %10s %6s\n' ROUND "plain /s" "traced /s" RATIO "events/s" "ns/event" LOST
: >"$work/rows"
for i in $(seq 1 "$rounds"); do
  run_json "$work/plain.json" "$@"
  run_json "$work/traced.json" --trace "$@"
  python3 - "$work/plain.json" "$work/traced.json" "$i" >>"$work/rows" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
tr = t.get("trace") or {}
print(sys.argv[3], p["metrics"]["throughput_per_s"], t["metrics"]["throughput_per_s"],
      tr.get("events_per_s", 0), tr.get("tracer_ns_per_event", 0), tr.get("lost", -1))
PY
  tail -1 "$work/rows" | python3 -c "
import sys
i, p, t, e, ns, lost = sys.stdin.read().split()
print('%-6s %12.4g %12.4g %8.3f %12.0f %10.0f %6s' % (i, float(p), float(t), float(t)/float(p), float(e), float(ns), lost))"
done
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
ratios = [float(r[2]) / float(r[1]) for r in rows]
print(f"traced/plain median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, "
      f"max {max(ratios):.3f}); events/s median {statistics.median(float(r[3]) for r in rows):.0f}; "
      f"tracer ns/event median {statistics.median(float(r[4]) for r in rows):.0f}; "
      f"lost total {sum(int(r[5]) for r in rows)}")
PY
