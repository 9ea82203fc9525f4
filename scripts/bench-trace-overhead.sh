#!/usr/bin/env bash
# Benchmark: what `latscope timer --trace` adds to the latency it measures, and what its kernel stacks add
# on top. Runs the same timer measurement in three modes — without tracing (the reference), with tracing
# but no stacks (`--trace --no-stacks`), and with tracing and stacks (`--trace`, the default) — rotated
# (each round starts with the next mode) in one run on one CPU, prints each run's p50/p99/max, events,
# stacks and lost events, then the mean p50/p99 of each mode and their differences. Targets: stacks add
# at most 2 us to p50 over tracing alone, and lose no event. Then one long `timer --trace` run (LONG, 60 s
# by default; LONG=0 skips it) reports its lost events (target: 0) and stacks. A quiet CPU is mostly idle
# and idle takes no stack; LOAD=1 keeps a niced user-space loop on the CPU throughout, so that every timer
# interrupt finds a task and takes a stack (the stacks' worst case). Needs root and tracefs.
# Usage: scripts/bench-trace-overhead.sh   (env CPU=1 ROUNDS=4 DUR=5s LONG=60s LOAD=0 PRIO=95 LATSCOPE=target/release/latscope)
set -euo pipefail
cd "$(dirname "$0")/.."
CPU=${CPU:-1}
ROUNDS=${ROUNDS:-4}
DUR=${DUR:-5s}
LONG=${LONG:-60s}
PRIO=${PRIO:-95}
LOAD=${LOAD:-0}
LATSCOPE=${LATSCOPE:-target/release/latscope}
command -v jq >/dev/null || { echo "bench-trace-overhead: jq missing (run scripts/install-deps.sh)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench-trace-overhead: needs root (SCHED_FIFO, tracefs)" >&2; exit 1; }
[ -x "$LATSCOPE" ] || cargo build --release -p latscope >/dev/null
work=$(mktemp -d /tmp/latscope-bench-trace.XXXXXX)
load_pid=
trap 'rm -rf "$work"; [ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null; true' EXIT
trap 'exit 130' INT TERM
if [ "$LOAD" = 1 ]; then
    nice -n 19 taskset -c "$CPU" sh -c 'while :; do :; done' &
    load_pid=$!
    echo "a niced user-space loop runs on CPU $CPU throughout (pid $load_pid)"
fi

run() { # mode round duration
    local out=$work/$1-$2.json extra=()
    case "$1" in
        traced) extra=(--trace --no-stacks) ;;
        stacks) extra=(--trace) ;;
    esac
    "$LATSCOPE" timer -c "$CPU" -p "$PRIO" -D "$3" -q "${extra[@]}" --json "$out" >/dev/null 2>"$work/err" || {
        [ $? -eq 2 ] || { cat "$work/err" >&2; exit 1; }
    }
    jq -r --arg m "$1" '[$m, .all.percentiles_ns["50"], .all.percentiles_ns["99"], .all.max_ns,
        (.trace.events // 0), (.trace.stacks // 0), (.trace.lost_events // 0)] | @tsv' "$out"
}

modes=(plain traced stacks)
printf '%-7s %5s %10s %10s %10s %9s %7s %5s\n' mode round p50_ns p99_ns max_ns events stacks lost
for r in $(seq 1 "$ROUNDS"); do
    for i in 0 1 2; do
        m=${modes[$(((r - 1 + i) % 3))]}
        run "$m" "$r" "$DUR" |
            awk -v r="$r" '{ printf "%-7s %5s %10s %10s %10s %9s %7s %5s\n", $1, r, $2, $3, $4, $5, $6, $7 }' |
            tee -a "$work/rows"
    done
done
awk '
    { n[$1]++; p50[$1] += $3; p99[$1] += $4; lost[$1] += $8 }
    END {
        for (m in n) { a50[m] = p50[m] / n[m]; a99[m] = p99[m] / n[m] }
        printf "\nmean over %d rounds     p50 %8.1f us   p99 %8.1f us   (without --trace)\n", n["plain"], a50["plain"] / 1000, a99["plain"] / 1000
        printf "                        p50 %8.1f us   p99 %8.1f us   (--trace --no-stacks)\n", a50["traced"] / 1000, a99["traced"] / 1000
        printf "                        p50 %8.1f us   p99 %8.1f us   (--trace, with stacks)\n", a50["stacks"] / 1000, a99["stacks"] / 1000
        printf "tracing (traced - plain):     p50 %+.1f us (x%.2f), p99 %+.1f us (x%.2f)\n", (a50["traced"] - a50["plain"]) / 1000, a50["traced"] / a50["plain"], (a99["traced"] - a99["plain"]) / 1000, a99["traced"] / a99["plain"]
        printf "stacks (stacks - traced):     p50 %+.1f us (target <= +2.0), p99 %+.1f us; lost events with stacks: %d (target 0)\n", (a50["stacks"] - a50["traced"]) / 1000, (a99["stacks"] - a99["traced"]) / 1000, lost["stacks"]
    }' "$work/rows"

if [ "$LONG" != 0 ]; then
    echo
    echo "one $LONG timer --trace run (with stacks):"
    run stacks long "$LONG" | awk '{ printf "p50 %.1f us, p99 %.1f us, max %.1f us, %d events, %d stacks, %d lost events (target 0)\n", $2 / 1000, $3 / 1000, $4 / 1000, $5, $6, $7 }'
fi
