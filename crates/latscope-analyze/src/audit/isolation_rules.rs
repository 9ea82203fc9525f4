//! Isolation rules: whether the measured CPUs are kept free of other work — isolcpus, nohz_full,
//! rcu_nocbs, device IRQ affinity, irqbalance, the unbound-workqueue mask and timer migration.

use super::{cpus_label, hex_mask, inter, show, Scope};
use latscope_model::{CpuList, Finding, Fix, FixKind, Severity};

/// Runs the isolation rules.
pub(crate) fn check(s: &Scope, out: &mut Vec<Finding>) {
    isolated(s, out);
    nohz_full(s, out);
    rcu_nocbs(s, out);
    irq_affinity(s, out);
    irqbalance(s, out);
    workqueue(s, out);
    timer_migration(s, out);
}

fn isolate_note(s: &Scope) -> String {
    if s.housekeeping.is_empty() {
        format!("every online CPU is measured; isolate {} and measure those with -c {}", s.to_isolate(), s.to_isolate())
    } else {
        String::new()
    }
}

fn isolated(s: &Scope, out: &mut Vec<Finding>) {
    let iso = &s.facts.cpus.isolated;
    let Some(list) = iso.get() else { return };
    let not = super::minus(&s.cpus, list);
    let ev = if list.is_empty() { "none".to_string() } else { list.to_string() };
    let boot = s.facts.boot.get().and_then(|b| b.isolcpus.clone()).unwrap_or_else(|| "not set".into());
    if not.is_empty() {
        out.push(
            Finding::new(
                "isolation.isolcpus",
                Severity::Ok,
                format!("measured {} isolated", cpus_label(&s.cpus)),
                "The scheduler places no other task on them unless asked.",
            )
            .on_cpus(s.cpus.clone())
            .evidence("isolated CPUs", ev, iso.from.clone()),
        );
        return;
    }
    let title = if list.is_empty() {
        "no isolated CPUs".to_string()
    } else {
        format!("measured {} not isolated (isolated: {list})", cpus_label(&not))
    };
    let target = s.to_isolate();
    let sev = if s.online.len() < 2 { Severity::Info } else { Severity::Warn };
    out.push(
        Finding::new(
            "isolation.isolcpus",
            sev,
            title,
            "Unisolated CPUs run any task, kernel thread and unbound work the scheduler puts there, each able to \
             delay the real-time thread.",
        )
        .on_cpus(not)
        .evidence("isolated CPUs", ev, iso.from.clone())
        .evidence("isolcpus=", boot, s.facts.boot.from.clone())
        .fix(Fix::new(FixKind::BootParam, format!("isolcpus=managed_irq,domain,{target}")).with_note(isolate_note(s))),
    );
}

fn nohz_full(s: &Scope, out: &mut Vec<Finding>) {
    let nz = &s.facts.cpus.nohz_full;
    let Some(list) = nz.get() else { return };
    let not = super::minus(&s.cpus, list);
    if not.is_empty() || s.online.len() < 2 {
        return;
    }
    let hz = s.facts.kernel.config("CONFIG_HZ").unwrap_or("unknown").to_string();
    let mut f = Finding::new(
        "isolation.nohz_full",
        Severity::Info,
        format!("periodic tick (CONFIG_HZ={hz}) runs on measured {}", cpus_label(&not)),
        "Each scheduler tick interrupts the running task; nohz_full stops it while a single task runs.",
    )
    .on_cpus(not)
    .evidence("nohz_full CPUs", if list.is_empty() { "none".into() } else { list.to_string() }, nz.from.clone());
    if s.facts.kernel.config("CONFIG_NO_HZ_FULL") == Some("n") {
        f = f.fix(Fix::new(FixKind::KernelConfig, "CONFIG_NO_HZ_FULL=y"));
    }
    out.push(f.fix(Fix::new(FixKind::BootParam, format!("nohz_full={}", s.to_isolate())).with_note(isolate_note(s))));
}

fn rcu_nocbs(s: &Scope, out: &mut Vec<Finding>) {
    let Some(b) = s.facts.boot.get() else { return };
    if s.online.len() < 2 {
        return;
    }
    let offloaded = b.rcu_nocbs.as_deref().and_then(|v| CpuList::parse(v).ok()).unwrap_or_default();
    let nohz = s.facts.cpus.nohz_full.get().cloned().unwrap_or_default(); // nohz_full implies rcu_nocbs
    let not = super::minus(&super::minus(&s.cpus, &offloaded), &nohz);
    if not.is_empty() {
        return;
    }
    out.push(
        Finding::new(
            "isolation.rcu_nocbs",
            Severity::Info,
            format!("RCU callbacks run on measured {}", cpus_label(&not)),
            if s.is_preempt_rt() {
                "On PREEMPT_RT, RCU callback batches run in the rcuc/N kernel thread (SCHED_FIFO 1 by default, \
                 kernel.rcu.kthread_prio) on the CPU that queued them: a measuring thread of higher priority \
                 delays them, one of lower priority waits behind them, sometimes for hundreds of microseconds."
            } else {
                "RCU callback batches run in softirq on the CPU that queued them, sometimes for hundreds of \
                 microseconds."
            },
        )
        .on_cpus(not)
        .evidence("rcu_nocbs=", b.rcu_nocbs.clone().unwrap_or_else(|| "not set".into()), s.facts.boot.from.clone())
        .fix(Fix::new(FixKind::BootParam, format!("rcu_nocbs={}", s.to_isolate())).with_note(isolate_note(s))),
    );
}

fn irq_affinity(s: &Scope, out: &mut Vec<Finding>) {
    let irqs = &s.facts.irqs.irqs;
    let Some(list) = irqs.get() else { return };
    // IRQs that may fire on a measured CPU: the effective affinity when known, else the allowed one.
    let mut hits: Vec<(u32, String, CpuList, u64, &str)> = list
        .iter()
        .filter_map(|i| {
            let aff = i.effective.as_ref().filter(|e| !e.is_empty()).or(i.affinity.as_ref())?;
            let on = inter(aff, &s.cpus);
            if on.is_empty() {
                return None;
            }
            let count = i.counts.iter().filter(|c| s.cpus.contains(c.cpu)).map(|c| c.count).sum();
            let file = if i.effective.as_ref().is_some_and(|e| !e.is_empty()) {
                "effective_affinity_list"
            } else {
                "smp_affinity_list"
            };
            Some((i.irq, i.name.clone(), on, count, file))
        })
        .collect();
    if hits.is_empty() {
        out.push(
            Finding::new(
                "irq.affinity",
                Severity::Ok,
                format!("no device IRQ is routed to measured {}", cpus_label(&s.cpus)),
                "Device interrupts are handled elsewhere.",
            )
            .on_cpus(s.cpus.clone())
            .evidence("IRQs checked", list.len().to_string(), irqs.from.clone()),
        );
        return;
    }
    hits.sort_by(|a, b| b.3.cmp(&a.3).then(a.0.cmp(&b.0)));
    let mut f = Finding::new(
        "irq.affinity",
        Severity::Warn,
        format!("{} device IRQs can fire on measured {}", hits.len(), cpus_label(&s.cpus)),
        if s.is_preempt_rt() {
            "On PREEMPT_RT a device interrupt on a measured CPU runs a short hard-IRQ entry there and wakes its \
             handler thread (irq/N-name, SCHED_FIFO 50 by default), which preempts the measuring thread only \
             when its priority is higher; the entry and the wakeup cost time on that CPU either way."
        } else {
            "A device interrupt on a measured CPU preempts whatever runs there, for the length of its handler."
        },
    )
    .on_cpus(s.cpus.clone());
    for (irq, name, on, count, file) in hits.iter().take(8) {
        f = f.evidence(
            format!("IRQ {irq} {name}"),
            format!("on CPUs {on}, {count} interrupts there since boot"),
            format!("/proc/irq/{irq}/{file}"),
        );
    }
    if hits.len() > 8 {
        f = f.evidence("more IRQs", format!("{} more", hits.len() - 8), irqs.from.clone());
    }
    let keep = s.keep_for_housekeeping();
    if s.housekeeping.is_empty() {
        // Every online CPU is measured: moving IRQs now would only shift them onto another measured CPU.
        f = f.fix(Fix::new(FixKind::BootParam, format!("irqaffinity={keep}")).with_note(isolate_note(s)));
    } else {
        let irq_list: Vec<String> = hits.iter().map(|h| h.0.to_string()).collect();
        f = f
            .fix(
                Fix::new(FixKind::Command, super::move_irqs_command(&irq_list, &keep))
                    .with_note("kernel-managed IRQs (per-queue NVMe/virtio) refuse this: use isolcpus=managed_irq,…"),
            )
            .fix(Fix::new(FixKind::Command, format!("echo {} > /proc/irq/default_smp_affinity", hex_mask(&keep))))
            .fix(Fix::new(FixKind::BootParam, format!("irqaffinity={keep}")));
    }
    out.push(f);
}

fn irqbalance(s: &Scope, out: &mut Vec<Finding>) {
    let ib = &s.facts.irqs.irqbalance;
    let Some(procs) = ib.get() else { return };
    if procs.is_empty() {
        out.push(
            Finding::new(
                "irq.irqbalance",
                Severity::Ok,
                "irqbalance not running",
                "Nothing moves IRQs behind your back.",
            )
            .evidence("irqbalance", "not running", ib.from.clone()),
        );
        return;
    }
    let pids: Vec<String> = procs.iter().map(|p| p.pid.to_string()).collect();
    out.push(
        Finding::new(
            "irq.irqbalance",
            Severity::Warn,
            format!("irqbalance running (pid {})", pids.join(", ")),
            "irqbalance periodically moves device interrupts across CPUs, undoing any affinity set for the \
             measured CPUs.",
        )
        .evidence("irqbalance", format!("running, pid {}", pids.join(", ")), ib.from.clone())
        .fix(Fix::new(FixKind::Command, "systemctl disable --now irqbalance"))
        .fix(
            Fix::new(
                FixKind::Command,
                format!("echo 'IRQBALANCE_BANNED_CPULIST={}' >> /etc/default/irqbalance", s.to_isolate()),
            )
            .with_note("keeps irqbalance but bans the measured CPUs (irqbalance 1.8+); restart it after"),
        ),
    );
}

fn workqueue(s: &Scope, out: &mut Vec<Finding>) {
    let wq = &s.facts.irqs.workqueue_cpumask;
    let Some(mask) = wq.get() else { return };
    let on = inter(mask, &s.cpus);
    if on.is_empty() || s.online.len() < 2 {
        return;
    }
    let keep = s.keep_for_housekeeping();
    out.push(
        Finding::new(
            "isolation.workqueue",
            Severity::Info,
            format!("unbound kernel work may run on measured {}", cpus_label(&on)),
            "Unbound workqueue items (writeback, crypto, …) run in kworker threads on any CPU of this mask.",
        )
        .on_cpus(on)
        .evidence("workqueue cpumask", mask.to_string(), wq.from.clone())
        .fix(
            Fix::new(FixKind::Command, format!("echo {} > /sys/devices/virtual/workqueue/cpumask", hex_mask(&keep)))
                .with_note(isolate_note(s)),
        ),
    );
}

fn timer_migration(s: &Scope, out: &mut Vec<Finding>) {
    let tm = &s.facts.sched.timer_migration;
    if tm.get() != Some(&true) || s.online.len() < 2 {
        return;
    }
    out.push(
        Finding::new(
            "sched.timer_migration",
            Severity::Info,
            "timer migration on",
            "Timers armed on idle CPUs may be moved to busy ones, including a measured CPU, where they expire as \
             extra interrupts.",
        )
        .evidence("kernel.timer_migration", show(tm, |v| u8::from(*v).to_string()), tm.from.clone())
        .fix(Fix::new(FixKind::Sysctl, "kernel.timer_migration=0")),
    );
}
