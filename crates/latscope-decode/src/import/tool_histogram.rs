//! What an imported tool reports — per-thread (per-CPU) histograms with the tool's own min/avg/max, its
//! command line — turned into latscope's timer and noise results.

use latscope_model::noise_result::{CounterInfo, CpuNoise, GapStats, NoiseOptions, NoiseResult};
use latscope_model::{
    CpuId, CpuList, CpuTimer, ImportedSetup, LatencyHistogram, Nanos, RunMetadata, TimerOptions, TimerResult,
    TimerStats,
};

/// One thread's (or CPU's) histogram as an imported tool reports it: counts per bucket of `unit_ns`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolHistogram {
    /// The CPU (or the thread number when the tool does not say).
    pub cpu: u32,
    /// (bucket index, count): the bucket holds values in `index·unit … (index+1)·unit`.
    pub buckets: Vec<(u64, u64)>,
    /// Size of one bucket, ns (1000 for us histograms).
    pub unit_ns: u64,
    /// Samples above the histogram's range (counted at `max`).
    pub overflows: u64,
    /// Reported minimum, ns.
    pub min_ns: Option<u64>,
    /// Reported mean, ns.
    pub avg_ns: Option<f64>,
    /// Reported maximum, ns.
    pub max_ns: Option<u64>,
    /// Reported sample count.
    pub total: Option<u64>,
}

impl ToolHistogram {
    /// The histogram as latscope's, every bucket's count recorded at the bucket's lower edge and the
    /// overflows at the reported maximum.
    pub fn to_latency_histogram(&self) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for (i, n) in &self.buckets {
            if *n > 0 {
                h.record_n(Nanos(i * self.unit_ns), *n);
            }
        }
        if self.overflows > 0 {
            let top = self.buckets.iter().map(|b| b.0 + 1).max().unwrap_or(0) * self.unit_ns;
            h.record_n(Nanos(self.max_ns.unwrap_or(top).max(top)), self.overflows);
        }
        h
    }

    /// Counted samples (buckets plus overflows).
    pub fn counted(&self) -> u64 {
        self.buckets.iter().map(|b| b.1).sum::<u64>() + self.overflows
    }
}

fn tool_stats(t: &ToolHistogram, h: &LatencyHistogram) -> TimerStats {
    let mut s = TimerStats::from_histogram(h, 0, None);
    if let Some(m) = t.min_ns {
        s.min_ns = m;
    }
    if let Some(m) = t.max_ns {
        // The tool's own maximum is exact; the histogram's is the top of an HDR bucket.
        s.max_ns = m;
    }
    // Without overflows the histogram's mean is the tool's own (cyclictest sums whole µs, which its
    // buckets hold), to the precision the tool's rounded figure lacks; with overflows, the tool's.
    if let Some(a) = t.avg_ns.filter(|_| t.overflows > 0 || s.count == 0) {
        s.avg_ns = a;
    }
    s
}

/// Builds a timer result from imported per-thread histograms (cyclictest); `setup` is what the file says
/// about the run (its tool, interval, priority and duration, each `None` when it does not say).
pub fn timer_from_tool(
    file: &str,
    mut metadata: RunMetadata,
    setup: ImportedSetup,
    threads: &[ToolHistogram],
    mut warnings: Vec<String>,
) -> TimerResult {
    let tool = setup.tool.clone();
    let tool = tool.as_str();
    let cpus = CpuList(threads.iter().map(|t| CpuId(t.cpu)).collect());
    let options = TimerOptions {
        cpus,
        interval_ns: setup.interval_ns.unwrap_or(0),
        priority: setup.priority.unwrap_or(0),
        ..TimerOptions::default()
    };
    metadata.duration_ns = setup.duration_ns.unwrap_or(0);
    let mut r = TimerResult::new(metadata, options);
    r.imported = Some(setup);
    let mut all = LatencyHistogram::new();
    for t in threads {
        let h = t.to_latency_histogram();
        all.merge(&h);
        if t.overflows > 0 {
            warnings.push(format!(
                "CPU {}: {} samples above the {} histogram's range are counted at its maximum",
                t.cpu, t.overflows, tool
            ));
        }
        if let Some(total) = t.total {
            if total != t.counted() {
                warnings.push(format!(
                    "CPU {}: {tool} reports {total} samples but its histogram holds {}",
                    t.cpu,
                    t.counted()
                ));
            }
        }
        r.cpus.push(CpuTimer { cpu: CpuId(t.cpu), stats: tool_stats(t, &h), ..CpuTimer::default() });
    }
    r.all = TimerStats::from_histogram(&all, 0, None);
    // The mean of all threads from theirs (the histogram's counts its overflows at the maximum).
    let count: u64 = r.cpus.iter().map(|c| c.stats.count).sum();
    if count > 0 {
        r.all.avg_ns = r.cpus.iter().map(|c| c.stats.avg_ns * c.stats.count as f64).sum::<f64>() / count as f64;
    }
    if let Some(max) = r.cpus.iter().map(|c| c.stats.max_ns).max() {
        r.all.max_ns = max;
    }
    if let Some(min) = r.cpus.iter().map(|c| c.stats.min_ns).min() {
        r.all.min_ns = min;
    }
    warnings
        .insert(0, format!("imported from {tool} output {file}; percentiles are at the tool's 1 us bucket resolution"));
    r.warnings = warnings;
    r
}

/// Builds a noise result from imported per-CPU histograms of loop iteration times (oslat).
/// Noise time is estimated from the buckets at or above `threshold_ns` (oslat keeps no gap list).
pub fn noise_from_tool(
    file: &str,
    metadata: RunMetadata,
    counter: CounterInfo,
    threshold_ns: u64,
    cpus: &[(ToolHistogram, f64)],
    mut warnings: Vec<String>,
) -> NoiseResult {
    let options = NoiseOptions {
        cpus: CpuList(cpus.iter().map(|(t, _)| CpuId(t.cpu)).collect()),
        threshold_ns,
        ..NoiseOptions::default()
    };
    let mut r = NoiseResult::new(metadata, options, counter);
    for (t, duration_s) in cpus {
        let h = t.to_latency_histogram();
        let top_index = t.buckets.iter().map(|b| b.0).max().unwrap_or(0);
        let mut noise_ns = 0u64;
        let mut gaps = 0u64;
        for (i, n) in &t.buckets {
            let v = i * t.unit_ns;
            if v >= threshold_ns && *n > 0 {
                gaps += n;
                // The top bucket includes the overflows: count one of them at the reported maximum.
                noise_ns += if *i == top_index { (n - 1) * v + t.max_ns.unwrap_or(v).max(v) } else { n * v };
            }
        }
        let runtime_ns = (duration_s * 1e9) as u64;
        let summary = h.summary(None);
        r.cpus.push(CpuNoise {
            cpu: CpuId(t.cpu),
            loops: t.counted(),
            runtime_ns,
            noise_ns,
            noise_pct: if runtime_ns > 0 { 100.0 * noise_ns as f64 / runtime_ns as f64 } else { 0.0 },
            max_gap_ns: t.max_ns.unwrap_or(summary.max_ns),
            gaps: GapStats {
                count: gaps,
                per_second: if *duration_s > 0.0 { gaps as f64 / duration_s } else { 0.0 },
                ..GapStats::default()
            },
            summary,
            histogram: h.buckets(),
            histogram_saturated: h.saturated(),
            ..CpuNoise::default()
        });
    }
    warnings.insert(
        0,
        format!(
            "imported from oslat output {file}: noise is estimated from its 1 us buckets at or above {} us \
             (oslat keeps no list of gaps)",
            threshold_ns / 1000
        ),
    );
    r.warnings = warnings;
    r
}

/// Reads `-i N`/`--interval=N` (us) and `-p N`/`--priority=N` from a cyclictest command line.
pub fn cyclictest_options(cmdline: &str) -> (u64, u32) {
    // cyclictest's defaults: `-i 1000`, `-p 0` (SCHED_OTHER).
    let words: Vec<&str> = cmdline.split_whitespace().collect();
    let mut interval_us = 1000u64;
    let mut prio = 0u32;
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied().unwrap_or("");
        let value = |short: &str, long: &str| -> Option<String> {
            if *w == short || *w == long {
                Some(next.to_string())
            } else if let Some(v) = w.strip_prefix(&format!("{long}=")) {
                Some(v.to_string())
            } else {
                w.strip_prefix(short)
                    .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
                    .map(str::to_string)
            }
        };
        if let Some(v) = value("-i", "--interval").and_then(|v| v.parse().ok()) {
            interval_us = v;
        }
        if let Some(v) = value("-p", "--priority").and_then(|v| v.parse().ok()) {
            prio = v;
        }
    }
    (interval_us * 1000, prio)
}

/// Metadata for an imported file: the tool and version, the file, and what the tool recorded.
pub fn imported_metadata(tool: &str, file: &str) -> RunMetadata {
    RunMetadata {
        tool_version: tool.to_string(),
        args: vec![format!("imported from {file}")],
        kernel_release: "unknown".into(),
        preemption_model: "unknown".into(),
        ..RunMetadata::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cyclictest_options() {
        assert_eq!(cyclictest_options("cyclictest -m -p 80 -t 2 -i 200 -D 2s"), (200_000, 80));
        assert_eq!(cyclictest_options("cyclictest --priority=95 --interval=1000"), (1_000_000, 95));
        assert_eq!(cyclictest_options("cyclictest -p95 -i250"), (250_000, 95));
    }
}
