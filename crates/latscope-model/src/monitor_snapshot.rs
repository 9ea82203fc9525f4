//! [`MonitorSnapshot`]: what `latscope monitor` knows at one moment of its endless run — per CPU the
//! latency distribution since the start (counted in the fixed [`LATENCY_BUCKETS`]), the largest latency
//! over the rolling window and since the start, overruns and threshold crossings; the flight recorder's
//! breaches by cause; the audit's findings; the process's own cost. Data only: the exposition formats are
//! rendered in `latscope-report`.

use crate::{CauseKind, CpuId, Nanos, Severity};
use std::collections::BTreeMap;

/// Upper bounds of the latency buckets (`le`): 1, 2, 5 … up to 100 ms. A latency equal to a bound counts
/// in that bucket; above the last it counts only in the total (`+Inf`).
pub const LATENCY_BUCKETS: [Nanos; 16] = [
    Nanos::from_us(1),
    Nanos::from_us(2),
    Nanos::from_us(5),
    Nanos::from_us(10),
    Nanos::from_us(20),
    Nanos::from_us(50),
    Nanos::from_us(100),
    Nanos::from_us(200),
    Nanos::from_us(500),
    Nanos::from_ms(1),
    Nanos::from_ms(2),
    Nanos::from_ms(5),
    Nanos::from_ms(10),
    Nanos::from_ms(20),
    Nanos::from_ms(50),
    Nanos::from_ms(100),
];

/// One measured CPU's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuMonitor {
    /// The CPU.
    pub cpu: CpuId,
    /// Samples since the start in each of [`LATENCY_BUCKETS`]: above the previous bound, at or below this
    /// one (not cumulative; the exposition adds them up). Samples above the last bound are the rest of
    /// `count`.
    pub buckets: [u64; LATENCY_BUCKETS.len()],
    /// Samples since the start.
    pub count: u64,
    /// Sum of every latency since the start, ns.
    pub sum_ns: u128,
    /// Largest latency since the start.
    pub max: Nanos,
    /// Largest latency within the rolling window ([`MonitorSnapshot::window`]).
    pub window_max: Nanos,
    /// Periods missed since the start.
    pub overruns: u64,
    /// Samples above the threshold since the start.
    pub threshold_exceeded: u64,
    /// Samples the reader of the measuring thread fell too far behind to see (not in `buckets`).
    pub samples_lost: u64,
    /// The noise sampled on this CPU (`--noise`), when sampled.
    pub noise: Option<NoiseMonitor>,
}

/// One CPU's noise as sampled in bursts of the noise loop (`latscope monitor --noise`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NoiseMonitor {
    /// How long the loop ran, since the start.
    pub sampled: Nanos,
    /// The gaps above the noise threshold within it, summed.
    pub noise: Nanos,
    /// The longest gap since the start.
    pub max_gap: Nanos,
    /// How long the loop ran within the rolling window ([`MonitorSnapshot::window`]).
    pub window_sampled: Nanos,
    /// The gaps within the rolling window, summed.
    pub window_noise: Nanos,
    /// The longest gap within the rolling window.
    pub window_max_gap: Nanos,
    /// With the flight recorder's trace: the gaps by the cause that explains each (gap count and total),
    /// gaps made by this monitor's own threads left out.
    pub causes: BTreeMap<CauseKind, (u64, Nanos)>,
}

impl NoiseMonitor {
    /// The share of the sampled time lost to gaps since the start (0 before anything was sampled).
    pub fn ratio(&self) -> f64 {
        ratio(self.noise, self.sampled)
    }

    /// The same within the rolling window.
    pub fn window_ratio(&self) -> f64 {
        ratio(self.window_noise, self.window_sampled)
    }
}

fn ratio(part: Nanos, whole: Nanos) -> f64 {
    if whole.0 == 0 {
        0.0
    } else {
        part.0 as f64 / whole.0 as f64
    }
}

/// The process's own cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessUsage {
    /// CPU time used, user and system, all threads.
    pub cpu_time: Nanos,
    /// Resident memory, bytes.
    pub resident_bytes: u64,
    /// When the process started, seconds since the Unix epoch.
    pub start_time_unix_s: u64,
}

/// Everything `latscope monitor` exposes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorSnapshot {
    /// latscope's version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// The timer period.
    pub interval: Nanos,
    /// The rolling window `window_max` covers.
    pub window: Nanos,
    /// The threshold, when one is set.
    pub threshold: Option<Nanos>,
    /// Per measured CPU, in the order measured.
    pub cpus: Vec<CpuMonitor>,
    /// Breaches the flight recorder captured, by the cause that explained most of each.
    pub breaches: BTreeMap<CauseKind, u64>,
    /// Breaches above the threshold that were not captured (rate limit, capture busy or tracing off).
    pub breaches_not_captured: u64,
    /// Events the trace's ring buffer lost, over every capture.
    pub trace_lost_events: u64,
    /// The audit's findings that are not `ok`: rule id and severity.
    pub findings: Vec<(String, Severity)>,
    /// The process's own cost.
    pub process: ProcessUsage,
}
