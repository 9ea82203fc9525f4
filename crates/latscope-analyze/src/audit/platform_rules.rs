//! Platform rules: a hypervisor underneath (the latency floor is the host's), steal time, and System
//! Management Interrupts counted in MSR 0x34 (seed 004).

use super::{show, Scope};
use latscope_model::{CpuList, Finding, Fix, FixKind, Severity};

/// Runs the platform rules.
pub(crate) fn check(s: &Scope, out: &mut Vec<Finding>) {
    hypervisor(s, out);
    steal(s, out);
    smi(s, out);
}

fn hypervisor(s: &Scope, out: &mut Vec<Finding>) {
    let h = &s.facts.hypervisor;
    let base = |f: Finding| {
        f.evidence(
            "cpuid 0x40000000 vendor",
            show(&h.cpuid_vendor, |v| if v.is_empty() { "none".into() } else { v.clone() }),
            h.cpuid_vendor.from.clone(),
        )
        .evidence("hypervisor CPU flag", show(&h.cpu_flag, bool::to_string), h.cpu_flag.from.clone())
        .evidence("/sys/hypervisor/type", show(&h.sys_type, |v| v.clone()), h.sys_type.from.clone())
        .evidence("DMI", show(&h.dmi, |v| v.clone()), h.dmi.from.clone())
    };
    match h.detected() {
        Some((name, _)) => out.push(
            base(Finding::new(
                "platform.hypervisor",
                Severity::Warn,
                format!("running under a hypervisor: {name}"),
                "The host decides when this vCPU runs: host interrupts, other guests and vCPU preemption add \
                 latency the guest cannot see or trace, so the latency floor is the host's.",
            ))
            .fix(Fix::new(
                FixKind::Platform,
                "pin each vCPU to a dedicated, isolated host CPU (no overcommit), disable host power management, \
                 and use a real-time host kernel; or measure on bare metal",
            )),
        ),
        None if h.cpu_flag.get().is_some() || h.cpuid_vendor.get().is_some() => out.push(base(Finding::new(
            "platform.hypervisor",
            Severity::Ok,
            "bare metal: no hypervisor detected",
            "Latency is this kernel's and this hardware's alone.",
        ))),
        None => {}
    }
}

fn steal(s: &Scope, out: &mut Vec<Finding>) {
    let st = &s.facts.hypervisor.steal_ns;
    let Some(v) = st.get() else { return };
    let stolen: Vec<_> = v.iter().filter(|c| s.cpus.contains(c.cpu) && c.count > 0).collect();
    if stolen.is_empty() {
        return;
    }
    let mut f = Finding::new(
        "platform.steal",
        Severity::Warn,
        format!(
            "hypervisor stole {:.1} ms from measured vCPUs since boot",
            stolen.iter().map(|c| c.count).sum::<u64>() as f64 / 1e6
        ),
        "Steal time is time this vCPU was runnable but the host ran something else: each such stretch is a gap \
         no guest tracing can explain.",
    )
    .on_cpus(CpuList(stolen.iter().map(|c| c.cpu).collect()));
    for c in &stolen {
        f = f.evidence(format!("CPU {} steal", c.cpu), format!("{:.1} ms", c.count as f64 / 1e6), st.from.clone());
    }
    out.push(f.fix(Fix::new(FixKind::Platform, "give the guest dedicated host CPUs (no overcommit, vCPU pinning)")));
}

fn smi(s: &Scope, out: &mut Vec<Finding>) {
    let smi = &s.facts.smi;
    match smi.get() {
        Some(v) => {
            let total: u64 = v.iter().filter(|c| s.cpus.contains(c.cpu)).map(|c| c.count).max().unwrap_or(0);
            let f = if total > 0 {
                Finding::new(
                    "platform.smi",
                    Severity::Warn,
                    format!("{total} System Management Interrupts since boot"),
                    "An SMI stops every CPU to run firmware code for microseconds to milliseconds, invisible to \
                     the kernel and to every tracer.",
                )
                .fix(Fix::new(
                    FixKind::Platform,
                    "in the firmware setup disable USB legacy emulation, firmware-controlled power management and \
                     the TCO watchdog; prefer OS-controlled P-states",
                ))
            } else {
                Finding::new(
                    "platform.smi",
                    Severity::Ok,
                    "no System Management Interrupt since boot",
                    "Firmware has not stopped the CPUs.",
                )
            };
            out.push(f.evidence("MSR 0x34 (SMI count)", total.to_string(), smi.from.clone()));
        }
        None => out.push(
            Finding::new(
                "platform.smi",
                Severity::Info,
                "SMI count not readable",
                "SMIs stop every CPU invisibly to the kernel; without MSR 0x34 only their gaps can be seen (latscope \
                 noise, hwlat).",
            )
            .evidence("MSR 0x34 (SMI count)", show(smi, |_| String::new()), smi.from.clone())
            .fix(smi_fix(s)),
        ),
    }
}

/// What would make the SMI count readable.
fn smi_fix(s: &Scope) -> Fix {
    if s.facts.kernel.config("CONFIG_X86_MSR") == Some("n") {
        Fix::new(FixKind::KernelConfig, "CONFIG_X86_MSR=m").with_note("the msr driver exposes /dev/cpu/N/msr")
    } else if !s.facts.as_root {
        Fix::new(FixKind::Command, "sudo latscope audit").with_note("reading MSRs needs root")
    } else {
        Fix::new(FixKind::Command, "modprobe msr")
            .with_note("MSR_SMI_COUNT exists on Intel CPUs only; hypervisors usually hide it")
    }
}
