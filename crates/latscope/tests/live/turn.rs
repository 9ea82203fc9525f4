//! Machine-wide turns for the live tests that load or measure a CPU with real-time threads (a SCHED_FIFO
//! spinner, injector or timer thread, mostly on CPU 1): each judges what it injected against what it
//! measured, so two of them must never run at once — not in this test binary, not in another one, not in
//! another checkout's `make test` on the same machine. A SCHED_FIFO load of the same period from another process merges with every injected
//! spin it sits next to, which made the spin-by-spin noise test fail with "only 56 of 98 gaps within
//! 10% of their spin's duration". An exclusive `flock(2)` on one file serves processes and threads alike
//! (each turn opens the file anew, so two threads of one process exclude each other too).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;

/// The lock file every latscope checkout's live tests share.
pub const LOCK_FILE: &str = "/tmp/latscope-live.lock";

/// A live test's turn, held until dropped.
#[derive(Debug)]
pub struct Turn(File);

/// Waits for the turn (as long as another live test holds it) and takes it.
pub fn take() -> Turn {
    Turn(lock(LOCK_FILE))
}

/// Opens `path` (created when missing) and waits for an exclusive `flock(2)` on it: held until the file is
/// dropped. The live turn here and the guest turn (`guest_lock.rs`) both take theirs with it.
pub fn lock(path: &str) -> File {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .or_else(|_| File::open(path))
        .unwrap_or_else(|e| panic!("cannot open {path}: {e}; remove it or make it readable"));
    loop {
        // SAFETY: flock on a file descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return file;
        }
        let e = std::io::Error::last_os_error();
        assert!(e.kind() == std::io::ErrorKind::Interrupted, "flock {path}: {e}");
    }
}
