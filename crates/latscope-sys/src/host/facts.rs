//! The [`SystemFacts`] collector: reads everything `latscope audit` judges, in one pass over /proc and
//! /sys, spawning no process and changing nothing. Facts that need root are unknown without it.

use super::counters::read_smi_count;
use super::read_fact::read_string;
use super::{
    cgroup_rt, clocksource, cmdline, console, cpufreq, cpuidle, hypervisor, irq_affinity, kconfig, memory, preemption,
    process, sysctl, topology, tracing_caps, watchdog,
};
use latscope_model::facts::{
    ClockFacts, ConsoleFacts, CpuCount, CpuFact, CpuFacts, DmaLatencyFacts, IrqFacts, KernelFacts, MemoryFacts,
    SchedFacts,
};
use latscope_model::{CpuList, Fact, SystemFacts};

/// Collects the snapshot.
pub fn collect() -> SystemFacts {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok();
    // SAFETY: geteuid has no preconditions.
    let as_root = unsafe { libc::geteuid() } == 0;

    let release = read_string("/proc/sys/kernel/osrelease");
    let version = read_string("/proc/sys/kernel/version");
    let config = kconfig::read_config(release.get().map(String::as_str));
    let boot = cmdline::read_boot_params();
    let (preemption, preempt_dynamic) =
        preemption::read_preemption(version.get().map(String::as_str), config.get(), boot.get());
    let kernel = KernelFacts { release, version, preemption, preempt_dynamic, config };

    let cpus = collect_cpus();
    let online = cpus.online.get().cloned();
    let scan = process::scan();
    let cpus = CpuFacts {
        dma_latency: DmaLatencyFacts { current_us: process::read_dma_latency(), holders: scan.dma_latency_holders },
        ..cpus
    };

    let (container, cgroup_rt) = cgroup_rt::read_cgroup_rt();
    let sched = SchedFacts {
        rt_period_us: sysctl::read_sysctl_int("kernel.sched_rt_period_us"),
        rt_runtime_us: sysctl::read_sysctl_int("kernel.sched_rt_runtime_us"),
        cgroup_rt,
        timer_migration: sysctl::read_sysctl_bool("kernel.timer_migration"),
        container,
        kernel_threads: scan.kernel_threads,
    };

    let (printk, consoles) = console::read_console();
    let (current, available, tsc_flags) = clocksource::read_clock(cpuinfo.as_deref());
    let (thp_enabled, thp_defrag) = memory::read_thp();
    let (memlock, rtprio) = memory::read_limits();

    SystemFacts {
        as_root,
        arch: std::env::consts::ARCH.to_string(),
        kernel,
        boot,
        cpus,
        sched,
        console: ConsoleFacts { printk, consoles },
        clock: ClockFacts { current, available, tsc_flags },
        memory: MemoryFacts { thp_enabled, thp_defrag, memlock, rtprio },
        watchdogs: watchdog::read_watchdogs(),
        irqs: IrqFacts {
            default_affinity: irq_affinity::read_default_affinity(),
            irqs: irq_affinity::read_irqs(),
            irqbalance: scan.irqbalance,
            workqueue_cpumask: irq_affinity::read_workqueue_cpumask(),
        },
        hypervisor: hypervisor::read_hypervisor(cpuinfo.as_deref(), online.as_ref()),
        smi: read_smi(online.as_ref()),
        tracing: tracing_caps::read_tracing(),
    }
}

fn collect_cpus() -> CpuFacts {
    let online = topology::read_list("online");
    let present = topology::read_list("present");
    let all = present.get().or(online.get()).cloned().unwrap_or_default();
    let per_cpu = all
        .iter()
        .map(|cpu| CpuFact {
            cpu,
            online: topology::is_online(cpu, online.get()),
            thread_siblings: topology::thread_siblings(cpu),
            cpufreq: cpufreq::read_cpufreq(cpu),
            idle_states: cpuidle::read_idle_states(cpu),
        })
        .collect();
    CpuFacts {
        isolated: topology::read_list_or_empty("isolated"),
        nohz_full: topology::read_list_or_empty("nohz_full"),
        smt_control: topology::smt_control(),
        smt_active: topology::smt_active(),
        cpuidle_driver: cpuidle::driver(),
        cpuidle_governor: cpuidle::governor(),
        dma_latency: DmaLatencyFacts::default(),
        per_cpu,
        online,
        present,
    }
}

/// SMI counts of the online CPUs (MSR 0x34); unknown, with the reason, when any is unreadable.
fn read_smi(online: Option<&CpuList>) -> Fact<Vec<CpuCount>> {
    let Some(online) = online else {
        return Fact::unknown("/dev/cpu/*/msr", "online CPUs unknown");
    };
    let mut out = Vec::new();
    for cpu in online.iter() {
        match read_smi_count(cpu) {
            Ok(count) => out.push(CpuCount { cpu, count }),
            Err(why) => return Fact::unknown(format!("/dev/cpu/{cpu}/msr (MSR 0x34)"), why),
        }
    }
    Fact::known(out, "/dev/cpu/*/msr (MSR 0x34)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_this_machine_quickly() {
        let t = std::time::Instant::now();
        let f = collect();
        let took = t.elapsed();
        assert!(f.cpus.online.get().is_some_and(|l| !l.is_empty()));
        assert_eq!(f.cpus.per_cpu.len(), f.cpus.present.get().map_or(0, |l| l.len()));
        assert!(f.kernel.release.get().is_some());
        assert!(f.sched.rt_period_us.get().is_some());
        assert!(f.boot.get().is_some_and(|b| !b.raw.is_empty()));
        eprintln!("collected in {took:?}");
    }
}
