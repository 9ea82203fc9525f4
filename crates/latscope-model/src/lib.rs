//! latscope's vocabulary: time, CPUs, events, histograms and the versioned JSON wire types. No I/O.

#![forbid(unsafe_code)]

// The vocabulary is re-exported below; four families keep a namespace of their own: `event` (the event
// kinds), `facts` (what the audit judges), `noise_result` (a noise run's parts) and `wire` (the JSON
// envelope).

mod audit_result;
mod cpu;
mod decoded_trace;
pub mod event;
mod explanation;
pub mod facts;
mod finding;
mod flags;
mod histogram;
mod hwlat_result;
mod kernel_wakeup;
mod latency_header;
mod metadata;
mod missing;
mod monitor_snapshot;
mod noise_cause;
pub mod noise_result;
mod record_result;
mod rtla_output;
mod run_result;
pub mod symbol;
mod syscall_args;
mod task_name;
mod time;
mod timer_progress;
mod timer_result;
mod traced_wakeup;
mod wakeup_graph;
mod window;
pub mod wire;

pub use audit_result::AuditResult;
pub use cpu::{CpuId, CpuList, CpuListError};
pub use decoded_trace::{Annotation, DecodedTrace, Elision, Format, TraceInfo, Warning};
pub use event::{count_events_and_stacks, Event, EventKind, Field, FieldValue, Pid, Text};
pub use explanation::{
    is_rt_prio, latscope_worker, merge_same, CauseKind, Culprit, Explanation, Hint, LatscopeThread, LatscopeWorker,
    Pattern, Place, TaskRef,
};
pub use facts::{Fact, SystemFacts};
pub use finding::{Evidence, Finding, Fix, FixKind, Severity};
pub use flags::Flags;
pub use histogram::{Bucket, LatencyHistogram, Summary};
pub use hwlat_result::{HwlatOptions, HwlatResult, HwlatSample, HwlatSource, HwlatSummary, SmiCounts};
pub use kernel_wakeup::{KernelWakeup, TracerTask};
pub use latency_header::{LatencyHeader, LatencyTask};
pub use metadata::RunMetadata;
pub use missing::MissingFeature;
pub use monitor_snapshot::{CpuMonitor, MonitorSnapshot, NoiseMonitor, ProcessUsage, LATENCY_BUCKETS};
pub use noise_cause::{CpuNoiseCauses, NoiseCauses};
pub use record_result::{RecordResult, RecordedCpu};
pub use rtla_output::{
    RtlaAnalysis, RtlaBlocking, RtlaCpu, RtlaEntry, RtlaMode, RtlaNoise, RtlaOutput, RtlaPart, RtlaStats, RtlaTool,
};
pub use run_result::{Cause, Observation, RunResult, Source};
pub use syscall_args::SyscallArgs;
pub use task_name::TaskName;
pub use time::{parse_duration, DurationError, Nanos};
pub use timer_progress::TimerProgress;
pub use timer_result::{
    keep_worst, CpuTimer, ImportedSetup, IrqLatency, StopReason, TimerBackend, TimerOptions, TimerResult, TimerStats,
    WakeupSample,
};
pub use traced_wakeup::{SampleMatch, TimerTrace, TracedIrqSample, TracedWakeup};
pub use wakeup_graph::{GraphDiffEntry, GraphWindow, WakeupGraph};
pub use window::{WindowAccum, WindowRow, WindowSeries};
