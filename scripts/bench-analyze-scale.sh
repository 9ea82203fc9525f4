#!/usr/bin/env bash
# Benchmark: `latscope analyze` (as by default: traces of more than 2^17 records in windows, two streamed passes,
# one window held; and whole, with --max-memory 64G) against `trace-cmd report` on the same .dat files of ~1 M,
# ~6 M and >= 20 M events, in one run: wall time, CPU time (user + system) and peak RSS of each, and the ratios. The traces are
# recorded on this machine with `latscope record` under `stress-ng --cpu 2 --io 1 --timer 1` (root, tracefs)
# and cached under ~/.cache/latscope-bench (reused while they hold the target count). Targets (issue #18):
# analyze peak RSS <= 150 MB on the 6 M file and <= +10 % from 6 M to 20 M; analyze >= 3x faster than
# trace-cmd report (wall and CPU). Never pass/fail: it prints the figures.
# Usage: scripts/bench-analyze-scale.sh            (env CACHE=DIR, SIZES="1 6 20" (millions), ROUNDS=1,
#                                                    ANALYZE_ARGS="--brief", LATSCOPE=path/to/latscope)
# Run it alone (it records and measures): flock /tmp/latscope-live.lock scripts/bench-analyze-scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${CACHE:-$HOME/.cache/latscope-bench}
SIZES=${SIZES:-1 6 20}
ROUNDS=${ROUNDS:-1}
ANALYZE_ARGS=${ANALYZE_ARGS:---brief}
tdir=${CARGO_TARGET_DIR:-target}
LATSCOPE=${LATSCOPE:-$tdir/release/latscope}
stress_pid=
cleanup() { [ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null || true; }
trap cleanup EXIT INT TERM

for tool in trace-cmd stress-ng /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench-analyze-scale: $tool missing (run scripts/install-deps.sh)" >&2; exit 1; }
done
[ -n "${LATSCOPE_SKIP_BUILD:-}" ] || cargo build --release -q --locked -p latscope
mkdir -p "$CACHE"

# Events in a .dat, as trace-cmd report counts them (latscope decode --stats, first line `N events …`).
events_in() { "$LATSCOPE" decode --stats --format json "$1" 2>/dev/null | sed -n 's/.*"events":\([0-9]*\).*/\1/p' | head -1; }

# Records FILE with about TARGET events: this machine writes ~200 k events/s under the stress load, so the
# duration starts from that and grows until the count is reached (kept for the next run).
record() {
    local file=$1 target=$2 secs=$(( $2 / 180000 + 2 )) n=0
    [ "$(id -u)" = 0 ] || { echo "bench-analyze-scale: needs root to record $file" >&2; exit 1; }
    for _ in 1 2 3; do
        stress-ng --cpu 2 --io 1 --timer 1 --timeout $(( secs + 5 ))s >/dev/null 2>&1 &
        stress_pid=$!
        sleep 1
        "$LATSCOPE" record -D "${secs}s" --buffer-kb 16384 -o "$file.tmp" >/dev/null 2>"$file.log" || { cat "$file.log" >&2; exit 1; }
        kill "$stress_pid" 2>/dev/null || true; wait "$stress_pid" 2>/dev/null || true; stress_pid=
        n=$(events_in "$file.tmp")
        echo "recorded $file: ${secs}s, $n events" >&2
        [ "${n:-0}" -ge "$target" ] && { mv "$file.tmp" "$file"; return; }
        secs=$(( secs * target / (n + 1) + 2 ))
    done
    echo "bench-analyze-scale: could not reach $target events in $file" >&2; exit 1
}

# Runs a command with output discarded; prints `wall_s cpu_s rss_kb`.
measure() {
    /usr/bin/time -f '%e %U %S %M' -o /tmp/bench-analyze-scale.$$ "$@" >/dev/null 2>/dev/null || true
    awk '{printf "%.2f %.2f %d\n", $1, $2 + $3, $4}' /tmp/bench-analyze-scale.$$
    rm -f /tmp/bench-analyze-scale.$$
}
# The best wall and CPU time of the rounds, and the largest peak RSS (the bound is a worst case).
best() { awk 'NR == 1 || $1 < w { w = $1 } NR == 1 || $2 < c { c = $2 } $3 > r { r = $3 } END { print w, c, r }'; }

printf '%-8s %10s %8s | %-26s | %-26s | %-26s | %s\n' size events MB "analyze wall/cpu/RSS" "whole wall/cpu/RSS" \
    "trace-cmd wall/cpu/RSS" "ratio to trace-cmd: analyze wall, cpu; whole wall, cpu"
declare -A arss wrss
for m in $SIZES; do
    target=$(( m * 1000000 ))
    file=$CACHE/analyze-${m}M.dat
    n=$( [ -f "$file" ] && events_in "$file" || echo 0 )
    if [ "${n:-0}" -lt "$target" ]; then record "$file" "$target"; n=$(events_in "$file"); fi
    a=(); w=(); t=()
    for _ in $(seq 1 "$ROUNDS"); do
        # shellcheck disable=SC2086
        a+=("$(measure "$LATSCOPE" analyze $ANALYZE_ARGS "$file")")
        # shellcheck disable=SC2086
        w+=("$(measure "$LATSCOPE" analyze --max-memory 64G $ANALYZE_ARGS "$file")")
        t+=("$(measure trace-cmd report -i "$file")")
    done
    read -r aw ac ar < <(printf '%s\n' "${a[@]}" | best)
    read -r ww wc wr < <(printf '%s\n' "${w[@]}" | best)
    read -r tw tc tr < <(printf '%s\n' "${t[@]}" | best)
    arss[$m]=$ar; wrss[$m]=$wr
    mb=$(( $(stat -c %s "$file") / 1000000 ))
    printf '%-8s %10d %8d | %6ss %6ss %7d MB | %6ss %6ss %7d MB | %6ss %6ss %7d MB | %s\n' "${m}M" "$n" "$mb" \
        "$aw" "$ac" $(( ar / 1024 )) "$ww" "$wc" $(( wr / 1024 )) "$tw" "$tc" $(( tr / 1024 )) \
        "$(awk -v aw="$aw" -v ac="$ac" -v ww="$ww" -v wc="$wc" -v tw="$tw" -v tc="$tc" \
        'function r(t, x) { return t / (x > 0 ? x : 0.01) } BEGIN { printf "%.1fx, %.1fx; %.1fx, %.1fx", r(tw, aw), r(tc, ac), r(tw, ww), r(tc, wc) }')"
done
for kind in default whole; do
    if [ "$kind" = default ]; then a=${arss[6]:-}; b=${arss[20]:-}; else a=${wrss[6]:-}; b=${wrss[20]:-}; fi
    [ -n "$a" ] && [ -n "$b" ] && awk -v k="$kind" -v a="$a" -v b="$b" 'BEGIN { printf "analyze (%s) peak RSS from 6M to 20M: %+.0f %% (target <= +10 %%); 6M: %d MB (target <= 150 MB)\n", k, (b - a) * 100 / a, a / 1024 }'
done
echo "(wall and CPU: best of $ROUNDS alternated round(s), RSS: largest; analyze args: $ANALYZE_ARGS; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
