#!/bin/sh
# Guest script (scripts/kernel-vm.sh run): `latscope noise --backend osnoise` and `rtla osnoise top`
# alternated on CPU 1, each once quiet and once with a known cause injected (a SCHED_FIFO 97 thread,
# latscope-inject, spinning 100 ms once, 500 ms after the tool's osnoise/1 thread appeared: the osnoise
# thread runs SCHED_OTHER, so the spin is thread noise of latscope-inject). Then the kernel's stop condition
# (--stop-above), SIGINT and SIGTERM, and last the tracer's records at the top level as the kernel prints
# them and as raw pages (trace-cmd extract) for the decoding fixture. crates/latscope/tests/kernels.rs
# asserts on what it leaves in /tmp/out. Under TCG every second of guest work costs several host seconds.
out=/tmp/out
T=/sys/kernel/tracing
step() { echo "guest: $*" >/dev/ttyS0; }
# The tracing state latscope must leave as found: every knob the backend writes or could disturb.
state() {
    for f in current_tracer tracing_on tracing_thresh osnoise/cpus osnoise/period_us osnoise/runtime_us \
        osnoise/stop_tracing_us osnoise/stop_tracing_total_us osnoise/options osnoise/timerlat_period_us \
        osnoise/print_stack; do
        echo "$f: $(cat $T/$f)"
    done
    echo "instances: $(ls $T/instances)"
    echo "osnoise threads: $(grep -l '^osnoise/' /proc/[0-9]*/comm 2>/dev/null | wc -l)"
}
# Spins once on CPU 1 (SCHED_FIFO 97, `$1`) 500 ms after an osnoise/1 kernel thread exists; prints the spin's
# CLOCK_MONOTONIC start and end.
spin_when_measuring() {
    i=0
    while ! grep -qs '^osnoise/1$' /proc/[0-9]*/comm; do
        usleep 20000
        i=$((i + 1))
        [ $i -lt 1500 ] || { echo "no osnoise/1 thread appeared"; return 1; }
    done
    latscope inject --cpu 1 --prio 97 --spin "$1" --every 10s --delay 500ms -D 1s --times
}
uname -r >$out/uname
uname -v >>$out/uname
# 1. latscope, quiet.
step "latscope quiet"
state >$out/state-before
latscope noise --backend osnoise -c 1 -D 2s -q --json $out/latscope-quiet.json >$out/latscope-quiet.txt 2>&1
echo "rc=$?" >>$out/latscope-quiet.txt
state >$out/state-after-quiet
# 2. rtla, quiet.
step "rtla quiet"
rtla osnoise top -q -c 1 -d 2s >$out/rtla-quiet.txt 2>&1
echo "rc=$?" >>$out/rtla-quiet.txt
# 3. latscope with the spinner (its spin times, CLOCK_MONOTONIC, in inject-latscope.txt).
step "latscope injected"
state >$out/state-before-injected
spin_when_measuring 100ms >$out/inject-latscope.txt 2>&1 &
latscope noise --backend osnoise -c 1 -D 3s --json $out/latscope-injected.json >$out/latscope-injected.txt 2>&1
echo "rc=$?" >>$out/latscope-injected.txt
wait
state >$out/state-after-injected
# 4. rtla with the same spinner.
step "rtla injected"
spin_when_measuring 100ms >$out/inject-rtla.txt 2>&1 &
rtla osnoise top -q -c 1 -d 3s >$out/rtla-injected.txt 2>&1
echo "rc=$?" >>$out/rtla-injected.txt
wait
# 5. The kernel's stop condition: a single noise above 50 ms (the spin) stops the run with exit code 2.
step "latscope stop-above"
state >$out/state-before-stop
spin_when_measuring 100ms >$out/inject-stop.txt 2>&1 &
latscope noise --backend osnoise -c 1 -D 30s -q --stop-above 50ms --period 100ms --json $out/latscope-stop.json \
    >$out/latscope-stop.txt 2>&1
echo "rc=$?" >>$out/latscope-stop.txt
wait
state >$out/state-after-stop
# 6. latscope stopped by SIGINT and by SIGTERM mid-run: the state is restored and the partial result kept.
for sig in INT TERM; do
    step "latscope SIG$sig"
    state >$out/state-before-sig$sig
    latscope noise --backend osnoise -c 1 -D 60s -q --period 100ms --json $out/latscope-sig$sig.json \
        >$out/latscope-sig$sig.txt 2>&1 &
    pid=$!
    sleep 2
    kill -$sig $pid
    wait $pid
    echo "rc=$?" >>$out/latscope-sig$sig.txt
    state >$out/state-after-sig$sig
done
# 7. The fixture: osnoise with its events at the top level (100 ms periods) for about a second, with a 20 ms
#    spin and serial console writes, read as the kernel prints it and as raw pages of the same buffer.
step "records"
echo 64 >$T/buffer_size_kb
# 6.1 parses osnoise/cpus past the bytes written unless they end in a NUL.
printf '1\0' >$T/osnoise/cpus
echo 100000 >$T/osnoise/runtime_us
echo 100000 >$T/osnoise/period_us
echo osnoise >$T/set_event
echo osnoise >$T/current_tracer
latscope inject --cpu 1 --prio 97 --spin 20ms --every 300ms --delay 200ms -D 1s --times >$out/inject-records.txt 2>&1 &
(i=0; while [ $i -lt 50 ]; do echo "x $i" >/dev/ttyS0; usleep 10000; i=$((i+1)); done) &
wait
echo 0 >$T/tracing_on
cat $T/trace >$out/osnoise-kernel.txt
trace-cmd extract -o $out/osnoise.dat >$out/extract.log 2>&1
echo nop >$T/current_tracer
echo >$T/set_event
step "done"
