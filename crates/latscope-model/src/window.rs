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
    fn empty_window_is_zero() {
        let w = WindowAccum::new(5);
        assert_eq!((w.mean_ns(), w.stddev_ns()), (0.0, 0.0));
    }
}
