#!/usr/bin/env bash
# What tracing costs the experiment: pipe-wakeup (OTHER, both pinned to CPU 0, a switch
# every few microseconds: the worst case) plain, with --trace (the default: sched_waking
# for cross-CPU wake-ups only) and with --trace-every-waking, side by side in one run,
# rounds alternating. Prints each round's MB/s, the traced/plain ratios per round, their
# medians, and the tracer's own numbers (events/s, ns of CPU per event, lost).
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

printf '%-6s %11s %11s %11s %7s %7s %10s %9s %5s\n' ROUND "plain /s" "traced /s" "every /s" RATIO "EVERY" "events/s" "ns/event" LOST
: >"$work/rows"
for i in $(seq 1 "$rounds"); do
  run_json "$work/plain.json" "$@"
  run_json "$work/traced.json" --trace "$@"
  run_json "$work/every.json" --trace-every-waking "$@"
  python3 - "$work/plain.json" "$work/traced.json" "$work/every.json" "$i" >>"$work/rows" <<'PY'
import json, sys
p, t, e = (json.load(open(f)) for f in sys.argv[1:4])
tr = t.get("trace") or {}
print(sys.argv[4], p["metrics"]["throughput_per_s"], t["metrics"]["throughput_per_s"],
      e["metrics"]["throughput_per_s"], tr.get("events_per_s", 0),
      tr.get("tracer_ns_per_event", 0), tr.get("lost", -1) + (e.get("trace") or {}).get("lost", -1))
PY
  tail -1 "$work/rows" | python3 -c "
import sys
i, p, t, e, ev, ns, lost = sys.stdin.read().split()
p, t, e = float(p), float(t), float(e)
print('%-6s %11.4g %11.4g %11.4g %7.3f %7.3f %10.0f %9.0f %5s' % (i, p, t, e, t/p, e/p, float(ev), float(ns), lost))"
done
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = statistics.median
traced = [float(r[2]) / float(r[1]) for r in rows]
every = [float(r[3]) / float(r[1]) for r in rows]
print(f"--trace/plain median {med(traced):.3f} (min {min(traced):.3f}, max {max(traced):.3f}); "
      f"--trace-every-waking/plain median {med(every):.3f} (min {min(every):.3f}, max {max(every):.3f})")
print(f"--trace events/s median {med(float(r[4]) for r in rows):.0f}; "
      f"tracer ns/event median {med(float(r[5]) for r in rows):.0f}; "
      f"lost total (both traced runs) {sum(int(r[6]) for r in rows)}")
PY
