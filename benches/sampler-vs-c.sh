#!/usr/bin/env bash
# schedlab's own CPU per task-sample in a real run, against a plain C loop that preads
# each of sched, schedstat, stat and status once per task, sampling the same tasks at
# the same interval at the same time (benches/reference/sampler.c).
#
#   benches/sampler-vs-c.sh [ROUNDS=3] [PRESET=nice-ladder] [VARIANT=wide] [INTERVAL_MS=20]
#
# Prints, per round, schedlab's CPU (all its threads) per task-sample, the C loop's, and
# the ratio (goal: below 0.7). Needs root for nice -20 (nice-ladder), cc and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
preset=${2:-nice-ladder}
variant=${3:-wide}
interval=${4:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -o "$work/sampler-ref" benches/reference/sampler.c
cargo build --release --quiet
bin=$PWD/target/release/schedlab
printf '%-6s %8s %16s %12s %8s\n' ROUND TASKS "schedlab us" "C us" RATIO
for i in $(seq 1 "$rounds"); do
  "$bin" run "$preset" --variant "$variant" --interval "${interval}ms" --duration 8s \
    --json "$work/run.json" >/dev/null 2>&1 &
  run=$!
  sleep 1.5
  # The workload's tasks: every thread of every child process of the run.
  tasks=()
  for child in $(cat /proc/$run/task/*/children); do
    for t in /proc/$child/task/*; do tasks+=("$child/$(basename "$t")"); done
  done
  read -r c_us _ < <("$work/sampler-ref" "$interval" 5 "${tasks[@]}")
  wait $run
  s_us=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["observer"]["per_task_sample_us"])' "$work/run.json")
  python3 -c "print('%-6s %8d %16.2f %12.2f %8.2f' % ('$i', ${#tasks[@]}, $s_us, $c_us, $s_us / $c_us))"
done
