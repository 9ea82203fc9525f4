//! The text report of `latscope audit`: a compact table of findings grouped by severity (fail, warn, info,
//! ok), with evidence and the first fix for the ones that need action.

use latscope_model::{AuditResult, Finding, Fix, FixKind, Severity};
use std::io::{self, Write};

/// Evidence lines shown per finding unless verbose.
const EVIDENCE_SHOWN: usize = 3;

/// Writes the whole report. `verbose` shows every piece of evidence, every fix and the reason for each
/// finding, `ok` ones included.
pub fn write_audit(out: &mut dyn Write, r: &AuditResult, verbose: bool) -> io::Result<()> {
    let m = &r.metadata;
    let host = if m.hostname.is_empty() { "saved facts" } else { m.hostname.as_str() };
    let release = r.facts.kernel.release.get().map(String::as_str).unwrap_or(m.kernel_release.as_str());
    let online = r.facts.cpus.online.get().map(|l| l.len()).unwrap_or(m.cpu_count as usize);
    writeln!(
        out,
        "latscope audit: {host} · kernel {release} ({}) · {online} CPUs online · audited CPUs {}",
        r.facts.kernel.preemption.get().map(String::as_str).unwrap_or("preemption unknown"),
        r.cpus
    )?;
    if !r.facts.as_root {
        writeln!(out, "(not run as root: facts that need root are shown as unknown)")?;
    }
    write_findings(out, &r.findings, verbose)?;
    let count = |s: Severity| r.findings.iter().filter(|f| f.severity == s).count();
    writeln!(
        out,
        "\n{} fail, {} warn, {} info, {} ok.{}",
        count(Severity::Fail),
        count(Severity::Warn),
        count(Severity::Info),
        count(Severity::Ok),
        if count(Severity::Fail) + count(Severity::Warn) > 0 {
            " Write every fix to a script with --fix-script FILE (latscope applies nothing)."
        } else {
            ""
        }
    )
}

/// Writes findings grouped by severity, worst group first. Also used by timer and noise reports to show
/// the context of their numbers.
pub fn write_findings(out: &mut dyn Write, findings: &[Finding], verbose: bool) -> io::Result<()> {
    let width = findings.iter().map(|f| f.id.len()).max().unwrap_or(0).min(28);
    for sev in [Severity::Fail, Severity::Warn, Severity::Info, Severity::Ok] {
        let group: Vec<&Finding> = findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        writeln!(out, "\n{} ({})", sev.as_str().to_uppercase(), group.len())?;
        for f in group {
            writeln!(out, "  {:<width$}  {}", f.id, f.title)?;
            let pad = " ".repeat(width + 4);
            let detailed = verbose || sev >= Severity::Warn;
            if verbose || sev >= Severity::Warn {
                writeln!(out, "{pad}why: {}", f.why)?;
            }
            if detailed {
                let n = if verbose { f.evidence.len() } else { EVIDENCE_SHOWN };
                for e in f.evidence.iter().take(n) {
                    writeln!(out, "{pad}{} = {}  ({})", e.fact, e.value, e.from)?;
                }
                if f.evidence.len() > n {
                    writeln!(out, "{pad}… {} more (--verbose or --json)", f.evidence.len() - n)?;
                }
            }
            let fixes = if verbose || sev >= Severity::Info { f.fix.len() } else { 0 };
            let fixes = if verbose { fixes } else { fixes.min(1) };
            for x in f.fix.iter().take(fixes) {
                writeln!(out, "{pad}fix: {}", fix_line(x))?;
            }
        }
    }
    Ok(())
}

/// The audit context of a timer or noise result: its fail and warn findings, one line each with the
/// first fix; nothing when there are none.
pub fn write_context(out: &mut dyn Write, findings: &[Finding]) -> io::Result<()> {
    let mut serious: Vec<&Finding> = findings.iter().filter(|f| f.severity >= Severity::Warn).collect();
    if serious.is_empty() {
        return Ok(());
    }
    serious.sort_by_key(|f| std::cmp::Reverse(f.severity));
    writeln!(out, "Configuration that shapes these numbers (`latscope audit` explains each):")?;
    for f in serious {
        writeln!(out, "  {:<4}  {}: {}", f.severity.as_str(), f.id, f.title)?;
        if let Some(x) = f.fix.first() {
            writeln!(out, "        fix: {}", fix_line(x))?;
        }
    }
    Ok(())
}

/// One fix as a user would type or apply it.
pub fn fix_line(f: &Fix) -> String {
    let action = match f.kind {
        FixKind::Command => f.action.clone(),
        FixKind::Sysctl => sysctl_command(&f.action),
        FixKind::BootParam => format!("boot parameter {}", f.action),
        FixKind::KernelConfig => format!("kernel option {}", f.action),
        FixKind::Platform => f.action.clone(),
    };
    if f.note.is_empty() {
        action
    } else {
        format!("{action}  ({})", f.note)
    }
}

/// `key=value` as a `sysctl -w` command, quoting values with spaces.
pub fn sysctl_command(assignment: &str) -> String {
    match assignment.split_once('=') {
        Some((k, v)) if v.contains(' ') => format!("sysctl -w {k}='{v}'"),
        _ => format!("sysctl -w {assignment}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuList, RunMetadata, SystemFacts};

    #[test]
    fn groups_by_severity_worst_first() {
        let findings = vec![
            Finding::new("memory.thp", Severity::Ok, "transparent huge pages: madvise", "fine"),
            Finding::new("sched.rt_throttling", Severity::Warn, "RT throttling on at 950000/1000000 us", "stops RT")
                .evidence("kernel.sched_rt_runtime_us", "950000", "/proc/sys/kernel/sched_rt_runtime_us")
                .fix(Fix::new(FixKind::Sysctl, "kernel.sched_rt_runtime_us=-1")),
            Finding::new("console.loglevel", Severity::Fail, "serial console ttyS0 gets everything", "irqs off")
                .fix(Fix::new(FixKind::Sysctl, "kernel.printk=1 4 1 7")),
        ];
        let r = AuditResult::new(RunMetadata::default(), CpuList::default(), SystemFacts::default(), findings);
        let mut buf = Vec::new();
        write_audit(&mut buf, &r, false).expect("write");
        let text = String::from_utf8(buf).expect("utf8");
        let (fail, warn, ok) = (
            text.find("FAIL (1)").expect("fail"),
            text.find("WARN (1)").expect("warn"),
            text.find("OK (1)").expect("ok"),
        );
        assert!(fail < warn && warn < ok, "{text}");
        assert!(text.contains("sysctl -w kernel.sched_rt_runtime_us=-1"), "{text}");
        assert!(text.contains("sysctl -w kernel.printk='1 4 1 7'"), "{text}");
        assert!(text.contains("kernel.sched_rt_runtime_us = 950000  (/proc/sys/kernel/sched_rt_runtime_us)"));
        assert!(text.contains("1 fail, 1 warn, 0 info, 1 ok."), "{text}");
    }
}
