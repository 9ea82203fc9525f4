//! One CPU's ring-buffer pages in a `.dat`, read incrementally (uncompressed blocks or v7 chunks) and
//! decoded into events: memory stays at a block per CPU whatever the file size.

use super::compress::Compression;
use super::input::Input;
use super::meta::CpuData;
use crate::merge::EventStream;
use crate::raw::{Missed, RawDecoder};
use crate::Warning;
use latscope_model::{CpuId, Event, EventKind, Nanos, TaskName};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io::{Read, Seek};
use std::rc::Rc;

/// Pages read per block from an uncompressed file.
const PAGES_PER_BLOCK: u64 = 16;

/// The input shared by the CPU streams read on one thread, and their warnings.
pub(crate) struct Shared<R> {
    pub(crate) input: Input<R>,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) name: String,
}

/// The events of one CPU of one buffer, decoded on the caller's thread with the CPU's own [`RawDecoder`]
/// (a fork of the file's; task names are given later, in time order, by the reader).
pub struct CpuStream<R> {
    shared: Rc<RefCell<Shared<R>>>,
    decoder: RawDecoder,
    cpu: CpuId,
    compression: Compression,
    page_size: usize,
    /// Next file offset to read and end of this CPU's data.
    next: u64,
    end: u64,
    /// Compressed chunks still to read (`None` before the chunk count was read).
    chunks_left: Option<u32>,
    block: Vec<u8>,
    block_at: usize,
    /// The last chunk read, inflated (kept to reuse its allocation).
    chunk: Vec<u8>,
    page_no: u64,
    /// Decoded events not yet handed out (iteration on this thread).
    pending: VecDeque<Event>,
    done: bool,
}

impl<R: Read + Seek> CpuStream<R> {
    pub(crate) fn new(
        shared: Rc<RefCell<Shared<R>>>,
        d: &CpuData,
        compression: Compression,
        page_size: u32,
        decoder: RawDecoder,
    ) -> Self {
        CpuStream {
            shared,
            decoder,
            cpu: CpuId(d.cpu),
            compression,
            page_size: page_size as usize,
            next: d.offset,
            end: d.offset.saturating_add(d.size),
            chunks_left: None,
            block: Vec::new(),
            block_at: 0,
            chunk: Vec::new(),
            page_no: 0,
            pending: VecDeque::new(),
            done: d.size == 0,
        }
    }

    /// Records seen per event id that had no format.
    pub(crate) fn unknown_ids(&self) -> &HashMap<u16, u64> {
        self.decoder.unknown_ids()
    }

    fn warn(&self, sh: &mut Shared<R>, msg: String) {
        let location = format!("{}: cpu{} page {}", sh.name, self.cpu.0, self.page_no);
        sh.warnings.push(Warning { location, message: msg });
    }

    /// Append the next block of data after the unread rest; false at the end of the data (or on damage,
    /// after a warning). Pages may straddle compressed chunks, so the rest is kept.
    fn refill(&mut self, sh: &mut Shared<R>) -> bool {
        self.block.drain(..self.block_at.min(self.block.len()));
        self.block_at = 0;
        let res = match self.compression {
            Compression::None => {
                let n = (self.end.saturating_sub(self.next)).min(PAGES_PER_BLOCK * self.page_size as u64);
                if n == 0 {
                    return false;
                }
                let r = sh.input.seek(self.next).and_then(|_| sh.input.bytes(n));
                self.next += n;
                r.map(|b| {
                    self.chunk = b;
                })
            }
            _ => self.next_chunk(sh),
        };
        match res {
            Ok(()) if !self.chunk.is_empty() => {
                if self.block.is_empty() {
                    // The usual case (pages do not straddle chunks): swap instead of copying.
                    std::mem::swap(&mut self.block, &mut self.chunk);
                } else {
                    self.block.extend_from_slice(&self.chunk);
                }
                true
            }
            Ok(()) => false,
            Err(e) => {
                self.warn(sh, format!("cannot read the CPU's data: {e}; the rest of this CPU is skipped"));
                self.next = self.end;
                self.chunks_left = Some(0);
                false
            }
        }
    }

    /// Read and inflate the next compressed chunk into `self.chunk` (empty at the end).
    fn next_chunk(&mut self, sh: &mut Shared<R>) -> Result<(), String> {
        self.chunk.clear();
        sh.input.seek(self.next)?;
        let left = match self.chunks_left {
            Some(n) => n,
            None => sh.input.u32()?,
        };
        if left == 0 || sh.input.pos() >= self.end {
            self.chunks_left = Some(0);
            return Ok(());
        }
        let csize = sh.input.u32()?;
        let usize_ = sh.input.u32()?;
        let data = sh.input.bytes(u64::from(csize))?;
        self.next = sh.input.pos();
        self.chunks_left = Some(left - 1);
        self.compression.decompress_into(&data, u64::from(usize_), &mut self.chunk)
    }

    /// Decode the next page, appending its events to `out` (a lost-events marker first when the kernel
    /// dropped events before it); false once the data has ended.
    pub(crate) fn decode_next_page(&mut self, out: &mut VecDeque<Event>) -> bool {
        if self.done {
            return false;
        }
        let shared = self.shared.clone();
        let mut sh = shared.borrow_mut();
        // Make sure a whole page is buffered (the last one may be short).
        while self.block.len() - self.block_at.min(self.block.len()) < self.page_size {
            if !self.refill(&mut sh) {
                break;
            }
        }
        if self.block_at >= self.block.len() {
            self.done = true;
            return false;
        }
        let end = (self.block_at + self.page_size).min(self.block.len());
        let cpu = self.cpu;
        let page = &self.block[self.block_at..end];
        let first = out.len();
        let summary = if page.len() < self.page_size {
            self.decoder.decode_cut_page(cpu, page, &mut |e| out.push_back(e))
        } else {
            self.decoder.decode_page(cpu, page, &mut |e| out.push_back(e))
        };
        let lost = match summary.missed {
            Missed::None => None,
            Missed::Unknown => Some(None),
            Missed::Count(n) => Some(Some(n)),
        };
        if let Some(count) = lost {
            let ts = out.get(first).map_or(Nanos(summary.ts), |e| e.ts);
            let marker = Event {
                ts,
                cpu,
                pid: -1,
                tgid: None,
                comm: TaskName::EMPTY,
                flags: Default::default(),
                kind: EventKind::Lost { count },
            };
            out.insert(first, marker);
        }
        for w in summary.warnings {
            self.warn(&mut sh, w);
        }
        self.block_at = end;
        self.page_no += 1;
        true
    }
}

impl<R: Read + Seek> CpuStream<R> {
    /// Decode pages until an event is pending or the data ends.
    fn fill(&mut self) {
        while self.pending.is_empty() {
            let mut pending = std::mem::take(&mut self.pending);
            let more = self.decode_next_page(&mut pending);
            self.pending = pending;
            if !more {
                break;
            }
        }
    }
}

impl<R: Read + Seek> Iterator for CpuStream<R> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        self.fill();
        self.pending.pop_front()
    }
}

impl<R: Read + Seek> EventStream for CpuStream<R> {
    fn peek_ts(&mut self) -> Option<u64> {
        self.fill();
        self.pending.front().map(|e| e.ts.0)
    }

    fn front_run_mut(&mut self) -> &mut [Event] {
        self.fill();
        self.pending.as_mut_slices().0
    }

    fn consume(&mut self, n: usize) {
        self.pending.drain(..n.min(self.pending.len()));
    }
}
