//! The `latscope timer` result on the wire (`"schema": "latscope/1"`, `"kind": "timer"`): options, per-CPU
//! wakeup-latency statistics with overruns, histogram buckets, window rows and the worst samples with their
//! absolute CLOCK_MONOTONIC times, plus the merged all-CPUs statistics.

use crate::histogram::PERCENTILES;
use crate::window::WindowRow;
use crate::wire::{ResultKind, SCHEMA};
use crate::{Bucket, CpuId, CpuList, Finding, LatencyHistogram, Nanos, RunMetadata};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The options the run used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimerOptions {
    /// Measured CPUs.
    pub cpus: CpuList,
    /// Timer period, ns.
    pub interval_ns: u64,
    /// SCHED_FIFO priority of the measurement threads; 0 is SCHED_OTHER.
    pub priority: u32,
    /// Requested duration; `None` ran until Ctrl-C.
    pub duration_ns: Option<u64>,
    /// Latencies above this count as exceeding (and make the exit code 2).
    pub threshold_ns: Option<u64>,
    /// Whether the run stops at the first latency above the threshold.
    pub stop_on_threshold: bool,
    /// Window length of the per-window rows, if asked for.
    pub window_ns: Option<u64>,
    /// What measured: latscope's own threads or the kernel's timerlat tracer.
    #[serde(default)]
    pub backend: TimerBackend,
}

/// What measured the wakeup latencies of a timer run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerBackend {
    /// latscope's measuring threads (cyclictest's method): the latency a user-space thread sees.
    #[default]
    User,
    /// The kernel's timerlat tracer (`timerlat/N` kernel threads, as rtla timerlat): the thread latency,
    /// with the timer IRQ's latency beside it ([`TimerResult::irq`]).
    Timerlat,
}

/// The timer interrupt's own latency per CPU (timerlat's IRQ context): how late the hrtimer's interrupt
/// ran, before the thread woke. The thread latency stays the headline ([`TimerResult::cpus`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqLatency {
    /// Per CPU, in the order of [`TimerResult::cpus`]; `worst` holds the worst interrupts.
    pub cpus: Vec<CpuTimer>,
    /// All CPUs merged.
    pub all: TimerStats,
}

/// How an imported run (cyclictest's histogram file or JSON) was set up, as far as its file says: `None`
/// where the file does not say, shown as unknown (the options' `interval_ns`, `priority` and the
/// metadata's `duration_ns` then hold 0).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedSetup {
    /// The tool that measured (`cyclictest`).
    pub tool: String,
    /// Timer period, ns.
    pub interval_ns: Option<u64>,
    /// SCHED_FIFO priority; `Some(0)` is SCHED_OTHER.
    pub priority: Option<u32>,
    /// How long the run lasted (from its start and end times), ns.
    pub duration_ns: Option<u64>,
}

/// Why the run ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The requested duration elapsed.
    #[default]
    Duration,
    /// SIGINT/SIGTERM (Ctrl-C).
    Signal,
    /// A latency crossed the threshold with `--stop-on-threshold`.
    Threshold,
}

/// One wakeup, with absolute times so it can be lined up with a trace taken at the same time
/// (ftrace's `mono` clock is CLOCK_MONOTONIC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeupSample {
    /// Sample number on its CPU, from 0.
    pub seq: u64,
    /// When the thread should have woken, CLOCK_MONOTONIC ns.
    pub expected_ns: u64,
    /// When it read the clock after waking, CLOCK_MONOTONIC ns.
    pub actual_ns: u64,
    /// `actual − expected`, ns.
    pub latency_ns: u64,
    /// Periods this wakeup missed (its overruns).
    pub missed_periods: u64,
}

/// Keeps the `cap` largest latencies in `kept` (preallocated to `cap`; never grows past it) and returns the
/// smallest latency a new sample must reach to enter, so that a hot loop can skip the call below it.
#[inline]
pub fn keep_worst(kept: &mut Vec<WakeupSample>, cap: usize, sample: WakeupSample) -> u64 {
    if kept.len() < cap {
        kept.push(sample);
        return if kept.len() < cap { 0 } else { kept.iter().map(|s| s.latency_ns).min().unwrap_or(0) + 1 };
    }
    if let Some(slot) = kept.iter_mut().min_by_key(|s| s.latency_ns) {
        if sample.latency_ns > slot.latency_ns {
            *slot = sample;
        }
    }
    kept.iter().map(|s| s.latency_ns).min().unwrap_or(0) + 1
}

/// Wakeup-latency statistics of one CPU or of all CPUs merged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimerStats {
    /// Samples (wakeups measured).
    pub count: u64,
    /// Smallest latency, ns.
    pub min_ns: u64,
    /// Mean latency, ns.
    pub avg_ns: f64,
    /// Population standard deviation, ns.
    pub stddev_ns: f64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// Percentiles keyed `"50"`, `"90"`, `"99"`, `"99.9"`, `"99.99"`, ns.
    pub percentiles_ns: BTreeMap<String, u64>,
    /// Periods missed because a wakeup came more than one period late (the thread re-aligned after each).
    pub overruns: u64,
    /// Samples strictly above the threshold (`None` without a threshold).
    pub above_threshold: Option<u64>,
    /// Their share of the samples, percent.
    pub above_threshold_pct: Option<f64>,
    /// Non-empty histogram buckets, ascending.
    pub histogram: Vec<Bucket>,
    /// Samples above the histogram's range (clamped to it).
    pub histogram_saturated: u64,
}

impl TimerStats {
    /// Statistics of `hist` (3 significant digits) with `overruns` and the count above `threshold`.
    pub fn from_histogram(hist: &LatencyHistogram, overruns: u64, threshold: Option<Nanos>) -> TimerStats {
        let s = hist.summary(threshold);
        TimerStats {
            count: s.count,
            min_ns: s.min_ns,
            avg_ns: s.mean_ns,
            stddev_ns: s.stddev_ns,
            max_ns: s.max_ns,
            percentiles_ns: s.percentiles_ns.into_iter().collect(),
            overruns,
            above_threshold: s.above_threshold,
            above_threshold_pct: s.above_threshold_pct,
            histogram: hist.buckets(),
            histogram_saturated: hist.saturated(),
        }
    }

    /// The percentile with label `"99.9"` etc., if reported.
    pub fn percentile(&self, label: &str) -> Option<u64> {
        self.percentiles_ns.get(label).copied()
    }

    /// The percentile labels in ascending order (`"50"` … `"99.99"`).
    pub fn percentile_labels() -> impl Iterator<Item = &'static str> {
        PERCENTILES.iter().map(|(label, _)| *label)
    }
}

/// Everything measured on one CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTimer {
    /// The CPU.
    pub cpu: CpuId,
    /// Its statistics (flattened into this object: `count`, `min_ns`, `avg_ns`, …).
    #[serde(flatten)]
    pub stats: TimerStats,
    /// Per-window rows when `--window` was given.
    pub windows: Vec<WindowRow>,
    /// Windows not kept because the preallocated window buffer was full.
    pub windows_dropped: u64,
    /// The worst wakeups, worst first, with absolute times.
    pub worst: Vec<WakeupSample>,
}

/// The whole `latscope timer` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimerResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Always [`ResultKind::Timer`].
    pub kind: ResultKind,
    /// What ran, where, when.
    pub metadata: RunMetadata,
    /// The options used.
    pub options: TimerOptions,
    /// Start of the measurement (first expected wakeup of the first CPU), CLOCK_MONOTONIC ns.
    pub start_monotonic_ns: u64,
    /// Why the run ended.
    pub stopped_by: StopReason,
    /// Per-CPU results, by CPU number.
    pub cpus: Vec<CpuTimer>,
    /// All CPUs merged.
    pub all: TimerStats,
    /// Degraded setup and other things the reader must know (no mlockall, no cpu_dma_latency…).
    pub warnings: Vec<String>,
    /// The audit findings that concern the measured CPUs, collected when the run started.
    pub findings: Vec<Finding>,
    /// The worst samples explained from the trace (`latscope timer --trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::traced_wakeup::TimerTrace>,
    /// What an imported result's file said about its setup (`None` for latscope's own runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<ImportedSetup>,
    /// The timer IRQ's latency, measured by the timerlat backend beside the thread latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq: Option<IrqLatency>,
    /// The worst wakeup the kernel's wakeup latency tracer measured meanwhile (`--wakeup-tracer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_wakeup: Option<crate::KernelWakeup>,
}

impl TimerResult {
    /// An empty result with the schema and kind set.
    pub fn new(metadata: RunMetadata, options: TimerOptions) -> TimerResult {
        TimerResult {
            schema: SCHEMA.to_string(),
            kind: ResultKind::Timer,
            metadata,
            options,
            start_monotonic_ns: 0,
            stopped_by: StopReason::Duration,
            cpus: Vec::new(),
            all: TimerStats::default(),
            warnings: Vec::new(),
            findings: Vec::new(),
            trace: None,
            imported: None,
            irq: None,
            kernel_wakeup: None,
        }
    }

    /// The worst wakeups of every CPU, worst first (earlier samples first among equals).
    pub fn worst_first(&self) -> Vec<(CpuId, WakeupSample)> {
        let mut worst: Vec<(CpuId, WakeupSample)> =
            self.cpus.iter().flat_map(|c| c.worst.iter().map(move |w| (c.cpu, *w))).collect();
        worst.sort_by(|a, b| b.1.latency_ns.cmp(&a.1.latency_ns).then(a.1.seq.cmp(&b.1.seq)));
        worst
    }

    /// Whether any CPU had a latency above the run's threshold.
    pub fn exceeded_threshold(&self) -> bool {
        self.all.above_threshold.is_some_and(|n| n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_worst() {
        let mut kept = Vec::with_capacity(3);
        let mut floor = 0;
        for (i, lat) in [5u64, 1, 9, 3, 7, 2, 8].into_iter().enumerate() {
            if lat >= floor {
                let s = WakeupSample { seq: i as u64, latency_ns: lat, ..WakeupSample::default() };
                floor = keep_worst(&mut kept, 3, s);
            }
        }
        let mut lats: Vec<u64> = kept.iter().map(|s| s.latency_ns).collect();
        lats.sort_unstable();
        assert_eq!(lats, [7, 8, 9]);
        assert_eq!(kept.capacity(), 3);
    }

    fn sample() -> TimerResult {
        let mut r = TimerResult::new(
            RunMetadata { tool_version: "0.1.0".into(), kernel_release: "6.18.0".into(), ..RunMetadata::default() },
            TimerOptions {
                cpus: CpuList(vec![CpuId(1)]),
                interval_ns: 1_000_000,
                priority: 95,
                threshold_ns: Some(1_000_000),
                ..TimerOptions::default()
            },
        );
        let mut h = LatencyHistogram::new();
        for v in [5_000u64, 6_000, 7_000, 2_100_000] {
            h.record(Nanos(v));
        }
        let stats = TimerStats::from_histogram(&h, 2, Some(Nanos::from_ms(1)));
        r.all = stats.clone();
        r.cpus.push(CpuTimer {
            cpu: CpuId(1),
            stats,
            windows: vec![WindowRow { index: 0, count: 4, mean_ns: 529_500.0, ..WindowRow::default() }],
            windows_dropped: 0,
            worst: vec![WakeupSample {
                seq: 3,
                expected_ns: 10_000_000,
                actual_ns: 12_100_000,
                latency_ns: 2_100_000,
                missed_periods: 2,
            }],
        });
        r
    }

    #[test]
    fn round_trips_through_json() {
        let r = sample();
        let text = serde_json::to_string_pretty(&r).expect("serialize");
        let back: TimerResult = serde_json::from_str(&text).expect("parse back");
        assert_eq!(back, r);
        let v: serde_json::Value = serde_json::from_str(&text).expect("value");
        assert_eq!(v["schema"], "latscope/1");
        assert_eq!(v["kind"], "timer");
        let cpu = &v["cpus"][0];
        for key in [
            "cpu",
            "count",
            "min_ns",
            "avg_ns",
            "stddev_ns",
            "max_ns",
            "percentiles_ns",
            "overruns",
            "above_threshold",
            "histogram",
            "windows",
            "worst",
        ] {
            assert!(cpu.get(key).is_some(), "missing key {key}");
        }
        let pct: Vec<&String> = cpu["percentiles_ns"].as_object().map(|m| m.keys().collect()).unwrap_or_default();
        assert_eq!(pct, ["50", "90", "99", "99.9", "99.99"]);
        assert_eq!(cpu["above_threshold"], 1);
        assert_eq!(cpu["overruns"], 2);
        assert!(cpu["histogram"].as_array().is_some_and(|b| b.len() == 4));
        assert!(v["findings"].as_array().is_some_and(|f| f.is_empty()));
        assert!(r.exceeded_threshold());
    }

    #[test]
    fn keys_have_no_odd_characters() {
        let text = serde_json::to_string(&sample()).expect("serialize");
        let v: serde_json::Value = serde_json::from_str(&text).expect("value");
        fn walk(v: &serde_json::Value, path: &str) {
            if let Some(map) = v.as_object() {
                for (k, child) in map {
                    let ok = k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
                    assert!(ok, "key {path}/{k} has odd characters");
                    walk(child, &format!("{path}/{k}"));
                }
            } else if let Some(items) = v.as_array() {
                items.iter().for_each(|c| walk(c, path));
            }
        }
        walk(&v, "");
    }
}
