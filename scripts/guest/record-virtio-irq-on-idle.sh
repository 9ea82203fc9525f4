#!/bin/sh
# Guest script (scripts/kernel-vm.sh run scripts/guest/record-virtio-irq-on-idle.sh OUTDIR): records the event trace
# behind fixtures/explain/events-6.1-rt-x86_64-tcg-virtio-irq-on-idle-cpu.txt: sched, irq, irq_vectors, hrtimer and
# cpu_idle events on CPU 1 while `dd oflag=direct` on CPU 1 writes to the virtio disk (its queue-1 interrupt is
# managed onto CPU 1) and latscope timer measures there. Leaves OUTDIR/trace.txt; the fixture is a time window of it.
out=/tmp/out
T=/sys/kernel/tracing
uname -a >$out/uname
grep -E "virtio|CPU" /proc/interrupts > $out/interrupts
for i in $(grep virtio /proc/interrupts | awk -F: '{print $1}'); do echo "$i $(cat /proc/irq/$i/effective_affinity_list)" >> $out/aff; echo 1 > /proc/irq/$i/smp_affinity_list 2>>$out/aff.err; echo "$i now $(cat /proc/irq/$i/effective_affinity_list)" >> $out/aff; done
echo 0 > $T/tracing_on
echo mono > $T/trace_clock
echo 2 > $T/tracing_cpumask
echo 8192 > $T/buffer_size_kb
for e in sched/sched_switch sched/sched_waking sched/sched_wakeup irq irq_vectors timer/hrtimer_start timer/hrtimer_expire_entry timer/hrtimer_expire_exit power/cpu_idle; do echo 1 > $T/events/$e/enable; done
echo 1 > $T/tracing_on
taskset -c 1 dd if=/dev/zero of=/dev/vda bs=4k count=100000 oflag=direct 2>$out/dd.txt &
dd=$!
latscope timer -c 1 -i 1ms -p 80 -D 2s -q > $out/timer.txt 2>&1
kill $dd; wait $dd
echo 0 > $T/tracing_on
cat $T/trace > $out/trace.txt
grep -E "virtio|CPU" /proc/interrupts > $out/interrupts.after
