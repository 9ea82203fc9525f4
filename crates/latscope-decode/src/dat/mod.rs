//! trace-cmd `.dat` files, versions 6 and 7 (sections, zlib/zstd): metadata, then every CPU's pages
//! streamed through the [`RawDecoder`] and k-way merged into one time-ordered event stream.
//!
//! ```no_run
//! # fn main() -> Result<(), latscope_decode::DecodeError> {
//! let mut reader = latscope_decode::DatReader::open(std::path::Path::new("trace.dat"))?;
//! for event in reader.by_ref() { /* time-ordered, CPUs merged */ let _ = event; }
//! let info = reader.info(); // lost events per CPU are complete once the stream is consumed
//! # let _ = info; Ok(()) }
//! ```

mod board;
mod compress;
mod cpu_stream;
mod input;
mod meta;
mod pool;
mod spec;
mod writer;
mod writer_v7;

pub use compress::Compression;
pub use cpu_stream::CpuStream;
pub use meta::{Buffer, CpuData, Meta};
pub use pool::PoolStream;
pub use spec::MAGIC;
pub use writer::{write_dat_v6, DatCpu, DatInput, DatSummary, PageSource};
pub use writer_v7::{write_dat_v7_zstd, PAGES_PER_CHUNK};

use crate::merge::{EventStream, Merge};
use crate::raw::cmdlines::{Cmdlines, TaskNames};
use crate::raw::kallsyms::Kallsyms;
use crate::raw::symbols::{Loading, LoadingGuard};
use crate::raw::RawDecoder;
use crate::{DecodeError, DecodedTrace, Format, TraceInfo, Warning};
use cpu_stream::Shared;
use input::Input;
use latscope_model::Event;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Cursor, Read, Seek};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

/// Most CPUs decoded by the thread pool; a file with more CPUs is decoded on the caller's thread.
const MAX_POOL_CPUS: usize = 1024;

/// A `.dat` being read: metadata parsed, events streamed on iteration.
pub struct DatReader<R: Read + Seek> {
    meta: Meta,
    shared: Rc<RefCell<Shared<R>>>,
    merge: Merge<Source<R>>,
    /// Task names, given to the events in time order.
    names: TaskNames,
    /// Stops the decoding threads when the reader is dropped.
    _pool: Option<pool::PoolGuard>,
    /// The kernel symbols loading on their own thread, for the warning when they could not be read.
    symbols: Option<Arc<Loading>>,
}

/// One CPU's events: decoded on the caller's thread (from the shared reader) or on a worker thread.
pub enum Source<R> {
    /// Decoded on iteration, on this thread.
    Local(Box<CpuStream<R>>),
    /// Decoded ahead by the thread pool.
    Pool(PoolStream),
}

impl<R: Read + Seek> Iterator for Source<R> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        match self {
            Source::Local(s) => s.next(),
            Source::Pool(s) => s.next(),
        }
    }
}

impl<R: Read + Seek> EventStream for Source<R> {
    fn peek_ts(&mut self) -> Option<u64> {
        match self {
            Source::Local(s) => s.peek_ts(),
            Source::Pool(s) => s.peek_ts(),
        }
    }

    fn front_run_mut(&mut self) -> &mut [Event] {
        match self {
            Source::Local(s) => s.front_run_mut(),
            Source::Pool(s) => s.front_run_mut(),
        }
    }

    fn consume(&mut self, n: usize) {
        match self {
            Source::Local(s) => s.consume(n),
            Source::Pool(s) => s.consume(n),
        }
    }
}

/// Whether `bytes` (the start of a file) look like a trace-cmd `.dat`.
pub fn is_dat(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

impl DatReader<File> {
    /// Open a `.dat` file.
    pub fn open(path: &Path) -> Result<DatReader<File>, DecodeError> {
        let name = path.display().to_string();
        let f = File::open(path).map_err(|source| DecodeError::Io { path: name.clone(), source })?;
        DatReader::build(f, &name, Some(path))
    }
}

impl<'a> DatReader<Cursor<&'a [u8]>> {
    /// Read a `.dat` held in memory; `name` is used in messages.
    pub fn from_bytes(bytes: &'a [u8], name: &str) -> Result<Self, DecodeError> {
        DatReader::from_reader(Cursor::new(bytes), name)
    }
}

impl<R: Read + Seek> DatReader<R> {
    /// Read the metadata from any seekable reader; `name` is used in messages.
    pub fn from_reader(r: R, name: &str) -> Result<DatReader<R>, DecodeError> {
        DatReader::build(r, name, None)
    }

    /// `from_reader`; with the file's `path`, every CPU is read, inflated and decoded on a thread of its
    /// own (the merged stream is the same).
    fn build(r: R, name: &str, path: Option<&Path>) -> Result<DatReader<R>, DecodeError> {
        let mut input = Input::new(r).map_err(|why| DecodeError::NotATrace { path: name.into(), why })?;
        // With a path, the kallsyms section is read by a thread of its own, started as soon as it is
        // located; a decoder waits for the symbols only at its first code address.
        let mut symbols = None;
        let mut load = |m: &Meta, off: u64| symbols = path.map(|p| load_kallsyms(p, m, off));
        let found: Option<meta::KallsymsFound> = path.map(|_| &mut load as meta::KallsymsFound);
        let mut meta = meta::read_meta(&mut input, found).map_err(|what| {
            if input.len < 10 || what.contains("magic") {
                DecodeError::NotATrace { path: name.into(), why: what }
            } else {
                DecodeError::Corrupt { path: name.into(), location: "the file header".into(), what }
            }
        })?;
        let mut warnings: Vec<Warning> =
            meta.warnings.iter().map(|w| Warning { location: name.to_string(), message: w.clone() }).collect();
        if let Some((clock, from_stats)) = meta.unconverted_cycles() {
            let why = if from_stats {
                format!(
                    "the ring buffer counted clock cycles, not nanoseconds (its CPU stats show raw counts; the file \
                     names the clock `{clock}`, as trace-cmd extract writes it, but the buffer was recorded with a \
                     cycle clock such as x86-tsc)"
                )
            } else {
                format!("the trace clock is `{clock}`, which counts cycles, not nanoseconds")
            };
            warnings.insert(
                0,
                Warning {
                    location: name.to_string(),
                    message: format!(
                        "{why}, and the file has no TSC2NSEC option to convert them: every time and duration below is \
                         in cycles, not ns (at 2.6 GHz, 1 us is 2600 cycles); record with a nanosecond clock \
                         (`mono`, `local`) or `trace-cmd record --tsc2nsec`"
                    ),
                },
            );
        }
        let mut decoder = if meta.header_page.is_empty() {
            warnings.push(Warning {
                location: name.into(),
                message: "no header_page saved; assuming the standard page layout".into(),
            });
            RawDecoder::with_layout(crate::raw::header_page::PageLayout::default_for(
                usize::from(meta.long_size),
                meta.big_endian,
            ))
        } else {
            RawDecoder::new(&meta.header_page, meta.big_endian).map_err(|e| DecodeError::Corrupt {
                path: name.into(),
                location: "header_page".into(),
                what: e.to_string(),
            })?
        };
        decoder.set_header_event(&meta.header_event);
        decoder.set_time_map(meta.time.clone());
        match &symbols {
            Some(loading) => decoder.set_kallsyms_loading(loading.clone()),
            None => decoder.set_kallsyms_table(Kallsyms::parse(&meta.kallsyms)),
        }
        // Formats are parsed when their first record comes: a file saves every format of its machine.
        let ftrace = std::mem::take(&mut meta.ftrace_formats).into_iter().map(|t| ("ftrace".to_string(), t));
        for (sys, text) in ftrace.chain(std::mem::take(&mut meta.event_formats)) {
            if let Err(e) = decoder.add_format_later(&sys, text) {
                let message = match e {
                    DecodeError::Format { what, .. } => what,
                    other => other.to_string(),
                };
                warnings.push(Warning { location: format!("{name}: {sys} format"), message });
            }
        }
        decoder.set_printk_formats(&meta.printk);
        let cmdlines = Cmdlines::parse(&meta.cmdlines);
        decoder.set_cmdline_table(cmdlines.clone());
        let held: Vec<CpuData> =
            meta.buffers.iter().flat_map(|b| &b.cpus).map(|d| held_part(d, input.len, name, &mut warnings)).collect();
        let shared = Rc::new(RefCell::new(Shared { input, warnings, name: name.to_string() }));
        // Task names are given in time order by the reader (see `TaskNames`), not per CPU.
        decoder.leave_task_names();
        let names = TaskNames::new(cmdlines);
        let cpus: Vec<&CpuData> = held.iter().collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pooled = path
            .filter(|_| cpus.len() <= MAX_POOL_CPUS)
            .and_then(|p| File::open(p).ok())
            .filter(|f| cpus.iter().all(|d| pool::whole_pages(f, d, &meta)))
            .and_then(|f| pool::start(f, name, &cpus, &meta, &decoder, threads));
        let (streams, guard) = match pooled {
            Some((streams, guard)) => (streams.into_iter().map(Source::Pool).collect(), Some(guard)),
            None => {
                let local = cpus.iter().map(|d| {
                    let s = CpuStream::new(shared.clone(), d, meta.compression, meta.page_size, decoder.fork());
                    Source::Local(Box::new(s))
                });
                (local.collect(), None)
            }
        };
        Ok(DatReader { merge: Merge::new(streams), shared, meta, names, symbols, _pool: guard })
    }

    /// The file's metadata.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// What the file says about itself, with the lost events counted so far.
    pub fn info(&self) -> TraceInfo {
        TraceInfo {
            format: Some(Format::TraceCmdDat(self.meta.version)),
            tracer: None,
            cpus: Some(self.meta.cpus),
            latency: None,
            lost: self.merge.lost().clone(),
            lost_unknown: self.merge.lost_unknown().to_vec(),
            clock: self.meta.unconverted_cycles().map(|(c, _)| c).or_else(|| self.meta.clock.clone()),
            cycles: self.meta.unconverted_cycles().is_some(),
            elisions: Vec::new(),
            annotations: Vec::new(),
        }
    }

    /// Warnings collected so far (taken out of the reader).
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        let mut w = std::mem::take(&mut self.shared.borrow_mut().warnings);
        if let Some(why) = self.symbols.as_ref().and_then(|l| l.take_problem()) {
            let location = self.shared.borrow().name.clone();
            w.push(Warning { location, message: format!("kernel symbols: {why}; addresses are shown in hex") });
        }
        let mut unknown: HashMap<u16, u64> = HashMap::new();
        for s in self.merge.streams_mut() {
            let ids = match s {
                Source::Local(l) => l.unknown_ids(),
                Source::Pool(r) => {
                    w.extend(r.take_warnings());
                    r.unknown_ids()
                }
            };
            for (id, n) in ids {
                *unknown.entry(*id).or_insert(0) += n;
            }
        }
        if !unknown.is_empty() {
            let mut ids: Vec<_> = unknown.iter().map(|(id, n)| format!("id {id} ×{n}")).collect();
            ids.sort();
            w.push(Warning {
                location: self.shared.borrow().name.clone(),
                message: format!("records with no saved event format were skipped: {}", ids.join(", ")),
            });
        }
        w
    }

    /// Hand every remaining event to `visit` in time order without moving it (the merge lends each from
    /// its decoded chunk): the same events as iterating, task names included.
    pub fn for_each_ref(&mut self, mut visit: impl FnMut(&Event)) {
        let names = &mut self.names;
        self.merge.for_each_mut(|e| {
            names.apply(e);
            visit(e);
        });
    }

    /// Consume the whole file into a [`DecodedTrace`].
    pub fn decode_all(mut self) -> DecodedTrace {
        let events: Vec<Event> = self.by_ref().collect();
        let info = self.info();
        let warnings = self.take_warnings();
        DecodedTrace { info, events, warnings }
    }
}

impl<R: Read + Seek> Iterator for DatReader<R> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let mut e = self.merge.next()?;
        self.names.apply(&mut e);
        Some(e)
    }
}

/// What the file holds of CPU data `d`: all of it, or, in a file cut short (a copy interrupted, a full
/// disk), the part before the cut, with a warning; the page the cut falls in is decoded as far as it goes.
fn held_part(d: &CpuData, file_len: u64, name: &str, warnings: &mut Vec<Warning>) -> CpuData {
    let end = d.offset.saturating_add(d.size);
    if end <= file_len {
        return d.clone();
    }
    let held = file_len.saturating_sub(d.offset);
    warnings.push(Warning {
        location: format!("{name}: cpu{}", d.cpu),
        message: format!(
            "the file ends {held} bytes into this CPU's {} bytes of data (it was cut short): the events before \
             the cut are kept, the last {} bytes are missing",
            d.size,
            d.size - held
        ),
    });
    CpuData { size: held, ..d.clone() }
}

/// Start loading the kallsyms section at `off` of the file at `path` on a thread of its own: inflated in
/// one piece and parsed in place (the names stay in the inflated text). Should the thread not start, the
/// table is empty and [`Loading::take_problem`] says so.
fn load_kallsyms(path: &Path, meta: &Meta, off: u64) -> Arc<Loading> {
    let loading = Arc::new(Loading::default());
    let guard = LoadingGuard(loading.clone());
    let (path, header) = (path.to_path_buf(), meta.clone_header());
    let _ = std::thread::Builder::new().name("dat-kallsyms".into()).spawn(move || {
        let table = File::open(&path)
            .map_err(|e| e.to_string())
            .and_then(Input::new)
            .and_then(|mut inp| meta::read_kallsyms_section(&mut inp, &header, off))
            .map(|(bytes, start)| Kallsyms::from_bytes(bytes, start));
        guard.0.finish(table);
    });
    loading
}

/// Decode a whole `.dat` file.
pub fn decode_dat_file(path: &Path) -> Result<DecodedTrace, DecodeError> {
    Ok(DatReader::open(path)?.decode_all())
}

/// Decode a whole `.dat` held in memory.
pub fn decode_dat_bytes(bytes: &[u8], name: &str) -> Result<DecodedTrace, DecodeError> {
    Ok(DatReader::from_bytes(bytes, name)?.decode_all())
}
