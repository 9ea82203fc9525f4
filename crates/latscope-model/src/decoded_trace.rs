//! A decoded trace: the event stream of one input, what the input said about itself (format, tracer,
//! CPUs, lost events, clock), and the warnings of what was skipped. Decoders build it; analyses read it.

use crate::{CpuId, Event, LatencyHeader, Nanos};
use serde::Serialize;
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
    /// Whether the timestamps count clock cycles (`x86-tsc`, `counter`) that the file gives no way to turn
    /// into nanoseconds: every time and duration is then in cycles, not ns.
    pub cycles: bool,
    /// Places where whoever pasted the trace left lines out (`...`, `[...]`, `8182 x the above two line`):
    /// gaps in the evidence, in input order.
    pub elisions: Vec<Elision>,
    /// Words the author of a pasted trace wrote after a line (`… mode=ABS <==== prepare to sleep`), taken
    /// off the line before it was decoded, in input order.
    pub annotations: Vec<Annotation>,
}

/// A place where lines of a pasted trace were left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Elision {
    /// `FILE:LINE` of the elision mark.
    pub location: String,
    /// The mark as written (`[...]`, `8182 x the above two line`).
    pub text: String,
    /// Events decoded before the mark.
    pub after_events: u64,
    /// Time of the last event before the mark.
    pub after_ts: Nanos,
}

/// The author's words after a line of a pasted trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Annotation {
    /// `FILE:LINE` of the annotated line.
    pub location: String,
    /// The words as written, from their arrow on (`<==== try to wake up cyclictest process`).
    pub text: String,
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

/// Something that could not be decoded and was skipped; decoding went on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// `FILE:LINE` for text, `FILE@0xOFFSET` (or `cpuN page P`) for binary input.
    pub location: String,
    /// What was wrong.
    pub message: String,
}
