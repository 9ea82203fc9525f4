//! tracefs: finding/mounting it, private instances, saved-and-restored knobs, the latency event set,
//! per-CPU raw page readers, lost-event counters, markers, the capture session (its `.dat` writer is
//! `latscope_decode::dat::write_dat_v6`, next to the reader) and the trigger that marks, holds and freezes
//! it from a measurement's progress.

mod capture;
mod events;
mod instance;
mod knobs;
mod marker;
pub(crate) mod mount;
mod reader;
mod stacks;
mod stats;
mod trigger;

pub use capture::{
    kallsyms_text, Capture, CaptureConfig, CaptureData, CaptureReport, CpuCapture, FormatText, StartError, TraceFormats,
};
pub use events::{EventSelection, EventSpec};
pub use marker::{Marker, MAX_MARK};
pub use reader::{RawPage, Retention};
pub use stacks::{StackSpec, STACKS_NEED};
pub use stats::CpuStats;
pub use trigger::{CpuProgress, Trigger};
