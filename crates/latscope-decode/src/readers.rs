//! The table of trace readers: the kind of input detected from its first bytes picks one reader, and
//! that reader opens the input whether it is a file (streamed from disk) or bytes held in memory.

use crate::detect::{self, InputKind};
use crate::{dat, text, DecodeError, TraceInfo, Warning};
use latscope_model::Event;
use std::fs::File;
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

/// Where the events go.
pub(crate) enum Sink<'a> {
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

/// Where the input is.
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    /// A file, read as it is decoded.
    File(&'a Path),
    /// Bytes in memory; `name` is used in messages.
    Memory {
        /// The input's name in messages.
        name: &'a str,
        /// The input.
        bytes: &'a [u8],
    },
}

/// A source once opened: its name, its first bytes (up to [`detect::HEAD_LEN`]) and, for a file, the
/// open file positioned after them.
struct Opened<'a> {
    name: String,
    head: Vec<u8>,
    file: Option<File>,
    bytes: &'a [u8],
}

impl Opened<'_> {
    fn io(&self) -> impl Fn(std::io::Error) -> DecodeError + '_ {
        |source| DecodeError::Io { path: self.name.clone(), source }
    }
}

fn open(src: Source<'_>) -> Result<Opened<'_>, DecodeError> {
    match src {
        Source::File(path) => {
            let name = path.display().to_string();
            let io = |source| DecodeError::Io { path: name.clone(), source };
            let mut f = File::open(path).map_err(io)?;
            let mut head = Vec::with_capacity(detect::HEAD_LEN);
            (&mut f).take(detect::HEAD_LEN as u64).read_to_end(&mut head).map_err(io)?;
            Ok(Opened { name, head, file: Some(f), bytes: &[] })
        }
        Source::Memory { name, bytes } => Ok(Opened {
            name: name.to_string(),
            head: bytes[..bytes.len().min(detect::HEAD_LEN)].to_vec(),
            file: None,
            bytes,
        }),
    }
}

/// Decode `src` with the reader its first bytes call for, handing each event to `sink`.
pub(crate) fn stream(src: Source<'_>, sink: Sink<'_>) -> Result<Streamed, DecodeError> {
    let opened = open(src)?;
    match detect::detect(&opened.head) {
        InputKind::Dat => read_dat(src, opened, sink),
        InputKind::AtraceZlib(off) => read_atrace_zlib(opened, off, sink),
        InputKind::Html => read_systrace_html(opened, sink),
        InputKind::Text => read_text(opened, sink),
    }
}

/// trace-cmd `.dat`: CPUs decoded (on threads of their own for a file) and merged in time order.
fn read_dat(src: Source<'_>, opened: Opened<'_>, sink: Sink<'_>) -> Result<Streamed, DecodeError> {
    match src {
        Source::File(path) => {
            drop(opened);
            dat_events(dat::DatReader::open(path)?, sink)
        }
        Source::Memory { name, bytes } => dat_events(dat::DatReader::from_bytes(bytes, name)?, sink),
    }
}

fn dat_events<R: Read + Seek>(mut r: dat::DatReader<R>, sink: Sink<'_>) -> Result<Streamed, DecodeError> {
    match sink {
        Sink::Owned(s) => {
            for e in r.by_ref() {
                s(e);
            }
        }
        Sink::Lent(v) => r.for_each_ref(|e| v(e)),
    }
    Ok(Streamed { info: r.info(), warnings: r.take_warnings() })
}

/// `atrace -z` output: ftrace text in a zlib stream starting at `off`.
fn read_atrace_zlib(opened: Opened<'_>, off: usize, mut sink: Sink<'_>) -> Result<Streamed, DecodeError> {
    let name = opened.name.clone();
    let r = match opened.file {
        Some(mut f) => {
            f.seek(SeekFrom::Start(off as u64)).map_err(|source| DecodeError::Io { path: name.clone(), source })?;
            let z = flate2::read::ZlibDecoder::new(std::io::BufReader::new(f));
            text::decode_text_reader(&name, z, true, &mut |e| sink.give(e))
        }
        None => {
            let z = flate2::read::ZlibDecoder::new(&opened.bytes[off..]);
            text::decode_text_reader(&name, z, true, &mut |e| sink.give(e))
        }
    };
    text_result(r)
}

/// A systrace HTML page: the trace text inside it, read whole.
fn read_systrace_html(mut opened: Opened<'_>, mut sink: Sink<'_>) -> Result<Streamed, DecodeError> {
    let all = match opened.file.take() {
        Some(mut f) => {
            let mut all = std::mem::take(&mut opened.head);
            f.read_to_end(&mut all).map_err(opened.io())?;
            std::borrow::Cow::Owned(all)
        }
        None => std::borrow::Cow::Borrowed(opened.bytes),
    };
    text_result(text::decode_html_bytes(&opened.name, &all, &mut |e| sink.give(e)))
}

/// ftrace text of any flavour (plain or JS-escaped): a file in chunks, memory in one piece.
fn read_text(opened: Opened<'_>, mut sink: Sink<'_>) -> Result<Streamed, DecodeError> {
    let name = &opened.name;
    let r = match opened.file {
        Some(f) => {
            text::decode_text_reader(name, std::io::Cursor::new(opened.head).chain(f), false, &mut |e| sink.give(e))
        }
        None => text::decode_plain_bytes(name, opened.bytes, &mut |e| sink.give(e)),
    };
    text_result(r)
}

fn text_result(r: text::TextResult) -> Result<Streamed, DecodeError> {
    r.map(|(info, warnings)| Streamed { info, warnings })
}
