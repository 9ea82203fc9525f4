#!/bin/sh
# Guest script (scripts/kernel-vm.sh run): `latscope hwlat` on both CPUs with a short width and window (TCG
# leaves big gaps: every window is a sample), stopped by its duration, by SIGINT and by SIGTERM, refused while
# the hwlat tracer runs elsewhere; then the raw hwlat tracer run by hand with the same settings, its records
# kept twice: the kernel's own text (`trace`) and the raw pages (`trace-cmd extract`). The state latscope
# must leave as found is recorded around each run. crates/latscope/tests/kernels.rs asserts on /tmp/out.
out=/tmp/out
T=/sys/kernel/tracing
step() { echo "guest: $*" >/dev/ttyS0; }
state() {
    for f in current_tracer tracing_on tracing_thresh tracing_cpumask hwlat_detector/width hwlat_detector/window \
        hwlat_detector/mode; do
        echo "$f: $(cat $T/$f)"
    done
    echo "instances: $(ls $T/instances)"
    echo "hwlatd threads: $(grep -l '^hwlatd' /proc/[0-9]*/comm 2>/dev/null | wc -l)"
}
uname -r >$out/uname
uname -v >>$out/uname
grep -o hypervisor /proc/cpuinfo | head -1 >$out/cpuinfo-hypervisor
# 1. A run to its end: 50 ms of every 100 ms window, on CPUs 0-1 in turn.
step "latscope hwlat"
state >$out/state-before
latscope hwlat -c 0-1 --width 50ms --window 100ms --threshold 10us -D 3s --json $out/latscope.json \
    >$out/latscope.txt 2>&1
echo "rc=$?" >>$out/latscope.txt
state >$out/state-after
# 2. Stopped by SIGINT and SIGTERM mid-run: the partial result kept, the state restored.
for sig in INT TERM; do
    step "latscope hwlat SIG$sig"
    latscope hwlat -c 0-1 --width 50ms --window 100ms -D 60s -q --json $out/latscope-sig$sig.json \
        >$out/latscope-sig$sig.txt 2>&1 &
    pid=$!
    sleep 2
    kill -$sig $pid
    wait $pid
    echo "rc=$?" >>$out/latscope-sig$sig.txt
    state >$out/state-after-sig$sig
done
# 3. The hwlat tracer in use at the top level: latscope refuses and changes nothing.
step "latscope hwlat while busy"
echo hwlat >$T/current_tracer
state >$out/state-before-busy
latscope hwlat -c 0-1 -D 1s >$out/latscope-busy.txt 2>&1
echo "rc=$?" >>$out/latscope-busy.txt
state >$out/state-after-busy
echo nop >$T/current_tracer
# 4. The raw tracer with the same settings, by hand: its own text, then the same records' raw pages.
step "raw hwlat tracer"
echo 10 >$T/tracing_thresh
echo 50000 >$T/hwlat_detector/width
echo 100000 >$T/hwlat_detector/window
echo 3 >$T/tracing_cpumask
echo hwlat >$T/current_tracer
sleep 2
echo 0 >$T/tracing_on
cat $T/trace >$out/kernel-trace.txt
trace-cmd extract -o $out/kernel-hwlat.dat >$out/trace-cmd.txt 2>&1
echo "rc=$?" >>$out/trace-cmd.txt
echo nop >$T/current_tracer
echo 1 >$T/tracing_on
step "done"
