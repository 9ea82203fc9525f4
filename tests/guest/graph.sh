#!/bin/sh
# Guest script (scripts/kernel-vm.sh run, LATSCOPE_GUEST_KERNEL=std): `latscope timer --trace --graph` live on
# CPU 1 (1 ms, SCHED_FIFO 95) of Debian's standard 6.1 kernel, with a SCHED_OTHER shell on CPU 1 writing a
# 900-character `<3>` message to /dev/kmsg every 250 ms (the kernel prints it to the serial console with
# interrupts off); then the same run stopped by SIGINT. The rate is bounded to keep the console's share of CPU 1
# small when the host slows the guest down: a message's console write took 3.5 ms under TCG with function_graph
# (fixtures/dat/debian-6.1.0-56-amd64-qemu-kmsg-function_graph-v7.dat), 7 % of CPU 1 at the 50 ms this wrote
# before and tens of % with the host loaded; with it, 1 run in 20 hung (RCU stall on CPU 1, then soft lockups on
# both CPUs, cause not found: scripts/kernel-vm.sh now dumps the vCPUs' registers of a hung guest). The point is
# a few long irqs-off console writes beside the measuring thread, not a console flood. The top-level tracing
# state function_graph runs in is saved around each run. crates/latscope/tests/kernels.rs asserts on /tmp/out.
out=/tmp/out
T=/sys/kernel/tracing
step() { echo "guest: $*" >/dev/ttyS0; }
# Every top-level file the capture writes, but the buffer sizes (recorded apart: an unexpanded buffer is
# given its expanded size and stays at it).
state() {
    for f in current_tracer tracing_on tracing_cpumask trace_clock max_graph_depth options/funcgraph-irqs \
        events/sched/sched_switch/enable events/sched/sched_switch/trigger events/timer/hrtimer_start/enable; do
        echo "$f: $(cat $T/$f)"
    done
    echo "instances: $(ls $T/instances)"
}
buffers() {
    for f in buffer_size_kb per_cpu/cpu0/buffer_size_kb per_cpu/cpu1/buffer_size_kb; do echo "$f: $(cat $T/$f)"; done
}
line=$(printf '%0900d' 0)
uname -r >$out/uname
state >$out/state-before
buffers >$out/buffers-before
step "timer --trace --graph with the /dev/kmsg writer on CPU 1"
taskset -c 1 sh -c "i=0; while :; do echo \"<3>latscope graph test \$i $line\" >/dev/kmsg; i=\$((i+1)); \
    usleep 250000; done" &
writer=$!
latscope timer --trace --graph -c 1 -p 95 -D 3s --json $out/graph.json >$out/graph.txt 2>&1
echo "rc=$?" >>$out/graph.txt
kill $writer
wait $writer 2>/dev/null
state >$out/state-after
buffers >$out/buffers-after
step "timer --trace --graph SIGINT"
latscope timer --trace --graph -c 1 -p 95 -D 60s -q --json $out/graph-sigINT.json >$out/graph-sigINT.txt 2>&1 &
pid=$!
sleep 3
kill -INT $pid
wait $pid
echo "rc=$?" >>$out/graph-sigINT.txt
state >$out/state-after-sigINT
step "done"
