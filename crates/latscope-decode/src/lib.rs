//! Bytes ➜ typed events: ftrace text, tracefs event formats and ring-buffer pages, trace-cmd `.dat`,
//! merged per CPU into one time-ordered stream. Pure: no I/O beyond reading the given input.

pub mod dat;
pub mod detect;
pub mod error;
pub mod merge;
pub mod raw;
pub mod text;
pub mod typed;

pub use error::{DecodeError, Warning};
pub use latscope_model::{DecodedTrace, Format, LatencyHeader, LatencyTask, TraceInfo};

use latscope_model::Event;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// What a streamed decode returns once every event went to the sink.
#[derive(Clone, Debug, Default)]
pub struct Streamed {
    /// What the input said about itself (lost events per CPU are complete).
    pub info: TraceInfo,
    /// What was skipped and why.
    pub warnings: Vec<Warning>,
}

/// Decode the file at `path` (any supported format, detected by content), passing each event to `sink`
/// as it is decoded: memory stays flat whatever the file size. Events come in time order for `.dat`
/// (per-CPU streams merged) and in file order for text (ftrace prints them merged already).
pub fn stream_file(path: &Path, sink: &mut dyn FnMut(Event)) -> Result<Streamed, DecodeError> {
    stream_path(path, Sink::Owned(sink))
}

/// [`stream_file`] for a consumer that only looks at the events: each is lent to `visit` instead of
/// moved to it (a `.dat` stream then never copies an event out of its decoded chunk).
pub fn visit_file(path: &Path, visit: &mut dyn FnMut(&Event)) -> Result<Streamed, DecodeError> {
    stream_path(path, Sink::Lent(visit))
}

/// Where [`stream_path`] hands the events.
enum Sink<'a> {
    /// Each event given away.
    Owned(&'a mut dyn FnMut(Event)),
    /// Each event lent.
    Lent(&'a mut dyn FnMut(&Event)),
}

impl Sink<'_> {
    fn give(&mut self, e: Event) {
        match self {
            Sink::Owned(s) => s(e),
            Sink::Lent(v) => v(&e),
        }
    }
}

fn stream_path(path: &Path, mut sink: Sink<'_>) -> Result<Streamed, DecodeError> {
    let name = path.display().to_string();
    let io = |source| DecodeError::Io { path: name.clone(), source };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut head = Vec::with_capacity(detect::HEAD_LEN);
    (&mut f).take(detect::HEAD_LEN as u64).read_to_end(&mut head).map_err(io)?;
    match detect::detect(&head) {
        detect::InputKind::Dat => {
            drop(f);
            let mut r = dat::DatReader::open(path)?;
            match sink {
                Sink::Owned(s) => stream_dat(r, s),
                Sink::Lent(v) => {
                    r.for_each_ref(|e| v(e));
                    Ok(Streamed { info: r.info(), warnings: r.take_warnings() })
                }
            }
        }
        detect::InputKind::AtraceZlib(off) => {
            f.seek(SeekFrom::Start(off as u64)).map_err(io)?;
            let z = flate2::read::ZlibDecoder::new(std::io::BufReader::new(f));
            text_result(text::decode_text_reader(&name, z, true, &mut |e| sink.give(e)))
        }
        detect::InputKind::Html => {
            let mut all = head;
            f.read_to_end(&mut all).map_err(io)?;
            text_result(text::decode_text_bytes(&name, &all, &mut |e| sink.give(e)))
        }
        detect::InputKind::Text => {
            text_result(text::decode_text_reader(&name, std::io::Cursor::new(head).chain(f), false, &mut |e| {
                sink.give(e)
            }))
        }
    }
}

/// Decode an input held in memory; `name` is used in messages. See [`stream_file`].
pub fn stream_bytes(name: &str, bytes: &[u8], sink: &mut dyn FnMut(Event)) -> Result<Streamed, DecodeError> {
    match detect::detect(&bytes[..bytes.len().min(detect::HEAD_LEN)]) {
        detect::InputKind::Dat => stream_dat(dat::DatReader::from_bytes(bytes, name)?, sink),
        _ => text_result(text::decode_text_bytes(name, bytes, sink)),
    }
}

/// Decode the whole file at `path` into memory, events sorted by time (stable).
pub fn decode_file(path: &Path) -> Result<DecodedTrace, DecodeError> {
    let mut events = Vec::new();
    let s = stream_file(path, &mut |e| events.push(e))?;
    Ok(collected(s, events))
}

/// Decode a whole input held in memory, events sorted by time (stable).
pub fn decode_bytes(name: &str, bytes: &[u8]) -> Result<DecodedTrace, DecodeError> {
    let mut events = Vec::new();
    let s = stream_bytes(name, bytes, &mut |e| events.push(e))?;
    Ok(collected(s, events))
}

fn collected(s: Streamed, mut events: Vec<Event>) -> DecodedTrace {
    if !events.windows(2).all(|w| w[0].ts <= w[1].ts) {
        events.sort_by_key(|e| e.ts);
    }
    DecodedTrace { info: s.info, events, warnings: s.warnings }
}

fn stream_dat<R: Read + Seek>(mut r: dat::DatReader<R>, sink: &mut dyn FnMut(Event)) -> Result<Streamed, DecodeError> {
    for e in r.by_ref() {
        sink(e);
    }
    Ok(Streamed { info: r.info(), warnings: r.take_warnings() })
}

fn text_result(r: text::TextResult) -> Result<Streamed, DecodeError> {
    r.map(|(info, warnings)| Streamed { info, warnings })
}
