//! One CPU's ring-buffer pages in a `.dat`, read incrementally (uncompressed blocks or v7 chunks) and
//! decoded into events: memory stays at a block per CPU whatever the file size.

use super::compress::Compression;
use super::input::Input;
use super::meta::CpuData;
use crate::raw::{Missed, RawDecoder};
use crate::Warning;
use latscope_model::{CpuId, Event, EventKind, Nanos};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{Read, Seek};
use std::rc::Rc;
use std::sync::Arc;

/// Pages read per block from an uncompressed file.
const PAGES_PER_BLOCK: u64 = 16;

/// State shared by the CPU streams of one file.
pub(crate) struct Shared<R> {
    pub(crate) input: Input<R>,
    pub(crate) decoder: RawDecoder,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) name: String,
}

/// The events of one CPU of one buffer.
pub struct CpuStream<R> {
    shared: Rc<RefCell<Shared<R>>>,
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
    page_no: u64,
    pending: VecDeque<Event>,
    done: bool,
    /// Chunks inflated ahead by a background thread (compressed files on disk).
    prefetch: Option<super::prefetch::Blocks>,
}

impl<R: Read + Seek> CpuStream<R> {
    pub(crate) fn new(shared: Rc<RefCell<Shared<R>>>, d: &CpuData, compression: Compression, page_size: u32) -> Self {
        CpuStream {
            shared,
            cpu: CpuId(d.cpu),
            compression,
            page_size: page_size as usize,
            next: d.offset,
            end: d.offset.saturating_add(d.size),
            chunks_left: None,
            block: Vec::new(),
            block_at: 0,
            page_no: 0,
            pending: VecDeque::new(),
            done: d.size == 0,
            prefetch: None,
        }
    }

    /// Take compressed chunks from a background reader instead of the shared input.
    pub(crate) fn set_prefetch(&mut self, blocks: super::prefetch::Blocks) {
        self.prefetch = Some(blocks);
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
                r
            }
            _ => match &self.prefetch {
                Some(rx) => rx.recv().unwrap_or_else(|_| Ok(Vec::new())),
                None => self.next_chunk(sh),
            },
        };
        match res {
            Ok(b) if !b.is_empty() => {
                self.block.extend_from_slice(&b);
                true
            }
            Ok(_) => false,
            Err(e) => {
                self.warn(sh, format!("cannot read the CPU's data: {e}; the rest of this CPU is skipped"));
                self.next = self.end;
                self.chunks_left = Some(0);
                false
            }
        }
    }

    fn next_chunk(&mut self, sh: &mut Shared<R>) -> Result<Vec<u8>, String> {
        sh.input.seek(self.next)?;
        let left = match self.chunks_left {
            Some(n) => n,
            None => sh.input.u32()?,
        };
        if left == 0 || sh.input.pos() >= self.end {
            self.chunks_left = Some(0);
            return Ok(Vec::new());
        }
        let csize = sh.input.u32()?;
        let usize_ = sh.input.u32()?;
        let data = sh.input.bytes(u64::from(csize))?;
        self.next = sh.input.pos();
        self.chunks_left = Some(left - 1);
        self.compression.decompress(&data, u64::from(usize_))
    }

    /// Decode pages until at least one event is pending or the data ends.
    fn fill(&mut self) {
        let shared = self.shared.clone();
        let mut sh = shared.borrow_mut();
        while self.pending.is_empty() && !self.done {
            // Make sure a whole page is buffered (the last one may be short).
            while self.block.len() - self.block_at.min(self.block.len()) < self.page_size {
                if !self.refill(&mut sh) {
                    break;
                }
            }
            if self.block_at >= self.block.len() {
                self.done = true;
                break;
            }
            let end = (self.block_at + self.page_size).min(self.block.len());
            let (cpu, pending) = (self.cpu, &mut self.pending);
            let page = &self.block[self.block_at..end];
            let mut events = Vec::new();
            let summary = sh.decoder.decode_page(cpu, page, &mut |e| events.push(e));
            let lost = match summary.missed {
                Missed::None => None,
                Missed::Unknown => Some(None),
                Missed::Count(n) => Some(Some(n)),
            };
            if let Some(count) = lost {
                let ts = events.first().map_or(Nanos(summary.ts), |e| e.ts);
                pending.push_back(Event {
                    ts,
                    cpu,
                    pid: -1,
                    tgid: None,
                    comm: Arc::from(""),
                    flags: Default::default(),
                    kind: EventKind::Lost { count },
                });
            }
            pending.extend(events);
            for w in summary.warnings {
                self.warn(&mut sh, w);
            }
            self.block_at = end;
            self.page_no += 1;
        }
    }
}

impl<R: Read + Seek> Iterator for CpuStream<R> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.pending.is_empty() {
            self.fill();
        }
        self.pending.pop_front()
    }
}
