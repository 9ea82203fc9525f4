//! Per-CPU kernel threads (`migration/3`, `ksoftirqd/3`, `kworker/3:1` …): bound to their CPU, so a remedy
//! cannot move them elsewhere; what each one runs, and how its work is kept off a real-time CPU.

/// A kernel thread bound to one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerCpuThread {
    /// The CPU it belongs to, from its name.
    pub cpu: u32,
    /// What it runs.
    pub runs: &'static str,
    /// How its work is kept off that CPU (or made to wait).
    pub remedy: &'static str,
}

/// Thread name prefixes (before `/N`) of the kernel's per-CPU threads, what they run and the remedy.
const KNOWN: &[(&str, &str, &str)] = &[
    (
        "migration",
        "the CPU stopper: task migration, stop_machine, CPU hotplug",
        "avoid what stops the CPU while it measures (affinity changes onto or off it, CPU hotplug, module \
         loading, live patching); isolcpus= keeps the load balancer from migrating tasks there",
    ),
    (
        "ksoftirqd",
        "softirq work the interrupts on its CPU raised",
        "move the interrupts that raise it to other CPUs (/proc/irq/N/smp_affinity_list, isolcpus=managed_irq)",
    ),
    (
        "rcuc",
        "the RCU callbacks of its CPU",
        "offload them with rcu_nocbs= (the rcuo threads that then run them can be moved), or give the \
         real-time task a priority above rcuc (it is SCHED_FIFO 1 by default)",
    ),
    (
        "ktimers",
        "the timers of its CPU not marked hard (PREEMPT_RT)",
        "keep other tasks' timers off that CPU (isolcpus=, nohz_full=, timer migration), or give the \
         real-time task a priority above ktimers (SCHED_FIFO 1 by default)",
    ),
    ("cpuhp", "CPU hotplug", "do not take CPUs on or offline while it measures"),
    (
        "watchdog",
        "the soft-lockup watchdog",
        "boot with nowatchdog or nosoftlockup, or leave the CPU out of kernel.watchdog_cpumask",
    ),
    (
        "irq_work",
        "irq_work deferred from interrupts (PREEMPT_RT)",
        "find what queues irq_work on that CPU (printk, perf, BPF are common) and keep it off",
    ),
];

/// The per-CPU kernel thread `comm` is, when its name says so (`kworker/u8:2`, an unbound worker, is not).
pub fn per_cpu_thread(comm: &str) -> Option<PerCpuThread> {
    let (name, rest) = comm.split_once('/')?;
    if name == "kworker" {
        // `kworker/3:1` and `kworker/3:1H` (high priority) are bound to CPU 3; `kworker/u8:2` is unbound.
        let cpu = rest.split_once(':')?.0.parse().ok()?;
        return Some(PerCpuThread {
            cpu,
            runs: "work items queued on its CPU",
            remedy: "find the work item (workqueue:workqueue_execute_start names its function) and what queues it \
                     on that CPU; unbound work is kept off with /sys/devices/virtual/workqueue/cpumask",
        });
    }
    let cpu = rest.parse().ok()?;
    let (_, runs, remedy) = KNOWN.iter().find(|(n, _, _)| *n == name)?;
    Some(PerCpuThread { cpu, runs, remedy })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_carry_a_cpu_are_per_cpu_threads() {
        assert_eq!(per_cpu_thread("migration/8").map(|t| t.cpu), Some(8));
        assert_eq!(per_cpu_thread("ksoftirqd/1").map(|t| t.cpu), Some(1));
        assert_eq!(per_cpu_thread("kworker/3:1H").map(|t| t.cpu), Some(3));
        assert!(per_cpu_thread("kworker/3:1H").expect("bound worker").runs.contains("work items"));
        for movable in ["kworker/u8:2", "irq/4-ttyS0", "rcuop/1", "spin", "migration", "ksoftirqd/x"] {
            assert_eq!(per_cpu_thread(movable), None, "{movable}");
        }
    }
}
