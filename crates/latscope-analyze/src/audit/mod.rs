//! `latscope audit`'s rules: pure functions over [`SystemFacts`] and the CPUs the user cares about, each
//! yielding [`Finding`]s with evidence (fact and where it was read), why it matters, and the exact fix.
//!
//! Rules are grouped by subject, one file each; [`findings_for`] runs them all.

mod clock_rules;
mod console_rules;
mod cpu_rules;
pub use cpu_rules::DEEP_IDLE_US;
mod isolation_rules;
mod kernel_rules;
mod platform_rules;
mod priority_rules;
mod tracing_rules;

use latscope_model::{CpuId, CpuList, Fact, Finding, Severity, SystemFacts};

/// What every rule sees: the facts, the measured CPUs, and the rest (housekeeping CPUs).
pub struct Scope<'a> {
    /// The snapshot.
    pub facts: &'a SystemFacts,
    /// The CPUs the user cares about (all online CPUs when none were named).
    pub cpus: CpuList,
    /// The online CPUs (the measured ones when unknown).
    pub online: CpuList,
    /// Online CPUs not measured: where IRQs, timers and kernel threads can be moved.
    pub housekeeping: CpuList,
    /// The measuring (or the user's real-time) thread's SCHED_FIFO priority; 0 for SCHED_OTHER.
    pub prio: u32,
}

impl<'a> Scope<'a> {
    /// The scope for `cpus` (empty: every online CPU).
    pub fn new(facts: &'a SystemFacts, cpus: &CpuList, prio: u32) -> Scope<'a> {
        let online = facts.cpus.online.get().cloned().unwrap_or_else(|| cpus.clone());
        let cpus = if cpus.is_empty() { online.clone() } else { cpus.clone() };
        let housekeeping = minus(&online, &cpus);
        Scope { facts, cpus, online, housekeeping, prio }
    }

    /// Whether the kernel is PREEMPT_RT (interrupt handlers and softirqs run in threads).
    pub fn is_preempt_rt(&self) -> bool {
        self.facts.kernel.preemption.get().is_some_and(|m| m == "rt")
    }

    /// CPUs to isolate in a suggested fix: the measured ones when others remain for housekeeping,
    /// otherwise every online CPU but the first.
    pub fn to_isolate(&self) -> CpuList {
        if self.housekeeping.is_empty() {
            CpuList(self.online.0.iter().skip(1).copied().collect())
        } else {
            self.cpus.clone()
        }
    }

    /// CPUs left for housekeeping in a suggested fix (complement of [`Scope::to_isolate`]).
    pub fn keep_for_housekeeping(&self) -> CpuList {
        minus(&self.online, &self.to_isolate())
    }
}

/// Every finding about `facts` that concerns `cpus` (empty: all online CPUs), worst first.
///
/// `latscope timer` and `latscope noise` attach this to their results so a report shows the context of
/// its numbers; `latscope audit` shows it all.
pub fn findings_for(facts: &SystemFacts, cpus: &CpuList) -> Vec<Finding> {
    findings_at(facts, cpus, MEASURING_PRIORITY)
}

/// latscope's default measuring priority (SCHED_FIFO 95, `-p`): what [`findings_for`] judges against.
pub const MEASURING_PRIORITY: u32 = 95;

/// Like [`findings_for`], for a measuring (or application) thread at SCHED_FIFO `prio` (0: SCHED_OTHER).
pub fn findings_at(facts: &SystemFacts, cpus: &CpuList, prio: u32) -> Vec<Finding> {
    let s = Scope::new(facts, cpus, prio);
    let mut out = Vec::new();
    kernel_rules::check(&s, &mut out);
    cpu_rules::check(&s, &mut out);
    isolation_rules::check(&s, &mut out);
    console_rules::check(&s, &mut out);
    clock_rules::check(&s, &mut out);
    platform_rules::check(&s, &mut out);
    priority_rules::check(&s, &mut out);
    tracing_rules::check(&s, &mut out);
    unprivileged(&s, &mut out);
    // Worst first; stable within a severity (rule order).
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// Whether any finding is a failure (`latscope audit` exits with 2).
pub fn has_fail(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Fail)
}

/// Facts left unknown for lack of privileges, so the reader knows what was not judged.
fn unprivileged(s: &Scope, out: &mut Vec<Finding>) {
    if s.facts.as_root {
        return;
    }
    let text = serde_json::to_value(s.facts).unwrap_or_default();
    let mut paths = Vec::new();
    collect_denied(&text, &mut paths);
    paths.sort();
    paths.dedup();
    let mut f = Finding::new(
        "audit.unprivileged",
        Severity::Info,
        format!("not run as root: {} facts unknown", paths.len()),
        "Facts that need root are reported as unknown rather than guessed, so their rules could not judge them.",
    )
    .fix(latscope_model::Fix::new(latscope_model::FixKind::Command, "sudo latscope audit"));
    for p in paths {
        f = f.evidence("unreadable", "unknown", p);
    }
    out.push(f);
}

fn collect_denied(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            let denied = m.get("note").and_then(|n| n.as_str()).is_some_and(|n| n.contains("run latscope as root"));
            if denied && m.get("value").is_some_and(|x| x.is_null()) {
                if let Some(from) = m.get("from").and_then(|f| f.as_str()) {
                    out.push(from.to_string());
                }
            }
            for x in m.values() {
                collect_denied(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_denied(x, out)),
        _ => {}
    }
}

/// A fact's value for evidence, or `unknown (why)`.
pub(crate) fn show<T>(f: &Fact<T>, fmt: impl Fn(&T) -> String) -> String {
    match f.get() {
        Some(v) => fmt(v),
        None => format!("unknown ({})", f.note.as_deref().unwrap_or("not read")),
    }
}

/// `CPU 2` or `CPUs 2-3`, for titles.
pub(crate) fn cpus_label(cpus: &CpuList) -> String {
    if cpus.len() == 1 {
        format!("CPU {cpus}")
    } else {
        format!("CPUs {cpus}")
    }
}

/// `a ∩ b`.
pub(crate) fn inter(a: &CpuList, b: &CpuList) -> CpuList {
    CpuList(a.iter().filter(|c| b.contains(*c)).collect())
}

/// `a − b`.
pub(crate) fn minus(a: &CpuList, b: &CpuList) -> CpuList {
    CpuList(a.iter().filter(|c| !b.contains(*c)).collect())
}

/// The shell command that routes IRQs `irqs` (numbers) to CPUs `keep`; an IRQ's handler thread follows it.
pub(crate) fn move_irqs_command(irqs: &[String], keep: &CpuList) -> String {
    format!("for i in {}; do echo {keep} > /proc/irq/$i/smp_affinity_list; done", irqs.join(" "))
}

/// A CPU list as the kernel's hexadecimal mask (`0-1` → `3`), comma-grouped every 32 bits.
pub(crate) fn hex_mask(cpus: &CpuList) -> String {
    let max = cpus.iter().map(|c| c.0).max().unwrap_or(0);
    let words = (max / 32 + 1) as usize;
    let mut w = vec![0u32; words];
    for CpuId(c) in cpus.iter() {
        w[(c / 32) as usize] |= 1 << (c % 32);
    }
    let mut parts: Vec<String> = w.iter().rev().map(|x| format!("{x:08x}")).collect();
    if let Some(first) = parts.first_mut() {
        let t = first.trim_start_matches('0');
        *first = if t.is_empty() { "0".into() } else { t.to_string() };
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_sets() {
        let l = |s: &str| CpuList::parse(s).expect("list");
        assert_eq!(hex_mask(&l("0-1")), "3");
        assert_eq!(hex_mask(&l("0,32")), "1,00000001");
        assert_eq!(hex_mask(&l("4")), "10");
        assert_eq!(inter(&l("0-3"), &l("2-5")), l("2-3"));
        assert_eq!(minus(&l("0-3"), &l("2-5")), l("0-1"));
    }

    #[test]
    fn scope_defaults_to_online_cpus() {
        let mut f = SystemFacts::default();
        f.cpus.online = Fact::known(CpuList::parse("0-3").expect("list"), "/sys/devices/system/cpu/online");
        let s = Scope::new(&f, &CpuList::default(), MEASURING_PRIORITY);
        assert_eq!(s.cpus.len(), 4);
        assert!(s.housekeeping.is_empty());
        assert_eq!(s.to_isolate(), CpuList::parse("1-3").expect("list"));
        let s = Scope::new(&f, &CpuList::parse("2-3").expect("list"), MEASURING_PRIORITY);
        assert_eq!(s.housekeeping, CpuList::parse("0-1").expect("list"));
        assert_eq!(s.to_isolate(), CpuList::parse("2-3").expect("list"));
    }
}
