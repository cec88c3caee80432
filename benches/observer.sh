#!/usr/bin/env bash
# The observer effect, measured: every preset run at --interval 1s and at
# --interval 20ms, alternating, ROUNDS times each, and the headline's median at both
# (plus schedlab's own CPU share at 20 ms). Goal: the headline moves by less than 2 %
# (fairness error: by less than 1 point, since it is itself a small fraction).
#
#   benches/observer.sh [ROUNDS=3] [SECONDS=4] [PRESET...]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-4}
shift $(( $# > 2 ? 2 : $# ))
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(pipe-wakeup pipe-affinity yield-latency rt-throttle nice-ladder parallel-build cgroup-fairness)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet
bin=target/release/schedlab
printf '%-16s %-10s %14s %14s %9s %12s\n' PRESET HEADLINE "at 1 s" "at 20 ms" CHANGE "OWN CPU 20ms"
for p in "${presets[@]}"; do
  : >"$work/$p"
  for i in $(seq 1 "$rounds"); do
    for iv in 1s ${OBSERVER_FAST:-20ms}; do
      "$bin" run "$p" --interval "$iv" --duration "${secs}s" --json "$work/r.json" >/dev/null 2>&1 || true
      python3 - "$work/r.json" "$iv" >>"$work/$p" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
h = r["metrics"]["headline"]
print(sys.argv[2], h["kind"], h["value"], r["observer"]["cpu_share"])
PY
    done
  done
  python3 - "$work/$p" "$p" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
kind = rows[0][1]
slow = statistics.median(float(r[2]) for r in rows if r[0] == "1s")
fast = statistics.median(float(r[2]) for r in rows if r[0] != "1s")
own = statistics.median(float(r[3]) for r in rows if r[0] != "1s")
if kind == "fairness":
    change = "%+.2f pt" % ((fast - slow) * 100)
else:
    change = "%+.1f %%" % ((fast / slow - 1) * 100 if slow else 0)
print("%-16s %-10s %14.4g %14.4g %9s %11.2f%%" % (sys.argv[2], kind, slow, fast, change, own * 100))
PY
done
