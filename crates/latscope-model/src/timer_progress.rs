//! One CPU's progress in a running timer measurement: what the live table shows and what a trace trigger
//! watches, the same whichever backend (latscope's own thread or the kernel's timerlat) measures.

use crate::CpuId;

/// One CPU's progress so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimerProgress {
    /// The CPU.
    pub cpu: CpuId,
    /// Samples so far.
    pub count: u64,
    /// The latest latency, ns.
    pub cur_ns: u64,
    /// The smallest latency so far (`None` before the first sample), ns.
    pub min_ns: Option<u64>,
    /// Mean latency so far, ns.
    pub avg_ns: f64,
    /// The largest latency so far, ns.
    pub max_ns: u64,
    /// Periods missed so far.
    pub overruns: u64,
    /// Samples above the threshold so far.
    pub above_threshold: u64,
}
