#!/usr/bin/env bash
# The workbench's own CPU: the TUI in a detached tmux (80x24 and 200x50) on a preset of
# COUNT spinners sampled at 50 Hz (--interval 20ms), SECONDS long after a 3 s warm-up,
# ROUNDS times. schedlab's CPU is read from /proc/PID/stat (utime + stime: every thread
# of the schedlab process - UI loop, controller, sampler - and not the workers, which
# are processes of their own), and per thread from /proc/PID/task/*/stat. Goal: below
# 5 % of one CPU.
#
#   benches/tui-cpu.sh [COUNT=64] [SECONDS=20] [ROUNDS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-64}
secs=${2:-20}
rounds=${3:-3}
command -v tmux >/dev/null || { echo "needs tmux" >&2; exit 1; }
cargo build --release --quiet
bin=$(realpath "${CARGO_TARGET_DIR:-target}/release/schedlab")
work=$(mktemp -d)
sock="schedlab-tui-cpu-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"
  rm -rf "$work"
}
trap cleanup EXIT
cat >"$work/many.toml" <<TOML
name = "many"
summary = "$count spinners"
note = "the workbench's own CPU with many tasks"
[metric]
headline = "share"
task = "spin"
[[task]]
name = "spin"
worker = "spin"
count = $count
TOML

# utime+stime of the process, and per thread "comm ticks", in clock ticks.
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
threads() {
  for t in /proc/"$1"/task/*; do
    [ -r "$t/stat" ] || continue
    printf '%s %s\n' "$(tr -d ' ' <"$t/comm")" "$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "$t/stat")"
  done
}
hz=$(getconf CLK_TCK)

printf '%-6s %-8s %8s %10s   %s\n' ROUND SIZE SECONDS "OWN CPU %" "BY THREAD (% of one CPU)"
for i in $(seq 1 "$rounds"); do
  for size in 80x24 200x50; do
    w=${size%x*}
    h=${size#*x}
    tmux -L "$sock" new-session -d -s tui -x "$w" -y "$h" \
      "exec $bin tui $work/many.toml --interval 20ms"
    pid=""
    for _ in $(seq 1 100); do
      pid=$(tmux -L "$sock" list-panes -t tui -F '#{pane_pid}' 2>/dev/null || true)
      [ -n "$pid" ] && grep -q "t=" <(tmux -L "$sock" capture-pane -p -t tui 2>/dev/null) && break
      sleep 0.1
    done
    sleep 3
    a=$(ticks "$pid")
    threads "$pid" | sort >"$work/a"
    t0=$(date +%s.%N)
    sleep "$secs"
    b=$(ticks "$pid")
    threads "$pid" | sort >"$work/b"
    t1=$(date +%s.%N)
    tmux -L "$sock" send-keys -t tui q
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    python3 - "$a" "$b" "$t0" "$t1" "$hz" "$i" "$size" "$work/a" "$work/b" <<'PY'
import sys
from collections import defaultdict
a, b, t0, t1, hz = (float(x) for x in sys.argv[1:6])
wall = t1 - t0
def load(p):
    d = defaultdict(float)
    for line in open(p):
        name, v = line.rsplit(" ", 1)
        d[name] += float(v)
    return d
ta, tb = load(sys.argv[8]), load(sys.argv[9])
by = sorted(((tb[n] - ta.get(n, 0)) / hz / wall * 100, n) for n in tb)
detail = "  ".join("%s %.2f" % (n, v) for v, n in reversed(by) if v >= 0.05)
print("%-6s %-8s %8.1f %10.2f   %s" % (sys.argv[6], sys.argv[7], wall, (b - a) / hz / wall * 100, detail))
PY
  done
done
