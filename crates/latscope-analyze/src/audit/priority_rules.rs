//! Priority rules: the real-time priorities of the kernel threads that may run on the measured CPUs against
//! the measuring thread's — those at or above it preempt it; on PREEMPT_RT (or with `threadirqs`) the
//! threads doing the CPU's deferred work below it wait while it runs.

use super::{cpus_label, Scope};
use latscope_model::facts::KernelThread;
use latscope_model::{Finding, Fix, FixKind, Severity};

/// Runs the priority rules.
pub(crate) fn check(s: &Scope, out: &mut Vec<Finding>) {
    let Some(all) = s.facts.sched.kernel_threads.get() else { return };
    let here: Vec<&KernelThread> = all.iter().filter(|t| t.cpus.0.iter().any(|c| s.cpus.0.contains(c))).collect();
    above(s, &here, out);
    deferred_below(s, &here, out);
}

/// The measuring thread as a reader knows it: `SCHED_FIFO 95`, or `SCHED_OTHER`.
fn measuring(s: &Scope) -> String {
    match s.prio {
        0 => "SCHED_OTHER".into(),
        p => format!("SCHED_FIFO {p}"),
    }
}

fn label(t: &KernelThread) -> String {
    format!("{} {}", t.policy, t.rt_priority)
}

/// `migration/N` is the stop-machine class shown as FIFO 99: above every thread by design, and busy only for
/// task migrations and CPU hotplug.
fn is_stopper(t: &KernelThread) -> bool {
    t.comm.starts_with("migration/")
}

fn above(s: &Scope, here: &[&KernelThread], out: &mut Vec<Finding>) {
    let mut hits: Vec<&KernelThread> = here
        .iter()
        .copied()
        .filter(|t| t.is_rt() && !is_stopper(t) && (s.prio == 0 || t.rt_priority >= s.prio))
        .collect();
    if hits.is_empty() {
        return;
    }
    hits.sort_by_key(|t| (std::cmp::Reverse(t.rt_priority), t.pid));
    let mut f = Finding::new(
        "priority.kernel_threads_above",
        Severity::Warn,
        format!(
            "{} kernel thread{} at or above the real-time thread ({}) can run on measured {}",
            hits.len(),
            if hits.len() == 1 { "" } else { "s" },
            measuring(s),
            cpus_label(&s.cpus)
        ),
        "A real-time kernel thread of higher priority preempts the real-time (measuring) thread whenever it wakes on its CPU; \
         one of equal priority runs first when it woke first. Its work (an interrupt handler, a watchdog \
         kick) is then latency of the measuring thread.",
    )
    .on_cpus(s.cpus.clone());
    for t in hits.iter().take(8) {
        f = f.evidence(
            format!("{} (pid {})", t.comm, t.pid),
            format!("{} on CPUs {}", label(t), t.cpus),
            s.facts.sched.kernel_threads.from.clone(),
        );
    }
    if hits.len() > 8 {
        f = f.evidence("more threads", format!("{} more", hits.len() - 8), s.facts.sched.kernel_threads.from.clone());
    }
    if s.prio > 1 {
        let pids: Vec<String> = hits.iter().map(|t| t.pid.to_string()).collect();
        f = f.fix(
            Fix::new(FixKind::Command, format!("for p in {}; do chrt -f -p {} $p; done", pids.join(" "), s.prio - 1))
                .with_note(
                    "only for threads your application does not wait for: its own device's IRQ thread must keep up",
                ),
        );
    }
    // An IRQ thread (`irq/N-name`) follows its IRQ's affinity: moving the IRQ moves the thread.
    let irqs: Vec<String> = hits
        .iter()
        .filter_map(|t| t.comm.strip_prefix("irq/")?.split('-').next())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    if !s.housekeeping.is_empty() && !irqs.is_empty() {
        f = f.fix(Fix::new(FixKind::Command, super::move_irqs_command(&irqs, &s.keep_for_housekeeping())));
    }
    out.push(f);
}

/// The kinds of deferred work that wait below the measuring thread, with what waits.
const DEFERRED: [(&str, &str); 5] = [
    ("ktimers/", "timers expired in softirq context (on PREEMPT_RT, every hrtimer not marked hard)"),
    ("ksoftirqd/", "softirq work: network receive and transmit, block completion, tasklets"),
    ("rcuc/", "RCU callbacks (memory is freed only after them; a long wait gives RCU stall warnings)"),
    ("irq_work/", "deferred interrupt work (printk output, perf and tracing wakeups)"),
    ("irq/", "device interrupt handlers"),
];

fn deferred_below(s: &Scope, here: &[&KernelThread], out: &mut Vec<Finding>) {
    let threaded = s.is_preempt_rt() || s.facts.boot.get().is_some_and(|b| b.threadirqs);
    if !threaded || s.prio == 0 {
        return;
    }
    let below: Vec<&KernelThread> = here.iter().copied().filter(|t| t.rt_priority < s.prio).collect();
    let kinds: Vec<(&str, &str, Vec<&KernelThread>)> = DEFERRED
        .iter()
        .map(|(prefix, what)| (*prefix, *what, below.iter().copied().filter(|t| t.comm.starts_with(prefix)).collect()))
        .filter(|(_, _, ts): &(&str, &str, Vec<&KernelThread>)| !ts.is_empty())
        .collect();
    if kinds.is_empty() {
        return;
    }
    let mut f = Finding::new(
        "priority.deferred_work_below",
        Severity::Info,
        format!(
            "the deferred kernel work of measured {1} waits below the real-time thread ({0})",
            measuring(s),
            cpus_label(&s.cpus)
        ),
        "Interrupt handlers, softirqs, timers and RCU callbacks run here in kernel threads of lower priority than the \
         real-time thread: while it runs (or any task at or above their priority), they wait. A thread that never \
         sleeps at this priority starves them: timers of other tasks fire late, network and disk work stalls, RCU \
         reports stalls.",
    )
    .on_cpus(s.cpus.clone());
    for (_, what, ts) in &kinds {
        let names: Vec<String> = ts.iter().take(4).map(|t| format!("{} ({})", t.comm, label(t))).collect();
        let more = if ts.len() > 4 { format!(" and {} more", ts.len() - 4) } else { String::new() };
        f = f.evidence(*what, format!("{}{more}", names.join(", ")), s.facts.sched.kernel_threads.from.clone());
    }
    if kinds.iter().any(|(p, _, _)| *p == "rcuc/") {
        f = f
            .fix(Fix::new(FixKind::BootParam, format!("rcu_nocbs={}", s.to_isolate())).with_note(
                "RCU callbacks of these CPUs then run in rcuo threads, which can be kept on housekeeping CPUs",
            ))
            .fix(
                Fix::new(FixKind::BootParam, format!("rcutree.kthread_prio={}", s.prio + 1)).with_note(
                    "RCU's threads then run above the real-time thread: they no longer wait, but preempt it",
                ),
            );
    }
    out.push(f);
}
