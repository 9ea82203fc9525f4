#!/bin/sh
# Guest script (LATSCOPE_GUEST_TIMEOUT=240 scripts/kernel-vm.sh run scripts/guest/wakeup-rt-function-trace.sh
# OUTDIR): the experiment behind `timer --wakeup-tracer` keeping options/function-trace off (#17 item 3). wakeup_rt
# with function-trace on, in a tracefs instance (the top level's clock), while latscope's 1 ms SCHED_FIFO 95
# thread measures on CPU 1 for 3 s. Progress goes to the serial console (a freeze shows as the last step
# reached); OUTDIR keeps the trace and the timer's result when the guest survives. Then the recipe's case: the
# same at the top level with a SCHED_FIFO 50 shell loop sleeping 1 ms 300 times on CPU 1 (tests/guest/kernel-facts.sh
# step 3 with function-trace on).
out=/tmp/out
T=/sys/kernel/tracing
step() { echo "guest: $*" >/dev/ttyS0; }
uname -a >$out/uname
mkdir $T/instances/ft
I=$T/instances/ft
echo "$(sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)" >$I/trace_clock
echo 1 >$I/options/function-trace
step "wakeup_rt with function-trace on, in an instance"
echo wakeup_rt >$I/current_tracer
step "tracer set; latscope timer -c 1 -p 95 -i 1ms -D 3s"
latscope timer -c 1 -p 95 -D 3s -q --json $out/timer.json >$out/timer.txt 2>&1
step "timer done rc=$?"
cat $I/tracing_max_latency >$out/max-latency
cat $I/trace >$out/wakeup_rt-function-trace.txt
echo nop >$I/current_tracer
rmdir $I
step "top level: wakeup_rt with function-trace on, chrt -f 50 loop of usleep 1000 on CPU 1"
echo 1 >$T/options/function-trace
echo wakeup_rt >$T/current_tracer
chrt -f 50 taskset -c 1 sh -c 'i=0; while [ $i -lt 300 ]; do usleep 1000; i=$((i+1)); done'
step "loop done"
cat $T/tracing_max_latency >$out/top-max-latency
cat $T/trace >$out/top-wakeup_rt-function-trace.txt
echo nop >$T/current_tracer
echo 0 >$T/tracing_max_latency
step "done"
