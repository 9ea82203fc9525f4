//! Kernel rules: preemption model, RT throttling (global and cgroup), lockup and hardware watchdogs,
//! transparent huge pages, memory-lock and RT-priority limits, mitigations, tick skew.

use super::{cpus_label, show, Scope};
use latscope_model::facts::Limit;
use latscope_model::{CauseKind, Finding, Fix, FixKind, Severity};

/// Runs the kernel rules.
pub(crate) fn check(s: &Scope, out: &mut Vec<Finding>) {
    preemption(s, out);
    rt_throttling(s, out);
    cgroup_rt(s, out);
    watchdogs(s, out);
    thp(s, out);
    limits(s, out);
    mitigations(s, out);
    skew_tick(s, out);
}

fn preemption(s: &Scope, out: &mut Vec<Finding>) {
    let k = &s.facts.kernel;
    let model = k.preemption.get().map(String::as_str);
    let dynamic = k.preempt_dynamic.get() == Some(&true);
    let (sev, title, why) = match model {
        Some("rt") => (
            Severity::Ok,
            "PREEMPT_RT kernel".to_string(),
            "Almost all kernel code is preemptible and interrupt handlers run in threads, so latency is bounded.",
        ),
        Some(m @ ("full" | "lazy")) => (
            Severity::Info,
            format!("preemptible kernel ({m}), not PREEMPT_RT"),
            "Kernel code is preemptible except in spinlocked and irqs-off sections, which PREEMPT_RT also makes \
             preemptible; expect worst cases in the tens to hundreds of microseconds.",
        ),
        Some(m) => (
            Severity::Warn,
            format!("non-preemptible kernel (preempt={m})"),
            "A task woken on a CPU running kernel code waits until that code returns or yields, which can take \
             milliseconds.",
        ),
        None => (
            Severity::Info,
            "preemption model unknown".to_string(),
            "Without the preemption model the kernel's share of latency cannot be judged.",
        ),
    };
    let mut f = Finding::new("kernel.preemption", sev, title, why)
        .evidence("preemption model", show(&k.preemption, |m| m.clone()), k.preemption.from.clone())
        .evidence("kernel version", show(&k.version, |v| v.clone()), k.version.from.clone());
    if sev > Severity::Ok {
        if dynamic && !matches!(model, Some("full" | "lazy")) {
            f = f.fix(Fix::new(FixKind::BootParam, "preempt=full"));
        }
        f = f.fix(
            Fix::new(FixKind::KernelConfig, "CONFIG_PREEMPT_RT=y")
                .with_note("or install the distribution's RT kernel (Debian: linux-image-rt-amd64)"),
        );
    }
    out.push(f);
}

fn rt_throttling(s: &Scope, out: &mut Vec<Finding>) {
    let sc = &s.facts.sched;
    let (Some(&period), Some(&runtime)) = (sc.rt_period_us.get(), sc.rt_runtime_us.get()) else {
        out.push(
            Finding::new(
                "sched.rt_throttling",
                Severity::Info,
                "RT throttling settings unknown",
                "RT throttling stops real-time tasks for part of every period; its settings could not be read.",
            )
            .evidence("kernel.sched_rt_period_us", show(&sc.rt_period_us, u64::to_string), sc.rt_period_us.from.clone())
            .evidence(
                "kernel.sched_rt_runtime_us",
                show(&sc.rt_runtime_us, i64::to_string),
                sc.rt_runtime_us.from.clone(),
            ),
        );
        return;
    };
    let mut f = if runtime < 0 || runtime as u64 >= period {
        Finding::new(
            "sched.rt_throttling",
            Severity::Ok,
            format!("RT throttling off ({runtime}/{period} us)"),
            "Real-time tasks may use the whole CPU; a runaway SCHED_FIFO task can then starve everything else.",
        )
    } else {
        let gap_ms = (period - runtime as u64) as f64 / 1000.0;
        Finding::new(
            "sched.rt_throttling",
            Severity::Warn,
            format!(
                "RT throttling on at {runtime}/{period} us: RT tasks stopped {gap_ms:.0} ms every {:.0} ms",
                period as f64 / 1000.0
            ),
            "A SCHED_FIFO/RR task that keeps its CPU busy is stopped for period − runtime every period, a gap far \
             larger than any other latency source.",
        )
        .fix(
            Fix::new(FixKind::Sysctl, "kernel.sched_rt_runtime_us=-1")
                .with_note("only with trusted RT tasks: a runaway one can then hang its CPU"),
        )
        .causes(CauseKind::RtThrottling)
    };
    f = f.evidence("kernel.sched_rt_runtime_us", runtime.to_string(), sc.rt_runtime_us.from.clone()).evidence(
        "kernel.sched_rt_period_us",
        period.to_string(),
        sc.rt_period_us.from.clone(),
    );
    out.push(f);
}

fn cgroup_rt(s: &Scope, out: &mut Vec<Finding>) {
    let Some(cg) = s.facts.sched.cgroup_rt.get() else { return };
    if cg.cgroup == "/" {
        return; // the root group's budget is the global one
    }
    let from = s.facts.sched.cgroup_rt.from.clone();
    let path = from.clone();
    let (sev, title, why) = if cg.runtime_us == 0 {
        (
            Severity::Fail,
            format!("cgroup {} has no RT budget (cpu.rt_runtime_us = 0)", cg.cgroup),
            "Real-time scheduling is refused in this cgroup (sched_setscheduler fails with EPERM), so no RT \
             measurement or application can run here.",
        )
    } else if cg.runtime_us > 0 && (cg.runtime_us as u64) < cg.period_us {
        (
            Severity::Warn,
            format!("cgroup {} RT budget {}/{} us", cg.cgroup, cg.runtime_us, cg.period_us),
            "RT tasks of this cgroup are throttled once they use their budget in a period.",
        )
    } else {
        (
            Severity::Ok,
            format!("cgroup {} RT budget {}/{} us", cg.cgroup, cg.runtime_us, cg.period_us),
            "RT tasks of this cgroup are not limited beyond the global setting.",
        )
    };
    let mut f = Finding::new("sched.cgroup_rt", sev, title, why)
        .evidence("cpu.rt_runtime_us", cg.runtime_us.to_string(), from.clone())
        .evidence("cpu.rt_period_us", cg.period_us.to_string(), from.replace("cpu.rt_runtime_us", "cpu.rt_period_us"))
        .evidence("container", show(&s.facts.sched.container, |c| c.clone()), s.facts.sched.container.from.clone());
    if sev > Severity::Ok {
        f = f.fix(
            Fix::new(FixKind::Command, format!("echo 950000 > {path}"))
                .with_note("the parent cgroups need at least this budget; for Docker use --cpu-rt-runtime=950000"),
        );
    }
    out.push(f);
}

fn watchdogs(s: &Scope, out: &mut Vec<Finding>) {
    let w = &s.facts.watchdogs;
    let on_cpus = w.cpumask.get().map(|m| super::inter(m, &s.cpus)).unwrap_or_else(|| s.cpus.clone());
    let keep = s.keep_for_housekeeping();
    if w.nmi.get() == Some(&true) && !on_cpus.is_empty() {
        out.push(
            Finding::new(
                "watchdog.nmi",
                Severity::Warn,
                "NMI (hard-lockup) watchdog on",
                "A perf counter fires a non-maskable interrupt on every CPU every watchdog_thresh seconds, \
                 interrupting even irqs-off code.",
            )
            .on_cpus(on_cpus.clone())
            .evidence("kernel.nmi_watchdog", "1", w.nmi.from.clone())
            .fix(Fix::new(FixKind::Sysctl, "kernel.nmi_watchdog=0"))
            .fix(Fix::new(FixKind::BootParam, "nmi_watchdog=0")),
        );
    }
    match w.soft.get() {
        Some(true) if !on_cpus.is_empty() => {
            let mut f = Finding::new(
                "watchdog.soft",
                Severity::Info,
                format!("soft-lockup watchdog runs on measured {}", cpus_label(&on_cpus)),
                "A per-CPU hrtimer and a stopper-thread wakeup every few seconds add a few microseconds of noise.",
            )
            .on_cpus(on_cpus.clone())
            .evidence("soft-lockup watchdog", "on", w.soft.from.clone())
            .evidence(
                "kernel.watchdog_cpumask",
                show(&w.cpumask, |c| c.to_string()),
                w.cpumask.from.clone(),
            );
            if !keep.is_empty() {
                f = f.fix(Fix::new(FixKind::Sysctl, format!("kernel.watchdog_cpumask={keep}")));
            }
            out.push(f.fix(Fix::new(FixKind::BootParam, "nosoftlockup")));
        }
        Some(_) => out.push(
            Finding::new(
                "watchdog.soft",
                Severity::Ok,
                "soft-lockup watchdog off on the measured CPUs",
                "No periodic watchdog timer interrupts the measured CPUs.",
            )
            .evidence("soft-lockup watchdog", show(&w.soft, bool::to_string), w.soft.from.clone()),
        ),
        None => {}
    }
    if let Some(hw) = w.hardware.get() {
        let tco: Vec<&String> = hw.iter().filter(|h| h.contains("TCO")).collect();
        if !tco.is_empty() {
            let mut f = Finding::new(
                "watchdog.tco",
                Severity::Warn,
                "Intel TCO hardware watchdog driver loaded",
                "On many chipsets the TCO timer is serviced through System Management Interrupts, which stop \
                 every CPU invisibly to the kernel.",
            );
            for t in tco {
                f = f.evidence("hardware watchdog", t.clone(), w.hardware.from.clone());
            }
            out.push(
                f.fix(Fix::new(FixKind::Command, "modprobe -r iTCO_wdt iTCO_vendor_support"))
                    .fix(Fix::new(FixKind::BootParam, "modprobe.blacklist=iTCO_wdt,iTCO_vendor_support")),
            );
        }
    }
}

fn thp(s: &Scope, out: &mut Vec<Finding>) {
    let m = &s.facts.memory;
    let Some(mode) = m.thp_enabled.get() else { return };
    let f = if mode == "always" {
        Finding::new(
            "memory.thp",
            Severity::Warn,
            "transparent huge pages: always",
            "Page faults may stall in compaction and khugepaged collapses pages in the background, both adding \
             unpredictable delays.",
        )
        .fix(Fix::new(FixKind::Command, "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"))
        .fix(Fix::new(FixKind::BootParam, "transparent_hugepage=madvise"))
    } else {
        Finding::new(
            "memory.thp",
            Severity::Ok,
            format!("transparent huge pages: {mode}"),
            "Huge pages are only used where applications ask for them, so faults do not stall in compaction.",
        )
    };
    out.push(f.evidence("transparent_hugepage/enabled", mode.clone(), m.thp_enabled.from.clone()).evidence(
        "transparent_hugepage/defrag",
        show(&m.thp_defrag, |d| d.clone()),
        m.thp_defrag.from.clone(),
    ));
}

fn limit_text(v: u64) -> String {
    if v == Limit::UNLIMITED {
        "unlimited".into()
    } else {
        v.to_string()
    }
}

/// A memory limit in KiB, the unit `ulimit -l` and the mlockall warning use.
fn kib_text(v: u64) -> String {
    if v == Limit::UNLIMITED {
        "unlimited".into()
    } else {
        format!("{} KiB", v / 1024)
    }
}

fn limits(s: &Scope, out: &mut Vec<Finding>) {
    if s.facts.as_root {
        return; // CAP_IPC_LOCK and CAP_SYS_NICE ignore the limits
    }
    let m = &s.facts.memory;
    if let Some(l) = m.memlock.get() {
        if l.soft != Limit::UNLIMITED {
            out.push(
                Finding::new(
                    "limits.memlock",
                    Severity::Warn,
                    format!("memory-lock limit {}", kib_text(l.soft)),
                    "Real-time programs lock their memory (mlockall) to avoid page faults; a limit makes that fail \
                     or later allocations fault.",
                )
                .evidence("RLIMIT_MEMLOCK soft", kib_text(l.soft), m.memlock.from.clone())
                .evidence("RLIMIT_MEMLOCK hard", kib_text(l.hard), m.memlock.from.clone())
                .fix(Fix::new(FixKind::Command, "ulimit -l unlimited").with_note(
                    "raising it above the hard limit needs root; persist with '@realtime - memlock unlimited' in \
                     /etc/security/limits.conf",
                )),
            );
        }
    }
    if let Some(l) = m.rtprio.get() {
        if l.hard == 0 {
            out.push(
                Finding::new(
                    "limits.rtprio",
                    Severity::Warn,
                    "no real-time priority allowed (RLIMIT_RTPRIO 0)",
                    "Without an RT priority the measuring thread competes with every normal task, so it measures \
                     the scheduler's fairness rather than the machine's latency.",
                )
                .evidence("RLIMIT_RTPRIO hard", limit_text(l.hard), m.rtprio.from.clone())
                .fix(Fix::new(
                    FixKind::Command,
                    "echo '@realtime - rtprio 99' >> /etc/security/limits.conf   # then add the user to 'realtime'",
                )),
            );
        }
    }
}

fn mitigations(s: &Scope, out: &mut Vec<Finding>) {
    let Some(b) = s.facts.boot.get() else { return };
    let m = b.mitigations.as_deref().unwrap_or("auto (default)");
    if m == "off" {
        return;
    }
    out.push(
        Finding::new(
            "kernel.mitigations",
            Severity::Info,
            format!("CPU vulnerability mitigations on (mitigations={m})"),
            "Kernel entry and exit pay for speculative-execution mitigations, lengthening system calls, interrupts \
             and context switches by up to microseconds.",
        )
        .evidence("mitigations=", m, s.facts.boot.from.clone())
        .fix(
            Fix::new(FixKind::BootParam, "mitigations=off").with_note("a security trade-off: only on isolated systems"),
        ),
    );
}

fn skew_tick(s: &Scope, out: &mut Vec<Finding>) {
    let Some(b) = s.facts.boot.get() else { return };
    if s.online.len() < 2 || b.skew_tick.as_deref() == Some("1") || b.nohz_full.is_some() {
        return;
    }
    out.push(
        Finding::new(
            "kernel.skew_tick",
            Severity::Info,
            "scheduler ticks of all CPUs fire at the same instant",
            "Simultaneous ticks contend on jiffies and timer locks; skewing them shortens the worst tick.",
        )
        .evidence("skew_tick=", b.skew_tick.clone().unwrap_or_else(|| "not set".into()), s.facts.boot.from.clone())
        .fix(Fix::new(FixKind::BootParam, "skew_tick=1")),
    );
}
