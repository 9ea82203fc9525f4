#!/usr/bin/env bash
# Benchmark: `latscope timer` against cyclictest on the same CPU, alternated in one run.
# Each pair runs `cyclictest -m -t1 -a1 -p95 -i1000 -D5` and `latscope timer -c 1 -p 95 -i 1ms -D 5s`
# (the order flips every pair), then prints the sample counts against the expected number of periods,
# the median ratio of latscope's average latency over cyclictest's (target <= 1.05), and the CPU time of each.
# Needs root (SCHED_FIFO, mlockall), CPU 1, cyclictest (rt-tests) and python3. Not a test: it never fails on
# the figures. Usage: scripts/bench-timer-vs-cyclictest.sh [PAIRS]  (default 5; CPU=1 SECONDS_PER_RUN=5)
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${1:-5}
CPU=${CPU:-1}
SECS=${SECONDS_PER_RUN:-5}
LATSCOPE=${LATSCOPE:-target/release/latscope}

command -v cyclictest >/dev/null || { echo "bench: cyclictest missing; run scripts/install-deps.sh" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 missing; run scripts/install-deps.sh" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench: run as root (SCHED_FIFO 95, mlockall)" >&2; exit 1; }
[ -x "$LATSCOPE" ] || cargo build --release -p latscope >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results="$work/results.tsv"   # tool  count  avg_ns  max_ns  cpu_s

run_cyclictest() {
    /usr/bin/time -f "%U %S" -o "$work/time" \
        cyclictest -m -t1 -a"$CPU" -p95 -i1000 -D"$SECS" -q -N >"$work/ct.out" 2>/dev/null
    # T: 0 (pid) P:95 I:1000 C:   5000 Min:  11627 Act:   17657 Avg:   18650 Max:  612191
    python3 - "$work/ct.out" "$work/time" >>"$results" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"C:\s*(\d+)\s+Min:\s*(\d+)\s+Act:\s*(\d+)\s+Avg:\s*(\d+)\s+Max:\s*(\d+)", text)
if not m:
    sys.exit("bench: could not parse cyclictest output: " + text)
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
print(f"cyclictest\t{m[1]}\t{m[4]}\t{m[5]}\t{u + s:.3f}")
PY
}

run_latscope() {
    /usr/bin/time -f "%U %S" -o "$work/time" \
        "$LATSCOPE" timer -c "$CPU" -p 95 -i 1ms -D "${SECS}s" -q --json "$work/ls.json" >/dev/null 2>&1
    python3 - "$work/ls.json" "$work/time" >>"$results" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["cpus"][0]
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
print(f"latscope\t{c['count']}\t{c['avg_ns']:.0f}\t{c['max_ns']}\t{u + s:.3f}")
PY
}

echo "bench: $PAIRS alternated pairs of ${SECS}s runs on CPU $CPU, interval 1ms (expected $((SECS * 1000)) periods each)"
for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then run_cyclictest; run_latscope; else run_latscope; run_cyclictest; fi
done

python3 - "$results" "$((SECS * 1000))" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
expected = int(sys.argv[2])
ct = [r for r in rows if r[0] == "cyclictest"]
ls = [r for r in rows if r[0] == "latscope"]
print(f"{'pair':>4} {'ct count':>9} {'ls count':>9} {'ct avg':>9} {'ls avg':>9} {'ratio':>6} {'ct max':>9} {'ls max':>9} {'ct cpu s':>9} {'ls cpu s':>9}")
ratios = []
for i, (c, l) in enumerate(zip(ct, ls), 1):
    ratio = float(l[2]) / float(c[2])
    ratios.append(ratio)
    print(f"{i:>4} {c[1]:>9} {l[1]:>9} {int(c[2])/1e3:>7.1f}us {int(l[2])/1e3:>7.1f}us {ratio:>6.3f} "
          f"{int(c[3])/1e3:>7.0f}us {int(l[3])/1e3:>7.0f}us {float(c[4]):>9.3f} {float(l[4]):>9.3f}")
ct_cpu = statistics.median(float(c[4]) for c in ct)
ls_cpu = statistics.median(float(l[4]) for l in ls)
print(f"expected periods per run: {expected}; counts cyclictest {sorted(int(c[1]) for c in ct)}, "
      f"latscope {sorted(int(l[1]) for l in ls)}")
print(f"median avg-latency ratio latscope/cyclictest: {statistics.median(ratios):.3f} (target <= 1.05)")
print(f"median CPU time (user+sys): cyclictest {ct_cpu:.3f}s, latscope {ls_cpu:.3f}s, "
      f"ratio {ls_cpu / ct_cpu if ct_cpu > 0 else float('inf'):.2f} (target <= 1)")
PY
