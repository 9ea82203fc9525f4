#!/bin/sh
# Guest script (scripts/kernel-vm.sh run): the facts the guest tests in crates/latscope/tests/kernels.rs
# assert on. Runs as root in the qemu guest; everything it leaves in /tmp/out comes back to the host.
# Keep it short: under TCG every second of guest work costs several of the host's.
out=/tmp/out
T=/sys/kernel/tracing
uname -r >$out/uname
uname -v >>$out/uname

# The spinner ends on its own (latscope inject: one spin of 400 ms, then it exits). A shell loop killed from
# CPU 0 spun for as long as CPU 0 was late, and under host load a late CPU 0 is what a TCG guest has. It starts
# as SCHED_FIFO 96 (chrt): the trace knows a task's priority from its switches, and a thread that raised its
# own while running is seen at 120 until its next switch.
# 1. A latscope tracing command must leave the top-level buffer as it found it (6.1: "7 (expanded: 1408)",
#    then grows on first use). Scenario recorded meanwhile, on CPU 1:
#    - a SCHED_OTHER task sleeping 2 ms at a time (its hrtimer expires in ktimers/1 on PREEMPT_RT),
#    - at 0.4 s, one 350 ms sleep on CPU 1: a timer sure to expire during the spin (the 2 ms sleeper may be
#      between two sleeps, runnable, when the spin starts: then no timer of its expires in ktimers/1 then),
#    - from 0.5 s, a SCHED_FIFO 96 spin of 400 ms (latscope-inject: it holds CPU 1, ktimers/1 waits behind it),
#    - a writer to the serial console (irq/4-ttyS0 contends for the port lock: priority inheritance), and a
#      SCHED_FIFO 10 writer on CPU 1 beside it (it waits on the tty's write lock, an rt_mutex on PREEMPT_RT,
#      that the normal writer holds: more boosts; irq/4 alone boosted 0 to 110 times from run to run).
step() { echo "guest: $*" >/dev/ttyS0; }
# 0. The audit of the guest's own configuration, judged for a SCHED_FIFO 95 thread on CPU 1: the facts
#    (kernel threads' priorities) and findings.
step "audit"
latscope audit -c 1 -p 95 -q --json $out/audit.json >$out/audit.log 2>&1
step "record"
cat $T/buffer_size_kb >$out/top-buffer-before
cat /proc/sys/kernel/sched_rt_runtime_us >$out/rt-runtime
latscope record -D 3s -o $out/rt-scenario.dat -- taskset -c 0 sh -c '
    taskset -c 1 sh -c "while :; do usleep 2000; done" & sleeper=$!
    (i=0; while [ $i -lt 100 ]; do echo "latscope guest console line $i ...................................." >/dev/ttyS0; i=$((i+1)); done) &
    chrt -f 10 taskset -c 1 sh -c "i=0; while [ \$i -lt 100 ]; do echo \"latscope guest FIFO line \$i ......\" >/dev/ttyS0; i=\$((i+1)); done" &
    usleep 400000
    taskset -c 1 usleep 350000 &
    usleep 100000
    chrt -f 96 latscope inject --cpu 1 --prio 96 --spin 400ms --every 10s -D 500ms
    usleep 300000
    kill $sleeper; wait' >$out/record.log 2>&1
echo "record rc=$?" >>$out/record.log
cat $T/buffer_size_kb >$out/top-buffer-after
ls $T/instances >$out/instances-after
cat /proc/sys/kernel/sched_rt_runtime_us >$out/rt-runtime-after
step "analyze"
latscope analyze --json $out/rt-scenario.json $out/rt-scenario.dat >$out/analyze.txt 2>&1

# 2. The same events as the kernel prints them and as raw pages: tracing stops, the top-level `trace`
#    file is read (text), then trace-cmd extract reads the pages of the same buffer (.dat).
step "flags"
# A small buffer (the oldest events are overwritten) keeps the pair small enough to be a fixture.
echo 96 >$T/buffer_size_kb
echo 'sched:sched_switch sched:sched_waking sched:sched_wakeup irq:* timer:hrtimer_expire_entry timer:hrtimer_expire_exit' >$T/set_event
echo 1 >$T/tracing_on
(i=0; while [ $i -lt 200 ]; do echo "x $i" >/dev/ttyS0; usleep 1000; i=$((i+1)); done) &
taskset -c 1 sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' &
sleep 1
wait
echo 0 >$T/tracing_on
cat $T/trace >$out/flags-kernel.txt
trace-cmd extract -o $out/flags.dat >$out/extract.log 2>&1
echo >$T/set_event
echo 0 >$T/trace
# 3. The wakeup_rt tracer (function-trace off: with it, a 1 ms SCHED_FIFO task froze the guest) while a
#    SCHED_FIFO 50 task sleeps 1 ms at a time on CPU 1.
step "wakeup_rt"
echo 1408 >$T/buffer_size_kb
echo 0 >$T/options/function-trace
echo 1 >$T/tracing_on
echo wakeup_rt >$T/current_tracer
chrt -f 50 taskset -c 1 sh -c 'i=0; while [ $i -lt 300 ]; do usleep 1000; i=$((i+1)); done'
cat $T/trace >$out/wakeup_rt.txt
echo nop >$T/current_tracer
echo 1 >$T/options/function-trace
step "done"
