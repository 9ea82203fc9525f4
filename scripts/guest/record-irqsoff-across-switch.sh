#!/bin/sh
# Guest script (scripts/kernel-vm.sh run scripts/guest/record-irqsoff-across-switch.sh OUTDIR): records the
# function trace behind fixtures/explain/function-6.1-rt-x86_64-tcg-irqsoff-across-sched_switch.txt.
# The function tracer on CPU 1, filtered to the scheduler's context-switch path (irqs off from __schedule's
# rcu_note_context_switch to the next task's finish_task_switch) and a few functions that run with irqs on
# around it, with sched and irq events, while latscope's SCHED_FIFO 80 measuring thread preempts a SCHED_OTHER
# shell spinner every 2 ms. Leaves OUTDIR/trace.txt; the fixture is a time window of it.
out=/tmp/out
T=/sys/kernel/tracing
uname -a >$out/uname
echo 0 > $T/tracing_on
echo 2 > $T/tracing_cpumask
echo 4096 > $T/buffer_size_kb
for f in rcu_note_context_switch raw_spin_rq_lock_nested update_rq_clock update_curr update_curr_rt set_next_entity \
    dequeue_task_rt enqueue_task_rt dequeue_task_fair enqueue_task_fair pick_next_task_fair put_prev_task_fair \
    pick_next_task_rt put_prev_task_rt psi_task_switch switch_mm_irqs_off finish_task_switch.isra.0 \
    schedule do_nanosleep hrtimer_try_to_cancel; do
    echo $f >> $T/set_ftrace_filter || echo "filter: no $f" >> $out/filter.err
done
echo function > $T/current_tracer
for e in sched/sched_switch sched/sched_wakeup sched/sched_waking irq/irq_handler_entry irq/irq_handler_exit \
    irq/softirq_entry irq/softirq_exit irq_vectors/local_timer_entry irq_vectors/local_timer_exit \
    timer/hrtimer_expire_entry timer/hrtimer_expire_exit; do
    echo 1 > $T/events/$e/enable || echo "no $e"
done
taskset -c 1 sh -c 'while :; do :; done' &
spin=$!
latscope timer -c 1 -i 2ms -p 80 -D 3s -q > $out/timer.txt 2>&1 &
tm=$!
sleep 1
echo 1 > $T/tracing_on
sleep 0.3
echo 0 > $T/tracing_on
wait $tm
kill $spin
cat $T/trace > $out/trace.txt
echo nop > $T/current_tracer
