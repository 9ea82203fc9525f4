//! Facts about the host read from /proc and /sys: CPUs, run metadata, and (later) the full `SystemFacts`.

pub mod cgroup_rt;
pub mod clocksource;
pub mod cmdline;
pub mod console;
pub mod counters;
pub mod cpufreq;
pub mod cpuidle;
pub mod cpus;
pub mod facts;
pub mod hypervisor;
pub mod irq_affinity;
pub mod kconfig;
pub mod memory;
pub mod metadata;
pub mod preemption;
pub mod process;
pub mod read_fact;
pub mod sysctl;
pub mod topology;
pub mod tracing_caps;
pub mod watchdog;

use crate::SysError;
use std::path::Path;

/// Reads a small kernel file to a trimmed string.
pub fn read_trimmed(path: impl AsRef<Path>) -> Result<String, SysError> {
    let p = path.as_ref();
    std::fs::read_to_string(p).map(|s| s.trim().to_string()).map_err(|e| SysError::file(p, e))
}

/// Reads a small kernel file, `None` when it is missing or unreadable.
pub fn read_opt(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}
