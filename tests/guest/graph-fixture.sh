#!/bin/sh
# Guest script (scripts/kernel-vm.sh run, LATSCOPE_GUEST_KERNEL=std): the origin of
# fixtures/dat/debian-6.1.0-56-amd64-qemu-kmsg-function_graph-v7.dat. function_graph set by hand on CPU 1 while
# `latscope timer` (10 ms, SCHED_FIFO 95) measures there and a SCHED_OTHER shell on CPU 1 writes `<3>` messages
# to /dev/kmsg (the kernel prints each to the serial console with interrupts off: printk → console_unlock →
# serial8250_console_write, seed 001's kind of cause); the last 2 MB of CPU 1's buffer kept as raw pages
# (`trace-cmd extract`). `latscope timer --trace --graph` itself runs live in tests/guest/graph.sh.
out=/tmp/out
T=/sys/kernel/tracing
step() { echo "guest: $*" >/dev/ttyS0; }
state() {
    for f in current_tracer tracing_on tracing_cpumask trace_clock max_graph_depth options/funcgraph-irqs \
        buffer_size_kb per_cpu/cpu0/buffer_size_kb per_cpu/cpu1/buffer_size_kb events/sched/sched_switch/enable \
        events/timer/hrtimer_start/enable; do
        echo "$f: $(cat $T/$f)"
    done
    echo "instances: $(ls $T/instances)"
}
# The cause: a 900-character `<3>` message to /dev/kmsg every 50 ms from CPU 1, SCHED_OTHER (the kernel prints
# it to the serial console with interrupts off, and a non-preemptible kernel runs the RT thread only when the
# write returns).
line=$(printf '%0900d' 0)
kmsg_writer() {
    taskset -c 1 sh -c "i=0; while :; do echo \"<3>latscope graph test \$i $line\" >/dev/kmsg; i=\$((i+1)); \
        usleep 50000; done" &
    writer=$!
}
uname -r >$out/uname
state >$out/state-boot
# 0. function_graph by hand on CPU 1 with the same cause and a 10 ms FIFO sleeper (latscope timer, untraced),
# the last 2 MB before its end kept as raw pages: the fixture the unit tests read.
step "function_graph by hand"
echo 2048 >$T/per_cpu/cpu1/buffer_size_kb
echo 2 >$T/tracing_cpumask
echo mono >$T/trace_clock
echo 1 >$T/events/sched/sched_switch/enable
echo 1 >$T/events/sched/sched_wakeup/enable
echo 1 >$T/events/timer/hrtimer_start/enable
echo function_graph >$T/current_tracer
kmsg_writer
latscope timer -c 1 -i 10ms -p 95 -D 4s -q --json $out/by-hand.json >$out/by-hand.txt 2>&1 &
timer=$!
sleep 3
echo 0 >$T/tracing_on
wait $timer
kill $writer
wait $writer 2>/dev/null
trace-cmd extract -o $out/graph-by-hand.dat >$out/trace-cmd.txt 2>&1
echo "rc=$?" >>$out/trace-cmd.txt
echo nop >$T/current_tracer
echo 0 >$T/events/enable
echo 3 >$T/tracing_cpumask
echo 1 >$T/tracing_on
