//! [`NoiseCauses`]: what ran in each gap of a noise measurement, from a trace taken at the same time
//! (`latscope noise --trace`), summarised by cause as typed [`Explanation`]s.

use crate::{CpuId, Explanation, Nanos};
use serde::{Deserialize, Serialize};

/// The causes of one CPU's gaps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuNoiseCauses {
    /// The CPU.
    pub cpu: CpuId,
    /// Gaps attributed (the recorded ones).
    pub gaps: u64,
    /// Their total duration, ns: the sum of every cause's total.
    pub attributed_ns: Nanos,
    /// The noise the loop measured on this CPU, ns (gaps not recorded included).
    pub measured_noise_ns: Nanos,
    /// Gaps left out because the trace does not cover them (before its rolling window, or after it ended).
    #[serde(default)]
    pub outside_trace: u64,
    /// Gaps that had no kernel event at all, percent of the gaps.
    pub no_kernel_event_pct: f64,
    /// Steal time over the run (the hypervisor ran something else on this vCPU), ns, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<Nanos>,
    /// By cause and culprit, largest total first: each with its gap count, total (`magnitude`), longest
    /// gap (`max`) and share of the attributed noise.
    pub causes: Vec<Explanation>,
}

/// Everything `--trace` adds to a noise result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseCauses {
    /// Per measured CPU.
    pub cpus: Vec<CpuNoiseCauses>,
    /// Events decoded from the trace.
    pub events: u64,
    /// Events the ring buffer lost.
    pub lost_events: u64,
    /// What the trace lacked, and other notes.
    pub notes: Vec<String>,
}
