//! Bytes ➜ typed events: ftrace text, tracefs event formats and ring-buffer pages, trace-cmd `.dat`,
//! merged per CPU into one time-ordered stream; the `.dat` writer next to its reader; and the importers
//! of cyclictest and oslat results ([`import`]). Pure: no I/O beyond reading the given input and writing
//! to the given writer.
//!
//! The whole input: [`decode_file`], [`decode_bytes`]; streamed: [`stream_file`], [`visit_file`],
//! [`stream_bytes`]; one format: [`DatReader`], [`RawDecoder`] (live ring-buffer pages),
//! [`decode_text_bytes`]; writing: [`write_dat_v6`].

#![forbid(unsafe_code)]

mod dat;
mod detect;
mod error;
pub mod import;
mod merge;
mod raw;
mod readers;
mod text;
mod typed;

pub use dat::{
    decode_dat_bytes, decode_dat_file, write_dat_v6, Buffer, Compression, CpuData, DatCpu, DatInput, DatReader,
    DatSummary, Meta, PageSource,
};
pub use dat::{write_dat_v7_zstd, PAGES_PER_CHUNK};
pub use error::DecodeError;
pub use latscope_model::{Annotation, DecodedTrace, Elision, Format, LatencyHeader, LatencyTask, TraceInfo, Warning};
pub use raw::time_shift::{SyncSample, TimeShift};
pub use raw::{Missed, PageLayout, PageSummary, RawDecoder, TimeMap};
pub use readers::Streamed;
pub use text::{decode_text_bytes, decode_text_reader, TextResult};

use latscope_model::Event;
use readers::{Sink, Source};
use std::path::Path;

/// Decode the file at `path` (any supported format, detected by content), passing each event to `sink`
/// as it is decoded: memory stays flat whatever the file size. Events come in time order for `.dat`
/// (per-CPU streams merged) and in file order for text (ftrace prints them merged already).
pub fn stream_file(path: &Path, sink: &mut dyn FnMut(Event)) -> Result<Streamed, DecodeError> {
    readers::stream(Source::File(path), Sink::Owned(sink))
}

/// [`stream_file`] for a consumer that only looks at the events: each is lent to `visit` instead of
/// moved to it (a `.dat` stream then never copies an event out of its decoded chunk).
pub fn visit_file(path: &Path, visit: &mut dyn FnMut(&Event)) -> Result<Streamed, DecodeError> {
    readers::stream(Source::File(path), Sink::Lent(visit))
}

/// Decode an input held in memory; `name` is used in messages. See [`stream_file`].
pub fn stream_bytes(name: &str, bytes: &[u8], sink: &mut dyn FnMut(Event)) -> Result<Streamed, DecodeError> {
    readers::stream(Source::Memory { name, bytes }, Sink::Owned(sink))
}

/// Decode the whole file at `path` into memory, events sorted by time (stable).
pub fn decode_file(path: &Path) -> Result<DecodedTrace, DecodeError> {
    let mut events = Vec::new();
    let s = stream_file(path, &mut |e| events.push(e))?;
    Ok(collected(s, events))
}

/// A whole input decoded within a limit on the events kept ([`decode_file_bounded`]).
#[derive(Debug)]
pub enum Bounded {
    /// Every event, as [`decode_file`] gives them.
    Whole(Box<DecodedTrace>),
    /// The input holds more events than the limit: none is kept; this many were decoded.
    TooMany {
        /// Events in the input.
        events: u64,
    },
}

/// [`decode_file`] for a consumer that can hold at most `max_events` events: past the limit the events
/// kept are dropped and the rest of the input is only counted (memory stays bounded), so the caller can
/// refuse with the input's real size instead of running out of memory.
pub fn decode_file_bounded(path: &Path, max_events: usize) -> Result<Bounded, DecodeError> {
    bounded(max_events, |sink| stream_file(path, sink))
}

/// [`decode_file_bounded`] for an input held in memory; `name` is used in messages.
pub fn decode_bytes_bounded(name: &str, bytes: &[u8], max_events: usize) -> Result<Bounded, DecodeError> {
    bounded(max_events, |sink| stream_bytes(name, bytes, sink))
}

fn bounded(
    max_events: usize,
    stream: impl FnOnce(&mut dyn FnMut(Event)) -> Result<Streamed, DecodeError>,
) -> Result<Bounded, DecodeError> {
    let mut events = Vec::new();
    let mut total = 0u64;
    let mut over = false;
    let s = stream(&mut |e| {
        total += 1;
        if over {
            return;
        }
        if events.len() < max_events {
            events.push(e);
        } else {
            over = true;
            events = Vec::new();
        }
    })?;
    Ok(if over { Bounded::TooMany { events: total } } else { Bounded::Whole(Box::new(collected(s, events))) })
}

/// Decode a whole input held in memory, events sorted by time (stable).
pub fn decode_bytes(name: &str, bytes: &[u8]) -> Result<DecodedTrace, DecodeError> {
    let mut events = Vec::new();
    let s = stream_bytes(name, bytes, &mut |e| events.push(e))?;
    Ok(collected(s, events))
}

/// The trace a stream gave (`s`) with its `events` in time order: sorted, stably, when the input was not.
pub fn collected(s: Streamed, mut events: Vec<Event>) -> DecodedTrace {
    if !events.windows(2).all(|w| w[0].ts <= w[1].ts) {
        events.sort_by_key(|e| e.ts);
    }
    DecodedTrace { info: s.info, events, warnings: s.warnings }
}
