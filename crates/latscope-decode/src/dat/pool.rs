//! Decoding a `.dat` on disk with a pool of threads, chunk by chunk: any thread inflates and decodes the
//! next chunk (v7) or block of pages (v6) of whichever CPU the merge is closest to running out of, so
//! every core works even while one CPU has most of the events. The merge thread is one of them: there is
//! one worker fewer than cores, and the merge decodes a chunk itself whenever the one it needs is not ready
//! yet, instead of sleeping. Results wait per CPU in file order, at most [`AHEAD`] chunks ahead of the
//! merge, so memory stays flat whatever the file size.
//!
//! Pages never straddle chunks here (trace-cmd writes whole pages per chunk); a file whose chunks are not
//! whole pages is decoded by the one-thread [`CpuStream`](super::CpuStream) instead.

use super::board::{Board, Jobs};
use super::compress::Compression;
use super::meta::{CpuData, Meta};
use crate::merge::EventStream;
use crate::raw::{Missed, RawDecoder};
use crate::Warning;
use latscope_model::{CpuId, Event, EventKind, Nanos, TaskName};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::Arc;

/// Chunks decoded ahead of the merge, per CPU.
const AHEAD: u64 = 4;
/// Pages per block of an uncompressed file.
const PAGES_PER_BLOCK: u64 = 16;

/// One unit of work: a chunk (or block of pages) of one CPU.
struct Job {
    cpu_id: u32,
    /// File offset and length of the data, and its size inflated (== length when not compressed).
    offset: u64,
    len: u64,
    size: u64,
    /// Page number of its first page, for messages.
    first_page: u64,
}

/// Where a chunk's data is: file offset, length, inflated size, chunks left after it (compressed files).
type Header = (u64, u64, u64, Option<u32>);

/// A decoded chunk.
struct Chunk {
    events: VecDeque<Event>,
    warnings: Vec<Warning>,
    unknown: HashMap<u16, u64>,
}

/// Where one CPU's data is read next.
struct Cursor {
    cpu: u32,
    next: u64,
    end: u64,
    chunks_left: Option<u32>,
    pages: u64,
}

/// The file the pool's threads read jobs from.
struct DatJobs {
    file: File,
    name: String,
    compression: Compression,
    page_size: u64,
    big_endian: bool,
}

impl DatJobs {
    fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>, String> {
        let mut buf = Vec::new();
        self.read_into(offset, len, &mut buf)?;
        Ok(buf)
    }

    /// Read `len` bytes at `offset` into `buf` (its allocation reused: a fresh large allocation per chunk
    /// makes the allocator consolidate the small blocks the merge frees, every time).
    fn read_into(&self, offset: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), String> {
        buf.clear();
        buf.resize(usize::try_from(len).map_err(|e| e.to_string())?, 0);
        self.file.read_exact_at(buf, offset).map_err(|e| format!("offset 0x{offset:x}: {e}"))
    }

    fn u32_at(&self, offset: u64) -> Result<u32, String> {
        let b = self.read(offset, 4)?;
        Ok(crate::raw::page::read_uint(&b, 0, 4, self.big_endian).unwrap_or(0) as u32)
    }

    /// A compressed chunk's header at `offset`: (length, size inflated), in one read.
    fn chunk_header(&self, offset: u64) -> Result<(u64, u64), String> {
        let mut b = [0u8; 8];
        self.file.read_exact_at(&mut b, offset).map_err(|e| format!("offset 0x{offset:x}: {e}"))?;
        Ok(chunk_header(&b, self.big_endian))
    }

    /// Where the next job of `c` is (reads the chunk header); `None` when its data has ended.
    fn header(&self, c: &Cursor) -> Result<Option<Header>, String> {
        if self.compression == Compression::None {
            let len = c.end.saturating_sub(c.next).min(PAGES_PER_BLOCK * self.page_size);
            return Ok((len > 0).then_some((c.next, len, len, None)));
        }
        let mut at = c.next;
        let left = match c.chunks_left {
            Some(n) => n,
            None => {
                let n = self.u32_at(at)?;
                at += 4;
                n
            }
        };
        if left == 0 || at >= c.end {
            return Ok(None);
        }
        let (csize, usize_) = self.chunk_header(at)?;
        Ok(Some((at + 8, csize, usize_, Some(left - 1))))
    }
}

impl Jobs for DatJobs {
    type Cursor = Cursor;
    type Job = Job;
    type Chunk = Chunk;
    type Worker = Worker;
    type Buffer = VecDeque<Event>;

    fn next_job(&self, c: &mut Cursor) -> Result<Option<Job>, String> {
        let Some((offset, len, size, left)) = self.header(c)? else { return Ok(None) };
        c.next = offset + len;
        c.chunks_left = left;
        let job = Job { cpu_id: c.cpu, offset, len, size, first_page: c.pages };
        c.pages += size.div_ceil(self.page_size);
        Ok(Some(job))
    }

    /// Inflate and decode one job; `last` when its data could not be read.
    fn run(&self, job: &Job, worker: &mut Worker, events: Option<VecDeque<Event>>) -> (Chunk, bool) {
        let cpu = CpuId(job.cpu_id);
        let events = events.unwrap_or_else(|| VecDeque::with_capacity(1024));
        let mut chunk = Chunk { events, warnings: Vec::new(), unknown: HashMap::new() };
        let (raw, buf) = (&mut worker.bufs.0, &mut worker.bufs.1);
        let data = if self.compression == Compression::None {
            self.read_into(job.offset, job.len, buf)
        } else {
            self.read_into(job.offset, job.len, raw).and_then(|_| self.compression.decompress_into(raw, job.size, buf))
        };
        if let Err(e) = data {
            chunk.warnings.push(Warning {
                location: format!("{}: cpu{} page {}", self.name, cpu.0, job.first_page),
                message: format!("cannot read the CPU's data: {e}; the rest of this CPU is skipped"),
            });
            return (chunk, true);
        }
        let decoder = &mut worker.decoder;
        for (n, page) in buf.chunks(self.page_size as usize).enumerate() {
            let first = chunk.events.len();
            let out = &mut chunk.events;
            let summary = if page.len() < self.page_size as usize {
                decoder.decode_cut_page(cpu, page, &mut |e| out.push_back(e))
            } else {
                decoder.decode_page(cpu, page, &mut |e| out.push_back(e))
            };
            let lost = match summary.missed {
                Missed::None => None,
                Missed::Unknown => Some(None),
                Missed::Count(c) => Some(Some(c)),
            };
            if let Some(count) = lost {
                let ts = chunk.events.get(first).map_or(Nanos(summary.ts), |e| e.ts);
                let marker = Event {
                    ts,
                    cpu,
                    pid: -1,
                    tgid: None,
                    comm: TaskName::EMPTY,
                    flags: Default::default(),
                    kind: EventKind::Lost { count },
                };
                chunk.events.insert(first, marker);
            }
            for message in summary.warnings {
                let location = format!("{}: cpu{} page {}", self.name, cpu.0, job.first_page + n as u64);
                chunk.warnings.push(Warning { location, message });
            }
        }
        if !decoder.unknown_ids().is_empty() {
            chunk.unknown = decoder.take_unknown_ids();
        }
        (chunk, false)
    }
}

/// Stops the workers when the reader goes away.
pub(crate) struct PoolGuard(Arc<Board<DatJobs>>);

impl Drop for PoolGuard {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// What a thread decodes jobs with: its own decoder and reused read/inflate buffers.
struct Worker {
    decoder: RawDecoder,
    bufs: (Vec<u8>, Vec<u8>),
}

impl Worker {
    fn new(decoder: &RawDecoder) -> Worker {
        Worker { decoder: decoder.fork(), bufs: (Vec::new(), Vec::new()) }
    }
}

/// One CPU's events as decoded by the pool.
pub struct PoolStream {
    board: Arc<Board<DatJobs>>,
    /// The merge thread's own decoder, shared by its streams: while the chunk the merge needs is not
    /// ready, the merge decodes another instead of waiting.
    helper: Rc<RefCell<Worker>>,
    index: usize,
    cpu: u32,
    current: VecDeque<Event>,
    warnings: Vec<Warning>,
    unknown: HashMap<u16, u64>,
    done: bool,
}

impl PoolStream {
    /// Warnings received so far (taken out).
    pub(crate) fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }

    /// Records without a format, counted per id.
    pub(crate) fn unknown_ids(&self) -> &HashMap<u16, u64> {
        &self.unknown
    }

    /// Wait for the next chunk when the current one is used up; false at the end.
    #[inline]
    fn fill(&mut self) -> bool {
        !self.current.is_empty() || self.next_chunk()
    }

    /// [`fill`](Self::fill)'s slow path: take (or decode) the next chunk.
    #[cold]
    fn next_chunk(&mut self) -> bool {
        while self.current.is_empty() {
            if self.done {
                return false;
            }
            let used = std::mem::take(&mut self.current);
            let taken = self.board.take(self.index, &mut self.helper.borrow_mut(), Some(used));
            match taken.chunk {
                Some(chunk) => {
                    self.warnings.extend(chunk.warnings);
                    for (id, n) in chunk.unknown {
                        *self.unknown.entry(id).or_insert(0) += n;
                    }
                    self.current = chunk.events;
                }
                None => self.done = true,
            }
            if let Some(e) = taken.error {
                self.warnings.push(Warning {
                    location: format!("{}: cpu{}", self.board.jobs().name, self.cpu),
                    message: format!("cannot read the CPU's data: {e}; the rest of this CPU is skipped"),
                });
            }
        }
        true
    }
}

impl Iterator for PoolStream {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        self.fill();
        self.current.pop_front()
    }
}

impl EventStream for PoolStream {
    fn peek_ts(&mut self) -> Option<u64> {
        self.fill();
        self.current.front().map(|e| e.ts.0)
    }

    fn front_run_mut(&mut self) -> &mut [Event] {
        self.fill();
        self.current.as_mut_slices().0
    }

    fn consume(&mut self, n: usize) {
        self.current.drain(..n.min(self.current.len()));
    }
}

/// Start `threads` workers decoding `cpus` of the file at `path` with forks of `decoder`; one stream per
/// CPU (in the order given) and the guard that stops the workers. `None` when the file cannot be opened
/// again or no thread could be started (the caller then decodes on its own thread).
pub(crate) fn start(
    file: File,
    name: &str,
    cpus: &[&CpuData],
    meta: &Meta,
    decoder: &RawDecoder,
    threads: usize,
) -> Option<(Vec<PoolStream>, PoolGuard)> {
    let lanes = cpus.iter().map(|d| {
        let cursor =
            Cursor { cpu: d.cpu, next: d.offset, end: d.offset.saturating_add(d.size), chunks_left: None, pages: 0 };
        (cursor, d.size == 0)
    });
    let jobs = DatJobs {
        file,
        name: name.to_string(),
        compression: meta.compression,
        page_size: u64::from(meta.page_size.max(1)),
        big_endian: meta.big_endian,
    };
    let board = Arc::new(Board::new(jobs, lanes, AHEAD));
    let guard = PoolGuard(board.clone());
    let mut started = 0;
    // The merge thread decodes too (see `PoolStream::helper`): one worker fewer than cores.
    for t in 0..threads.saturating_sub(1).max(1) {
        let b = board.clone();
        let mut worker = Worker::new(decoder);
        let spawned = std::thread::Builder::new().name(format!("dat-decode{t}")).spawn(move || b.serve(&mut worker));
        if spawned.is_ok() {
            started += 1;
        }
    }
    if started == 0 {
        return None;
    }
    let helper = Rc::new(RefCell::new(Worker::new(decoder)));
    let streams = cpus
        .iter()
        .enumerate()
        .map(|(index, d)| PoolStream {
            board: board.clone(),
            helper: helper.clone(),
            index,
            cpu: d.cpu,
            current: VecDeque::new(),
            warnings: Vec::new(),
            unknown: HashMap::new(),
            done: false,
        })
        .collect();
    Some((streams, guard))
}

/// Whether every chunk of `d` but the last holds whole pages (always so for trace-cmd's files), so
/// chunks can be decoded apart: reads the chunk headers.
pub(crate) fn whole_pages(file: &File, d: &CpuData, meta: &Meta) -> bool {
    if meta.compression == Compression::None || d.size == 0 {
        return true;
    }
    let page = u64::from(meta.page_size.max(1));
    let be = meta.big_endian;
    let end = d.offset.saturating_add(d.size);
    let mut count = [0u8; 4];
    if file.read_exact_at(&mut count, d.offset).is_err() {
        return true;
    }
    let count = crate::raw::page::read_uint(&count, 0, 4, be).unwrap_or(0);
    let mut at = d.offset + 4;
    for i in 0..count {
        if at >= end {
            break;
        }
        let mut header = [0u8; 8];
        if file.read_exact_at(&mut header, at).is_err() {
            return true;
        }
        let (csize, size) = chunk_header(&header, be);
        if size % page != 0 && i + 1 < count && at + 8 + csize < end {
            return false;
        }
        at += 8 + csize;
    }
    true
}

/// A v7 chunk header's two words: compressed length and size inflated.
fn chunk_header(b: &[u8; 8], big_endian: bool) -> (u64, u64) {
    let word = |at| crate::raw::page::read_uint(b, at, 4, big_endian).unwrap_or(0);
    (word(0), word(4))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file holding one CPU's v7 chunk list: the count, then each chunk's header and 10 bytes of data.
    fn chunk_list(sizes: &[u32], path: &std::path::Path) -> (File, CpuData) {
        let mut bytes = (sizes.len() as u32).to_le_bytes().to_vec();
        for &size in sizes {
            bytes.extend_from_slice(&10u32.to_le_bytes());
            bytes.extend_from_slice(&size.to_le_bytes());
            bytes.extend_from_slice(&[0; 10]);
        }
        std::fs::write(path, &bytes).expect("write the chunk list");
        let d = CpuData { cpu: 0, offset: 0, size: bytes.len() as u64 };
        (File::open(path).expect("open it"), d)
    }

    #[test]
    fn chunks_of_whole_pages_but_the_last_can_be_decoded_apart() {
        let mut meta = Meta::empty(7, false, 8, 4096);
        meta.compression = Compression::Zstd;
        let path = std::env::temp_dir().join(format!("latscope-whole-pages-{}", std::process::id()));
        let (f, d) = chunk_list(&[4096, 8192, 100], &path);
        assert!(whole_pages(&f, &d, &meta), "only the last chunk ends inside a page");
        let (f, d) = chunk_list(&[4096, 100, 4096], &path);
        assert!(!whole_pages(&f, &d, &meta), "a page would straddle chunks 2 and 3");
        let _ = std::fs::remove_file(&path);
    }
}
