#!/usr/bin/env bash
# Records the fixtures of the explanation classes of issue #19 in a private tracefs instance (the global trace
# buffer is never touched; the instance is removed on exit, error or signal; cyclictest's break turns the
# top-level tracing_on off, which is restored). CPU $CPU only, trace clock mono. Takes the live tests' turn lock so it does not disturb them.
#
#   1. tracemark: cyclictest -b 60 --tracemark (the instance copies the top-level trace_marker writes) with
#      sched, irq, irq_vectors and hrtimer events; trimmed to 20 ms before the mark.
#   2. bh-off: loopback TCP traffic on the CPU with net/skb/sock/tcp/napi/qdisc/sched/irq events: the flags
#      column shows bottom halves disabled (`b`, `D`) in task context.
#
# usage: sudo scripts/capture-explain-fixtures.sh [OUTDIR]   (default fixtures/explain); env: CPU (default 1)
set -euo pipefail

OUT=${1:-fixtures/explain}
CPU=${CPU:-1}
T=/sys/kernel/tracing

[ "$(id -u)" = 0 ] || { echo "capture-explain-fixtures: needs root" >&2; exit 1; }
command -v cyclictest >/dev/null || { echo "capture-explain-fixtures: cyclictest missing" >&2; exit 1; }

exec 9>/tmp/latscope-live.lock
flock 9

INST="$T/instances/latscope-explain-$$"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -d "$INST" ]; then
        echo 0 > "$INST/tracing_on" || true
        echo 0 > "$INST/events/enable" || true
        rmdir "$INST" || echo "capture-explain-fixtures: could not remove $INST; rmdir it by hand" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$INST"
mkdir -p "$OUT"
echo mono > "$INST/trace_clock"
printf '%x\n' $((1 << CPU)) > "$INST/tracing_cpumask"
echo 8192 > "$INST/buffer_size_kb"
enable() { for ev in "$@"; do if [ -e "$INST/events/$ev/enable" ]; then echo 1 > "$INST/events/$ev/enable"; fi; done; }
reset() { echo 0 > "$INST/tracing_on"; echo 0 > "$INST/events/enable"; echo > "$INST/trace"; }
# Keep the header and the lines from $1 ms before to 1 ms after the last line matching $2.
trim_around_last() {
    awk -v keep="$1" -v anchor="$2" '
        /^#/ { hdr[nh++] = $0; next }
        { if (match($0, /[0-9]+\.[0-9]+:/)) t = substr($0, RSTART, RLENGTH - 1) + 0
          if ($0 ~ anchor) at = t
          lines[n] = $0; ts[n++] = t }
        END { for (i = 0; i < nh; i++) print hdr[i]
              for (i = 0; i < n; i++) if (ts[i] >= at - keep / 1000.0 && ts[i] <= at + 0.001) print lines[i] }'
}

# --- 1. cyclictest --tracemark --------------------------------------------------------------------------------
echo 1 > "$INST/options/copy_trace_marker"
enable sched/sched_switch sched/sched_waking sched/sched_wakeup irq irq_vectors timer/hrtimer_start \
    timer/hrtimer_expire_entry timer/hrtimer_expire_exit
echo 1 > "$INST/tracing_on"
# cyclictest -b writes 0 to the top-level tracing_on when it breaks: restore it.
global_on=$(cat "$T/tracing_on")
cyclictest -m -q -a "$CPU" -t 1 -p 95 -i 200 -b 60 --tracemark -D 20 > "$OUT/tracemark-cyclictest-output.txt" 2>&1 || true
echo "$global_on" > "$T/tracing_on"
echo 0 > "$INST/tracing_on"
echo 0 > "$INST/options/copy_trace_marker"
trim_around_last 20 "hit latency threshold" < "$INST/trace" > "$OUT/tracemark-cyclictest-trace.txt"

# --- 2. bottom halves disabled in task context: loopback TCP on the CPU --------------------------------------
reset
enable net skb sock tcp napi qdisc sched/sched_switch sched/sched_waking sched/sched_wakeup irq irq_vectors
echo 1 > "$INST/tracing_on"
taskset -c "$CPU" python3 - <<'EOF'
import socket, threading
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
def sink():
    c, _ = srv.accept()
    while c.recv(1 << 20):
        pass
t = threading.Thread(target=sink); t.start()
s = socket.create_connection(("127.0.0.1", port))
buf = b"x" * (1 << 16)
for _ in range(200):
    s.sendall(buf)
s.close(); t.join()
EOF
echo 0 > "$INST/tracing_on"
trim_around_last 20 "net_dev_xmit" < "$INST/trace" > "$OUT/bh-off-loopback-tcp-trace.txt"

echo "capture-explain-fixtures: wrote $OUT/"
