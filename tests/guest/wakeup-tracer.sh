#!/bin/sh
# Guest script (scripts/kernel-vm.sh run): `latscope timer --wakeup-tracer rt` (the kernel's wakeup_rt tracer in
# latscope's instance beside the measuring thread, FIFO 95 on CPU 1) with two known causes injected on CPU 1:
# 1. a SCHED_FIFO 97 spin of 100 ms above the measuring thread (latscope's own worst wakeup covers it; wakeup_rt
#    does not count a wakeup that does not outrank the task running where it happens);
# 2. a SCHED_FIFO 90 spin of 2.1 s below it: CPU 1's real-time time runs out (sched_rt_runtime_us of every
#    sched_rt_period_us) and no real-time task runs until the next period, so the measuring thread is woken
#    while a normal task or the idle task runs and waits for the period's end: wakeup_rt measures that. The
#    runtime is counted per period, so only a spin of at least a period plus the runtime (1.95 s) throttles
#    whatever its phase: one of 1.5 s did not once in make test-kernels (latscope's worst 3.97 ms);
# 3. SIGINT and SIGTERM mid-run. The tracing state is saved around every run.
# 4. The fixture: scenario 2 with wakeup_rt set by hand in an instance (the top level's clock), its trace file.
# crates/latscope/tests/kernels.rs asserts on /tmp/out.
out=/tmp/out
T=/sys/kernel/tracing
step() { echo "guest: $*" >/dev/ttyS0; }
state() {
    for f in current_tracer tracing_max_latency tracing_thresh trace_clock tracing_on options/function-trace \
        options/latency-format options/overwrite; do
        echo "$f: $(cat $T/$f)"
    done
    echo "instances: $(ls $T/instances)"
}
# Spins once on CPU 1 ($1: priority, $2: spin) 500 ms after latscope's measuring thread for CPU 1 exists; prints
# the spin's CLOCK_MONOTONIC start and end.
spin_when_measuring() {
    i=0
    while ! grep -qs '^latscope-t1$' /proc/[0-9]*/task/[0-9]*/comm; do
        usleep 20000
        i=$((i + 1))
        [ $i -lt 1500 ] || { echo "no latscope-t1 thread appeared"; return 1; }
    done
    latscope inject --cpu 1 --prio "$1" --spin "$2" --every 20s --delay 500ms -D 3s --times
}
uname -r >$out/uname
cat /proc/sys/kernel/sched_rt_runtime_us /proc/sys/kernel/sched_rt_period_us >$out/rt-runtime
cat $T/available_tracers >$out/available-tracers
step "above: FIFO 97 spin over the FIFO 95 measuring thread"
state >$out/state-before-above
spin_when_measuring 97 100ms >$out/inject-above.txt 2>&1 &
latscope timer --wakeup-tracer rt -c 1 -p 95 -D 4s -q --json $out/above.json >$out/above.txt 2>&1
echo "rc=$?" >>$out/above.txt
wait
state >$out/state-after-above
step "below: FIFO 90 spin under the FIFO 95 measuring thread until RT throttling"
spin_when_measuring 90 2100ms >$out/inject-below.txt 2>&1 &
latscope timer --wakeup-tracer rt -c 1 -p 95 -D 4s -q --json $out/below.json >$out/below.txt 2>&1
echo "rc=$?" >>$out/below.txt
wait
state >$out/state-after-below
dmesg | grep -i "throttl" >$out/dmesg-throttling.txt
for sig in INT TERM; do
    step "SIG$sig"
    state >$out/state-before-sig$sig
    latscope timer --wakeup-tracer rt -c 1 -p 95 -D 60s -q --json $out/sig$sig.json >$out/sig$sig.txt 2>&1 &
    pid=$!
    sleep 3
    kill -$sig $pid
    wait $pid
    echo "rc=$?" >>$out/sig$sig.txt
    state >$out/state-after-sig$sig
done
step "fixture"
mkdir $T/instances/fixture
I=$T/instances/fixture
echo "$(sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)" >$I/trace_clock
echo 0 >$I/options/function-trace
echo wakeup_rt >$I/current_tracer
spin_when_measuring 90 2100ms >$out/inject-fixture.txt 2>&1 &
latscope timer -c 1 -p 95 -D 4s -q --json $out/fixture-timer.json >/dev/null 2>&1
wait
cat $I/tracing_max_latency >$out/fixture-max-latency
cat $I/trace >$out/fixture-wakeup_rt.txt
echo nop >$I/current_tracer
rmdir $I
step "done"
