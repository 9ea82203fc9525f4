//! [`NoiseCauses`]: what ran in each gap of a noise measurement, from a trace taken at the same time
//! (`latscope noise --trace`), summarised by cause.

use crate::{CpuId, Pid};
use serde::{Deserialize, Serialize};

/// One cause of noise on a CPU and the gaps attributed to it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseCause {
    /// `rt_throttling`, `irq`, `vector`, `timer_tick`, `softirq`, `nmi`, `task`, `other_kernel_event`, or
    /// `no_kernel_event` (hardware, firmware or hypervisor, as hwlat calls it).
    pub kind: String,
    /// IRQ name, vector, softirq vector, task comm; empty for the classes without a name.
    pub name: String,
    /// Task pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<Pid>,
    /// Task kernel priority (below 100: SCHED_FIFO/RR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio: Option<i32>,
    /// Gaps attributed to it.
    pub count: u64,
    /// Their total duration, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
    /// Share of the attributed noise, percent.
    pub share_pct: f64,
}

/// The causes of one CPU's gaps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuNoiseCauses {
    /// The CPU.
    pub cpu: CpuId,
    /// Gaps attributed (the recorded ones).
    pub gaps: u64,
    /// Their total duration, ns: the sum of every cause's total.
    pub attributed_ns: u64,
    /// The noise the loop measured on this CPU, ns (gaps not recorded included).
    pub measured_noise_ns: u64,
    /// Gaps left out because the trace does not cover them (before its rolling window, or after it ended).
    #[serde(default)]
    pub outside_trace: u64,
    /// Gaps that had no kernel event at all, percent of the gaps.
    pub no_kernel_event_pct: f64,
    /// Steal time over the run (the hypervisor ran something else on this vCPU), ns, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
    /// By cause, largest total first.
    pub causes: Vec<NoiseCause>,
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
