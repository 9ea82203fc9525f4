//! Run metadata carried by every result: what ran, where, and when.

use serde::{Deserialize, Serialize};

/// Facts about the run and the machine that a reader of a saved result needs to interpret it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetadata {
    /// latscope version.
    pub tool_version: String,
    /// The command line as given.
    pub args: Vec<String>,
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel_release: String,
    /// Kernel version string (`uname -v`), which names PREEMPT/PREEMPT_RT/PREEMPT_DYNAMIC builds.
    pub kernel_version: String,
    /// Preemption model: `none`, `voluntary`, `full`, `lazy`, `rt`, or `unknown`.
    pub preemption_model: String,
    /// Kernel command line.
    pub kernel_cmdline: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Number of online CPUs.
    pub cpu_count: u32,
    /// Hypervisor vendor when running under one (`KVM`, `Xen`, `Firecracker`…), else `None`.
    pub hypervisor: Option<String>,
    /// Current clocksource.
    pub clocksource: String,
    /// Start of the run, seconds since the Unix epoch (UTC).
    pub start_unix_s: f64,
    /// Start of the run as RFC 3339 UTC.
    pub start_time: String,
    /// Wall duration of the run, ns.
    pub duration_ns: u64,
}
