//! [`SampleTap`]: every latency a measuring thread records, handed to a reader in another thread while
//! the run goes on (`latscope monitor` builds its live histograms from it). One writer (the measuring
//! thread), one reader; a fixed ring of atomics allocated before the run, so the hot loop only stores two
//! words: no allocation, lock or system call. A reader that falls more than the ring's length behind
//! loses the oldest samples, and is told how many.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Default ring length: 2^16 samples, 65 s at a 1 ms period (512 KiB per CPU).
pub const DEFAULT_TAP_SAMPLES: usize = 1 << 16;

/// A single-writer, single-reader ring of latencies (ns).
#[derive(Debug)]
pub struct SampleTap {
    ring: Box<[AtomicU64]>,
    /// Samples written so far (the next one goes to `written % len`).
    written: AtomicU64,
}

/// Where a reader is in a tap: samples read so far, and samples it lost by falling behind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapCursor {
    /// Samples consumed (read or lost).
    pub next: u64,
    /// Samples overwritten before they were read.
    pub lost: u64,
}

impl SampleTap {
    /// A tap holding the last `len` samples (rounded up to a power of two, at least 2).
    pub fn new(len: usize) -> SampleTap {
        let len = len.max(2).next_power_of_two();
        SampleTap { ring: (0..len).map(|_| AtomicU64::new(0)).collect(), written: AtomicU64::new(0) }
    }

    /// Writes one sample. Only the measuring thread calls it.
    #[inline]
    pub fn push(&self, latency_ns: u64) {
        let n = self.written.load(Ordering::Relaxed);
        // The previous count is published before this slot is overwritten (a reader checks it after
        // reading a slot, see `drain`). Free on x86.
        fence(Ordering::Release);
        self.ring[(n as usize) & (self.ring.len() - 1)].store(latency_ns, Ordering::Relaxed);
        self.written.store(n + 1, Ordering::Release);
    }

    /// Samples written so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Hands every sample written since `cursor` to `f`, oldest first, and advances the cursor. Samples the
    /// writer overwrote before they were read (it wrapped the ring) are counted in `cursor.lost`.
    pub fn drain(&self, cursor: &mut TapCursor, mut f: impl FnMut(u64)) {
        let len = self.ring.len() as u64;
        let end = self.written();
        if end.saturating_sub(cursor.next) >= len {
            let skip = end + 1 - len - cursor.next;
            cursor.lost += skip;
            cursor.next += skip;
        }
        while cursor.next < end {
            let v = self.ring[(cursor.next as usize) & (self.ring.len() - 1)].load(Ordering::Relaxed);
            // The writer may have wrapped onto this slot while it was read (it writes sample `written`
            // into the slot of `written - len`): then the value is not this sample's, and it is counted
            // as lost instead.
            fence(Ordering::Acquire);
            let now = self.written.load(Ordering::Relaxed);
            if now.saturating_sub(cursor.next) >= len {
                let skip = now + 1 - len - cursor.next;
                cursor.lost += skip;
                cursor.next += skip;
                continue;
            }
            f(v);
            cursor.next += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(tap: &SampleTap, cursor: &mut TapCursor) -> Vec<u64> {
        let mut got = Vec::new();
        tap.drain(cursor, |v| got.push(v));
        got
    }

    #[test]
    fn hands_over_every_sample_in_order() {
        let tap = SampleTap::new(4);
        let mut c = TapCursor::default();
        assert!(read(&tap, &mut c).is_empty());
        for v in [10, 20, 30] {
            tap.push(v);
        }
        assert_eq!(read(&tap, &mut c), [10, 20, 30]);
        tap.push(40);
        tap.push(50);
        assert_eq!(read(&tap, &mut c), [40, 50]);
        assert_eq!(c, TapCursor { next: 5, lost: 0 });
    }

    #[test]
    fn a_reader_that_falls_behind_loses_the_oldest_and_is_told() {
        let tap = SampleTap::new(3); // rounded to 4
        let mut c = TapCursor::default();
        for v in 1..=10 {
            tap.push(v);
        }
        // The oldest slot may be the one the writer fills next: the reader keeps len - 1.
        assert_eq!(read(&tap, &mut c), [8, 9, 10]);
        assert_eq!(c, TapCursor { next: 10, lost: 7 });
    }

    #[test]
    fn a_writer_on_another_thread_loses_nothing_when_read_in_time() {
        let tap = std::sync::Arc::new(SampleTap::new(1 << 12));
        let w = std::sync::Arc::clone(&tap);
        let writer = std::thread::spawn(move || {
            for v in 0..200_000u64 {
                w.push(v);
                if v % 1024 == 0 {
                    std::thread::yield_now();
                }
            }
        });
        let mut c = TapCursor::default();
        let mut sum = 0u128;
        let mut seen = 0u64;
        while !writer.is_finished() || c.next < tap.written() {
            tap.drain(&mut c, |v| {
                sum += u128::from(v);
                seen += 1;
            });
        }
        writer.join().expect("writer");
        assert_eq!(seen + c.lost, 200_000);
        if c.lost == 0 {
            assert_eq!(sum, (0..200_000u128).sum::<u128>());
        }
    }
}
