//! Facts about the host read from /proc and /sys: CPUs, run metadata, and (later) the full `SystemFacts`.

mod cgroup_rt;
mod clocksource;
mod cmdline;
mod console;
pub(crate) mod counters;
mod cpufreq;
mod cpuidle;
pub(crate) mod cpus;
mod facts;
mod hypervisor;
mod irq_affinity;
mod kconfig;
mod kernel_threads;
mod memory;
mod metadata;
mod own_usage;
mod preemption;
mod process;
mod read_fact;
mod smi;
mod sysctl;
mod topology;
mod tracing_caps;
mod watchdog;

pub use counters::{deltas as counter_deltas, snapshot as counter_snapshot, CounterSnapshot};
pub use cpus::{check_online, online_cpus};
pub use facts::collect;
pub use metadata::{rfc3339, run_metadata};
pub use own_usage::own_usage;
pub use process::{latscope_threads, LatscopeTask};
pub use smi::{smi_count, smi_counts};

use crate::SysError;
use std::path::Path;

/// Reads a small kernel file to a trimmed string.
pub(crate) fn read_trimmed(path: impl AsRef<Path>) -> Result<String, SysError> {
    let p = path.as_ref();
    std::fs::read_to_string(p).map(|s| s.trim().to_string()).map_err(|e| SysError::file(p, e))
}

/// Reads a small kernel file, `None` when it is missing or unreadable.
pub(crate) fn read_opt(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}
