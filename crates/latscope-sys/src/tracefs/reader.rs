//! Per-CPU readers of `per_cpu/cpuN/trace_pipe_raw`: one thread per CPU copies whole ring-buffer pages
//! into a [`PageStore`] that keeps everything, keeps a rolling time window, or spools pages to a file.

use crate::SysError;
use latscope_model::{CpuId, Nanos};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// One ring-buffer page as the kernel handed it over: a full page (the header's commit field says how
/// much of it holds events), recorded on `cpu`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawPage {
    /// The CPU whose buffer it came from.
    pub cpu: CpuId,
    /// The page header's timestamp (trace clock) of its first event.
    pub ts: u64,
    /// The page bytes, `page_size` long.
    pub data: Vec<u8>,
}

/// What the per-CPU page store of a capture keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retention {
    /// Every page, in memory.
    All,
    /// A rolling window: pages that start within `span` of the newest page of their CPU, plus pages
    /// overlapping a held time range; at most `max_bytes` per CPU (oldest dropped first).
    Window {
        /// How far back from the newest page to keep.
        span: Nanos,
        /// Memory cap per CPU.
        max_bytes: usize,
    },
    /// Every page appended to `DIR/cpuN.raw` (a recording), nothing kept in memory.
    Spool(PathBuf),
}

/// The pages of one CPU and its counters; shared between its reader thread and the capture.
#[derive(Debug)]
pub struct PageStore {
    cpu: CpuId,
    retention: Retention,
    pages: VecDeque<RawPage>,
    bytes_in_memory: usize,
    holds: Vec<(u64, u64)>,
    /// Pages at the back not yet handed out by [`PageStore::copy_new`].
    unseen: usize,
    spool: Option<(PathBuf, File)>,
    /// Pages read from the kernel.
    pub pages_read: u64,
    /// Bytes read from the kernel.
    pub bytes_read: u64,
    /// Pages the rolling window let go.
    pub pages_dropped: u64,
    /// Pages written to the spool file.
    pub pages_spooled: u64,
    /// The first error met (the reader stops at it).
    pub error: Option<String>,
}

impl PageStore {
    /// A store for `cpu`; a spool file is created now.
    pub fn new(cpu: CpuId, retention: Retention) -> Result<PageStore, SysError> {
        let spool = match &retention {
            Retention::Spool(dir) => {
                let path = dir.join(format!("cpu{cpu}.raw"));
                let f = File::create(&path).map_err(|e| SysError::file(&path, e))?;
                Some((path, f))
            }
            _ => None,
        };
        Ok(PageStore {
            cpu,
            retention,
            pages: VecDeque::new(),
            bytes_in_memory: 0,
            holds: Vec::new(),
            unseen: 0,
            spool,
            pages_read: 0,
            bytes_read: 0,
            pages_dropped: 0,
            pages_spooled: 0,
            error: None,
        })
    }

    /// The CPU.
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }

    /// The spool file, when spooling.
    pub fn spool_path(&self) -> Option<&Path> {
        self.spool.as_ref().map(|(p, _)| p.as_path())
    }

    /// Adds a page read from the kernel.
    pub fn push(&mut self, page: RawPage) {
        self.pages_read += 1;
        self.bytes_read += page.data.len() as u64;
        if let Some((path, f)) = &mut self.spool {
            match f.write_all(&page.data) {
                Ok(()) => self.pages_spooled += 1,
                Err(e) => {
                    if self.error.is_none() {
                        self.error = Some(format!("{}: {e}", path.display()));
                    }
                }
            }
            return;
        }
        self.bytes_in_memory += page.data.len();
        self.pages.push_back(page);
        self.unseen += 1;
        self.prune();
    }

    /// Keeps the pages overlapping `[from, to]` (trace clock) out of the rolling window's reach.
    pub fn hold(&mut self, from: Nanos, to: Nanos) {
        self.holds.push((from.0, to.0.max(from.0)));
    }

    /// Pages in memory now.
    pub fn pages(&self) -> impl Iterator<Item = &RawPage> {
        self.pages.iter()
    }

    /// Takes the pages in memory out of the store (for a consumer that decodes as it goes).
    pub fn take(&mut self) -> Vec<RawPage> {
        self.bytes_in_memory = 0;
        self.unseen = 0;
        self.pages.drain(..).collect()
    }

    /// Copies of the pages added since the previous call, which stay in the store (for a consumer that
    /// decodes as it goes while the rolling window is kept for later).
    pub fn copy_new(&mut self) -> Vec<RawPage> {
        let from = self.pages.len() - self.unseen.min(self.pages.len());
        self.unseen = 0;
        self.pages.range(from..).cloned().collect()
    }

    /// Flushes the spool file.
    pub fn flush(&mut self) -> Result<(), SysError> {
        if let Some((path, f)) = &mut self.spool {
            f.flush().map_err(|e| SysError::file(path.as_path(), e))?;
        }
        Ok(())
    }

    fn prune(&mut self) {
        let Retention::Window { span, max_bytes } = self.retention else { return };
        let Some(newest) = self.pages.back().map(|p| p.ts) else { return };
        let horizon = newest.saturating_sub(span.0);
        let before = self.pages.len();
        // Pages are in time order: only those ending before the horizon are candidates, and they are at
        // the front, so the scan stops at the first page that reaches the window (held pages are skipped).
        let mut i = 0;
        while i < self.pages.len() {
            let start = self.pages[i].ts;
            // A page covers its events until the next page starts.
            let end = self.pages.get(i + 1).map_or(u64::MAX, |n| n.ts);
            if start >= horizon || end >= horizon {
                break;
            }
            if self.holds.iter().any(|&(f, t)| start <= t && end >= f) {
                i += 1;
            } else {
                self.pages.remove(i);
            }
        }
        // The memory cap wins over holds: drop the oldest.
        let page_bytes = self.pages.front().map_or(0, |p| p.data.len());
        while self.pages.len() > 1 && self.pages.len() * page_bytes > max_bytes {
            self.pages.pop_front();
        }
        self.pages_dropped += (before - self.pages.len()) as u64;
        self.bytes_in_memory = self.pages.len() * page_bytes;
        // Holds that ended before the oldest kept page can go.
        if let Some(oldest) = self.pages.front().map(|p| p.ts) {
            self.holds.retain(|&(_, t)| t >= oldest);
        }
    }
}

/// Locks a store; a poisoned lock (a reader thread panicked) still yields the data.
pub fn lock(store: &Mutex<PageStore>) -> MutexGuard<'_, PageStore> {
    store.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running per-CPU reader thread.
#[derive(Debug)]
pub struct Reader {
    handle: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl Reader {
    /// Opens `dir/per_cpu/cpuN/trace_pipe_raw` now (so no event is missed) and starts the thread,
    /// pinned to `affinity` when given. Reads are `page_size` bytes, non-blocking, with a 50 ms poll.
    pub fn start(
        dir: &Path,
        cpu: CpuId,
        page_size: usize,
        store: Arc<Mutex<PageStore>>,
        affinity: Option<Vec<CpuId>>,
    ) -> Result<Reader, SysError> {
        let path = dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| SysError::file(&path, e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("latscope-rd{cpu}"))
            .spawn(move || {
                if let Some(cpus) = affinity {
                    pin(&cpus);
                }
                read_loop(file, &path, cpu, page_size, &store, &flag);
            })
            .map_err(|e| SysError::Invalid(format!("cannot start the trace reader thread of CPU {cpu}: {e}")))?;
        Ok(Reader { handle: Some(handle), stop })
    }

    /// Asks the thread to read what is left and finish, and waits for it (its file is closed after).
    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.finish();
    }
}

fn pin(cpus: &[CpuId]) {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in cpus {
            if (c.0 as usize) < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c.0 as usize, &mut set);
            }
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn read_loop(mut file: File, path: &Path, cpu: CpuId, page_size: usize, store: &Mutex<PageStore>, stop: &AtomicBool) {
    let mut buf = vec![0u8; page_size];
    loop {
        // Read the stop request before reading: once asked, one more pass drains what is left.
        let stopping = stop.load(Ordering::SeqCst);
        match file.read(&mut buf) {
            Ok(n) if n > 0 => {
                let mut data = buf[..n].to_vec();
                data.resize(page_size, 0);
                let ts = data.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_ne_bytes);
                let mut s = lock(store);
                s.push(RawPage { cpu, ts, data });
                if s.error.is_some() {
                    return;
                }
                continue;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                lock(store).error = Some(format!("{}: {e}", path.display()));
                return;
            }
        }
        if stopping {
            return;
        }
        let mut pfd = libc::pollfd { fd: file.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut pfd, 1, 50) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(ts: u64) -> RawPage {
        RawPage { cpu: CpuId(1), ts, data: vec![0; 4096] }
    }

    #[test]
    fn window_keeps_recent_and_held_pages() {
        let retention = Retention::Window { span: Nanos(1_000), max_bytes: 1 << 20 };
        let mut s = PageStore::new(CpuId(1), retention).expect("store");
        for ts in [0, 100, 200] {
            s.push(page(ts));
        }
        s.hold(Nanos(150), Nanos(160));
        for ts in (300..=5_000).step_by(100) {
            s.push(page(ts));
        }
        let kept: Vec<u64> = s.pages().map(|p| p.ts).collect();
        // The page starting at 100 covers 150..160; the window keeps 4000..=5000 (and the page that
        // covers 4000 from before it).
        assert_eq!(kept[0], 100);
        assert_eq!(kept[1], 3_900);
        assert_eq!(*kept.last().expect("last"), 5_000);
        assert_eq!(kept.len(), 1 + 12);
        assert_eq!(s.pages_read, 51);
        assert_eq!(s.pages_dropped, 51 - 13);
    }

    #[test]
    fn new_pages_are_copied_once_and_stay_in_the_window() {
        let retention = Retention::Window { span: Nanos(u64::MAX), max_bytes: 3 * 4096 };
        let mut s = PageStore::new(CpuId(1), retention).expect("store");
        s.push(page(0));
        s.push(page(1));
        let ts = |v: Vec<RawPage>| v.iter().map(|p| p.ts).collect::<Vec<u64>>();
        assert_eq!(ts(s.copy_new()), [0, 1]);
        assert_eq!(ts(s.copy_new()), Vec::<u64>::new());
        // Five more through a window of three: the two the cap let go before they were copied are gone.
        for t in 2..7 {
            s.push(page(t));
        }
        assert_eq!(ts(s.copy_new()), [4, 5, 6]);
        assert_eq!(s.pages().count(), 3, "copied pages stay in the window");
    }

    #[test]
    fn memory_cap_drops_oldest_first() {
        let retention = Retention::Window { span: Nanos(u64::MAX), max_bytes: 3 * 4096 };
        let mut s = PageStore::new(CpuId(0), retention).expect("store");
        for ts in 0..10 {
            s.push(page(ts));
        }
        let kept: Vec<u64> = s.pages().map(|p| p.ts).collect();
        assert_eq!(kept, vec![7, 8, 9]);
        assert_eq!(s.take().len(), 3);
        assert_eq!(s.pages().count(), 0);
    }

    #[test]
    fn spool_writes_every_page_to_its_file() {
        let dir = std::env::temp_dir().join(format!("latscope-reader-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mut s = PageStore::new(CpuId(3), Retention::Spool(dir.clone())).expect("store");
        s.push(page(1));
        s.push(page(2));
        s.flush().expect("flush");
        assert_eq!(s.pages_spooled, 2);
        assert_eq!(s.pages().count(), 0);
        let len = std::fs::metadata(dir.join("cpu3.raw")).expect("spool").len();
        assert_eq!(len, 2 * 4096);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
