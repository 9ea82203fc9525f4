#!/usr/bin/env bash
# Records the live fixtures `latscope analyze` is tested on, in a private tracefs instance (the global trace
# buffer is never touched; the instance is removed and every changed knob restored on exit, error or signal):
#
#   1. spinner: cyclictest -b (SCHED_FIFO 95, 100 us interval) on CPU $CPU while `latscope inject` spins a
#      SCHED_FIFO 97 thread for 2 ms every 37 ms on the same CPU; events sched, irq, irq_vectors, hrtimer and
#      the clock_nanosleep sys_exit; trace clock mono so the injector's spin times (CLOCK_MONOTONIC, kept next
#      to the trace) line up with it. The trace is trimmed to the 8 ms before the breaking thread's last switch-in.
#   2. rt-throttle: a SCHED_FIFO 50 busy loop on CPU $CPU for 2.2 s (a niced SCHED_OTHER loop beside it) with
#      sched events only.
#   3. printk storm: cyclictest -b (SCHED_FIFO 95, 1 ms interval) on CPU $CPU while a shell on the same CPU
#      writes `<3>` messages to /dev/kmsg every 5 ms (with a serial console at loglevel 4 each one is printed
#      with interrupts off); the stacktrace trigger on the timer interrupt's entry when it finds a task
#      running; trimmed to the 30 ms before the breaking thread's last switch-in.
#
# usage: sudo scripts/capture-analyze-fixtures.sh [OUTDIR]   (default fixtures/live)
#        env: CPU (default 1), LATSCOPE (default target/release/latscope, needs the hidden `inject` command)
set -euo pipefail

OUT=${1:-fixtures/live}
CPU=${CPU:-1}
LATSCOPE=${LATSCOPE:-target/release/latscope}
T=/sys/kernel/tracing

[ "$(id -u)" = 0 ] || { echo "capture-analyze-fixtures: needs root (tracefs instance, SCHED_FIFO)" >&2; exit 1; }
command -v cyclictest >/dev/null || { echo "capture-analyze-fixtures: cyclictest missing (scripts/install-deps.sh)" >&2; exit 1; }
[ -x "$LATSCOPE" ] || { echo "capture-analyze-fixtures: $LATSCOPE missing: cargo build --release -p latscope" >&2; exit 1; }

mounted=0
if [ ! -d "$T/instances" ]; then
    mount -t tracefs nodev "$T"
    mounted=1
fi
INST="$T/instances/latscope-fixture-$$"
global_on=$(cat "$T/tracing_on")
pids=()

cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -d "$INST" ]; then
        echo 0 > "$INST/tracing_on" || true
        rmdir "$INST" || echo "capture-analyze-fixtures: could not remove $INST; rmdir it by hand" >&2
    fi
    if [ "$(cat "$T/tracing_on")" != "$global_on" ]; then echo "$global_on" > "$T/tracing_on"; fi
    if [ "$mounted" = 1 ]; then umount "$T" || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

case "$(uname -m)" in
    x86_64) NANOSLEEP_NR=230 ;;
    aarch64 | riscv64) NANOSLEEP_NR=115 ;;
    *) NANOSLEEP_NR= ;;
esac

mkdir "$INST"
mkdir -p "$OUT"
echo mono > "$INST/trace_clock"
printf '%x\n' $((1 << CPU)) > "$INST/tracing_cpumask"
echo 8192 > "$INST/buffer_size_kb"

enable() { for ev in "$@"; do [ -e "$INST/events/$ev/enable" ] && echo 1 > "$INST/events/$ev/enable"; done; }

# Keep the comment header and the lines from $1 ms before to 1 ms after the last line matching $2 (a stack's
# ` => fn` lines go with the line before them).
trim_around_last() {
    awk -v keep="$1" -v anchor="$2" '
        /^#/ { hdr[nh++] = $0; next }
        { if (match($0, /[0-9]+\.[0-9]+:/)) t = substr($0, RSTART, RLENGTH - 1) + 0
          if ($0 ~ anchor) at = t
          lines[n] = $0; ts[n++] = t }
        END { for (i = 0; i < nh; i++) print hdr[i]
              for (i = 0; i < n; i++) if (ts[i] >= at - keep / 1000.0 && ts[i] <= at + 0.001) print lines[i] }'
}

# --- 1. cyclictest blocked by a higher-priority spinner ---------------------------------------------------
enable sched/sched_switch sched/sched_waking sched/sched_wakeup irq irq_vectors \
    timer/hrtimer_start timer/hrtimer_cancel timer/hrtimer_expire_entry timer/hrtimer_expire_exit
if [ -n "$NANOSLEEP_NR" ]; then
    echo "id == $NANOSLEEP_NR" > "$INST/events/raw_syscalls/sys_exit/filter"
    enable raw_syscalls/sys_exit
fi
echo 1 > "$INST/tracing_on"
"$LATSCOPE" inject --cpu "$CPU" --prio 97 --spin 2ms --every 37ms --delay 40ms -D 2s --times \
    > "$OUT/spinner-cyclictest-spins.txt" &
pids+=($!)
cyclictest -m -q -a "$CPU" -t 1 -p 95 -i 100 -b 1000 -D 2 > "$OUT/spinner-cyclictest-output.txt" 2>&1 || true
echo 0 > "$INST/tracing_on"
wait "${pids[0]}" || true
pids=()
tid=$(sed -n 's/^# Break thread: *0*\([0-9]*\).*/\1/p' "$OUT/spinner-cyclictest-output.txt")
[ -n "$tid" ] || { echo "capture-analyze-fixtures: cyclictest did not break (see $OUT/spinner-cyclictest-output.txt)" >&2; exit 1; }
trim_around_last 8 "next_pid=$tid " < "$INST/trace" > "$OUT/spinner-cyclictest-trace.txt"

# --- 2. a SCHED_FIFO busy loop, throttled by the RT bandwidth limit --------------------------------------
echo 0 > "$INST/events/enable"
[ -e "$INST/events/raw_syscalls/sys_exit/filter" ] && echo 0 > "$INST/events/raw_syscalls/sys_exit/filter"
echo > "$INST/trace"
enable sched/sched_switch sched/sched_waking sched/sched_wakeup
echo 1 > "$INST/tracing_on"
# A niced SCHED_OTHER loop on the same CPU wants the CPU too: since Linux 6.12 the fair deadline server only
# takes the RT task's CPU away when a normal task is runnable there (older kernels throttle regardless).
timeout 2.4 nice -n 19 taskset -c "$CPU" sh -c 'while :; do :; done' &
pids+=($!)
# timeout stays SCHED_OTHER: a SCHED_FIFO timeout on the loop's CPU would never run to stop it.
timeout 2.2 chrt -f 50 taskset -c "$CPU" sh -c 'while :; do :; done' || true
wait "${pids[0]}" || true
pids=()
echo 0 > "$INST/tracing_on"
cat "$INST/trace" > "$OUT/rt-throttle-busyloop-trace.txt"
{
    echo "kernel.sched_rt_runtime_us=$(cat /proc/sys/kernel/sched_rt_runtime_us)"
    echo "kernel.sched_rt_period_us=$(cat /proc/sys/kernel/sched_rt_period_us)"
} > "$OUT/rt-throttle-busyloop-sysctl.txt"

# --- 3. cyclictest during a printk storm, with kernel stacks at the timer interrupt ----------------------
echo 0 > "$INST/events/enable"
echo > "$INST/trace"
enable irq_vectors/local_timer_entry irq_vectors/local_timer_exit sched/sched_switch sched/sched_waking \
    sched/sched_wakeup timer/hrtimer_start timer/hrtimer_expire_entry timer/hrtimer_expire_exit
if [ -n "$NANOSLEEP_NR" ]; then
    echo "id == $NANOSLEEP_NR" > "$INST/events/raw_syscalls/sys_exit/filter"
    enable raw_syscalls/sys_exit
fi
STACK='stacktrace if common_pid != 0'
echo "$STACK" > "$INST/events/irq_vectors/local_timer_entry/trigger"
echo 1 > "$INST/tracing_on"
# Messages of ~150 characters: on this Firecracker VM's emulated serial port a 35-character one held interrupts
# off for 0.6-0.7 ms, under cyclictest's 700 us break in half of the runs; 150 characters hold them 3-5 ms.
PAD=$(printf '%0120d' 0)
(sleep 0.3; taskset -c "$CPU" sh -c 'i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo "<3>latscope fixture: printk storm $i $1" > /dev/kmsg; sleep 0.005; done' storm "$PAD") &
pids+=($!)
cyclictest -m -q -a "$CPU" -t 1 -p 95 -i 1000 -b 700 -D 2 > "$OUT/printk-cyclictest-output.txt" 2>&1 || true
echo 0 > "$INST/tracing_on"
wait "${pids[0]}" || true
pids=()
echo "!$STACK" > "$INST/events/irq_vectors/local_timer_entry/trigger"
tid=$(sed -n 's/^# Break thread: *0*\([0-9]*\).*/\1/p' "$OUT/printk-cyclictest-output.txt")
[ -n "$tid" ] || { echo "capture-analyze-fixtures: cyclictest did not break in the printk storm (see $OUT/printk-cyclictest-output.txt; is the console serial at loglevel > 3?)" >&2; exit 1; }
trim_around_last 30 "next_pid=$tid " < "$INST/trace" > "$OUT/printk-cyclictest-trace.txt"
grep -q console_ "$OUT/printk-cyclictest-trace.txt" ||
    echo "capture-analyze-fixtures: warning: no console frame in the printk trace; cyclictest broke on something else" >&2
echo "capture-analyze-fixtures: wrote $OUT/spinner-cyclictest-*.txt, $OUT/rt-throttle-busyloop-*.txt and $OUT/printk-cyclictest-*.txt"
