//! Bytes ➜ typed events: ftrace text, tracefs event formats and ring-buffer pages, trace-cmd `.dat`,
//! merged per CPU into one time-ordered stream. Pure: no I/O beyond reading the given input.

pub mod dat;
pub mod error;
pub mod merge;
pub mod raw;
pub mod trace;
pub mod typed;

pub use error::{DecodeError, Warning};
pub use trace::{DecodedTrace, Format, LatencyHeader, TraceInfo};
