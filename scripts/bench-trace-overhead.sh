#!/usr/bin/env bash
# Benchmark: what `latscope timer --trace` adds to the latency it measures. Runs the same timer
# measurement with and without --trace, alternated (the order flips every round) in one run on one CPU,
# and prints each run's p50/p99/max, then the mean p50/p99 of each mode, their difference and ratio.
# The reference is latscope itself without tracing, run side by side. Needs root and tracefs.
# Usage: scripts/bench-trace-overhead.sh   (env CPU=1 ROUNDS=4 DUR=5s PRIO=95 LATSCOPE=target/release/latscope)
set -euo pipefail
cd "$(dirname "$0")/.."
CPU=${CPU:-1}
ROUNDS=${ROUNDS:-4}
DUR=${DUR:-5s}
PRIO=${PRIO:-95}
LATSCOPE=${LATSCOPE:-target/release/latscope}
command -v jq >/dev/null || { echo "bench-trace-overhead: jq missing (run scripts/install-deps.sh)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench-trace-overhead: needs root (SCHED_FIFO, tracefs)" >&2; exit 1; }
[ -x "$LATSCOPE" ] || cargo build --release -p latscope >/dev/null
work=$(mktemp -d /tmp/latscope-bench-trace.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

run() { # mode round
    local out=$work/$1-$2.json extra=()
    [ "$1" = traced ] && extra=(--trace)
    "$LATSCOPE" timer -c "$CPU" -p "$PRIO" -D "$DUR" -q "${extra[@]}" --json "$out" >/dev/null 2>"$work/err" || {
        [ $? -eq 2 ] || { cat "$work/err" >&2; exit 1; }
    }
    jq -r --arg m "$1" '[$m, .all.percentiles_ns["50"], .all.percentiles_ns["99"], .all.max_ns, (.trace.events // 0)] | @tsv' "$out"
}

printf '%-7s %5s %10s %10s %10s %9s\n' mode round p50_ns p99_ns max_ns events
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="plain traced"; else order="traced plain"; fi
    for m in $order; do
        run "$m" "$r" | awk -v r="$r" '{ printf "%-7s %5s %10s %10s %10s %9s\n", $1, r, $2, $3, $4, $5 }' | tee -a "$work/rows"
    done
done
awk '
    { n[$1]++; p50[$1] += $3; p99[$1] += $4 }
    END {
        a50 = p50["plain"] / n["plain"]; a99 = p99["plain"] / n["plain"]
        b50 = p50["traced"] / n["traced"]; b99 = p99["traced"] / n["traced"]
        printf "\nmean over %d rounds     p50 %8.1f us   p99 %8.1f us   (without --trace)\n", n["plain"], a50 / 1000, a99 / 1000
        printf "                        p50 %8.1f us   p99 %8.1f us   (with --trace)\n", b50 / 1000, b99 / 1000
        printf "difference (traced - plain): p50 %+.1f us (x%.2f), p99 %+.1f us (x%.2f)\n", (b50 - a50) / 1000, b50 / a50, (b99 - a99) / 1000, b99 / a99
    }' "$work/rows"
