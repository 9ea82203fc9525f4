//! [`Finding`]: one judged fact about the machine (a latency trap or a confirmation), with its evidence,
//! why it matters for latency, and the exact fix. Audit, timer and noise results all carry these.

use crate::{CauseKind, CpuList};
use serde::{Deserialize, Serialize};
use std::fmt;

/// How bad a finding is. Ordered: `Ok < Info < Warn < Fail`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Checked and fine.
    Ok,
    /// Context a reader of the numbers should know; no action needed for latency.
    Info,
    /// Likely to add latency or noise; fix it on a machine meant for real-time work.
    Warn,
    /// Will spoil real-time latency (or the measurement itself); `latscope audit` exits with 2.
    Fail,
}

impl Severity {
    /// The lower-case name (`ok`, `info`, `warn`, `fail`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Fail => "fail",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fact a finding rests on, and where it was read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// What the fact is (`kernel.sched_rt_runtime_us`, `console ttyS0`).
    pub fact: String,
    /// Its value as read (`950000`), or `unknown`.
    pub value: String,
    /// Where it was read (a path, `cpuid 0x40000000`).
    pub from: String,
}

impl Evidence {
    /// Evidence from its three parts.
    pub fn new(fact: impl Into<String>, value: impl Into<String>, from: impl Into<String>) -> Evidence {
        Evidence { fact: fact.into(), value: value.into(), from: from.into() }
    }
}

/// How a fix is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixKind {
    /// A shell command, effective now, lost at reboot unless made persistent.
    Command,
    /// A sysctl assignment `key=value` (`sysctl -w`, or `/etc/sysctl.d/` to persist).
    Sysctl,
    /// A kernel command-line parameter (bootloader configuration, then reboot).
    BootParam,
    /// A kernel build option (`CONFIG_…=y`, rebuild or another kernel package).
    KernelConfig,
    /// Firmware (BIOS/UEFI) or host (hypervisor) configuration, outside this machine's OS.
    Platform,
}

/// One suggested fix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    /// How it is applied.
    pub kind: FixKind,
    /// The exact command, `key=value` sysctl, boot parameter or config option.
    pub action: String,
    /// What to watch out for (empty when nothing).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Fix {
    /// A fix from its kind and action.
    pub fn new(kind: FixKind, action: impl Into<String>) -> Fix {
        Fix { kind, action: action.into(), note: String::new() }
    }

    /// The same fix with a caveat.
    pub fn with_note(mut self, note: impl Into<String>) -> Fix {
        self.note = note.into();
        self
    }
}

/// One judged fact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identifier (`rt_throttling`, `smt.siblings_online`, `tracer.irqsoff`).
    pub id: String,
    /// How bad it is.
    pub severity: Severity,
    /// One line saying what was found.
    pub title: String,
    /// The CPUs it concerns (empty: the whole system).
    #[serde(default)]
    pub cpus: CpuList,
    /// The facts it rests on.
    pub evidence: Vec<Evidence>,
    /// Why it matters for latency, in one sentence.
    pub why: String,
    /// How to fix it (empty for `ok` findings and facts that cannot be changed from here).
    #[serde(default)]
    pub fix: Vec<Fix>,
    /// The cause of latency this configuration produces, when a measurement can show it (a verdict keeps
    /// the measured cause and drops this finding when both are there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<CauseKind>,
}

impl Finding {
    /// A finding without evidence or fixes yet.
    pub fn new(id: impl Into<String>, severity: Severity, title: impl Into<String>, why: impl Into<String>) -> Finding {
        Finding {
            id: id.into(),
            severity,
            title: title.into(),
            cpus: CpuList::default(),
            evidence: Vec::new(),
            why: why.into(),
            fix: Vec::new(),
            cause: None,
        }
    }

    /// Adds a piece of evidence.
    pub fn evidence(mut self, fact: impl Into<String>, value: impl Into<String>, from: impl Into<String>) -> Finding {
        self.evidence.push(Evidence::new(fact, value, from));
        self
    }

    /// Adds a fix.
    pub fn fix(mut self, fix: Fix) -> Finding {
        self.fix.push(fix);
        self
    }

    /// Says which measurable cause of latency this configuration produces.
    pub fn causes(mut self, cause: CauseKind) -> Finding {
        self.cause = Some(cause);
        self
    }

    /// Sets the CPUs it concerns.
    pub fn on_cpus(mut self, cpus: CpuList) -> Finding {
        self.cpus = cpus;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_order_and_serialise() {
        assert!(Severity::Fail > Severity::Warn && Severity::Warn > Severity::Info && Severity::Info > Severity::Ok);
        let f = Finding::new("rt_throttling", Severity::Warn, "RT throttling on", "stops RT tasks")
            .evidence("kernel.sched_rt_runtime_us", "950000", "/proc/sys/kernel/sched_rt_runtime_us")
            .fix(Fix::new(FixKind::Sysctl, "kernel.sched_rt_runtime_us=-1"));
        let v = serde_json::to_value(&f).expect("json");
        assert_eq!(v["severity"], "warn");
        assert_eq!(v["fix"][0]["kind"], "sysctl");
        assert_eq!(v["evidence"][0]["from"], "/proc/sys/kernel/sched_rt_runtime_us");
        let back: Finding = serde_json::from_value(v).expect("back");
        assert_eq!(back, f);
    }
}
