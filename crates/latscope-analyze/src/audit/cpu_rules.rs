//! CPU rules: SMT siblings of the measured CPUs, frequency governor, deep idle states without a latency cap.

use super::{cpus_label, minus, show, Scope};
use latscope_model::{CpuId, CpuList, Finding, Fix, FixKind, Severity};

/// Exit latencies above this (us) count as deep idle states.
pub const DEEP_IDLE_US: u64 = 10;

/// Runs the CPU rules.
pub(crate) fn check(s: &Scope, out: &mut Vec<Finding>) {
    smt(s, out);
    governor(s, out);
    idle_states(s, out);
}

fn smt(s: &Scope, out: &mut Vec<Finding>) {
    let c = &s.facts.cpus;
    let mut online_siblings = Vec::new();
    let mut evidence = Vec::new();
    let mut known = false;
    for cpu in s.cpus.iter() {
        let Some(fact) = c.cpu(cpu) else { continue };
        let Some(sib) = fact.thread_siblings.get() else { continue };
        known = true;
        let others: Vec<CpuId> = sib.iter().filter(|x| *x != cpu).collect();
        let on: Vec<CpuId> = others.iter().copied().filter(|x| c.cpu(*x).is_some_and(|f| f.online)).collect();
        if !on.is_empty() {
            evidence.push((cpu, CpuList(on.clone()), fact.thread_siblings.from.clone()));
            online_siblings.extend(on);
        }
    }
    online_siblings.sort();
    online_siblings.dedup();
    let ctl = &c.smt_control;
    if !known {
        return;
    }
    if online_siblings.is_empty() {
        out.push(
            Finding::new(
                "cpu.smt",
                Severity::Ok,
                "no SMT sibling of a measured CPU is online",
                "Each measured CPU has its core's execution units to itself.",
            )
            .on_cpus(s.cpus.clone())
            .evidence("smt/control", show(ctl, |v| v.clone()), ctl.from.clone()),
        );
        return;
    }
    let sibs = CpuList(online_siblings);
    let mut f = Finding::new(
        "cpu.smt",
        Severity::Warn,
        format!("SMT siblings ({}) of measured CPUs are online", cpus_label(&sibs)),
        "A hardware thread shares its core's execution units and caches with its sibling, so work on the sibling \
         slows the measured thread unpredictably.",
    )
    .on_cpus(s.cpus.clone())
    .evidence("smt/control", show(ctl, |v| v.clone()), ctl.from.clone());
    for (cpu, on, from) in evidence {
        f = f.evidence(format!("online siblings of CPU {cpu}"), on.to_string(), from);
    }
    let offline: Vec<String> =
        minus(&sibs, &s.cpus).iter().map(|c| format!("echo 0 > /sys/devices/system/cpu/cpu{c}/online")).collect();
    f = f.fix(Fix::new(FixKind::Command, "echo off > /sys/devices/system/cpu/smt/control"));
    if !offline.is_empty() {
        f = f
            .fix(Fix::new(FixKind::Command, offline.join("; ")).with_note("or only the siblings of the measured CPUs"));
    }
    out.push(f.fix(Fix::new(FixKind::BootParam, "nosmt")));
}

fn governor(s: &Scope, out: &mut Vec<Finding>) {
    let c = &s.facts.cpus;
    let mut slow: Vec<(CpuId, String, String)> = Vec::new();
    let mut perf = Vec::new();
    let mut none_note = None;
    for cpu in s.cpus.iter() {
        let Some(fact) = c.cpu(cpu) else { continue };
        match fact.cpufreq.get() {
            Some(fr) => match fr.governor.as_deref() {
                Some("performance") => perf.push(cpu),
                Some(g) => slow.push((cpu, g.to_string(), fact.cpufreq.from.clone())),
                None => {}
            },
            None => none_note = Some((fact.cpufreq.note.clone().unwrap_or_default(), fact.cpufreq.from.clone())),
        }
    }
    if !slow.is_empty() {
        let cpus = CpuList(slow.iter().map(|x| x.0).collect());
        let mut f = Finding::new(
            "cpu.governor",
            Severity::Warn,
            format!("{} not on the performance governor", cpus_label(&cpus)),
            "A governor that lowers the clock when idle makes the first work after a wakeup run slowly and pay \
             for the frequency change.",
        )
        .on_cpus(cpus.clone());
        for (cpu, g, from) in &slow {
            f = f.evidence(format!("CPU {cpu} scaling_governor"), g.clone(), from.clone());
        }
        let cmd = format!(
            "for c in {}; do echo performance > /sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor; done",
            cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")
        );
        out.push(
            f.fix(Fix::new(FixKind::Command, cmd))
                .fix(Fix::new(FixKind::Command, format!("cpupower -c {cpus} frequency-set -g performance"))),
        );
    } else if !perf.is_empty() {
        out.push(
            Finding::new(
                "cpu.governor",
                Severity::Ok,
                "measured CPUs on the performance governor",
                "The clock stays high, so wakeups do not wait for a frequency change.",
            )
            .on_cpus(CpuList(perf)),
        );
    } else if let Some((note, from)) = none_note {
        out.push(
            Finding::new(
                "cpu.governor",
                Severity::Info,
                "no cpufreq driver: the CPU frequency is not controlled by this kernel",
                "Frequency changes by firmware or the host cannot be seen or prevented from here.",
            )
            .evidence("cpufreq", format!("unknown ({note})"), from),
        );
    }
}

fn idle_states(s: &Scope, out: &mut Vec<Finding>) {
    let c = &s.facts.cpus;
    let qos = c.dma_latency.current_us.get().copied();
    let boot = s.facts.boot.get();
    let capped_by_boot = boot.is_some_and(|b| {
        b.idle.as_deref() == Some("poll")
            || b.intel_idle_max_cstate.as_deref().is_some_and(|v| v == "0" || v == "1")
            || b.processor_max_cstate.as_deref() == Some("1")
    });
    let mut deep: Vec<(CpuId, String, u64, String)> = Vec::new();
    let mut any_known = false;
    for cpu in s.cpus.iter() {
        let Some(fact) = c.cpu(cpu) else { continue };
        let Some(states) = fact.idle_states.get() else { continue };
        any_known = true;
        for st in states.iter().filter(|st| !st.disabled && st.exit_latency_us > DEEP_IDLE_US) {
            // A PM QoS limit below the exit latency keeps the governor out of this state.
            if qos.is_some_and(|q| q >= 0 && (q as u64) < st.exit_latency_us) {
                continue;
            }
            deep.push((
                cpu,
                st.name.clone(),
                st.exit_latency_us,
                format!("{}/state{}", fact.idle_states.from, st.index),
            ));
        }
    }
    if !any_known {
        return;
    }
    let qos_ev = show(&c.dma_latency.current_us, |v| format!("{v} us"));
    let holders = show(&c.dma_latency.holders, |h| {
        if h.is_empty() {
            "none".into()
        } else {
            h.iter().map(|p| format!("{} ({})", p.comm, p.pid)).collect::<Vec<_>>().join(", ")
        }
    });
    if deep.is_empty() || capped_by_boot {
        out.push(
            Finding::new(
                "cpu.idle_states",
                Severity::Ok,
                format!("no enabled idle state exits slower than {DEEP_IDLE_US} us on the measured CPUs"),
                "Waking from idle adds at most a few microseconds.",
            )
            .on_cpus(s.cpus.clone())
            .evidence("cpuidle driver", show(&c.cpuidle_driver, |d| d.clone()), c.cpuidle_driver.from.clone())
            .evidence("PM QoS CPU latency limit", qos_ev, c.dma_latency.current_us.from.clone()),
        );
        return;
    }
    let cpus = CpuList({
        let mut v: Vec<CpuId> = deep.iter().map(|d| d.0).collect();
        v.dedup();
        v
    });
    let worst = deep.iter().map(|d| d.2).max().unwrap_or(0);
    let mut f = Finding::new(
        "cpu.idle_states",
        Severity::Warn,
        format!("deep idle states (exit up to {worst} us) enabled on {} with no latency cap", cpus_label(&cpus)),
        "A CPU woken from a deep C-state first spends the state's exit latency powering back up, which adds \
         directly to the wakeup latency.",
    )
    .on_cpus(cpus.clone());
    let mut seen = std::collections::BTreeSet::new();
    for (cpu, name, lat, from) in &deep {
        if seen.insert((name.clone(), *lat)) {
            f = f.evidence(
                format!("CPU {cpu} idle state {name}"),
                format!("exit latency {lat} us, enabled"),
                from.clone(),
            );
        }
    }
    f = f.evidence("PM QoS CPU latency limit", qos_ev, c.dma_latency.current_us.from.clone()).evidence(
        "/dev/cpu_dma_latency holders",
        holders,
        c.dma_latency.holders.from.clone(),
    );
    out.push(
        f.fix(Fix::new(FixKind::Command, format!("cpupower -c {cpus} idle-set -D {DEEP_IDLE_US}")))
            .fix(Fix::new(FixKind::BootParam, "intel_idle.max_cstate=1 processor.max_cstate=1"))
            .fix(
                Fix::new(FixKind::Command, r"exec 3>/dev/cpu_dma_latency && printf '\0\0\0\0' >&3")
                    .with_note("holds a 0 us limit while this shell lives, as cyclictest and latscope timer do"),
            ),
    );
}
