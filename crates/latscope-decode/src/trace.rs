//! The result of decoding one input: the event stream, what the file said about itself, and warnings.

use crate::Warning;
use latscope_model::{CpuId, Event, Nanos, Text};
use std::collections::BTreeMap;

/// The input format that was recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// ftrace `trace` / `trace_pipe` / per-CPU / snapshot text.
    FtraceText,
    /// A latency tracer's output (irqsoff, preemptoff, preemptirqsoff, wakeup, wakeup_rt), latency format.
    LatencyText,
    /// function_graph output.
    FuncGraphText,
    /// `trace-cmd report` text.
    TraceCmdReport,
    /// Android systrace/atrace text or HTML.
    Systrace,
    /// trace-cmd `.dat`, with its version.
    TraceCmdDat(u32),
    /// Raw per-CPU ring-buffer pages (live capture).
    RawPages,
}

/// The header a latency tracer writes above its trace (`# latency: 12116 us, #4/4, CPU#7 | …`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyHeader {
    /// Tracer name (`irqsoff`, `wakeup_rt`, …).
    pub tracer: String,
    /// Kernel release the trace names.
    pub kernel: Option<String>,
    /// The measured latency.
    pub latency: Nanos,
    /// CPU of the latency.
    pub cpu: Option<CpuId>,
    /// Entries shown / total (`#4/4`).
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

/// What the input said about itself.
#[derive(Clone, Debug, Default)]
pub struct TraceInfo {
    /// The recognised format (`None` until something was recognised).
    pub format: Option<Format>,
    /// `# tracer: NAME` or the .dat's tracer.
    pub tracer: Option<String>,
    /// Number of CPUs the trace says the machine had.
    pub cpus: Option<u32>,
    /// The latency tracers' header, when present.
    pub latency: Option<LatencyHeader>,
    /// Events the kernel reported lost, per CPU (`CPU:2 [LOST 11745 EVENTS]`, page flags, stats).
    pub lost: BTreeMap<CpuId, u64>,
    /// CPUs with a lost-events marker whose count is unknown.
    pub lost_unknown: Vec<CpuId>,
    /// Trace clock (`local`, `mono`, `global`…) when known.
    pub clock: Option<String>,
}

/// A fully decoded input: events in time order (per CPU streams merged), info and warnings.
#[derive(Clone, Debug, Default)]
pub struct DecodedTrace {
    /// What the input said about itself.
    pub info: TraceInfo,
    /// The events, sorted by timestamp (stable for equal timestamps).
    pub events: Vec<Event>,
    /// What was skipped and why.
    pub warnings: Vec<Warning>,
}
