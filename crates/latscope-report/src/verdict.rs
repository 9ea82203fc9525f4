//! The verdict of `latscope run`: the top causes of latency on this machine, each with its evidence and
//! remedy, gathered from the timer and noise measurements, the trace around the worst wakeups, and the
//! audit — ranked by the latency they explain.

use crate::slices::{CpuSlices, SliceKind};
use latscope_analyze::wakeup::WakeupBreakdown;
use latscope_model::noise_result::NoiseResult;
use latscope_model::{AuditResult, Cause, CpuId, Nanos, Pid, Severity, TimerResult};

/// How many causes the verdict keeps.
pub const MAX_CAUSES: usize = 5;

fn us(ns: u64) -> String {
    Nanos(ns).to_string()
}

/// Something that ran while a wakeup was late: (name, kind, pid, prio, time in the window, ns).
pub type Blocker = (String, SliceKind, Option<Pid>, Option<i32>, u64);

/// What ran on a CPU while a wakeup was late: (name, kind, pid, prio, time in the window), largest first,
/// the measured thread (the task running at the actual wakeup) and idle left out.
pub fn blockers(
    slices: &CpuSlices,
    cpu: CpuId,
    from: Nanos,
    to: Nanos,
    measured: Option<Pid>,
) -> (Option<Pid>, Vec<Blocker>) {
    let Some(list) = slices.cpus.get(&cpu) else { return (None, Vec::new()) };
    // The measured thread, when its id is not known, is the task on the CPU at the actual wakeup.
    let measured = measured.or_else(|| {
        list.iter().find(|s| s.kind == SliceKind::Task && s.start <= to && s.end >= to).and_then(|s| s.pid)
    });
    let mut out: Vec<Blocker> = Vec::new();
    for s in list.iter().filter(|s| s.end > from && s.start < to) {
        if s.kind == SliceKind::Task && (s.pid == Some(0) || (s.pid.is_some() && s.pid == measured)) {
            continue;
        }
        let overlap = s.end.min(to).saturating_sub(s.start.max(from)).0;
        match out.iter_mut().find(|o| o.0 == s.name && o.1 == s.kind && o.2 == s.pid) {
            Some(o) => o.4 += overlap,
            None => out.push((s.name.clone(), s.kind, s.pid, s.prio, overlap)),
        }
    }
    out.sort_by_key(|o| std::cmp::Reverse(o.4));
    (measured, out)
}

/// Causes from the timer's worst wakeups and, when traced, what ran meanwhile.
pub fn timer_causes(t: &TimerResult, slices: Option<&CpuSlices>, measured: &[(CpuId, Pid)]) -> Vec<Cause> {
    let mut worst: Vec<(CpuId, latscope_model::WakeupSample)> =
        t.cpus.iter().flat_map(|c| c.worst.iter().map(move |w| (c.cpu, *w))).collect();
    worst.sort_by_key(|w| std::cmp::Reverse(w.1.latency_ns));
    let mut causes = Vec::new();
    let Some((cpu, w)) = worst.first().copied() else { return causes };
    let base = format!(
        "worst wakeup {} late on CPU {} at {:.6} s (p99 over all CPUs {}, {} samples)",
        us(w.latency_ns),
        cpu.0,
        w.expected_ns as f64 / 1e9,
        t.all.percentile("99").map_or("-".into(), us),
        t.all.count
    );
    match slices {
        Some(s) if s.cpus.contains_key(&cpu) => {
            let tid = measured.iter().find(|m| m.0 == cpu).map(|m| m.1);
            let (_, b) = blockers(s, cpu, Nanos(w.expected_ns), Nanos(w.actual_ns), tid);
            let blocked: u64 = b.iter().filter(|x| x.1 == SliceKind::Task).map(|x| x.4).sum();
            let irq: u64 = b.iter().filter(|x| x.1 != SliceKind::Task).map(|x| x.4).sum();
            let mut evidence = vec![base];
            for (name, kind, pid, prio, ns) in b.iter().take(4) {
                let who = match (kind, pid, prio) {
                    (SliceKind::Task, Some(pid), Some(prio)) => format!("task {name} (pid {pid}, prio {prio})"),
                    (SliceKind::Task, Some(pid), None) => format!("task {name} (pid {pid})"),
                    _ => name.clone(),
                };
                evidence.push(format!("{who} ran {} of the {} window", us(*ns), us(w.latency_ns)));
            }
            let unexplained = w.latency_ns.saturating_sub(blocked + irq);
            if unexplained > w.latency_ns / 2 {
                evidence.push(format!(
                    "{} of the delay has no kernel event on the CPU: the hypervisor or the hardware (steal time, \
                     SMIs) held it",
                    us(unexplained)
                ));
            }
            let title = match b.first() {
                Some((name, SliceKind::Task, pid, prio, ns)) if *ns > w.latency_ns / 3 => format!(
                    "Task {name} (pid {}, prio {}) kept the timer thread off CPU {} for {}",
                    pid.unwrap_or(-1),
                    prio.map_or("?".into(), |p| p.to_string()),
                    cpu.0,
                    us(*ns)
                ),
                Some((name, _, _, _, ns)) if *ns > w.latency_ns / 3 => {
                    format!("{name} on CPU {} delayed the timer wakeup by {}", cpu.0, us(*ns))
                }
                _ if unexplained > w.latency_ns / 2 => format!(
                    "The worst wakeup ({} on CPU {}) happened with no kernel activity on the CPU: hypervisor or hardware",
                    us(w.latency_ns),
                    cpu.0
                ),
                _ => format!("Timer wakeups reach {} on CPU {}", us(w.latency_ns), cpu.0),
            };
            let remedy = match b.first() {
                _ if unexplained > w.latency_ns / 2 => "on a VM: dedicated, pinned vCPUs on an idle host; on bare \
                                                        metal: check SMIs and BIOS power settings"
                    .to_string(),
                Some((_, SliceKind::Task, _, _, _)) => {
                    "give the real-time thread a higher priority than that task, or move the task to another CPU \
                     (taskset, cpusets, isolcpus=)"
                        .to_string()
                }
                Some((_, SliceKind::Irq | SliceKind::Vector, _, _, _)) => {
                    "move the IRQ off the measured CPU (/proc/irq/N/smp_affinity) or use threaded IRQs".to_string()
                }
                _ if unexplained > w.latency_ns / 2 => {
                    "on a VM: dedicated, pinned vCPUs on an idle host; on bare metal: check SMIs and BIOS power \
                     settings"
                        .to_string()
                }
                _ => String::new(),
            };
            causes.push(Cause { title, source: "trace".into(), evidence, remedy, impact_ns: w.latency_ns });
        }
        _ => causes.push(Cause {
            title: format!("Timer wakeups reach {} on CPU {} (no trace to say why)", us(w.latency_ns), cpu.0),
            source: "timer".into(),
            evidence: vec![base],
            remedy: "run as root with tracefs available so the worst wakeups are traced".into(),
            impact_ns: w.latency_ns,
        }),
    }
    causes
}

/// A cause from the analyser's decomposition of a measured wakeup (`latscope-analyze`'s
/// `decompose_sample`): its explanation, each component as evidence, and its remedy.
pub fn breakdown_cause(b: &WakeupBreakdown) -> Cause {
    let (title, remedy) = match b.explanation.split_once("Remedy:") {
        Some((t, r)) => (t.trim().to_string(), r.trim().to_string()),
        None => (b.explanation.trim().to_string(), String::new()),
    };
    // The five largest parts, largest first; the rest are summed.
    let mut parts: Vec<&latscope_analyze::component::Component> = b.components.iter().collect();
    parts.sort_by_key(|c| std::cmp::Reverse(c.duration));
    let rest: u64 = parts.iter().skip(5).map(|c| c.duration.0).sum();
    let mut evidence: Vec<String> = parts
        .iter()
        .take(5)
        .map(|c| {
            let who = match (c.pid, c.prio) {
                (Some(pid), Some(prio)) => format!("{} (pid {pid}, prio {prio})", c.name),
                (Some(pid), None) => format!("{} (pid {pid})", c.name),
                _ => c.name.clone(),
            };
            let times = if c.count > 1 { format!(" ×{}", c.count) } else { String::new() };
            format!("{}: {who} {}{times}", c.kind.as_str().replace('_', " "), us(c.duration.0))
        })
        .collect();
    if rest > 0 {
        evidence.push(format!("{} other parts: {}", parts.len() - 5, us(rest)));
    }
    if b.remainder > 0 {
        evidence.push(format!("not covered by a trace event: {}", us(b.remainder as u64)));
    }
    Cause { title, source: "trace".into(), evidence, remedy, impact_ns: b.latency.0 }
}

/// Causes from the noise measurement: RT throttling, the busiest interrupt lines, steal time, and gaps
/// without an explanation.
pub fn noise_causes(n: &NoiseResult) -> Vec<Cause> {
    let mut causes = Vec::new();
    for c in &n.cpus {
        let t = &c.rt_throttling;
        if t.detected {
            causes.push(Cause {
                title: format!(
                    "RT throttling stopped the real-time spinner on CPU {} for {}",
                    c.cpu.0,
                    us(t.median_gap_ns)
                ),
                source: "noise".into(),
                evidence: vec![
                    format!(
                        "{} gaps of ~{} every ~{}, {} in total",
                        t.matched_gaps,
                        us(t.median_gap_ns),
                        us(t.median_interval_ns),
                        us(t.throttled_ns)
                    ),
                    format!(
                        "kernel.sched_rt_runtime_us = {} of sched_rt_period_us = {}",
                        t.runtime_us.map_or("?".into(), |v| v.to_string()),
                        t.period_us.map_or("?".into(), |v| v.to_string())
                    ),
                ],
                remedy: format!(
                    "sysctl -w {}={} (only when the real-time tasks are trusted not to spin forever)",
                    t.sysctl, t.suggested_value
                ),
                impact_ns: t.median_gap_ns,
            });
        }
    }
    // The CPU with the longest gap: its counters say what interrupted it.
    if let Some(c) = n.cpus.iter().max_by_key(|c| c.max_gap_ns).filter(|c| c.max_gap_ns > 0) {
        let mut evidence = vec![format!(
            "longest gap {} on CPU {}; {} gaps above {} ({:.1}/s), {:.3} % of the CPU",
            us(c.max_gap_ns),
            c.cpu.0,
            c.gaps.count,
            us(n.options.threshold_ns),
            c.gaps.per_second,
            c.noise_pct
        )];
        for d in c.counters.interrupts.iter().take(3) {
            evidence.push(format!("{} interrupts from {} ({})", d.delta, d.id, d.description));
        }
        if let Some(steal) = c.counters.steal_ns.filter(|s| *s > 0) {
            evidence.push(format!("steal time {} (the hypervisor ran something else on this vCPU)", us(steal)));
        }
        if n.options.priority == 0 {
            evidence.push(
                "the spinner ran as SCHED_OTHER: every other runnable task's time counts as noise (a real-time \
                 thread would preempt them; --noise-priority N measures that)"
                    .to_string(),
            );
        }
        let virt = n.environment.hypervisor.clone().or_else(|| n.metadata.hypervisor.clone()).map(|h| {
            if h.to_lowercase().contains("unknown") {
                "a hypervisor".to_string()
            } else {
                h
            }
        });
        let throttled = c.rt_throttling.detected && c.rt_throttling.median_gap_ns * 2 > c.max_gap_ns;
        let traced = n.causes.as_ref().and_then(|t| t.cpus.iter().find(|t| t.cpu == c.cpu));
        if let Some(t) = traced {
            for x in t.causes.iter().take(3) {
                evidence.push(format!(
                    "traced: {} in {} gaps, {} in total ({:.1} % of the noise), longest {}",
                    crate::text::noise_causes::label(x),
                    x.count,
                    us(x.total_ns),
                    x.share_pct,
                    us(x.max_ns)
                ));
            }
        }
        let silent = traced.filter(|t| t.no_kernel_event_pct >= 50.0);
        if let (false, Some(t)) = (throttled, silent) {
            let title = format!(
                "Hardware or hypervisor noise on CPU {}: {:.0} % of the gaps (up to {}) carry no kernel event",
                c.cpu.0,
                t.no_kernel_event_pct,
                us(c.max_gap_ns)
            );
            let remedy = silent_remedy(virt.as_deref());
            causes.push(Cause { title, source: "noise".into(), evidence, remedy, impact_ns: c.max_gap_ns });
        } else if let (false, Some(top)) = (throttled, traced.and_then(|t| t.causes.first())) {
            let title = format!(
                "OS noise on CPU {}: gaps up to {}, mostly {} ({:.0} % of the noise)",
                c.cpu.0,
                us(c.max_gap_ns),
                crate::text::noise_causes::label(top),
                top.share_pct
            );
            let remedy = match top.kind.as_str() {
                "no_kernel_event" => silent_remedy(virt.as_deref()),
                _ => traced_remedy(top, c.cpu.0),
            };
            causes.push(Cause { title, source: "noise".into(), evidence, remedy, impact_ns: c.max_gap_ns });
        } else if !throttled {
            let (title, remedy) = match &virt {
                Some(h) => (
                    format!("OS/hypervisor noise on CPU {}: gaps up to {} under {h}", c.cpu.0, us(c.max_gap_ns)),
                    "trace the gaps (latscope noise --trace) to split kernel work from hypervisor time; pin and \
                     dedicate the vCPUs on the host"
                        .to_string(),
                ),
                None => (
                    format!("OS noise on CPU {}: gaps up to {}", c.cpu.0, us(c.max_gap_ns)),
                    "isolate the CPU (isolcpus=, nohz_full=, rcu_nocbs=) and move IRQs away from it".to_string(),
                ),
            };
            causes.push(Cause { title, source: "noise".into(), evidence, remedy, impact_ns: c.max_gap_ns });
        }
    }
    causes
}

/// What to do about gaps no kernel event explains, under hypervisor `virt` or on bare metal.
fn silent_remedy(virt: Option<&str>) -> String {
    match virt {
        Some(h) => format!(
            "the guest cannot fix this: on the {h} host, pin each vCPU to a dedicated isolated CPU, avoid \
             overcommit and host power management; or measure on bare metal"
        ),
        None => "look for SMIs (modprobe msr; latscope noise then counts MSR 0x34) and firmware power \
                 management; the hwlat tracer confirms time the kernel never saw"
            .to_string(),
    }
}

/// What to do about the traced cause that took most of a CPU's noise.
fn traced_remedy(top: &latscope_model::NoiseCause, cpu: u32) -> String {
    match top.kind.as_str() {
        "timer_tick" => format!(
            "stop the tick on CPU {cpu} while it runs one task: boot with nohz_full={cpu} isolcpus={cpu} \
             rcu_nocbs={cpu} (a CONFIG_NO_HZ_FULL kernel)"
        ),
        "task" => format!(
            "move {} off CPU {cpu} (taskset -pc <other CPUs> {}, or a cpuset), or isolate the CPU with isolcpus={cpu}; \
             a real-time measuring thread would preempt it",
            top.name,
            top.pid.map_or("<pid>".into(), |p| p.to_string())
        ),
        "irq" => format!(
            "route IRQ {} away from CPU {cpu} (/proc/irq/<n>/smp_affinity_list), or boot with \
             isolcpus=managed_irq,{cpu} irqaffinity=<other CPUs>",
            top.name
        ),
        "softirq" => format!(
            "softirq {} runs on CPU {cpu} after the interrupts that raise it: move those IRQs away, or isolate the CPU",
            top.name
        ),
        "rt_throttling" => "sysctl -w kernel.sched_rt_runtime_us=-1 (only with trusted real-time tasks)".into(),
        _ => format!("isolate CPU {cpu} (isolcpus=, nohz_full=, rcu_nocbs=) and move IRQs away from it"),
    }
}

/// Causes from the audit: its `fail` and `warn` findings (a configuration risk explains no measured
/// latency, so they rank after the measured causes of the same size).
pub fn audit_causes(a: &AuditResult) -> Vec<Cause> {
    let mut f: Vec<&latscope_model::Finding> = a.findings.iter().filter(|f| f.severity >= Severity::Warn).collect();
    f.sort_by_key(|f| std::cmp::Reverse(f.severity));
    f.into_iter()
        .map(|f| Cause {
            title: format!("{} ({})", f.title, f.severity),
            source: "audit".into(),
            evidence: f
                .evidence
                .iter()
                .map(|e| format!("{} = {} ({})", e.fact, e.value, e.from))
                .chain([f.why.clone()])
                .collect(),
            remedy: f.fix.iter().map(|x| x.action.clone()).collect::<Vec<_>>().join("; "),
            impact_ns: 0,
        })
        .collect()
}

/// The verdict: measured causes by the latency they explain, then audit findings; at most [`MAX_CAUSES`].
pub fn verdict(
    audit: Option<&AuditResult>,
    timer: Option<&TimerResult>,
    noise: Option<&NoiseResult>,
    slices: Option<&CpuSlices>,
    measured_tids: &[(CpuId, Pid)],
    breakdowns: &[WakeupBreakdown],
) -> Vec<Cause> {
    // The analyser's decomposition of the worst wakeups is preferred; the slice heuristic stands in
    // when it could not decompose them (events missing around the sample).
    let mut measured: Vec<Cause> = if breakdowns.is_empty() {
        timer.map(|t| timer_causes(t, slices, measured_tids)).unwrap_or_default()
    } else {
        breakdowns.iter().take(2).map(breakdown_cause).collect()
    };
    measured.extend(noise.map(noise_causes).unwrap_or_default());
    measured.sort_by_key(|c| std::cmp::Reverse(c.impact_ns));
    let mut all = measured;
    for c in audit.map(audit_causes).unwrap_or_default() {
        // RT throttling measured and audited: keep the measured one.
        let dup = all.iter().any(|m| m.title.contains("RT throttling") && c.title.to_lowercase().contains("throttl"));
        if !dup {
            all.push(c);
        }
    }
    all.truncate(MAX_CAUSES);
    all
}

/// The verdict as text, one numbered cause with its evidence and remedy.
pub fn render(causes: &[Cause]) -> String {
    let mut out = String::from("Verdict: ");
    if causes.is_empty() {
        out.push_str("no cause of latency stood out.\n");
        return out;
    }
    out.push_str(&format!("{} cause(s) of latency on this machine, most important first\n", causes.len()));
    for (i, c) in causes.iter().enumerate() {
        out.push_str(&format!("  {}. {} [{}]\n", i + 1, c.title, c.source));
        for e in &c.evidence {
            out.push_str(&format!("       evidence: {e}\n"));
        }
        if !c.remedy.is_empty() {
            out.push_str(&format!("       remedy:   {}\n", c.remedy));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slices;
    use latscope_model::noise_result::{CounterInfo, CpuNoise, NoiseOptions, RtThrottling};
    use latscope_model::TaskName;
    use latscope_model::{CpuTimer, Event, EventKind, Flags, RunMetadata, TimerOptions, WakeupSample};

    fn switch(ts: u64, prev: (&str, Pid, i32), next: (&str, Pid, i32)) -> Event {
        Event {
            ts: Nanos(ts),
            cpu: CpuId(1),
            pid: prev.1,
            tgid: None,
            comm: TaskName::from(prev.0),
            flags: Flags::default(),
            kind: EventKind::SchedSwitch {
                prev_comm: prev.0.into(),
                prev_pid: prev.1,
                prev_prio: prev.2,
                prev_state: "R".into(),
                next_comm: next.0.into(),
                next_pid: next.1,
                next_prio: next.2,
            },
        }
    }

    #[test]
    fn names_the_blocking_task_from_the_trace() {
        // The spinner (prio 2 = SCHED_FIFO 97) runs 1.000–1.700 ms; the timer thread should have woken at 1.1 ms.
        let events = vec![
            switch(900_000, ("swapper/1", 0, 120), ("spinner", 4242, 2)),
            switch(1_700_000, ("spinner", 4242, 2), ("latscope-timer", 77, 4)),
            switch(1_720_000, ("latscope-timer", 77, 4), ("swapper/1", 0, 120)),
        ];
        let s = slices::build(&events);
        let mut t = TimerResult::new(RunMetadata::default(), TimerOptions::default());
        t.cpus.push(CpuTimer {
            cpu: CpuId(1),
            worst: vec![WakeupSample {
                seq: 3,
                expected_ns: 1_100_000,
                actual_ns: 1_705_000,
                latency_ns: 605_000,
                missed_periods: 0,
            }],
            ..CpuTimer::default()
        });
        let causes = timer_causes(&t, Some(&s), &[(CpuId(1), 77)]);
        assert_eq!(causes.len(), 1);
        let c = &causes[0];
        assert!(
            c.title.starts_with("Task spinner (pid 4242, prio 2) kept the timer thread off CPU 1 for 600us"),
            "{}",
            c.title
        );
        assert!(c.evidence.iter().any(|e| e.contains("task spinner (pid 4242, prio 2) ran 600us")), "{:?}", c.evidence);
        assert!(c.remedy.contains("priority"));
    }

    /// The analyser's decomposition of a measured sample becomes the cause, with the spinner named.
    #[test]
    fn analyser_breakdown_becomes_the_cause() {
        use latscope_analyze::wakeup::{decompose_sample, KnownSample, WakeupContext};
        let us = |v: u64| v * 1000;
        let ev = |ts: u64, comm: &str, pid: Pid, kind: EventKind| Event {
            ts: Nanos(ts),
            cpu: CpuId(1),
            pid,
            tgid: None,
            comm: TaskName::from(comm),
            flags: Flags::default(),
            kind,
        };
        let start = EventKind::HrtimerStart {
            hrtimer: 1,
            function: "hrtimer_wakeup".into(),
            expires: Nanos(us(100)),
            softexpires: Nanos(us(100)),
            mode: "ABS".into(),
        };
        let sw = |prev: (&str, Pid, i32, &str), next: (&str, Pid, i32)| EventKind::SchedSwitch {
            prev_comm: prev.0.into(),
            prev_pid: prev.1,
            prev_prio: prev.2,
            prev_state: prev.3.into(),
            next_comm: next.0.into(),
            next_pid: next.1,
            next_prio: next.2,
        };
        let waking = EventKind::SchedWakeup {
            kind: latscope_model::event::WakeupKind::Waking,
            comm: "latscope-t1".into(),
            pid: 50,
            prio: 4,
            target_cpu: Some(CpuId(1)),
        };
        let events = vec![
            ev(us(10), "latscope-t1", 50, start),
            ev(us(10), "latscope-t1", 50, sw(("latscope-t1", 50, 4, "S"), ("spin", 60, 2))),
            ev(us(103), "spin", 60, EventKind::VectorEntry { name: "local_timer".into(), vector: None }),
            ev(
                us(104),
                "spin",
                60,
                EventKind::HrtimerExpireEntry { hrtimer: 1, function: "hrtimer_wakeup".into(), now: Nanos(us(104)) },
            ),
            ev(us(105), "spin", 60, waking),
            ev(us(106), "spin", 60, EventKind::HrtimerExpireExit { hrtimer: 1 }),
            ev(us(108), "spin", 60, EventKind::VectorExit { name: "local_timer".into(), vector: None }),
            ev(us(708), "spin", 60, sw(("spin", 60, 2, "S"), ("latscope-t1", 50, 4))),
            ev(us(712), "latscope-t1", 50, EventKind::SysExit { nr: Some(230), name: None, ret: 0 }),
        ];
        let timeline = latscope_analyze::timeline::Timeline::build(&events);
        let expiries = latscope_analyze::hrtimer::expiries(&events);
        let ctx = WakeupContext { events: &events, timeline: &timeline, expiries: &expiries };
        let b =
            decompose_sample(&ctx, KnownSample { cpu: CpuId(1), expected: Nanos(us(100)), latency: Nanos(us(612)) })
                .expect("decomposed");
        let c = breakdown_cause(&b);
        assert_eq!(c.source, "trace");
        assert_eq!(c.impact_ns, us(612));
        assert!(c.title.contains("spin"), "{}", c.title);
        assert!(!c.title.contains("Remedy"), "{}", c.title);
        assert!(!c.remedy.is_empty(), "{c:?}");
        assert!(c.evidence.iter().any(|e| e.starts_with("blocking task: spin (pid 60")), "{:?}", c.evidence);
        let v = verdict(None, None, None, None, &[], &[b]);
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn traced_noise_without_kernel_events_blames_the_hypervisor() {
        use crate::text::noise_causes::test_cause as cause;
        use latscope_model::{CpuNoiseCauses, NoiseCauses};
        let mut n = NoiseResult::new(RunMetadata::default(), NoiseOptions::default(), CounterInfo::default());
        n.metadata.hypervisor = Some("KVM (KVMKVMKVM)".into());
        n.cpus.push(CpuNoise { cpu: CpuId(1), max_gap_ns: 400_000, ..CpuNoise::default() });
        n.causes = Some(NoiseCauses {
            cpus: vec![CpuNoiseCauses {
                cpu: CpuId(1),
                gaps: 100,
                no_kernel_event_pct: 80.0,
                causes: vec![
                    cause("no_kernel_event", "", 80, 2_000_000, 70.0),
                    cause("timer_tick", "local_timer", 20, 800_000, 30.0),
                ],
                ..CpuNoiseCauses::default()
            }],
            ..NoiseCauses::default()
        });
        let v = verdict(None, None, Some(&n), None, &[], &[]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(
            v[0].title,
            "Hardware or hypervisor noise on CPU 1: 80 % of the gaps (up to 400us) carry no kernel event"
        );
        assert!(v[0].remedy.contains("KVM (KVMKVMKVM) host"), "{}", v[0].remedy);
        assert!(v[0]
            .evidence
            .iter()
            .any(|e| e.starts_with("traced: no kernel event (hardware or hypervisor) in 80 gaps")));
        assert!(v[0].evidence.iter().any(|e| e.starts_with("traced: timer tick (local_timer) in 20 gaps")));
    }

    #[test]
    fn rt_throttling_ranks_by_its_gap() {
        let mut n = NoiseResult::new(RunMetadata::default(), NoiseOptions::default(), CounterInfo::default());
        n.cpus.push(CpuNoise {
            cpu: CpuId(0),
            max_gap_ns: 50_000_000,
            rt_throttling: RtThrottling {
                detected: true,
                matched_gaps: 3,
                median_gap_ns: 50_000_000,
                median_interval_ns: 1_000_000_000,
                throttled_ns: 150_000_000,
                runtime_us: Some(950_000),
                period_us: Some(1_000_000),
                sysctl: "kernel.sched_rt_runtime_us".into(),
                suggested_value: "-1".into(),
                ..RtThrottling::default()
            },
            ..CpuNoise::default()
        });
        let v = verdict(None, None, Some(&n), None, &[], &[]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].title.contains("RT throttling") && v[0].remedy.contains("kernel.sched_rt_runtime_us=-1"));
        let text = render(&v);
        assert!(text.contains("1. RT throttling stopped the real-time spinner on CPU 0 for 50ms [noise]"), "{text}");
    }
}
