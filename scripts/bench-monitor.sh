#!/usr/bin/env bash
# Benchmark: what `latscope monitor` costs, next to cyclictest run the same way. Alternated runs of
#   taskset -c 0 latscope monitor -c 1 -i 1ms -p 95 -D Ns --listen 127.0.0.1:PORT   (scraped every 1 s)
#   taskset -c 0 cyclictest -m -t1 -a1 -p95 -i1000 -DN
# The processes start on CPU 0; each pins its measuring thread to CPU 1. Near the end of each run the CPU
# time of every thread is read from /proc/<pid>/task/<tid>/stat (utime+stime): the measuring thread's share
# of CPU 1, and the rest (monitor: collector, HTTP server; cyclictest: main thread) as a share of CPU 0.
# Monitor's resident memory is sampled every second and its slope stated. Not a test: it never fails on the
# figures. Needs root, CPU 1, cyclictest, curl and python3.
# Usage: scripts/bench-monitor.sh [PAIRS]  (default 2; SECONDS_PER_RUN=30, at least 10)
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${1:-2}
SECS=${SECONDS_PER_RUN:-30}
LATSCOPE=${LATSCOPE:-target/release/latscope}
PORT=${PORT:-19464}

for tool in cyclictest curl python3 taskset; do
    command -v "$tool" >/dev/null || { echo "bench: $tool missing; run scripts/install-deps.sh" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (SCHED_FIFO 95, mlockall)" >&2; exit 1; }
[ -x "$LATSCOPE" ] || cargo build --release -p latscope >/dev/null

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
results="$work/results.tsv"   # tool  run  thread-kind  cpu_seconds  wall_seconds

# Per-thread CPU seconds of $1 now, as "comm<TAB>seconds" lines (one pass, so no thread ends meanwhile).
thread_times() {
    python3 - "$1" "$(getconf CLK_TCK)" <<'PY' 2>/dev/null || true
import glob, sys
for path in glob.glob(f"/proc/{sys.argv[1]}/task/*/stat"):
    try:
        text = open(path).read()
    except OSError:
        continue
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    print(f"{comm}\t{(int(fields[11]) + int(fields[12])) / int(sys.argv[2]):.2f}")
PY
}

# Waits until $1 has run SECS-3 seconds, then records its threads' CPU time (label $2, run $3).
measure_threads() {
    local pid=$1 label=$2 run=$3 measuring=$4
    sleep $((SECS - 3))
    thread_times "$pid" | while IFS=$'\t' read -r comm secs; do
        if [ "$comm" = "$measuring" ]; then kind=measuring; else kind=other; fi
        printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$run" "$kind" "$secs" "$((SECS - 3))"
    done >>"$results"
}

run_monitor() {
    local run=$1
    taskset -c 0 "$LATSCOPE" monitor -c 1 -i 1ms -p 95 -D "${SECS}s" --listen "127.0.0.1:$PORT" \
        --json "$work/monitor-$run.json" >/dev/null 2>"$work/monitor-$run.log" &
    local pid=$!
    pids+=("$pid")
    ( for _ in $(seq 1 "$SECS"); do curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics" || true; sleep 1; done ) &
    local scraper=$!
    ( for _ in $(seq 1 "$SECS"); do
        awk '/VmRSS/ {print $2}' /proc/"$pid"/status 2>/dev/null || true; sleep 1
      done ) >"$work/rss-$run.txt" &
    local sampler=$!
    measure_threads "$pid" monitor "$run" latscope-t1
    wait "$pid" || true
    kill "$scraper" "$sampler" 2>/dev/null || true
    wait "$scraper" "$sampler" 2>/dev/null || true
}

run_cyclictest() {
    local run=$1
    taskset -c 0 cyclictest -m -t1 -a1 -p95 -i1000 -D"$SECS" -q -N >"$work/ct-$run.out" 2>/dev/null &
    local pid=$!
    pids+=("$pid")
    sleep 0.5
    # cyclictest's measuring thread is the one that is not the main thread.
    local measuring
    measuring=$(for t in /proc/"$pid"/task/*; do [ "${t##*/}" != "$pid" ] && cat "$t/comm"; done | head -1)
    measure_threads "$pid" cyclictest "$run" "${measuring:-cyclictest}"
    wait "$pid" || true
}

echo "bench: $PAIRS alternated pairs of ${SECS}s runs, CPU 1 measured every 1 ms at SCHED_FIFO 95, processes on CPU 0"
for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then run_monitor "$i"; run_cyclictest "$i"; else run_cyclictest "$i"; run_monitor "$i"; fi
done

python3 - "$results" "$work" "$PAIRS" <<'PY'
import collections, glob, json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
share = collections.defaultdict(list)
per_run = collections.defaultdict(float)
for tool, run, kind, secs, wall in rows:
    per_run[(tool, run, kind)] += float(secs)
    per_run[(tool, run, "wall")] = float(wall)
for (tool, run, kind), secs in per_run.items():
    if kind != "wall":
        share[(tool, kind)].append(100 * secs / per_run[(tool, run, "wall")])
for tool in ("monitor", "cyclictest"):
    m, o = share[(tool, "measuring")], share[(tool, "other")]
    fmt = lambda v: " ".join(f"{x:.2f}" for x in v) or "-"
    print(f"{tool:>10}: measuring thread {fmt(m)} % of CPU 1; other threads {fmt(o)} % of CPU 0 (per run)")
for path in sorted(glob.glob(f"{sys.argv[2]}/rss-*.txt")):
    kib = [int(v) for v in open(path).read().split()]
    if len(kib) < 3:
        continue
    # The slope after the start-up (threads spawned, memory locked): the second half of the run.
    half = kib[len(kib) // 2:]
    n = len(half)
    xs = range(n)
    mx, my = sum(xs) / n, sum(half) / n
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, half)) / max(sum((x - mx) ** 2 for x in xs), 1)
    print(f"   monitor RSS run {path.rsplit('-', 1)[1][:-4]}: {kib[0]} KiB at 1 s, {kib[len(kib) // 2]} KiB at {len(kib) // 2 + 1} s, {kib[-1]} KiB at {len(kib)} s; slope over the second half {slope * 60:.1f} KiB/min")
for path in sorted(glob.glob(f"{sys.argv[2]}/monitor-*.json")):
    c = json.load(open(path))["cpus"][0]
    print(f"   monitor run {path.rsplit('-', 1)[1][:-5]}: {c['count']} samples, avg {c['avg_ns']/1000:.1f} us, max {c['max_ns']/1000:.1f} us")
for path in sorted(glob.glob(f"{sys.argv[2]}/ct-*.out")):
    text = open(path).read()
    import re
    m = re.search(r"C:\s*(\d+)\s+Min:\s*(\d+)\s+Act:\s*(\d+)\s+Avg:\s*(\d+)\s+Max:\s*(\d+)", text)
    if m:
        print(f"   cyclictest run {path.rsplit('-', 1)[1][:-4]}: {m[1]} samples, avg {int(m[4])/1000:.1f} us, max {int(m[5])/1000:.1f} us")
PY
