#!/usr/bin/env bash
# Benchmark: decoding a ~1M-event trace-cmd .dat with latscope vs `trace-cmd report`, side by side in one run.
# Records the .dat here (root, tracefs): a private instance with sched, irq, irq_vectors, timer and raw_syscalls
# under stress-ng, written with `trace-cmd extract` (this kernel cannot run `trace-cmd record`: no function
# tracer). Prints both times, the ratio (target: latscope >= 20x faster) and latscope's max RSS.
# Usage: scripts/bench-decode-dat.sh [EXISTING.dat]    (env TARGET_EVENTS=1000000, ROUNDS=7)
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET_EVENTS=${TARGET_EVENTS:-1000000}
work=$(mktemp -d /tmp/latscope-bench-dat.XXXXXX)
T=/sys/kernel/tracing
inst=latscope_bench_dat_$$
cleanup() {
    [ -d "$T/instances/$inst" ] && { echo 0 > "$T/instances/$inst/tracing_on"; rmdir "$T/instances/$inst"; } 2>/dev/null || true
    [ -n "${stress_pid:-}" ] && kill "$stress_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

for tool in trace-cmd stress-ng /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench-decode-dat: $tool missing (run scripts/install-deps.sh)" >&2; exit 1; }
done

dat=${1:-}
if [ -z "$dat" ]; then
    [ "$(id -u)" = 0 ] && [ -e "$T/trace" ] || { echo "bench-decode-dat: needs root and tracefs to record (or pass a .dat)" >&2; exit 1; }
    dat=$work/bench.dat
    mkdir "$T/instances/$inst"
    # ~48 bytes per event: size the per-CPU buffer for the target with headroom.
    ncpu=$(nproc)
    echo $(( TARGET_EVENTS * 64 / 1024 / ncpu + 1024 )) > "$T/instances/$inst/buffer_size_kb"
    for e in sched irq irq_vectors timer raw_syscalls; do echo 1 > "$T/instances/$inst/events/$e/enable"; done
    count() { awk '/^entries:/ {s += $2} END {print s+0}' "$T"/instances/$inst/per_cpu/cpu*/stats; }
    for _ in $(seq 1 30); do
        timeout 10 stress-ng --cpu 2 --timeout 2s --metrics-brief >/dev/null 2>&1 || true
        (for _ in $(seq 1 2000); do cat /proc/self/stat >/dev/null; done) || true
        [ "$(count)" -ge "$TARGET_EVENTS" ] && break
    done
    echo 0 > "$T/instances/$inst/tracing_on"
    echo "recorded $(count) events"
    (cd "$work" && trace-cmd extract -B "$inst" -o "$dat" >/dev/null 2>&1)
    rmdir "$T/instances/$inst" 2>/dev/null || true
fi
ls -l "$dat"
[ -n "${BENCH_DAT_OUT:-}" ] && cp "$dat" "$BENCH_DAT_OUT"

# latscope: the `decode --stats` subcommand when it is built, else the library bench harness.
cargo build --release -q -p latscope || true
cargo build --release -q -p latscope-decode --benches
tdir=${CARGO_TARGET_DIR:-target}
lat=("$tdir/release/latscope" decode --stats "$dat")
if ! "${lat[@]}" >/dev/null 2>&1; then
    harness=$(ls -t "$tdir"/release/deps/decode_dat-* 2>/dev/null | grep -v '\.d$' | head -1)
    echo "note: 'latscope decode --stats' is not available yet; timing the library harness $harness"
    lat=("$harness" "$dat")
fi

t_us() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
median() { printf "%s\n" "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
"${lat[@]}" | head -3
# Alternated rounds, medians: this VM's speed drifts by tens of percent within a minute.
ROUNDS=${ROUNDS:-7}
tc=(); lt=()
for _ in $(seq 1 "$ROUNDS"); do
    tc+=("$(t_us trace-cmd report -i "$dat")")
    lt+=("$(t_us "${lat[@]}")")
done
tc_us=$(median "${tc[@]}")
lat_us=$(median "${lt[@]}")
rss=$(/usr/bin/time -v "${lat[@]}" 2>&1 >/dev/null | awk -F: '/Maximum resident/ {gsub(/ /, "", $2); print $2}')
tc_rss=$(/usr/bin/time -v trace-cmd report -i "$dat" 2>&1 >/dev/null | awk -F: '/Maximum resident/ {gsub(/ /, "", $2); print $2}')
echo "rounds: $ROUNDS alternated; trace-cmd ms: $(printf '%s ' "${tc[@]}" | awk '{for (i = 1; i <= NF; i++) printf "%d ", $i / 1000}')"
echo "                        latscope ms:  $(printf '%s ' "${lt[@]}" | awk '{for (i = 1; i <= NF; i++) printf "%d ", $i / 1000}')"
echo "trace-cmd report: $((tc_us / 1000)) ms median, max RSS ${tc_rss} KiB"
echo "latscope:         $((lat_us / 1000)) ms median, max RSS ${rss} KiB"
awk -v a="$tc_us" -v b="$lat_us" 'BEGIN { printf "ratio: latscope is %.1fx faster than trace-cmd report (target >= 20x)\n", a / (b > 0 ? b : 1) }'
