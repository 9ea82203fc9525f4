//! latscope's vocabulary: time, CPUs, events, histograms and the versioned JSON wire types. No I/O.

#![forbid(unsafe_code)]

pub mod audit_result;
pub mod cpu;
pub mod decoded_trace;
pub mod event;
pub mod facts;
pub mod finding;
pub mod flags;
pub mod histogram;
pub mod latency_header;
pub mod metadata;
pub mod missing;
pub mod noise_cause;
pub mod noise_result;
pub mod run_result;
pub mod syscall_args;
pub mod task_name;
pub mod time;
pub mod timer_result;
pub mod traced_wakeup;
pub mod window;
pub mod wire;

pub use audit_result::AuditResult;
pub use cpu::{CpuId, CpuList, CpuListError};
pub use decoded_trace::{DecodedTrace, Format, TraceInfo, Warning};
pub use event::{Event, EventKind, Field, FieldValue, Pid, Text};
pub use facts::{Fact, SystemFacts};
pub use finding::{Evidence, Finding, Fix, FixKind, Severity};
pub use flags::Flags;
pub use histogram::{Bucket, LatencyHistogram, Summary};
pub use latency_header::{LatencyHeader, LatencyTask};
pub use metadata::RunMetadata;
pub use missing::MissingFeature;
pub use noise_cause::{CpuNoiseCauses, NoiseCause, NoiseCauses};
pub use run_result::{Cause, RunResult};
pub use syscall_args::SyscallArgs;
pub use task_name::TaskName;
pub use time::{parse_duration, DurationError, Nanos};
pub use timer_result::{CpuTimer, StopReason, TimerOptions, TimerResult, TimerStats, WakeupSample};
pub use traced_wakeup::{LatencyShare, TimerTrace, TracedWakeup};
pub use window::{WindowAccum, WindowRow};
