#!/usr/bin/env bash
# Benchmark: `latscope decode --stats` on a large `trace-cmd report` text (~1M events, ~130 MB), one core.
# Records a .dat here (root, tracefs): a private instance with sched, irq, irq_vectors, timer and raw_syscalls
# under stress-ng, saved with `trace-cmd extract` (this kernel has no function tracer, so no `trace-cmd
# record`), then `trace-cmd report` turns it into text. Everything goes to a temp dir that is removed.
# Prints latscope's MB/s (target >= 300 MB/s) next to reference tools run on the same file in the same run:
# `wc -l` (a raw line scan), and the time trace-cmd took to produce the text.
# Usage: scripts/bench-decode-text.sh [EXISTING-report.txt | EXISTING.dat]
#        env TARGET_EVENTS=1000000, BENCH_TEXT_OUT=FILE keeps a copy of the report text.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET_EVENTS=${TARGET_EVENTS:-1000000}
work=$(mktemp -d /tmp/latscope-bench-text.XXXXXX)
T=/sys/kernel/tracing
inst=latscope_bench_text_$$
cleanup() {
    if [ -d "$T/instances/$inst" ]; then
        echo 0 > "$T/instances/$inst/tracing_on" 2>/dev/null || true
        rmdir "$T/instances/$inst" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

for tool in trace-cmd stress-ng; do
    command -v "$tool" >/dev/null || { echo "bench-decode-text: $tool missing (run scripts/install-deps.sh)" >&2; exit 1; }
done

input=${1:-}
case "$input" in
    *.dat) dat=$input; input= ;;
    "") dat= ;;
    *) dat= ;;
esac
if [ -z "$input" ] && [ -z "$dat" ]; then
    [ "$(id -u)" = 0 ] && [ -e "$T/trace" ] || { echo "bench-decode-text: needs root and tracefs to record (or pass a file)" >&2; exit 1; }
    dat=$work/bench.dat
    mkdir "$T/instances/$inst"
    ncpu=$(nproc)
    echo $(( TARGET_EVENTS * 64 / 1024 / ncpu + 1024 )) > "$T/instances/$inst/buffer_size_kb"
    for e in sched irq irq_vectors timer raw_syscalls; do echo 1 > "$T/instances/$inst/events/$e/enable"; done
    count() { awk '/^entries:/ {s += $2} END {print s+0}' "$T"/instances/$inst/per_cpu/cpu*/stats; }
    for _ in $(seq 1 30); do
        timeout 10 stress-ng --cpu 2 --timeout 2s >/dev/null 2>&1 || true
        (for _ in $(seq 1 2000); do cat /proc/self/stat >/dev/null; done) || true
        [ "$(count)" -ge "$TARGET_EVENTS" ] && break
    done
    echo 0 > "$T/instances/$inst/tracing_on"
    echo "recorded $(count) events"
    (cd "$work" && trace-cmd extract -B "$inst" -o "$dat" >/dev/null 2>&1)
    rmdir "$T/instances/$inst" 2>/dev/null || true
fi
if [ -z "$input" ]; then
    input=$work/report.txt
    s=$(date +%s%N)
    trace-cmd report -i "$dat" > "$input" 2>/dev/null
    e=$(date +%s%N)
    tc_ms=$(( (e - s) / 1000000 ))
fi
[ -n "${BENCH_TEXT_OUT:-}" ] && cp "$input" "$BENCH_TEXT_OUT"
bytes=$(stat -c %s "$input")
echo "input: $input, $((bytes / 1000000)) MB, $(wc -l < "$input") lines"

cargo build --release -q -p latscope
lat=(target/release/latscope decode --stats "$input")
"${lat[@]}" | sed -n '2,3p'
cat "$input" > /dev/null # page cache warm for every tool alike

t_ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
best() { local b=999999999 t; for _ in 1 2 3; do t=$(t_ms "$@"); [ "$t" -lt "$b" ] && b=$t; done; echo "$b"; }
lat_ms=$(best taskset -c 0 "${lat[@]}")
wc_ms=$(best taskset -c 0 wc -l "$input")
rss=$( { /usr/bin/time -v "${lat[@]}" >/dev/null; } 2>&1 | awk -F: '/Maximum resident/ {gsub(/ /, "", $2); print $2}' || echo "?")

mbps() { awk -v b="$bytes" -v ms="$1" 'BEGIN { printf "%.0f", b / 1e6 / (ms > 0 ? ms / 1e3 : 1e-3) }'; }
echo "latscope decode --stats: ${lat_ms} ms = $(mbps "$lat_ms") MB/s (target >= 300 MB/s), max RSS ${rss} KiB"
echo "wc -l (raw line scan):   ${wc_ms} ms = $(mbps "$wc_ms") MB/s"
[ -n "${tc_ms:-}" ] && echo "trace-cmd report (producing this text from the .dat): ${tc_ms} ms"
awk -v a="$wc_ms" -v b="$lat_ms" 'BEGIN { printf "ratio: latscope decode (every event typed) takes %.1fx the time of wc -l on the same bytes\n", b / (a > 0 ? a : 1) }'
if [ -n "${tc_ms:-}" ]; then
    awk -v a="$tc_ms" -v b="$lat_ms" 'BEGIN { printf "ratio: latscope reads the text %.1fx faster than trace-cmd writes it\n", a / (b > 0 ? b : 1) }'
fi
