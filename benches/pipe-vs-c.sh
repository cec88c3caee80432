#!/usr/bin/env bash
# schedlab's pipe-wakeup against the same experiment as a plain C program, side by side
# in one run: rounds alternate C and schedlab, BATCH and OTHER, both pinned to CPU 0.
# Prints every round, the schedlab/C ratio per round, the medians, and how many BATCH
# runs fell into a slow regime (below 0.7x the C median).
#
#   benches/pipe-vs-c.sh [ROUNDS=20] [SECONDS=2]
#
# Needs root (nothing else: no knob is changed), cc, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
secs=${2:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -o "$work/pipe-ref" benches/reference/pipe.c
cargo build --release --quiet
bin=target/release/schedlab

schedlab_mbs() { # run arguments after the preset
  "$bin" run pipe-wakeup "$@" --duration "${secs}s" --json - 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["metrics"]["throughput_per_s"])'
}

printf '%-6s %-6s %12s %12s %8s\n' ROUND POLICY "C MB/s" "schedlab" RATIO
: >"$work/rows"
for i in $(seq 1 "$rounds"); do
  for policy in batch other; do
    c=$("$work/pipe-ref" "$policy" "$secs")
    if [ "$policy" = batch ]; then s=$(schedlab_mbs --variant batch); else s=$(schedlab_mbs); fi
    echo "$i $policy $c $s" >>"$work/rows"
    python3 -c "print('%-6s %-6s %12.1f %12.1f %8.3f' % ('$i', '$policy', $c/1e6, $s/1e6, $s/$c))"
  done
done
python3 - "$work/rows" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for policy in ("batch", "other"):
    c = [float(r[2]) for r in rows if r[1] == policy]
    s = [float(r[3]) for r in rows if r[1] == policy]
    ratios = [b / a for a, b in zip(c, s)]
    print(f"{policy}: C median {statistics.median(c)/1e6:.1f} MB/s, schedlab median "
          f"{statistics.median(s)/1e6:.1f} MB/s, schedlab/C median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
    if policy == "batch":
        slow = sum(1 for x in s if x < 0.7 * statistics.median(c))
        print(f"batch: {slow} of {len(s)} schedlab runs in a slow regime (< 0.7x the C median)")
EOF
