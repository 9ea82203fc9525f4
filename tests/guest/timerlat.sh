#!/bin/sh
# Guest script (scripts/kernel-vm.sh run): `latscope timer --backend timerlat` and `rtla timerlat hist`
# alternated on CPU 1, each once quiet and once with a known cause injected (a SCHED_FIFO 97 spinner above
# the timerlat/1 threads' FIFO 95, one spin of 100 ms, 500 ms after the tool's timerlat/1 thread appeared:
# rtla takes seconds to set up under TCG, so a spin at a fixed delay can miss its run). crates/latscope/tests/kernels.rs
# asserts on what it leaves in /tmp/out. Under TCG every second of guest work costs several host seconds.
out=/tmp/out
T=/sys/kernel/tracing
step() { echo "guest: $*" >/dev/ttyS0; }
# The tracing state latscope must leave as found: every knob the backend writes or could disturb.
state() {
    for f in current_tracer tracing_on tracing_thresh osnoise/cpus osnoise/timerlat_period_us \
        osnoise/stop_tracing_us osnoise/stop_tracing_total_us osnoise/print_stack; do
        echo "$f: $(cat $T/$f)"
    done
    echo "instances: $(ls $T/instances)"
    echo "timerlat threads: $(grep -l '^timerlat/' /proc/[0-9]*/comm 2>/dev/null | wc -l)"
}
# Spins once on CPU 1 500 ms after a timerlat/1 kernel thread exists (the tool under test then measures);
# prints the spin's CLOCK_MONOTONIC start and end.
spin_when_measuring() {
    i=0
    while ! grep -qs '^timerlat/1$' /proc/[0-9]*/comm; do
        usleep 20000
        i=$((i + 1))
        [ $i -lt 1500 ] || { echo "no timerlat/1 thread appeared"; return 1; }
    done
    latscope inject --cpu 1 --prio 97 --spin 100ms --every 10s --delay 500ms -D 1s --times
}
uname -r >$out/uname
uname -v >>$out/uname
cat $T/buffer_size_kb >$out/top-buffer-before
# 1. latscope, quiet.
step "latscope quiet"
state >$out/state-before
latscope timer --backend timerlat -c 1 -D 2s -q --json $out/latscope-quiet.json >$out/latscope-quiet.txt 2>&1
echo "rc=$?" >>$out/latscope-quiet.txt
state >$out/state-after-quiet
# 2. rtla, quiet.
step "rtla quiet"
rtla timerlat hist -c 1 -P f:95 -d 2s >$out/rtla-quiet.txt 2>&1
echo "rc=$?" >>$out/rtla-quiet.txt
# 3. latscope with the spinner (its spin times, CLOCK_MONOTONIC, in inject-latscope.txt).
step "latscope injected"
state >$out/state-before-injected
spin_when_measuring >$out/inject-latscope.txt 2>&1 &
latscope timer --backend timerlat -c 1 -D 3s --json $out/latscope-injected.json >$out/latscope-injected.txt 2>&1
echo "rc=$?" >>$out/latscope-injected.txt
wait
state >$out/state-after-injected
# 4. rtla with the same spinner.
step "rtla injected"
spin_when_measuring >$out/inject-rtla.txt 2>&1 &
# rtla's run in CLOCK_MONOTONIC-like uptime seconds, to tell a spin outside its run from a sample it lost.
cut -d' ' -f1 /proc/uptime >$out/rtla-injected-uptime
rtla timerlat hist -c 1 -P f:95 -d 3s >$out/rtla-injected.txt 2>&1
cut -d' ' -f1 /proc/uptime >>$out/rtla-injected-uptime
echo "rc=$?" >>$out/rtla-injected.txt
wait
# 5. latscope stopped by SIGINT and by SIGTERM mid-run: the state is restored and the partial result kept.
for sig in INT TERM; do
    step "latscope SIG$sig"
    state >$out/state-before-sig$sig
    latscope timer --backend timerlat -c 1 -D 60s -q --json $out/latscope-sig$sig.json >$out/latscope-sig$sig.txt 2>&1 &
    pid=$!
    sleep 2
    kill -$sig $pid
    wait $pid
    echo "rc=$?" >>$out/latscope-sig$sig.txt
    state >$out/state-after-sig$sig
done
cat $T/buffer_size_kb >$out/top-buffer-after
step "done"
