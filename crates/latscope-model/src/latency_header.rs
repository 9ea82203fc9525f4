//! The header a latency tracer (irqsoff, preemptoff, preemptirqsoff, wakeup, wakeup_rt) writes above its
//! trace: the measured latency, where it started and ended, and the task it concerns.

use crate::{CpuId, Nanos, Text};

/// The header a latency tracer writes above its trace (`# latency: 12116 us, #4/4, CPU#7 | …`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyHeader {
    /// Tracer name (`irqsoff`, `wakeup_rt`, …).
    pub tracer: String,
    /// The tracer's own version as printed (`1.0.2` of `latency trace v1.0.2`).
    pub version: Option<String>,
    /// Kernel release the trace names.
    pub kernel: Option<String>,
    /// The measured latency.
    pub latency: Nanos,
    /// CPU of the latency.
    pub cpu: Option<CpuId>,
    /// Entries shown / total (`#4/4`; the 2004 tracer's `entries: 4000 (7910)`, which kept the first ones).
    pub entries: Option<(u64, u64)>,
    /// Preemption model as printed (`M:preempt`, `M:desktop`, `M:server`, `M:preempt_rt`).
    pub model: Option<String>,
    /// Task (`comm`, `pid`) and its uid, nice, policy and rt_prio when printed.
    pub task: Option<LatencyTask>,
    /// `=> started at:` function.
    pub started_at: Option<Text>,
    /// `=> ended at:` function.
    pub ended_at: Option<Text>,
    /// The `<stack trace>` frames, innermost first.
    pub stack: Vec<Text>,
    /// The delay markers the trace printed (`+ ! # * @ $`), by the time of the entry they follow: what the
    /// kernel that wrote the trace said, whose thresholds differ by version (2.6 had only `!` and `+`).
    pub markers: Vec<(Nanos, char)>,
}

/// The task named in a latency header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyTask {
    /// Task name.
    pub comm: String,
    /// Pid.
    pub pid: i32,
    /// uid, nice, policy, rt_prio when printed.
    pub uid: Option<i64>,
    /// nice value.
    pub nice: Option<i64>,
    /// scheduling policy number.
    pub policy: Option<i64>,
    /// RT priority.
    pub rt_prio: Option<i64>,
}
