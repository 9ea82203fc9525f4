//! tracefs: finding/mounting it, private instances, saved-and-restored knobs, the latency event set,
//! per-CPU raw page readers, lost-event counters, markers and the capture session (its `.dat` writer is
//! `latscope_decode::dat::write_dat_v6`, next to the reader).

pub mod capture;
pub mod events;
pub mod instance;
pub mod knobs;
pub mod marker;
pub mod mount;
pub mod reader;
pub mod stats;

pub use capture::{
    kallsyms_text, Capture, CaptureConfig, CaptureData, CaptureReport, CpuCapture, FormatText, StartError, TraceFormats,
};
pub use events::{EventSelection, EventSpec};
pub use marker::Marker;
pub use reader::{RawPage, Retention};
pub use stats::CpuStats;
