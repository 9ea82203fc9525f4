//! Decoding each CPU's data of a `.dat` on its own thread (files on disk): a worker reads, inflates and
//! decodes one CPU's pages into batches of events sent through a bounded channel, so memory stays flat
//! (a few batches per CPU) and the merge on the caller's thread sees the same events in the same order
//! as a decode on one thread.

use super::cpu_stream::{CpuStream, Shared};
use super::input::Input;
use super::meta::{CpuData, Meta};
use crate::merge::EventStream;
use crate::raw::RawDecoder;
use crate::Warning;
use latscope_model::Event;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::rc::Rc;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};

/// Events in flight for all CPUs together (about 120 bytes each): batches are this divided by the CPUs
/// (whole pages are added until a batch holds at least that many), within [`MIN_BATCH`, `MAX_BATCH`].
const IN_FLIGHT: usize = 8192;
const MIN_BATCH: usize = 256;
const MAX_BATCH: usize = 2048;
/// Batches waiting in a CPU's channel.
const QUEUE: usize = 4;

/// Events per batch when `cpus` CPUs are decoded at once.
pub(crate) fn batch_for(cpus: usize) -> usize {
    (IN_FLIGHT / cpus.max(1)).clamp(MIN_BATCH, MAX_BATCH)
}

/// What a worker sends: decoded events in order, the warnings raised meanwhile, and with the last batch
/// the records it skipped for want of a format.
struct Batch {
    events: VecDeque<Event>,
    warnings: Vec<Warning>,
    unknown: Option<HashMap<u16, u64>>,
}

/// One CPU's events as decoded by its worker thread.
pub struct RemoteStream {
    rx: Receiver<Batch>,
    current: VecDeque<Event>,
    /// Emptied batches go back to the worker to be filled again.
    recycle: Sender<VecDeque<Event>>,
    warnings: Vec<Warning>,
    unknown: HashMap<u16, u64>,
    done: bool,
}

impl RemoteStream {
    /// Warnings received so far (taken out).
    pub(crate) fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }

    /// Records without a format, counted per id (complete once the stream has ended).
    pub(crate) fn unknown_ids(&self) -> &HashMap<u16, u64> {
        &self.unknown
    }
}

impl RemoteStream {
    /// Wait for the next batch when the current one is used up; false at the end.
    fn fill(&mut self) -> bool {
        loop {
            if !self.current.is_empty() {
                return true;
            }
            if self.done {
                return false;
            }
            match self.rx.recv() {
                Ok(b) => {
                    self.warnings.extend(b.warnings);
                    if let Some(u) = b.unknown {
                        self.unknown = u;
                        self.done = true;
                    }
                    let empty = std::mem::replace(&mut self.current, b.events);
                    let _ = self.recycle.send(empty);
                }
                Err(_) => self.done = true,
            }
        }
    }
}

impl Iterator for RemoteStream {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        self.fill();
        self.current.pop_front()
    }
}

impl EventStream for RemoteStream {
    fn peek_ts(&mut self) -> Option<u64> {
        self.fill();
        self.current.front().map(|e| e.ts.0)
    }
}

/// Start decoding `d` (read from `file`, a handle of its own) on a thread; `None` when no thread could
/// be started (the caller then decodes the CPU itself).
pub(crate) fn spawn(
    file: File,
    name: &str,
    d: &CpuData,
    meta: &Meta,
    decoder: RawDecoder,
    batch: usize,
) -> Option<RemoteStream> {
    let (tx, rx) = sync_channel::<Batch>(QUEUE);
    let (recycle, recycled) = channel::<VecDeque<Event>>();
    let (name, d) = (name.to_string(), d.clone());
    let (compression, page_size, big_endian) = (meta.compression, meta.page_size, meta.big_endian);
    let spawned = std::thread::Builder::new().name(format!("dat-cpu{}", d.cpu)).spawn(move || {
        let mut input = match Input::new(file) {
            Ok(i) => i,
            Err(e) => {
                let warning = Warning { location: format!("{name}: cpu{}", d.cpu), message: e };
                let _ =
                    tx.send(Batch { events: VecDeque::new(), warnings: vec![warning], unknown: Some(HashMap::new()) });
                return;
            }
        };
        input.big_endian = big_endian;
        let shared = Rc::new(RefCell::new(Shared { input, warnings: Vec::new(), name }));
        let mut stream = CpuStream::new(shared.clone(), &d, compression, page_size, decoder);
        loop {
            let mut events = recycled.try_recv().unwrap_or_else(|_| VecDeque::with_capacity(batch + 256));
            let mut more = true;
            while more && events.len() < batch {
                more = stream.decode_next_page(&mut events);
            }
            let warnings = std::mem::take(&mut shared.borrow_mut().warnings);
            let unknown = (!more).then(|| stream.unknown_ids().clone());
            if tx.send(Batch { events, warnings, unknown }).is_err() || !more {
                return; // Done, or the reader was dropped.
            }
        }
    });
    spawned.ok().map(|_| RemoteStream {
        rx,
        current: VecDeque::new(),
        recycle,
        warnings: Vec::new(),
        unknown: HashMap::new(),
        done: false,
    })
}
