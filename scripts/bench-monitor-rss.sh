#!/usr/bin/env bash
# Benchmark: is `latscope monitor`'s resident memory flat over a long run? Runs
#   latscope monitor -c 1 -i 1ms -p 95 -D MINUTES+1m --listen 127.0.0.1:PORT [EXTRA]
# started on CPU 0 under `nice`, scrapes /metrics every second, reads VmRSS every minute and states the
# least-squares slope (KiB/min) over the run after its first minute (start-up: threads, locked memory).
# Not a test: it never fails on the figures. Needs root, CPU 1, curl and python3.
# Usage: scripts/bench-monitor-rss.sh [MINUTES]   (default 30; EXTRA="--noise 1%" adds options;
#        LATSCOPE=path picks the binary; OUT=dir keeps the samples there)
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=${1:-30}
LATSCOPE=${LATSCOPE:-target/release/latscope}
PORT=${PORT:-19465}
EXTRA=${EXTRA:-}
for tool in curl python3 taskset; do
    command -v "$tool" >/dev/null || { echo "bench: $tool missing; run scripts/install-deps.sh" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench: run as root (SCHED_FIFO 95, mlockall)" >&2; exit 1; }
[ -x "$LATSCOPE" ] || cargo build --release -p latscope >/dev/null
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"

# shellcheck disable=SC2086  # EXTRA is a list of options
nice -n 10 taskset -c 0 "$LATSCOPE" monitor -c 1 -i 1ms -p 95 -D "$((MINUTES + 1))m" --listen "127.0.0.1:$PORT" \
    --json "$out/monitor.json" $EXTRA >/dev/null 2>"$out/monitor.log" &
pid=$!
trap 'kill "$pid" "${scraper:-}" 2>/dev/null || true' EXIT
( while kill -0 "$pid" 2>/dev/null; do curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics" || true; sleep 1; done ) &
scraper=$!
echo "bench: monitor pid $pid for $MINUTES min, RSS every minute into $out/rss.tsv" >&2
: >"$out/rss.tsv"
for m in $(seq 0 "$MINUTES"); do
    rss=$(awk '/VmRSS/ {print $2}' /proc/"$pid"/status 2>/dev/null) || break
    [ -n "$rss" ] || break
    printf '%s\t%s\n' "$m" "$rss" >>"$out/rss.tsv"
    [ "$m" = "$MINUTES" ] && { kill "$pid" 2>/dev/null || true; break; }
    sleep 60
done
wait "$pid" || true
python3 - "$out/rss.tsv" "$MINUTES" <<'PY'
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
print("minute RSS(KiB): " + " ".join(f"{m}:{k}" for m, k in rows))
pts = [(m, k) for m, k in rows if m >= 1]
n = len(pts)
if n < 3:
    sys.exit("bench: fewer than 3 samples after the first minute")
mx = sum(m for m, _ in pts) / n
my = sum(k for _, k in pts) / n
slope = sum((m - mx) * (k - my) for m, k in pts) / sum((m - mx) ** 2 for m, _ in pts)
print(f"monitor RSS over {sys.argv[2]} min: {pts[0][1]} KiB at minute {pts[0][0]}, {pts[-1][1]} KiB at minute "
      f"{pts[-1][0]}, min {min(k for _, k in pts)}, max {max(k for _, k in pts)}; slope {slope:.1f} KiB/min")
PY
