//! Timer measurements ➜ the per-CPU and all-CPUs statistics of a [`latscope_model::TimerResult`]: the
//! histogram summary, overruns, above-threshold counts, window rows and worst samples of each CPU, and
//! every CPU's histogram merged.

use crate::windows::window_rows;
use latscope_model::{CpuId, CpuTimer, LatencyHistogram, Nanos, TimerStats, WakeupSample, WindowAccum};

/// What one CPU's measurement produced (borrowed from the measuring side, which owns the buffers).
#[derive(Clone, Copy, Debug)]
pub struct CpuSamples<'a> {
    /// The CPU.
    pub cpu: CpuId,
    /// Every latency.
    pub histogram: &'a LatencyHistogram,
    /// Periods missed.
    pub overruns: u64,
    /// Window accumulators in time order.
    pub windows: &'a [WindowAccum],
    /// Windows the measuring side could not keep.
    pub windows_dropped: u64,
    /// The worst wakeups, worst first.
    pub worst: &'a [WakeupSample],
}

/// Per-CPU results and the merged statistics of all CPUs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimerSummary {
    /// One entry per CPU, in the given order.
    pub cpus: Vec<CpuTimer>,
    /// Every CPU merged (histograms added, overruns summed).
    pub all: TimerStats,
}

/// Summarises every CPU and merges them. `run_start` (CLOCK_MONOTONIC) makes window offsets relative.
pub fn summarize_timer(samples: &[CpuSamples<'_>], run_start: Nanos, threshold: Option<Nanos>) -> TimerSummary {
    let mut merged = LatencyHistogram::new();
    let mut overruns = 0;
    let cpus = samples
        .iter()
        .map(|s| {
            merged.merge(s.histogram);
            overruns += s.overruns;
            CpuTimer {
                cpu: s.cpu,
                stats: TimerStats::from_histogram(s.histogram, s.overruns, threshold),
                windows: window_rows(s.windows, run_start, threshold),
                windows_dropped: s.windows_dropped,
                worst: s.worst.to_vec(),
            }
        })
        .collect();
    TimerSummary { cpus, all: TimerStats::from_histogram(&merged, overruns, threshold) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_cpus_and_counts_above_threshold() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        [3_000u64, 4_000, 5_000].iter().for_each(|&v| a.record(Nanos(v)));
        [6_000u64, 2_000_000].iter().for_each(|&v| b.record(Nanos(v)));
        let worst = [WakeupSample { seq: 1, latency_ns: 2_000_000, missed_periods: 2, ..WakeupSample::default() }];
        let samples = [
            CpuSamples { cpu: CpuId(0), histogram: &a, overruns: 0, windows: &[], windows_dropped: 0, worst: &[] },
            CpuSamples { cpu: CpuId(1), histogram: &b, overruns: 2, windows: &[], windows_dropped: 0, worst: &worst },
        ];
        let s = summarize_timer(&samples, Nanos(0), Some(Nanos::from_ms(1)));
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(s.cpus[1].stats.above_threshold, Some(1));
        assert_eq!(s.cpus[1].worst, worst);
        assert_eq!((s.all.count, s.all.overruns, s.all.above_threshold), (5, 2, Some(1)));
        assert_eq!(s.all.min_ns, 3_000);
        assert!((s.all.max_ns as f64 - 2e6).abs() / 2e6 < 1e-3, "{}", s.all.max_ns);
        // mean of [3000, 4000, 5000, 6000, 2000000] = 403600 (3 significant digits of the histogram).
        assert!((s.all.avg_ns - 403_600.0).abs() / 403_600.0 < 1e-3, "{}", s.all.avg_ns);
        assert_eq!(s.all.above_threshold_pct, Some(20.0));
    }
}
