//! Per-window latency statistics (`--window`): the raw accumulators a measurement thread fills without
//! allocating, and the row each window becomes (mean, stddev, share above threshold, window and global
//! min–max, like seed 003's driver output).

use serde::{Deserialize, Serialize};

/// Raw sums of the samples of one window. Exact integer sums, so the mean and the standard deviation
/// computed from them carry no rounding error from the accumulation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowAccum {
    /// Window start, CLOCK_MONOTONIC ns (the expected wakeup time that opened it).
    pub start_ns: u64,
    /// Samples in the window.
    pub count: u64,
    /// Sum of the samples, ns.
    pub sum_ns: u128,
    /// Sum of the squared samples, ns².
    pub sum_sq_ns: u128,
    /// Smallest sample, ns (`u64::MAX` while empty).
    pub min_ns: u64,
    /// Largest sample, ns.
    pub max_ns: u64,
    /// Samples strictly above the threshold.
    pub above: u64,
    /// Periods missed in the window (overruns).
    pub overruns: u64,
}

impl WindowAccum {
    /// An empty window starting at `start_ns`.
    pub const fn new(start_ns: u64) -> WindowAccum {
        WindowAccum { start_ns, count: 0, sum_ns: 0, sum_sq_ns: 0, min_ns: u64::MAX, max_ns: 0, above: 0, overruns: 0 }
    }

    /// Adds one sample. No allocation, no branch besides min/max.
    #[inline]
    pub fn record(&mut self, v: u64, above: bool) {
        self.count += 1;
        self.sum_ns += u128::from(v);
        self.sum_sq_ns += u128::from(v) * u128::from(v);
        self.min_ns = self.min_ns.min(v);
        self.max_ns = self.max_ns.max(v);
        self.above += u64::from(above);
    }

    /// Mean of the samples, ns (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// Population standard deviation, ns, computed exactly as `sqrt(n·Σx² − (Σx)²) / n`.
    pub fn stddev_ns(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = u128::from(self.count);
        // n·Σx² ≥ (Σx)² always (Cauchy–Schwarz); saturating guards against overflow of huge runs.
        let var_n2 = n.saturating_mul(self.sum_sq_ns).saturating_sub(self.sum_ns.saturating_mul(self.sum_ns));
        (var_n2 as f64).sqrt() / self.count as f64
    }
}

/// A run's consecutive windows, keyed by the expected wakeup time from the run's start: the open window and
/// the closed ones, at most `max` kept (later ones counted as dropped). Both timer backends record through it.
#[derive(Clone, Debug)]
pub struct WindowSeries {
    len: u64,
    open: WindowAccum,
    open_end: u64,
    closed: Vec<WindowAccum>,
    max: usize,
    dropped: u64,
}

impl WindowSeries {
    /// Windows of `len` from `start_ns`, at most `max` kept. Their room is allocated here, so that recording
    /// never allocates.
    pub fn new(start_ns: u64, len: crate::Nanos, max: usize) -> WindowSeries {
        let len = len.0.max(1);
        WindowSeries {
            len,
            open: WindowAccum::new(start_ns),
            open_end: start_ns.saturating_add(len),
            closed: Vec::with_capacity(max),
            max,
            dropped: 0,
        }
    }

    /// Moves the start of an empty series to `start_ns`: a measuring thread allocates its series before it
    /// knows when the run starts.
    pub fn start_at(&mut self, start_ns: u64) {
        debug_assert!(self.open.count == 0 && self.closed.is_empty(), "the series already holds samples");
        self.open = WindowAccum::new(start_ns);
        self.open_end = start_ns.saturating_add(self.len);
    }

    /// Adds one sample expected at `expected_ns`, closing every window that ended before it (a stall longer
    /// than a window leaves empty windows behind).
    #[inline]
    pub fn record(&mut self, expected_ns: u64, latency_ns: u64, above: bool, missed: u64) {
        while expected_ns >= self.open_end {
            let done = std::mem::replace(&mut self.open, WindowAccum::new(self.open_end));
            self.keep(done);
            self.open_end = self.open_end.saturating_add(self.len);
        }
        self.open.record(latency_ns, above);
        self.open.overruns += missed;
    }

    fn keep(&mut self, w: WindowAccum) {
        if self.closed.len() < self.max {
            self.closed.push(w);
        } else {
            self.dropped += 1;
        }
    }

    /// The closed windows, then the open one when it holds samples, and how many windows were dropped.
    pub fn finished(&self) -> (Vec<WindowAccum>, u64) {
        let mut done = WindowSeries { closed: self.closed.clone(), ..*self };
        if self.open.count > 0 {
            done.keep(self.open);
        }
        (done.closed, done.dropped)
    }
}

/// One window as reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowRow {
    /// Window number, from 0.
    pub index: u64,
    /// Window start, ns since the start of the run.
    pub offset_ns: u64,
    /// Samples in the window.
    pub count: u64,
    /// Mean latency, ns.
    pub mean_ns: f64,
    /// Population standard deviation, ns.
    pub stddev_ns: f64,
    /// Smallest latency in the window, ns.
    pub min_ns: u64,
    /// Largest latency in the window, ns.
    pub max_ns: u64,
    /// Samples above the threshold (`None` without a threshold).
    pub above_threshold: Option<u64>,
    /// Their share of the window's samples, percent.
    pub above_threshold_pct: Option<f64>,
    /// Periods missed in the window.
    pub overruns: u64,
    /// Smallest latency from the start of the run to the end of this window, ns.
    pub global_min_ns: u64,
    /// Largest latency from the start of the run to the end of this window, ns.
    pub global_max_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy: x = [1200, 1300, 1250, 9000, 1210]; x.mean() = 2792.0, x.std() = 3104.19973584…
    #[test]
    fn mean_and_stddev_match_numpy() {
        let mut w = WindowAccum::new(0);
        for v in [1200u64, 1300, 1250, 9000, 1210] {
            w.record(v, v > 5000);
        }
        assert_eq!(w.count, 5);
        assert_eq!((w.min_ns, w.max_ns, w.above), (1200, 9000, 1));
        assert!((w.mean_ns() - 2792.0).abs() < 1e-9);
        assert!((w.stddev_ns() - 3_104.199_735_8).abs() < 1e-3, "{}", w.stddev_ns());
    }

    #[test]
    fn a_series_closes_windows_by_expected_time_and_keeps_at_most_max() {
        let mut s = WindowSeries::new(1_000, crate::Nanos(100), 2);
        s.record(1_010, 5, false, 0);
        // A stall: the sample expected at 1_350 closes the windows from 1_000, 1_100 (empty) and 1_200 (empty).
        s.record(1_350, 70, true, 2);
        let (kept, dropped) = s.finished();
        let starts: Vec<(u64, u64)> = kept.iter().map(|w| (w.start_ns, w.count)).collect();
        assert_eq!(starts, [(1_000, 1), (1_100, 0)]);
        assert_eq!(dropped, 2, "the window from 1_200 and the open one from 1_300");
        let mut open = WindowSeries::new(0, crate::Nanos(100), 4);
        open.record(150, 7, true, 1);
        let (kept, dropped) = open.finished();
        assert_eq!((kept.len(), dropped), (2, 0));
        assert_eq!((kept[1].start_ns, kept[1].above, kept[1].overruns), (100, 1, 1));
        // Finishing does not close the open window for good: recording goes on after a look.
        open.record(160, 9, false, 0);
        assert_eq!(open.finished().0[1].count, 2);
    }

    #[test]
    fn empty_window_is_zero() {
        let w = WindowAccum::new(5);
        assert_eq!((w.mean_ns(), w.stddev_ns()), (0.0, 0.0));
    }
}
