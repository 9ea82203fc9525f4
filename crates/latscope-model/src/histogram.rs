//! Latency histograms (HDR, ns resolution up to 100 s at 3 significant digits) and their summary statistics.

use crate::Nanos;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest value the histogram tracks without saturating: 100 s.
pub(crate) const HIGHEST_NS: u64 = 100_000_000_000;
/// Significant decimal digits kept.
pub(crate) const SIGFIG: u8 = 3;

/// The percentiles every summary reports, as (label, quantile).
pub(crate) const PERCENTILES: [(&str, f64); 5] =
    [("50", 0.50), ("90", 0.90), ("99", 0.99), ("99.9", 0.999), ("99.99", 0.9999)];

/// A latency histogram in nanoseconds. Allocated once; recording never allocates,
/// and values above 100 s are clamped (and counted in `saturated`).
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    saturated: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram covering 1 ns … 100 s.
    pub fn new() -> LatencyHistogram {
        // The bounds are constants that hdrhistogram accepts; the fallback is unreachable.
        let hist = Histogram::new_with_bounds(1, HIGHEST_NS, SIGFIG)
            .unwrap_or_else(|_| Histogram::new(SIGFIG).unwrap_or_else(|_| unreachable!("sigfig 3 is valid")));
        LatencyHistogram { hist, saturated: 0 }
    }

    /// Records one value. Never allocates.
    #[inline]
    pub fn record(&mut self, v: Nanos) {
        let mut x = v.0.max(1);
        if x > HIGHEST_NS {
            x = HIGHEST_NS;
            self.saturated += 1;
        }
        // Cannot fail: x is within the bounds given at construction.
        let _ = self.hist.record(x);
    }

    /// Records `count` occurrences of one value.
    pub fn record_n(&mut self, v: Nanos, count: u64) {
        let x = v.0.clamp(1, HIGHEST_NS);
        if v.0 > HIGHEST_NS {
            self.saturated += count;
        }
        let _ = self.hist.record_n(x, count);
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        let _ = self.hist.add(&other.hist);
        self.saturated += other.saturated;
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Values that were above the highest trackable value (100 s) and clamped to it.
    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    /// Number of values strictly above `threshold`.
    pub fn count_above(&self, threshold: Nanos) -> u64 {
        let below = self.hist.count_between(0, threshold.0);
        self.hist.len().saturating_sub(below)
    }

    /// Value at quantile `q` (0.0 … 1.0).
    pub fn quantile(&self, q: f64) -> Nanos {
        Nanos(self.hist.value_at_quantile(q))
    }

    /// The underlying HDR histogram, for renderers that need iteration.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The non-empty buckets as (lowest equivalent value, highest equivalent value, count).
    pub fn buckets(&self) -> Vec<Bucket> {
        self.hist
            .iter_recorded()
            .map(|v| {
                let value = v.value_iterated_to();
                Bucket {
                    low_ns: self.hist.lowest_equivalent(value),
                    high_ns: self.hist.highest_equivalent(value),
                    count: v.count_at_value(),
                }
            })
            .collect()
    }

    /// Rebuilds a histogram from exported buckets (each count recorded at the bucket's upper bound).
    pub fn from_buckets(buckets: &[Bucket]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for b in buckets {
            h.record_n(Nanos(b.high_ns), b.count);
        }
        h
    }

    /// Summary statistics; `threshold` adds the above-threshold count and share.
    pub fn summary(&self, threshold: Option<Nanos>) -> Summary {
        let count = self.hist.len();
        if count == 0 {
            return Summary { count: 0, threshold_ns: threshold.map(|t| t.0), ..Summary::default() };
        }
        let above = threshold.map(|t| self.count_above(t));
        Summary {
            count,
            min_ns: self.hist.min(),
            max_ns: self.hist.max(),
            mean_ns: self.hist.mean(),
            stddev_ns: self.hist.stdev(),
            percentiles_ns: PERCENTILES
                .iter()
                .map(|(label, q)| ((*label).to_string(), self.hist.value_at_quantile(*q)))
                .collect(),
            threshold_ns: threshold.map(|t| t.0),
            above_threshold: above,
            above_threshold_pct: above.map(|a| 100.0 * a as f64 / count as f64),
        }
    }
}

/// One non-empty histogram bucket: every value in `low_ns..=high_ns` counts as the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// Lowest value of the bucket, ns.
    pub low_ns: u64,
    /// Highest value of the bucket, ns.
    pub high_ns: u64,
    /// Values recorded in the bucket.
    pub count: u64,
}

/// Summary statistics of a histogram. Values are ns; the precision is the histogram's (3 digits).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub count: u64,
    /// Smallest value.
    pub min_ns: u64,
    /// Largest value.
    pub max_ns: u64,
    /// Arithmetic mean.
    pub mean_ns: f64,
    /// Population standard deviation.
    pub stddev_ns: f64,
    /// Percentiles keyed `"50"`, `"90"`, `"99"`, `"99.9"`, `"99.99"`, in that order.
    pub percentiles_ns: Vec<(String, u64)>,
    /// The threshold the counts below refer to.
    pub threshold_ns: Option<u64>,
    /// Values strictly above the threshold.
    pub above_threshold: Option<u64>,
    /// Share of values above the threshold, percent.
    pub above_threshold_pct: Option<f64>,
}

impl Summary {
    /// The percentile with the given label (`"99.9"`), if reported.
    pub fn percentile(&self, label: &str) -> Option<u64> {
        self.percentiles_ns.iter().find(|(l, _)| l == label).map(|(_, v)| *v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values computed independently with numpy for the sample
    /// `[1000*i for i in range(1, 1001)] + [5_000_000]`:
    /// mean 504995.005, np.std (population) 321644.322, percentiles with
    /// method="inverted_cdf": p50 = 501000, p90 = 901000, p99 = 991000, p99.9 = 1000000.
    #[test]
    fn summary_matches_numpy_reference() {
        let mut h = LatencyHistogram::new();
        for i in 1..=1000u64 {
            h.record(Nanos(1000 * i));
        }
        h.record(Nanos(5_000_000));
        let s = h.summary(Some(Nanos(990_000)));
        assert_eq!(s.count, 1001);
        assert_eq!(s.min_ns, 1000);
        // 3 significant digits: values are exact to within 0.1 %.
        let close = |a: f64, b: f64| (a - b).abs() / b < 1e-3;
        assert!(close(s.max_ns as f64, 5_000_000.0), "max {}", s.max_ns);
        assert!(close(s.mean_ns, 504_995.005), "mean {}", s.mean_ns);
        assert!(close(s.stddev_ns, 321_644.322), "stddev {}", s.stddev_ns);
        assert!(close(s.percentile("50").unwrap_or(0) as f64, 501_000.0));
        assert!(close(s.percentile("90").unwrap_or(0) as f64, 901_000.0));
        assert!(close(s.percentile("99").unwrap_or(0) as f64, 991_000.0));
        assert!(close(s.percentile("99.9").unwrap_or(0) as f64, 1_000_000.0));
        assert_eq!(s.above_threshold, Some(11));
    }

    #[test]
    fn empty_histogram_summarises_to_zero() {
        let s = LatencyHistogram::new().summary(None);
        assert_eq!(s.count, 0);
        assert!(s.percentiles_ns.is_empty());
    }

    #[test]
    fn buckets_round_trip() {
        let mut h = LatencyHistogram::new();
        for v in [1_500u64, 1_500, 20_000, 9_000_000] {
            h.record(Nanos(v));
        }
        let back = LatencyHistogram::from_buckets(&h.buckets());
        assert_eq!(back.count(), 4);
        assert_eq!(back.summary(None).max_ns, h.summary(None).max_ns);
    }

    #[test]
    fn clamps_huge_values() {
        let mut h = LatencyHistogram::new();
        h.record(Nanos(HIGHEST_NS * 10));
        assert_eq!(h.saturated(), 1);
        assert_eq!(h.count(), 1);
    }
}
