//! Decoding each CPU's data of a `.dat` on its own thread (files on disk): a worker reads, inflates and
//! decodes one CPU's pages into batches of events sent through a bounded channel, so memory stays flat
//! (a few batches per CPU) and the merge on the caller's thread sees the same events in the same order
//! as a decode on one thread.

use super::compress::Compression;
use super::cpu_stream::{CpuStream, Shared};
use super::input::Input;
use super::meta::CpuData;
use crate::raw::RawDecoder;
use crate::Warning;
use latscope_model::Event;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::rc::Rc;
use std::sync::mpsc::{sync_channel, Receiver};

/// Events per batch (whole pages are added until a batch holds at least this many).
const BATCH: usize = 512;
/// Batches waiting in a CPU's channel.
const QUEUE: usize = 2;

/// What a worker sends: decoded events in order, the warnings raised meanwhile, and with the last batch
/// the records it skipped for want of a format.
struct Batch {
    events: Vec<Event>,
    warnings: Vec<Warning>,
    unknown: Option<HashMap<u16, u64>>,
}

/// One CPU's events as decoded by its worker thread.
pub struct RemoteStream {
    rx: Receiver<Batch>,
    current: std::vec::IntoIter<Event>,
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

impl Iterator for RemoteStream {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(e) = self.current.next() {
                return Some(e);
            }
            if self.done {
                return None;
            }
            match self.rx.recv() {
                Ok(b) => {
                    self.warnings.extend(b.warnings);
                    if let Some(u) = b.unknown {
                        self.unknown = u;
                        self.done = true;
                    }
                    self.current = b.events.into_iter();
                }
                Err(_) => self.done = true,
            }
        }
    }
}

/// Start decoding `d` (read from `file`, a handle of its own) on a thread; `None` when no thread could
/// be started (the caller then decodes the CPU itself).
pub(crate) fn spawn(
    file: File,
    name: &str,
    d: &CpuData,
    compression: Compression,
    page_size: u32,
    big_endian: bool,
    decoder: RawDecoder,
) -> Option<RemoteStream> {
    let (tx, rx) = sync_channel::<Batch>(QUEUE);
    let (name, d) = (name.to_string(), d.clone());
    let spawned = std::thread::Builder::new().name(format!("dat-cpu{}", d.cpu)).spawn(move || {
        let mut input = match Input::new(file) {
            Ok(i) => i,
            Err(e) => {
                let warning = Warning { location: format!("{name}: cpu{}", d.cpu), message: e };
                let _ = tx.send(Batch { events: Vec::new(), warnings: vec![warning], unknown: Some(HashMap::new()) });
                return;
            }
        };
        input.big_endian = big_endian;
        let shared = Rc::new(RefCell::new(Shared { input, warnings: Vec::new(), name }));
        let mut stream = CpuStream::new(shared.clone(), &d, compression, page_size, decoder);
        loop {
            let mut events = Vec::with_capacity(BATCH + BATCH / 2);
            let mut more = true;
            while more && events.len() < BATCH {
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
        current: Vec::new().into_iter(),
        warnings: Vec::new(),
        unknown: HashMap::new(),
        done: false,
    })
}
