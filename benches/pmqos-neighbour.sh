#!/usr/bin/env bash
# Does cyclictest's main thread change what it measures? It wakes every 10 ms on another
# CPU while the measuring thread sleeps to 1 ms deadlines; schedlab's PM QoS loop has no
# such neighbour. The C loop of benches/reference/cyclic.c (SCHED_FIFO 80, pinned to
# CPU 0) with a neighbour thread on CPU 1 and without one, side by side in one run,
# rounds alternating (who goes first alternates), no PM QoS request held by us. With
# cyclictest installed, `cyclictest --laptop` (its main thread on CPU 1) runs in each
# round too. Prints each round's median wake-up latency, the paired ratios
# with/without the neighbour and cyclictest/with, and their medians.
#
#   benches/pmqos-neighbour.sh [ROUNDS=12] [WAKEUPS=200]
#
# Needs root (SCHED_FIFO), 2 CPUs, cc, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-12}
n=${2:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -pthread -o "$work/cyclic" benches/reference/cyclic.c
have_ct=$(command -v cyclictest >/dev/null && echo yes || echo no)

p50_with() { "$work/cyclic" "$n" 80 0 1 | cut -d' ' -f1; }
p50_without() { "$work/cyclic" "$n" 80 0 -1 | cut -d' ' -f1; }
p50_cyclictest() { # cyclictest's own histogram median, in ns (a 1 us bucket's middle, as tests/pmqos.rs)
  [ "$have_ct" = yes ] || { echo 0; return; }
  cyclictest -m -p80 -i1000 -t1 -l"$n" -a 0 --mainaffinity=1 --laptop -q -h10000 2>/dev/null |
    python3 -c '
import sys
rows = [l.split() for l in sys.stdin if l[:1].isdigit()]
counts = [(int(r[0]), int(r[1])) for r in rows if len(r) > 1]
total, seen = sum(c for _, c in counts), 0
for us, c in counts:
    seen += c
    if 2 * seen >= total:
        print(us * 1000 + 500)
        break
else:
    print(0)'
}

printf '%-6s %12s %12s %12s %9s %9s\n' ROUND "with us" "without us" "cyclictest" WITH/OUT CT/WITH
: >"$work/rows"
for i in $(seq 1 "$rounds"); do
  if [ $((i % 2)) = 1 ]; then w=$(p50_with); o=$(p50_without); else o=$(p50_without); w=$(p50_with); fi
  c=$(p50_cyclictest)
  echo "$i $w $o $c" >>"$work/rows"
  python3 -c "import sys; i,w,o,c=sys.argv[1:]; w,o,c=int(w),int(o),int(c)
print(f'{i:<6} {w/1e3:12.1f} {o/1e3:12.1f} {c/1e3:12.1f} {w/o:9.2f} ' + (f'{c/w:9.2f}' if c else f'{\"-\":>9}'))" "$i" "$w" "$o" "$c"
done
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
med = statistics.median
print(f"median of the medians: with {med(r[1] for r in rows)/1e3:.1f} us, without {med(r[2] for r in rows)/1e3:.1f} us")
print(f"median paired ratio with/without the neighbour: {med(r[1]/r[2] for r in rows):.2f}")
ct = [r[3]/r[1] for r in rows if r[3]]
if ct:
    print(f"median paired ratio cyclictest/with: {med(ct):.2f}")
PY
