//! Tracing rules: the tracers, events and BPF support latscope would use, and the kernel option that
//! enables each one that is missing.

use super::{show, Scope};
use latscope_model::{Finding, Fix, FixKind, Severity};

/// Tracers latscope uses: (tracer, CONFIG option, what is lost without it).
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

/// Event subsystems latscope records: (system, CONFIG option, what is lost without it).
pub const EVENT_SYSTEMS: &[(&str, &str, &str)] = &[
    ("sched", "CONFIG_CONTEXT_SWITCH_TRACER", "follow wakeups and context switches"),
    ("irq", "CONFIG_TRACEPOINTS", "see interrupt handlers and softirqs"),
    ("timer", "CONFIG_TRACEPOINTS", "see hrtimer expiries"),
    ("irq_vectors", "CONFIG_X86_LOCAL_APIC", "see local timer and IPI vectors (x86)"),
    ("preemptirq", "CONFIG_PREEMPTIRQ_TRACEPOINTS", "see every irqs-off section as events"),
];

/// Runs the tracing rules.
pub(crate) fn check(s: &Scope, out: &mut Vec<Finding>) {
    tracers(s, out);
    events(s, out);
    bpf(s, out);
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
            format!("Without it latscope cannot {lost}; it falls back to events, which show less."),
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
            "latscope can use these for deeper analysis.",
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
