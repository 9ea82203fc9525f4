//! Clocksource rule: timestamps must be cheap (TSC or another vDSO-readable clock), or every clock read
//! becomes a system call and a slow device access.

use super::{show, Scope};
use latscope_model::{Finding, Fix, FixKind, Severity};

/// Clocksources readable from user space through the vDSO.
pub const VDSO_CLOCKS: &[&str] =
    &["tsc", "kvm-clock", "arch_sys_counter", "hyperv_clocksource_tsc_page", "xen", "riscv_clocksource"];

/// Runs the clocksource rule.
pub(crate) fn check(s: &Scope, out: &mut Vec<Finding>) {
    let c = &s.facts.clock;
    let avail = show(&c.available, |v| v.join(" "));
    let flags = show(&c.tsc_flags, |v| if v.is_empty() { "none".into() } else { v.join(" ") });
    let Some(cur) = c.current.get() else {
        out.push(
            Finding::new(
                "clock.source",
                Severity::Info,
                "clocksource unknown",
                "A slow clocksource makes every timestamp expensive.",
            )
            .evidence("current_clocksource", show(&c.current, |v| v.clone()), c.current.from.clone()),
        );
        return;
    };
    let has_tsc = c.available.get().is_some_and(|v| v.iter().any(|x| x == "tsc"));
    let (sev, title, why) = if cur == "tsc" || cur == "arch_sys_counter" {
        (Severity::Ok, format!("clocksource {cur}"), "Clock reads are a few nanoseconds in user space.".to_string())
    } else if VDSO_CLOCKS.contains(&cur.as_str()) {
        (
            Severity::Info,
            format!("clocksource {cur} (paravirtual, vDSO-readable)"),
            "Clock reads stay in user space but cost more than a raw TSC read and follow the host's clock.".to_string(),
        )
    } else {
        (
            Severity::Fail,
            format!("slow clocksource {cur}"),
            format!(
                "Every clock read is a system call and a device access taking microseconds, which distorts every \
                 timestamp and latency measured (available: {avail})."
            ),
        )
    };
    let mut f = Finding::new("clock.source", sev, title, why)
        .evidence("current_clocksource", cur.clone(), c.current.from.clone())
        .evidence("available_clocksource", avail, c.available.from.clone())
        .evidence("TSC flags", flags, c.tsc_flags.from.clone());
    if sev > Severity::Ok && has_tsc {
        f = f
            .fix(Fix::new(
                FixKind::Command,
                "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource",
            ))
            .fix(Fix::new(FixKind::BootParam, "clocksource=tsc tsc=reliable").with_note(
                "tsc=reliable only when the TSC is invariant (constant_tsc and nonstop_tsc flags) and synchronised",
            ));
    }
    out.push(f);
}
