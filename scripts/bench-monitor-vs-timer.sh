#!/usr/bin/env bash
# Benchmark: does `latscope monitor` measure what `latscope timer` measures? Alternates PAIRS pairs of
#   taskset -c 0 latscope timer   -c 1 -i 1ms -p 95 -D Ns --json …
#   taskset -c 0 latscope monitor -c 1 -i 1ms -p 95 -D Ns --json … --listen 127.0.0.1:PORT  (scraped every 1 s)
# (the first of each pair alternating) and compares p50, p99 and max of CPU 1. The tolerance ("within
# noise"): the difference between the two tools' medians over the runs is no larger than the spread
# (max − min over the runs) of either tool's own runs. Not a test: it never fails on the figures.
# Needs root, CPU 1, curl and python3. Usage: scripts/bench-monitor-vs-timer.sh [PAIRS]  (default 5;
# SECONDS_PER_RUN=20)
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${1:-5}
SECS=${SECONDS_PER_RUN:-20}
LATSCOPE=${LATSCOPE:-target/release/latscope}
PORT=${PORT:-19466}
for tool in curl python3 taskset; do
    command -v "$tool" >/dev/null || { echo "bench: $tool missing; run scripts/install-deps.sh" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (SCHED_FIFO 95, mlockall)" >&2; exit 1; }
[ -x "$LATSCOPE" ] || cargo build --release -p latscope >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run_timer() {
    taskset -c 0 "$LATSCOPE" timer -c 1 -i 1ms -p 95 -D "${SECS}s" -q --json "$work/timer-$1.json" >/dev/null 2>&1 || true
}
run_monitor() {
    taskset -c 0 "$LATSCOPE" monitor -c 1 -i 1ms -p 95 -D "${SECS}s" --listen "127.0.0.1:$PORT" \
        --json "$work/monitor-$1.json" >/dev/null 2>&1 &
    local pid=$!
    ( while kill -0 "$pid" 2>/dev/null; do curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics" || true; sleep 1; done ) &
    wait "$pid" || true
}

echo "bench: $PAIRS alternated pairs of ${SECS}s runs of timer and monitor, CPU 1 every 1 ms at SCHED_FIFO 95"
for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then run_timer "$i"; run_monitor "$i"; else run_monitor "$i"; run_timer "$i"; fi
done

python3 - "$work" <<'PY'
import glob, json, statistics, sys
runs = {}
for tool in ("timer", "monitor"):
    rows = []
    for path in sorted(glob.glob(f"{sys.argv[1]}/{tool}-*.json")):
        c = json.load(open(path))["cpus"][0]
        rows.append((c["percentiles_ns"]["50"] / 1e3, c["percentiles_ns"]["99"] / 1e3, c["max_ns"] / 1e3, c["count"]))
    runs[tool] = rows
    for r in rows:
        print(f"{tool:>8}: p50 {r[0]:7.1f} us  p99 {r[1]:8.1f} us  max {r[2]:9.1f} us  ({r[3]} samples)")
for k, name in enumerate(("p50", "p99", "max")):
    t = [r[k] for r in runs["timer"]]
    m = [r[k] for r in runs["monitor"]]
    if not t or not m:
        continue
    mt, mm = statistics.median(t), statistics.median(m)
    spread = max(max(t) - min(t), max(m) - min(m))
    verdict = "within noise" if abs(mm - mt) <= spread else "OUTSIDE the runs' own spread"
    print(f"{name}: median timer {mt:.1f} us, monitor {mm:.1f} us (monitor/timer {mm / mt:.2f}); "
          f"difference {abs(mm - mt):.1f} us vs spread of runs {spread:.1f} us: {verdict}")
PY
