//! tracefs: finding/mounting it, private instances, saved-and-restored knobs, the latency event set,
//! per-CPU raw page readers, lost-event counters, markers, the capture session, the trigger that marks,
//! holds and freezes it from a measurement's progress, and the `.dat` writer.

pub mod capture;
pub mod dat_writer;
pub mod events;
pub mod instance;
pub mod knobs;
pub mod marker;
pub mod mount;
pub mod reader;
pub mod stats;
pub mod trigger;

pub use capture::{
    kallsyms_text, Capture, CaptureConfig, CaptureData, CaptureReport, CpuCapture, FormatText, StartError, TraceFormats,
};
pub use events::{EventSelection, EventSpec};
pub use marker::Marker;
pub use reader::{RawPage, Retention};
pub use stats::CpuStats;
pub use trigger::{CpuProgress, Trigger};
