//! The `--fix-script` output of `latscope audit`: a commented POSIX shell script of the suggested fixes.
//! latscope never applies it; the user reviews and runs it.

use crate::text::audit::sysctl_command;
use latscope_model::{AuditResult, Finding, FixKind, Severity};
use std::io::{self, Write};

/// Writes the script. For each `warn`/`fail` finding its first runtime fix (command or sysctl) is an active
/// line; alternatives, `info` fixes, platform advice and kernel options are comments; boot parameters are
/// gathered into one suggested command line at the end.
pub fn write_fix_script(out: &mut dyn Write, r: &AuditResult) -> io::Result<()> {
    let m = &r.metadata;
    writeln!(out, "#!/bin/sh")?;
    writeln!(out, "# Suggested latency fixes from latscope audit ({}).", m.start_time)?;
    writeln!(out, "# Host {}, kernel {}, audited CPUs {}.", m.hostname, m.kernel_release, r.cpus)?;
    writeln!(out, "#")?;
    writeln!(out, "# latscope applied NOTHING. Review every line before running this as root.")?;
    writeln!(out, "# Active lines change the running system until reboot; lines starting with '#' are")?;
    writeln!(out, "# alternatives or advice. Boot parameters are collected at the end.")?;
    writeln!(out)?;
    writeln!(out, "if [ \"$(id -u)\" -ne 0 ]; then echo \"run this script as root\" >&2; exit 1; fi")?;
    let mut boot: Vec<(String, String)> = Vec::new();
    let mut written = 0usize;
    for f in r.findings.iter().filter(|f| f.severity > Severity::Ok && !f.fix.is_empty()) {
        writeln!(out)?;
        write_finding(out, f, &mut boot)?;
        written += 1;
    }
    if written == 0 {
        writeln!(out, "\n# Nothing to fix: no finding above 'ok' has a fix.")?;
    }
    if !boot.is_empty() {
        writeln!(out, "\n# Kernel command line: add these (GRUB_CMDLINE_LINUX in /etc/default/grub, then")?;
        writeln!(out, "# 'update-grub' or 'grub2-mkconfig -o /boot/grub2/grub.cfg', then reboot):")?;
        let mut seen = Vec::new();
        for (param, id) in &boot {
            if !seen.contains(param) {
                writeln!(out, "#   {param}    ({id})")?;
                seen.push(param.clone());
            }
        }
    }
    Ok(())
}

fn comment_lines(out: &mut dyn Write, prefix: &str, text: &str) -> io::Result<()> {
    for line in text.lines() {
        writeln!(out, "# {prefix}{line}")?;
    }
    Ok(())
}

fn write_finding(out: &mut dyn Write, f: &Finding, boot: &mut Vec<(String, String)>) -> io::Result<()> {
    writeln!(out, "# [{}] {}: {}", f.severity, f.id, f.title)?;
    comment_lines(out, "why: ", &f.why)?;
    for e in f.evidence.iter().take(4) {
        writeln!(out, "#   {} = {} ({})", e.fact, e.value, e.from)?;
    }
    let mut active_done = f.severity < Severity::Warn;
    for x in &f.fix {
        let note = if x.note.is_empty() { String::new() } else { format!("   # {}", x.note) };
        match x.kind {
            FixKind::Command | FixKind::Sysctl => {
                let cmd = if x.kind == FixKind::Sysctl { sysctl_command(&x.action) } else { x.action.clone() };
                if active_done {
                    writeln!(out, "# alternative: {cmd}{note}")?;
                } else {
                    writeln!(out, "{cmd}{note}")?;
                    active_done = true;
                }
            }
            FixKind::BootParam => {
                writeln!(out, "# boot parameter: {}{note}", x.action)?;
                boot.push((x.action.clone(), f.id.clone()));
            }
            FixKind::KernelConfig => writeln!(out, "# kernel option: {}{note}", x.action)?,
            FixKind::Platform => comment_lines(out, "platform: ", &x.action)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuList, Fix, RunMetadata, SystemFacts};

    #[test]
    fn primary_fix_active_rest_commented() {
        let findings = vec![
            Finding::new("sched.rt_throttling", Severity::Warn, "RT throttling on", "stops RT tasks")
                .fix(Fix::new(FixKind::Sysctl, "kernel.sched_rt_runtime_us=-1").with_note("trusted tasks only")),
            Finding::new("cpu.smt", Severity::Warn, "SMT siblings online", "shares the core")
                .fix(Fix::new(FixKind::Command, "echo off > /sys/devices/system/cpu/smt/control"))
                .fix(Fix::new(FixKind::Command, "echo 0 > /sys/devices/system/cpu/cpu3/online"))
                .fix(Fix::new(FixKind::BootParam, "nosmt")),
            Finding::new("tracer.irqsoff", Severity::Info, "no irqsoff", "less detail")
                .fix(Fix::new(FixKind::KernelConfig, "CONFIG_IRQSOFF_TRACER=y")),
            Finding::new("kernel.mitigations", Severity::Info, "mitigations on", "slower entry")
                .fix(Fix::new(FixKind::BootParam, "mitigations=off")),
            Finding::new("memory.thp", Severity::Ok, "thp madvise", "fine"),
        ];
        let r = AuditResult::new(RunMetadata::default(), CpuList::default(), SystemFacts::default(), findings);
        let mut buf = Vec::new();
        write_fix_script(&mut buf, &r).expect("write");
        let text = String::from_utf8(buf).expect("utf8");
        let active: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
        assert_eq!(
            active,
            vec![
                "if [ \"$(id -u)\" -ne 0 ]; then echo \"run this script as root\" >&2; exit 1; fi",
                "sysctl -w kernel.sched_rt_runtime_us=-1   # trusted tasks only",
                "echo off > /sys/devices/system/cpu/smt/control",
            ],
            "{text}"
        );
        assert!(text.contains("# alternative: echo 0 > /sys/devices/system/cpu/cpu3/online"));
        assert!(text.contains("# kernel option: CONFIG_IRQSOFF_TRACER=y"));
        assert!(
            text.contains("#   nosmt    (cpu.smt)") && text.contains("#   mitigations=off    (kernel.mitigations)")
        );
        assert!(!text.contains("thp madvise"));
    }
}
