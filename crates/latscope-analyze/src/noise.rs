//! Noise accounting (total, share of the CPU, longest gap, gaps per second, per-window rows, top gaps) and
//! RT-throttling detection from the gap pattern: a SCHED_FIFO/RR spinner on a kernel with
//! `sched_rt_runtime_us` < `sched_rt_period_us` is stopped for about `period − runtime` every period.
//! [`summarize`] turns what the spinning loops measured into the per-CPU rows of a noise result.

use latscope_model::noise_result::{
    CounterDeltas, CpuNoise, Gap, GapStats, NoiseEnvironment, NoiseOptions, NoiseWindow, RtThrottling,
};
use latscope_model::{CpuId, LatencyHistogram, Nanos};
use serde::{Deserialize, Serialize};

/// The sysctl that sets the RT runtime per period.
pub const RT_RUNTIME_SYSCTL: &str = "kernel.sched_rt_runtime_us";

/// A throttling gap may be this much shorter than `period − runtime` (the non-RT work that ran in it may
/// finish early) or longer (the tick that ends it is late), as a fraction of the expected gap.
pub const GAP_TOLERANCE: f64 = 0.5;
/// Consecutive throttling gaps start a whole number of periods apart, within this fraction of a period.
pub const PERIOD_TOLERANCE: f64 = 0.1;

/// Noise totals of one CPU, the way rtla osnoise reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseAccount {
    /// Total time lost to gaps above the threshold, ns.
    pub noise_ns: u64,
    /// That time as a share of the run, percent.
    pub noise_pct: f64,
    /// The longest gap, ns.
    pub max_gap_ns: u64,
    /// Gaps per second of run.
    pub gaps_per_second: f64,
}

/// Accounts totals kept by the measurement loop (they include gaps the buffer dropped).
pub fn account(runtime: Nanos, noise: Nanos, gap_count: u64, max_gap: Nanos) -> NoiseAccount {
    let secs = runtime.0 as f64 / 1e9;
    NoiseAccount {
        noise_ns: noise.0,
        noise_pct: if runtime.0 > 0 { 100.0 * noise.0 as f64 / runtime.0 as f64 } else { 0.0 },
        max_gap_ns: max_gap.0,
        gaps_per_second: if secs > 0.0 { gap_count as f64 / secs } else { 0.0 },
    }
}

/// Accounts a list of gaps over `runtime`.
pub fn account_gaps(gaps: &[Gap], runtime: Nanos) -> NoiseAccount {
    let noise = gaps.iter().map(|g| g.duration_ns.0).sum();
    let max = gaps.iter().map(|g| g.duration_ns.0).max().unwrap_or(0);
    account(runtime, Nanos(noise), gaps.len() as u64, Nanos(max))
}

/// The `n` longest gaps, longest first (earlier first among equals).
pub fn top_gaps(gaps: &[Gap], n: usize) -> Vec<Gap> {
    let mut v = gaps.to_vec();
    v.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.start_ns.cmp(&b.start_ns)));
    v.truncate(n);
    v
}

/// Per-window rows over `[start, end)`: each gap counts in the window it started in. The last window may
/// be shorter. An empty list when `window` is zero or the run is empty.
pub fn windows(gaps: &[Gap], start: Nanos, end: Nanos, window: Nanos) -> Vec<NoiseWindow> {
    if window.0 == 0 || end <= start {
        return Vec::new();
    }
    let span = end.0 - start.0;
    let n = span.div_ceil(window.0) as usize;
    let mut rows: Vec<NoiseWindow> = (0..n)
        .map(|i| {
            let offset = i as u64 * window.0;
            NoiseWindow { offset_ns: offset, length_ns: window.0.min(span - offset), ..NoiseWindow::default() }
        })
        .collect();
    for g in gaps {
        if g.start_ns < start || g.start_ns >= end {
            continue;
        }
        let i = ((g.start_ns.0 - start.0) / window.0) as usize;
        if let Some(r) = rows.get_mut(i) {
            r.gaps += 1;
            r.noise_ns += g.duration_ns.0;
            r.max_gap_ns = r.max_gap_ns.max(g.duration_ns.0);
        }
    }
    for r in &mut rows {
        r.noise_pct = if r.length_ns > 0 { 100.0 * r.noise_ns as f64 / r.length_ns as f64 } else { 0.0 };
    }
    rows
}

/// The RT bandwidth settings in force during the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtSettings {
    /// `kernel.sched_rt_period_us`.
    pub period_us: Option<u64>,
    /// `kernel.sched_rt_runtime_us` (-1: unlimited).
    pub runtime_us: Option<i64>,
}

impl RtSettings {
    /// `period − runtime`: the gap throttling leaves every period; `None` when throttling is off or unknown.
    pub fn expected_gap(&self) -> Option<Nanos> {
        let (p, r) = (self.period_us?, self.runtime_us?);
        if r < 0 || r as u64 >= p {
            return None;
        }
        Some(Nanos::from_us(p - r as u64))
    }
}

/// Decides whether the gaps show RT throttling: gaps (or [`episodes`] of gaps) of about `period − runtime` (within
/// [`GAP_TOLERANCE`]) that start a whole number of periods apart (within [`PERIOD_TOLERANCE`]). Two such
/// gaps are needed; a single one counts only when the run was too short (under two periods) to hold two.
/// A throttle that follows other noise without the spinner running in between makes one longer gap: the
/// throttle ends it when the period's budget is refilled, so a longer gap that ends a whole number of
/// periods from a matched gap's end counts as a throttle too (`in_longer_gaps`), with no length of its own.
/// Only an RT-policy spinner is throttled (`rt_policy`). Gaps must be in time order.
pub fn detect_rt_throttling(gaps: &[Gap], runtime: Nanos, settings: RtSettings, rt_policy: bool) -> RtThrottling {
    let mut v = RtThrottling {
        rt_policy,
        period_us: settings.period_us,
        runtime_us: settings.runtime_us,
        expected_gap_ns: settings.expected_gap().map(|n| n.0),
        sysctl: RT_RUNTIME_SYSCTL.to_string(),
        suggested_value: "-1".to_string(),
        ..RtThrottling::default()
    };
    let (Some(expected), Some(period_us)) = (settings.expected_gap(), settings.period_us) else {
        return v;
    };
    if !rt_policy {
        return v;
    }
    let period = Nanos::from_us(period_us).0 as f64;
    let lo = expected.0 as f64 * (1.0 - GAP_TOLERANCE);
    let hi = expected.0 as f64 * (1.0 + GAP_TOLERANCE);
    let episodes = episodes(gaps, expected);
    let candidates: Vec<&Gap> = episodes.iter().filter(|g| (lo..=hi).contains(&(g.duration_ns.0 as f64))).collect();
    let whole_periods_apart = |a: &Gap, b: &Gap| {
        let d = b.start_ns.0.saturating_sub(a.start_ns.0) as f64 / period;
        let k = d.round();
        k >= 1.0 && (d - k).abs() <= PERIOD_TOLERANCE
    };
    let mut matched = vec![false; candidates.len()];
    let mut intervals = Vec::new();
    for i in 1..candidates.len() {
        if whole_periods_apart(candidates[i - 1], candidates[i]) {
            matched[i - 1] = true;
            matched[i] = true;
            let d = candidates[i].start_ns.0 - candidates[i - 1].start_ns.0;
            let k = (d as f64 / period).round().max(1.0) as u64;
            intervals.push(d / k);
        }
    }
    // A longer gap counts when its end lies on the period grid of a gap of the expected length's end.
    let ends_whole_periods_apart = |a: &Gap, b: &Gap| {
        let d = a.end().0.abs_diff(b.end().0) as f64 / period;
        let k = d.round();
        k >= 1.0 && (d - k).abs() <= PERIOD_TOLERANCE
    };
    let longer: Vec<&Gap> = episodes.iter().filter(|g| g.duration_ns.0 as f64 > hi).collect();
    for l in longer {
        let Some(i) = candidates.iter().position(|c| ends_whole_periods_apart(l, c)) else {
            continue;
        };
        matched[i] = true;
        v.in_longer_gaps += 1;
        let d = l.end().0.abs_diff(candidates[i].end().0);
        intervals.push(d / (d as f64 / period).round().max(1.0) as u64);
    }
    let mut hits: Vec<&Gap> = candidates.iter().zip(&matched).filter(|(_, m)| **m).map(|(g, _)| *g).collect();
    let single_in_short_run = candidates.len() == 1
        && v.in_longer_gaps == 0
        && (runtime.0 as f64) < 2.0 * period
        && (candidates[0].duration_ns.0 as f64 - expected.0 as f64).abs() <= 0.2 * expected.0 as f64;
    if single_in_short_run {
        hits = candidates.clone();
    }
    v.detected = hits.len() as u64 + v.in_longer_gaps >= 2 || single_in_short_run;
    if hits.is_empty() {
        return v;
    }
    let mut durs: Vec<u64> = hits.iter().map(|g| g.duration_ns.0).collect();
    v.matched_gaps = hits.len() as u64;
    v.throttled_ns = durs.iter().sum();
    v.median_gap_ns = median(&mut durs);
    v.median_interval_ns = median(&mut intervals);
    v
}

/// Joins gaps of at least `expected / 50` that follow each other with less than `expected / 10` of loop
/// time between them: when other work on the CPU is bursty, the time the kernel takes from a throttled
/// spinner arrives in a few pieces with brief returns of the spinner in between. An episode starts with
/// its first gap and lasts the sum of its gaps.
pub fn episodes(gaps: &[Gap], expected: Nanos) -> Vec<Gap> {
    let min = expected.0 / 50;
    let join = expected.0 / 10;
    let mut out: Vec<Gap> = Vec::new();
    let mut last_end = Nanos::ZERO;
    for g in gaps.iter().filter(|g| g.duration_ns.0 >= min) {
        match out.last_mut() {
            Some(e) if g.start_ns.saturating_sub(last_end).0 <= join => e.duration_ns = e.duration_ns + g.duration_ns,
            _ => out.push(*g),
        }
        last_end = g.end();
    }
    out
}

/// Gaps kept per CPU in the result's `top` list.
pub const TOP_GAPS: usize = 20;

/// What one CPU's spinning loop measured (borrowed from the measuring side, which owns the buffers), and
/// the CPU's counter deltas over the run.
#[derive(Clone, Debug)]
pub struct CpuLoop<'a> {
    /// The CPU.
    pub cpu: CpuId,
    /// Iterations.
    pub loops: u64,
    /// Mean counter ticks of an undisturbed iteration.
    pub loop_cycles: f64,
    /// Cheapest iteration, counter ticks.
    pub min_cycles: u64,
    /// How long the loop ran.
    pub runtime: Nanos,
    /// Every iteration's duration.
    pub histogram: &'a LatencyHistogram,
    /// The gaps above the threshold that were kept, in time order (CLOCK_MONOTONIC start).
    pub gaps: &'a [Gap],
    /// All gaps above the threshold, kept or not.
    pub gap_count: u64,
    /// Gaps the buffer could not keep.
    pub dropped: u64,
    /// Total duration of all gaps above the threshold.
    pub noise: Nanos,
    /// The longest gap, kept or not.
    pub max_gap: Gap,
    /// A gap crossed the threshold and ended the run.
    pub stopped_on_threshold: bool,
    /// `/proc` counter deltas of this CPU over the run.
    pub counters: CounterDeltas,
}

/// The run the loops measured in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoopRun {
    /// Start of the run, CLOCK_MONOTONIC.
    pub start: Nanos,
    /// End of the run, CLOCK_MONOTONIC.
    pub end: Nanos,
    /// The frequency of the counter the loops read, Hz.
    pub counter_hz: f64,
}

/// Per-CPU accounting of a noise run: totals, top gaps, windows, histogram, the RT-throttling verdict (for
/// an RT spinner, `options.priority` > 0, under the sysctls in `env`) and the counter deltas. The
/// counterpart of [`crate::timer_summary::summarize_timer`].
pub fn summarize(cpus: &[CpuLoop<'_>], run: LoopRun, options: &NoiseOptions, env: &NoiseEnvironment) -> Vec<CpuNoise> {
    let settings = RtSettings { period_us: env.rt_period_us, runtime_us: env.rt_runtime_us };
    let rt_policy = options.priority > 0;
    // Windows cover the requested duration; the few microseconds the loops take to see the halt flag
    // would otherwise make a last, nearly empty window.
    let window_end = options.duration_ns.map_or(run.end, |d| run.end.min(run.start + Nanos(d)));
    let threshold = Nanos(options.threshold_ns);
    cpus.iter()
        .map(|c| {
            let a = account(c.runtime, c.noise, c.gap_count, c.max_gap.duration_ns);
            CpuNoise {
                cpu: c.cpu,
                loops: c.loops,
                loop_cycles: c.loop_cycles,
                loop_cycles_min: c.min_cycles,
                loop_ns: if run.counter_hz > 0.0 { c.loop_cycles * 1e9 / run.counter_hz } else { 0.0 },
                runtime_ns: c.runtime.0,
                noise_ns: a.noise_ns,
                noise_pct: a.noise_pct,
                max_gap_ns: a.max_gap_ns,
                max_gap_start_ns: c.max_gap.start_ns.0,
                gaps: GapStats {
                    count: c.gap_count,
                    per_second: a.gaps_per_second,
                    dropped: c.dropped,
                    top: top_gaps(c.gaps, TOP_GAPS),
                },
                summary: c.histogram.summary(Some(threshold)),
                histogram: c.histogram.buckets(),
                histogram_saturated: c.histogram.saturated(),
                counters: c.counters.clone(),
                rt_throttling: detect_rt_throttling(c.gaps, c.runtime, settings, rt_policy),
                windows: options.window_ns.map_or_else(Vec::new, |w| windows(c.gaps, run.start, window_end, Nanos(w))),
                stopped_on_threshold: c.stopped_on_threshold,
                periods: None,
                sources: Vec::new(),
            }
        })
        .collect()
}

fn median(v: &mut [u64]) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(start_ms: f64, dur_us: f64) -> Gap {
        Gap { start_ns: Nanos((start_ms * 1e6) as u64), duration_ns: Nanos((dur_us * 1e3) as u64) }
    }

    const THIS_VM: RtSettings = RtSettings { period_us: Some(1_000_000), runtime_us: Some(950_000) };

    /// The pattern a SCHED_FIFO spinner shows on this VM over 4 s (figures from a real run: 53, 46.6, 48.8,
    /// 48.8 ms about 1 s apart), mixed with ticks and a 1.9 ms hypervisor gap.
    fn throttled_run() -> Vec<Gap> {
        let mut g = vec![
            gap(133.7, 53_000.0),
            gap(500.0, 18.0),
            gap(1136.1, 46_600.0),
            gap(1500.0, 1_860.0),
            gap(2134.0, 48_800.0),
            gap(3134.0, 48_800.0),
        ];
        g.extend((0..40).map(|i| gap(10.0 + 100.0 * i as f64, 17.5)));
        g.sort_by_key(|g| g.start_ns);
        g
    }

    #[test]
    fn finds_throttling_on_a_fifo_spinner() {
        let v = detect_rt_throttling(&throttled_run(), Nanos::from_secs(4), THIS_VM, true);
        assert!(v.detected);
        assert_eq!(v.matched_gaps, 4);
        assert_eq!(v.expected_gap_ns, Some(50_000_000));
        assert_eq!(v.median_gap_ns, 48_800_000);
        assert!(v.median_interval_ns.abs_diff(1_000_000_000) < 5_000_000, "{}", v.median_interval_ns);
        assert_eq!(v.throttled_ns, 53_000_000 + 46_600_000 + 2 * 48_800_000);
        assert_eq!(v.sysctl, "kernel.sched_rt_runtime_us");
        assert_eq!(v.suggested_value, "-1");
    }

    #[test]
    fn a_missed_period_still_matches() {
        // The gap of the second period is missing (no non-RT work was waiting): 2 periods apart still match.
        let g = vec![gap(100.0, 50_000.0), gap(2100.0, 49_000.0), gap(3101.0, 50_500.0)];
        let v = detect_rt_throttling(&g, Nanos::from_secs(4), THIS_VM, true);
        assert!(v.detected);
        assert_eq!(v.matched_gaps, 3);
        assert!(v.median_interval_ns.abs_diff(1_000_000_000) < 2_000_000);
    }

    #[test]
    fn no_throttling_without_rt_policy_or_limit() {
        let g = throttled_run();
        assert!(!detect_rt_throttling(&g, Nanos::from_secs(4), THIS_VM, false).detected);
        let unlimited = RtSettings { period_us: Some(1_000_000), runtime_us: Some(-1) };
        let v = detect_rt_throttling(&g, Nanos::from_secs(4), unlimited, true);
        assert!(!v.detected);
        assert_eq!(v.expected_gap_ns, None);
        assert!(!detect_rt_throttling(&g, Nanos::from_secs(4), RtSettings::default(), true).detected);
    }

    #[test]
    fn irregular_long_gaps_are_not_throttling() {
        // 50 ms gaps at random spacing (e.g. a disk stall, a host preemption) are not RT throttling.
        let g = vec![gap(100.0, 50_000.0), gap(430.0, 50_000.0), gap(1911.0, 52_000.0), gap(2350.0, 49_000.0)];
        let v = detect_rt_throttling(&g, Nanos::from_secs(4), THIS_VM, true);
        assert!(!v.detected, "{v:?}");
        // Periodic but of the wrong length (1 ms every second) is not throttling either.
        let g: Vec<Gap> = (0..4).map(|i| gap(100.0 + 1000.0 * i as f64, 1_000.0)).collect();
        assert!(!detect_rt_throttling(&g, Nanos::from_secs(4), THIS_VM, true).detected);
    }

    /// A CI run of `fifo_spinner_finds_and_names_rt_throttling` (3 s): one throttle came right after 108 ms
    /// of other noise, so the run held one 50 ms gap and one 158.5 ms gap, and throttling was not seen.
    /// The longer gap ends on the period grid of the other: two throttles, one measured.
    #[test]
    fn a_throttle_at_the_end_of_a_longer_gap_counts_on_the_period_grid() {
        let g = vec![gap(700.0, 158_500.0), gap(1808.5, 50_000.0), gap(2400.0, 17.0)];
        let v = detect_rt_throttling(&g, Nanos::from_secs(3), THIS_VM, true);
        assert!(v.detected, "{v:?}");
        assert_eq!((v.matched_gaps, v.in_longer_gaps), (1, 1));
        assert_eq!(v.median_gap_ns, 50_000_000);
        assert_eq!(v.throttled_ns, 50_000_000, "the longer gap's length is not the throttle's");
        assert!(v.median_interval_ns.abs_diff(1_000_000_000) < 1_000_000, "{v:?}");
        // A longer gap off the grid (a stall 0.4 periods away) is not a throttle, and one gap is not two.
        let g = vec![gap(700.0, 158_500.0), gap(1408.5, 50_000.0)];
        let v = detect_rt_throttling(&g, Nanos::from_secs(3), THIS_VM, true);
        assert!(!v.detected, "{v:?}");
        assert_eq!(v.in_longer_gaps, 0);
    }

    #[test]
    fn single_gap_counts_only_in_a_short_run() {
        let g = vec![gap(700.0, 49_500.0)];
        assert!(detect_rt_throttling(&g, Nanos::from_ms(1500), THIS_VM, true).detected);
        assert!(!detect_rt_throttling(&g, Nanos::from_secs(10), THIS_VM, true).detected);
    }

    #[test]
    fn split_throttling_is_joined_into_episodes() {
        // Seen on this VM under load: the 50 ms arrive as 5 + 2.7 + 21 + 20 ms with the spinner running
        // briefly in between, every second.
        let mut g = Vec::new();
        for p in 0..3 {
            let t = 800.0 + 1000.0 * p as f64;
            g.extend([gap(t, 4_970.0), gap(t + 8.7, 2_680.0), gap(t + 14.6, 21_000.0), gap(t + 36.0, 20_080.0)]);
            g.push(gap(t + 300.0, 17.0));
        }
        let v = detect_rt_throttling(&g, Nanos::from_secs(3), THIS_VM, true);
        assert!(v.detected, "{v:?}");
        assert_eq!(v.matched_gaps, 3);
        assert_eq!(v.median_gap_ns, 48_730_000);
        let e = episodes(&g, Nanos::from_ms(50));
        assert_eq!(e.len(), 3, "ticks are not part of episodes: {e:?}");
    }

    #[test]
    fn accounting_totals_and_rates() {
        let a = account_gaps(&[gap(0.0, 10.0), gap(1.0, 30.0), gap(2.0, 60.0)], Nanos::from_ms(10));
        assert_eq!(a.noise_ns, 100_000);
        assert!((a.noise_pct - 1.0).abs() < 1e-9);
        assert_eq!(a.max_gap_ns, 60_000);
        assert!((a.gaps_per_second - 300.0).abs() < 1e-9);
        assert_eq!(account(Nanos::ZERO, Nanos(5), 1, Nanos(5)).noise_pct, 0.0);
    }

    #[test]
    fn windows_split_the_run() {
        let g = vec![gap(0.5, 10.0), gap(1.2, 20.0), gap(1.9, 5.0), gap(2.5, 100.0)];
        let w = windows(&g, Nanos::ZERO, Nanos::from_us(2_600), Nanos::from_ms(1));
        assert_eq!(w.len(), 3);
        assert_eq!((w[0].gaps, w[0].noise_ns, w[0].max_gap_ns), (1, 10_000, 10_000));
        assert_eq!((w[1].gaps, w[1].noise_ns, w[1].max_gap_ns), (2, 25_000, 20_000));
        assert_eq!((w[2].offset_ns, w[2].length_ns, w[2].gaps), (2_000_000, 600_000, 1));
        assert!((w[1].noise_pct - 2.5).abs() < 1e-9);
        assert!(windows(&g, Nanos::ZERO, Nanos::from_ms(3), Nanos::ZERO).is_empty());
    }

    #[test]
    fn summarize_accounts_each_cpu_of_a_throttled_run() {
        let gaps = throttled_run();
        let mut histogram = LatencyHistogram::new();
        histogram.record_n(Nanos(40), 1_000_000);
        for g in &gaps {
            histogram.record(g.duration_ns);
        }
        fn cpu_loop<'a>(cpu: u32, gaps: &'a [Gap], histogram: &'a LatencyHistogram) -> CpuLoop<'a> {
            CpuLoop {
                cpu: CpuId(cpu),
                loops: histogram.count(),
                loop_cycles: 100.0,
                min_cycles: 90,
                runtime: Nanos::from_secs(4),
                histogram,
                gaps,
                gap_count: gaps.len() as u64 + 7,
                dropped: 7,
                noise: Nanos(gaps.iter().map(|g| g.duration_ns.0).sum()),
                max_gap: gaps.iter().max_by_key(|g| g.duration_ns).copied().unwrap_or_default(),
                stopped_on_threshold: false,
                counters: CounterDeltas { steal_ns: Some(u64::from(cpu)), ..CounterDeltas::default() },
            }
        }
        let run = LoopRun { start: Nanos::ZERO, end: Nanos::from_ms(4_000_020), counter_hz: 2.5e9 };
        let options = NoiseOptions {
            priority: 95,
            duration_ns: Some(4_000_000_000),
            threshold_ns: 5_000,
            window_ns: Some(1_000_000_000),
            ..NoiseOptions::default()
        };
        let env = NoiseEnvironment {
            rt_period_us: THIS_VM.period_us,
            rt_runtime_us: THIS_VM.runtime_us,
            ..NoiseEnvironment::default()
        };
        let rows = summarize(&[cpu_loop(1, &gaps, &histogram), cpu_loop(3, &[], &histogram)], run, &options, &env);
        assert_eq!(rows.len(), 2);
        let r = &rows[0];
        assert_eq!((r.cpu, r.gaps.count, r.gaps.dropped), (CpuId(1), gaps.len() as u64 + 7, 7));
        assert!((r.loop_ns - 40.0).abs() < 1e-9, "100 ticks at 2.5 GHz: {}", r.loop_ns);
        assert_eq!(r.max_gap_ns, 53_000_000);
        assert_eq!(r.gaps.top.len(), TOP_GAPS);
        assert_eq!(r.gaps.top[0], gap(133.7, 53_000.0));
        assert!(r.rt_throttling.detected && r.rt_throttling.rt_policy, "{:?}", r.rt_throttling);
        // Four windows: the 20 µs the loops took to stop do not make a fifth.
        assert_eq!(r.windows.len(), 4);
        assert_eq!(r.windows.iter().map(|w| w.gaps).sum::<u64>(), gaps.len() as u64);
        assert_eq!(r.counters.steal_ns, Some(1));
        assert_eq!(r.summary.count, histogram.count());
        // Each CPU is judged on its own gaps; a SCHED_OTHER spinner is never throttled.
        assert!(!rows[1].rt_throttling.detected && rows[1].gaps.top.is_empty() && rows[1].max_gap_ns == 0);
        let other = NoiseOptions { priority: 0, ..options };
        assert!(!summarize(&[cpu_loop(1, &gaps, &histogram)], run, &other, &env)[0].rt_throttling.rt_policy);
    }

    #[test]
    fn top_gaps_longest_first() {
        let g = vec![gap(0.0, 10.0), gap(1.0, 30.0), gap(2.0, 30.0), gap(3.0, 5.0)];
        let t = top_gaps(&g, 2);
        assert_eq!(t, vec![gap(1.0, 30.0), gap(2.0, 30.0)]);
    }
}
