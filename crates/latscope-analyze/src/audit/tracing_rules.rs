//! Tracing rules: the kernel's latency tracers whose output `latscope analyze` reads, the events latscope
//! records or analyses, BPF support, the kernel option that enables each one that is missing, and tracing
//! already switched on (top level, instances) as a latency risk.

use super::{show, Scope};
use latscope_model::{Finding, Fix, FixKind, Severity};

/// The kernel's latency tracers: (tracer, CONFIG option, what the kernel cannot do without it). latscope
/// does not start them; `latscope analyze` decodes their output recorded with trace-cmd or rtla.
pub const TRACERS: &[(&str, &str, &str)] = &[
    ("irqsoff", "CONFIG_IRQSOFF_TRACER", "find the longest irqs-off section with its call trace"),
    ("preemptoff", "CONFIG_PREEMPT_TRACER", "find the longest preemption-off section"),
    ("wakeup_rt", "CONFIG_SCHED_TRACER", "trace the worst RT task wakeup latency"),
    ("function_graph", "CONFIG_FUNCTION_GRAPH_TRACER", "time kernel functions around the worst case"),
    ("function", "CONFIG_FUNCTION_TRACER", "see which kernel functions ran in a gap"),
    ("timerlat", "CONFIG_TIMERLAT_TRACER", "measure timer latency in the kernel (IRQ and thread)"),
    ("osnoise", "CONFIG_OSNOISE_TRACER", "attribute OS noise in the kernel"),
    ("hwlat", "CONFIG_HWLAT_TRACER", "detect hardware/firmware (SMI) latency"),
];

/// Event subsystems: (system, CONFIG option, what is lost without it). The first four are in the set
/// latscope records; `preemptirq` is not (too many events), but `latscope analyze` uses it when a trace
/// has it (`latscope record --events default,preemptirq`).
pub const EVENT_SYSTEMS: &[(&str, &str, &str)] = &[
    ("sched", "CONFIG_CONTEXT_SWITCH_TRACER", "follow wakeups and context switches"),
    ("irq", "CONFIG_TRACEPOINTS", "see interrupt handlers and softirqs"),
    ("timer", "CONFIG_TRACEPOINTS", "see hrtimer expiries"),
    ("irq_vectors", "CONFIG_X86_LOCAL_APIC", "see local timer and IPI vectors (x86)"),
    (
        "preemptirq",
        "CONFIG_PREEMPTIRQ_TRACEPOINTS",
        "see irqs-off sections as events when you record them (`latscope record --events default,preemptirq`; \
         not recorded by default)",
    ),
];

/// Runs the tracing rules.
pub(crate) fn check(s: &Scope, out: &mut Vec<Finding>) {
    tracers(s, out);
    events(s, out);
    bpf(s, out);
    active(s, out);
}

/// Tracing already on (the top level, any instance): every recorded event costs time on the CPU that records
/// it, in the measured code's place, and a killed latscope run's instance keeps tracing until removed.
fn active(s: &Scope, out: &mut Vec<Finding>) {
    let t = &s.facts.tracing;
    let Some(list) = t.active.get() else { return };
    for a in list {
        let what = match (&a.tracer, a.events.len()) {
            (Some(tr), 0) => format!("tracer {tr}"),
            (Some(tr), n) => format!("tracer {tr} and {n} event(s)"),
            (None, n) => format!("{n} event(s)"),
        };
        let shown: Vec<&str> = a.events.iter().take(6).map(String::as_str).collect();
        let more = if a.events.len() > shown.len() { ", …" } else { "" };
        let value = format!(
            "tracing_on 1, {what}{}",
            if shown.is_empty() { String::new() } else { format!(": {}{more}", shown.join(", ")) }
        );
        let root = t.tracefs.get().cloned().unwrap_or_else(|| "/sys/kernel/tracing".into());
        let f = if a.instance.is_empty() {
            Finding::new(
                "tracing.active.top",
                Severity::Warn,
                format!("the top-level trace buffer is tracing ({what})"),
                "Every traced event costs time on the CPU that records it, inside the code being measured: a \
                 latency risk while real-time work runs.",
            )
            .evidence("tracing", value, format!("{root}/{{tracing_on,current_tracer,set_event}}"))
            .fix(Fix::new(
                FixKind::Command,
                format!("echo nop > {root}/current_tracer; echo > {root}/set_event   (once the trace is not needed)"),
            ))
        } else {
            let dir = format!("{root}/instances/{}", a.instance);
            let (title, fix) = match a.latscope_owner {
                Some((pid, false)) => (
                    format!(
                        "tracefs instance {} of a latscope run that is gone (pid {pid}) is tracing ({what})",
                        a.instance
                    ),
                    format!("rmdir {dir}   (any latscope measurement also removes it)"),
                ),
                Some((pid, true)) => (
                    format!("another latscope run (pid {pid}) is tracing in instance {} ({what})", a.instance),
                    format!("wait for latscope pid {pid} to finish, or stop it (kill {pid})"),
                ),
                None => (
                    format!("tracefs instance {} is tracing ({what})", a.instance),
                    format!("echo 0 > {dir}/tracing_on, or rmdir {dir} once its owner is done with it"),
                ),
            };
            Finding::new(
                format!("tracing.active.{}", a.instance),
                Severity::Warn,
                title,
                "Every traced event costs time on the CPU that records it, inside the code being measured: a \
                 latency risk while real-time work runs.",
            )
            .evidence("tracing", value, format!("{dir}/{{tracing_on,current_tracer,set_event}}"))
            .fix(Fix::new(FixKind::Command, fix))
        };
        out.push(f);
    }
}

fn tracers(s: &Scope, out: &mut Vec<Finding>) {
    let t = &s.facts.tracing;
    let available = t.tracers.get();
    if available.is_none() && s.facts.kernel.config.get().is_none() {
        out.push(
            Finding::new(
                "tracing.unknown",
                Severity::Info,
                "available tracers unknown",
                "Without the list of tracers latscope cannot say which analyses it can run.",
            )
            .evidence("available_tracers", show(&t.tracers, |v| v.join(" ")), t.tracers.from.clone())
            .evidence(
                "kernel config",
                show(&s.facts.kernel.config, |_| String::new()),
                s.facts.kernel.config.from.clone(),
            ),
        );
        return;
    }
    let mut present = Vec::new();
    for (name, config, lost) in TRACERS {
        let (missing, value, from) = match available {
            Some(list) => (!list.iter().any(|x| x == name), list.join(" "), t.tracers.from.clone()),
            None => match s.facts.kernel.config(config) {
                Some(v) => (v == "n", format!("{config}={v}"), s.facts.kernel.config.from.clone()),
                None => continue,
            },
        };
        if !missing {
            present.push(*name);
            continue;
        }
        let mut f = Finding::new(
            format!("tracer.{name}"),
            Severity::Info,
            format!("tracer {name} not available ({config})"),
            format!(
                "Without it the kernel cannot {lost}. latscope does not start this tracer itself; with it, \
                 `latscope analyze` decodes its output (trace-cmd record -p {name}, or rtla for timerlat and osnoise)."
            ),
        )
        .evidence("available_tracers", value, from);
        if let Some(v) = s.facts.kernel.config(config) {
            f = f.evidence(*config, v, s.facts.kernel.config.from.clone());
        }
        out.push(f.fix(Fix::new(FixKind::KernelConfig, format!("{config}=y"))));
    }
    if !present.is_empty() {
        out.push(Finding::new(
            "tracer.available",
            Severity::Ok,
            format!("tracers available: {}", present.join(", ")),
            "latscope does not start these tracers itself (its timer, noise and record commands use trace events); \
             `latscope analyze` decodes their output recorded with trace-cmd record -p TRACER (or rtla for \
             timerlat and osnoise).",
        ));
    }
}

fn events(s: &Scope, out: &mut Vec<Finding>) {
    let t = &s.facts.tracing;
    let Some(systems) = t.event_systems.get() else { return };
    for (sys, config, lost) in EVENT_SYSTEMS {
        if *sys == "irq_vectors" && !s.facts.arch.starts_with("x86") {
            continue;
        }
        if systems.iter().any(|x| x == sys) {
            continue;
        }
        out.push(
            Finding::new(
                format!("event.{sys}"),
                Severity::Info,
                format!("trace events {sys}/* not available ({config})"),
                format!("Without them latscope cannot {lost}."),
            )
            .evidence("event systems", format!("{} systems, no {sys}", systems.len()), t.event_systems.from.clone())
            .fix(Fix::new(FixKind::KernelConfig, format!("{config}=y"))),
        );
    }
    if t.kprobe_events.get() == Some(&false) {
        out.push(
            Finding::new(
                "event.kprobes",
                Severity::Info,
                "kprobe events not available (CONFIG_KPROBE_EVENTS)",
                "Without kprobes latscope cannot add probes on kernel functions that have no tracepoint.",
            )
            .evidence("kprobe_events", "absent", t.kprobe_events.from.clone())
            .fix(Fix::new(FixKind::KernelConfig, "CONFIG_KPROBES=y CONFIG_KPROBE_EVENTS=y")),
        );
    }
}

fn bpf(s: &Scope, out: &mut Vec<Finding>) {
    let t = &s.facts.tracing;
    let syscall = s.facts.kernel.config("CONFIG_BPF_SYSCALL");
    let btf = t.btf_vmlinux.get().copied();
    let unpriv = t.unprivileged_bpf_disabled.get().copied();
    let usable_by_us = s.facts.as_root || unpriv == Some(0);
    let (sev, title) = match (syscall, btf) {
        (Some("n"), _) => (Severity::Info, "BPF not available (CONFIG_BPF_SYSCALL not set)".to_string()),
        (_, Some(false)) => (Severity::Info, "BPF without BTF (/sys/kernel/btf/vmlinux missing)".to_string()),
        _ if !usable_by_us => (Severity::Info, "BPF needs root here (unprivileged BPF disabled)".to_string()),
        _ => (Severity::Ok, "BPF available with BTF".to_string()),
    };
    let mut f = Finding::new(
        "tracing.bpf",
        sev,
        title,
        "BPF-based tools (runqlat, offcputime) measure in-kernel latency with little overhead when available.",
    )
    .evidence(
        "kernel.unprivileged_bpf_disabled",
        show(&t.unprivileged_bpf_disabled, u32::to_string),
        t.unprivileged_bpf_disabled.from.clone(),
    )
    .evidence("BTF", show(&t.btf_vmlinux, bool::to_string), t.btf_vmlinux.from.clone());
    if syscall == Some("n") {
        f = f.fix(Fix::new(FixKind::KernelConfig, "CONFIG_BPF_SYSCALL=y"));
    } else if btf == Some(false) {
        f = f.fix(Fix::new(FixKind::KernelConfig, "CONFIG_DEBUG_INFO_BTF=y"));
    }
    out.push(f);
}

#[cfg(test)]
mod tests {
    use crate::audit::findings_for;
    use latscope_model::facts::ActiveTracing;
    use latscope_model::{CpuList, Fact, Severity, SystemFacts};

    #[test]
    fn tracing_left_on_is_a_latency_risk_and_says_whose_it_is() {
        let mut f = SystemFacts::default();
        f.tracing.tracefs = Fact::known("/sys/kernel/tracing".to_string(), "/proc/mounts");
        let events = |n: &[&str]| n.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        f.tracing.active = Fact::known(
            vec![
                ActiveTracing { instance: String::new(), tracer: Some("function".into()), ..Default::default() },
                ActiveTracing {
                    instance: "latscope-4242".into(),
                    events: events(&["sched:sched_switch", "irq_vectors:local_timer_entry"]),
                    latscope_owner: Some((4242, false)),
                    ..Default::default()
                },
                ActiveTracing {
                    instance: "mine".into(),
                    events: events(&["timer:hrtimer_start"]),
                    ..Default::default()
                },
            ],
            "/sys/kernel/tracing",
        );
        let found = findings_for(&f, &CpuList::default());
        let get = |id: &str| found.iter().find(|x| x.id == id).unwrap_or_else(|| panic!("no {id}: {found:?}"));
        let top = get("tracing.active.top");
        assert_eq!(top.severity, Severity::Warn);
        assert!(top.title.contains("tracer function") && top.fix[0].action.contains("echo nop"), "{top:?}");
        let stale = get("tracing.active.latscope-4242");
        assert!(stale.title.contains("latscope run that is gone (pid 4242)") && stale.title.contains("2 event(s)"));
        assert!(stale.fix[0].action.starts_with("rmdir /sys/kernel/tracing/instances/latscope-4242"), "{stale:?}");
        let foreign = get("tracing.active.mine");
        assert_eq!(foreign.title, "tracefs instance mine is tracing (1 event(s))");
        assert!(foreign.evidence[0].value.contains("timer:hrtimer_start"), "{foreign:?}");
        // Nothing on: no finding.
        f.tracing.active = Fact::known(Vec::new(), "/sys/kernel/tracing");
        assert!(findings_for(&f, &CpuList::default()).iter().all(|x| !x.id.starts_with("tracing.active")));
    }
}
