//! `latscope compare`: timer or noise results side by side, per CPU and overall (count, min, p50, p99,
//! p99.9, max, noise share), each run tested against the first, and a verdict line per run.

pub mod stats;
pub mod text;

use crate::plot::histogram::HistSeries;
use latscope_model::noise_result::NoiseResult;
use latscope_model::{Bucket, LatencyHistogram, TimerResult, TimerStats};
use serde::{Deserialize, Serialize};
pub use stats::TestResult;

/// The statistics of one run in one scope (a CPU, or all CPUs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScopeStats {
    /// Samples.
    pub count: u64,
    /// Smallest value, ns.
    pub min_ns: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// Largest value, ns.
    pub max_ns: u64,
    /// Noise share, percent: for noise runs the CPU time lost to gaps, for timer runs the share of
    /// wakeups above the threshold (when the run had one).
    pub noise_pct: Option<f64>,
    /// The histogram the statistics and the tests come from.
    pub histogram: Vec<Bucket>,
}

/// What kind of runs are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Timer wakeup latency.
    Timer,
    /// Noise: the spinning loop's iteration times.
    Noise,
}

/// One input run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInput {
    /// Letter (`A`, `B`, …).
    pub letter: String,
    /// File name as given.
    pub name: String,
    /// What it measured.
    pub measure: Measure,
    /// Per-CPU statistics, by CPU number.
    pub cpus: Vec<(u32, ScopeStats)>,
    /// All CPUs together.
    pub all: ScopeStats,
}

/// One row of the comparison: one scope across the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScopeRow {
    /// `all` or `CPU n`.
    pub scope: String,
    /// Each run's statistics (`None` when the run did not measure that CPU).
    pub runs: Vec<Option<ScopeStats>>,
    /// For runs 2…: the test against run 1 (`None` when either is missing or empty).
    pub tests: Vec<Option<TestResult>>,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Always `latscope/1`.
    pub schema: String,
    /// Always `compare`.
    pub kind: String,
    /// The runs, first is the baseline.
    pub runs: Vec<RunInput>,
    /// `all` first, then per CPU.
    pub rows: Vec<ScopeRow>,
    /// One verdict sentence per run after the first, from the `all` row.
    pub verdicts: Vec<String>,
    /// Things to know (different measures, CPUs missing in a run).
    pub warnings: Vec<String>,
}

fn from_buckets(buckets: &[Bucket], noise_pct: Option<f64>, min: Option<u64>, max: Option<u64>) -> ScopeStats {
    let h = LatencyHistogram::from_buckets(buckets);
    let s = h.summary(None);
    let max_ns = max.unwrap_or(s.max_ns);
    // Percentiles are bucket tops; none may exceed the exact maximum the run reported.
    let q = |x: f64| h.quantile(x).0.min(max_ns);
    ScopeStats {
        count: s.count,
        min_ns: min.unwrap_or(s.min_ns),
        p50_ns: q(0.5),
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        max_ns,
        noise_pct,
        histogram: buckets.to_vec(),
    }
}

fn timer_scope(s: &TimerStats) -> ScopeStats {
    from_buckets(&s.histogram, s.above_threshold_pct, Some(s.min_ns), Some(s.max_ns))
}

impl RunInput {
    /// A timer run.
    pub fn timer(letter: &str, name: &str, r: &TimerResult) -> RunInput {
        RunInput {
            letter: letter.into(),
            name: name.into(),
            measure: Measure::Timer,
            cpus: r.cpus.iter().map(|c| (c.cpu.0, timer_scope(&c.stats))).collect(),
            all: timer_scope(&r.all),
        }
    }

    /// A noise run.
    pub fn noise(letter: &str, name: &str, r: &NoiseResult) -> RunInput {
        let cpus: Vec<(u32, ScopeStats)> = r
            .cpus
            .iter()
            .map(|c| (c.cpu.0, from_buckets(&c.histogram, Some(c.noise_pct), None, Some(c.max_gap_ns))))
            .collect();
        let mut all = LatencyHistogram::new();
        for c in &r.cpus {
            all.merge(&LatencyHistogram::from_buckets(&c.histogram));
        }
        let (noise, runtime) = r.cpus.iter().fold((0u64, 0u64), |acc, c| (acc.0 + c.noise_ns, acc.1 + c.runtime_ns));
        let pct = (runtime > 0).then(|| 100.0 * noise as f64 / runtime as f64);
        let max = r.cpus.iter().map(|c| c.max_gap_ns).max();
        RunInput {
            letter: letter.into(),
            name: name.into(),
            measure: Measure::Noise,
            cpus,
            all: from_buckets(&all.buckets(), pct, None, max),
        }
    }

    /// The per-CPU histograms as plot series (`A CPU 0` …).
    pub fn series(&self) -> HistSeries {
        HistSeries {
            label: format!("{}: {}", self.letter, self.name),
            buckets: self.all.histogram.clone(),
            max_ns: self.all.max_ns,
        }
    }
}

/// The letter of run number `i`: A, B, … Z, then R27, R28 ….
pub fn letter(i: usize) -> String {
    if i < 26 {
        ((b'A' + i as u8) as char).to_string()
    } else {
        format!("R{}", i + 1)
    }
}

fn fmt_ratio(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.1}×")
    }
}

/// The verdict sentence for run `b` against the baseline `a` from their test.
pub fn verdict(a: &RunInput, b: &RunInput, t: &TestResult) -> String {
    let us = |ns: u64| crate::plot::fmt_us(ns as f64 / 1e3);
    let what = match a.measure {
        Measure::Timer => "p99",
        Measure::Noise => "p99 loop time",
    };
    let evidence = format!(
        "KS D={:.2}, Mann–Whitney p={}, share above 2× A's p99: {:.2} % → {:.2} %",
        t.ks_d,
        fmt_p(t.mw_p),
        t.tail_a_pct,
        t.tail_b_pct
    );
    if t.significant {
        let direction = if t.p99_ratio >= 1.0 { "worse" } else { "better" };
        format!(
            "{b}'s {what} is {ratio} {a}'s ({pb} µs vs {pa} µs, max {mb} vs {ma} µs): {b} is {direction}, significant \
             ({reasons}; {evidence})",
            b = b.letter,
            a = a.letter,
            ratio = fmt_ratio(t.p99_ratio),
            pb = us(b.all.p99_ns),
            pa = us(a.all.p99_ns),
            mb = us(b.all.max_ns),
            ma = us(a.all.max_ns),
            reasons = t.reasons.join(", "),
        )
    } else {
        format!(
            "no significant difference between {a} and {b} ({what} {pa} µs vs {pb} µs, {b}/{a} = {ratio}; {evidence})",
            a = a.letter,
            b = b.letter,
            pa = us(a.all.p99_ns),
            pb = us(b.all.p99_ns),
            ratio = fmt_ratio(t.p99_ratio),
        )
    }
}

/// Formats a p-value: `0.03`, `2e-5`, `<1e-15`.
pub fn fmt_p(p: f64) -> String {
    if p < 1e-15 {
        "<1e-15".into()
    } else if p < 0.001 {
        format!("{p:.0e}")
    } else {
        format!("{p:.3}")
    }
}

/// Compares the runs; the first is the baseline.
pub fn compare(runs: Vec<RunInput>) -> Comparison {
    let mut warnings = Vec::new();
    if let Some(first) = runs.first() {
        for r in &runs[1..] {
            if r.measure != first.measure {
                warnings.push(format!(
                    "{} measures {:?} but {} measures {:?}: their histograms are not the same quantity",
                    r.letter, r.measure, first.letter, first.measure
                ));
            }
        }
    }
    let mut cpu_ids: Vec<u32> = runs.iter().flat_map(|r| r.cpus.iter().map(|c| c.0)).collect();
    cpu_ids.sort_unstable();
    cpu_ids.dedup();
    let mut rows = Vec::new();
    let row = |scope: String, stats: Vec<Option<ScopeStats>>| {
        let tests = stats
            .iter()
            .skip(1)
            .map(|s| match (&stats[0], s) {
                (Some(a), Some(b)) if a.count > 0 && b.count > 0 => Some(stats::compare(&a.histogram, &b.histogram)),
                _ => None,
            })
            .collect();
        ScopeRow { scope, runs: stats, tests }
    };
    rows.push(row("all".into(), runs.iter().map(|r| Some(r.all.clone())).collect()));
    for cpu in cpu_ids {
        let stats: Vec<Option<ScopeStats>> =
            runs.iter().map(|r| r.cpus.iter().find(|c| c.0 == cpu).map(|c| c.1.clone())).collect();
        for (r, s) in runs.iter().zip(&stats) {
            if s.is_none() {
                warnings.push(format!("{} did not measure CPU {cpu}", r.letter));
            }
        }
        rows.push(row(format!("CPU {cpu}"), stats));
    }
    let verdicts = match (runs.first(), rows.first()) {
        (Some(a), Some(all)) => runs[1..]
            .iter()
            .zip(&all.tests)
            .map(|(b, t)| match t {
                Some(t) => verdict(a, b, t),
                None => format!("{} or {} has no samples: nothing to compare", a.letter, b.letter),
            })
            .collect(),
        _ => Vec::new(),
    };
    Comparison { schema: latscope_model::wire::SCHEMA.into(), kind: "compare".into(), runs, rows, verdicts, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuId, CpuTimer, Nanos, RunMetadata, TimerOptions};

    fn timer(values: &[(u32, u64, u64)]) -> TimerResult {
        let mut r = TimerResult::new(RunMetadata::default(), TimerOptions::default());
        let mut all = LatencyHistogram::new();
        let mut cpus: Vec<u32> = values.iter().map(|v| v.0).collect();
        cpus.dedup();
        for cpu in cpus {
            let mut h = LatencyHistogram::new();
            for (c, v, n) in values {
                if *c == cpu {
                    h.record_n(Nanos(*v), *n);
                }
            }
            all.merge(&h);
            r.cpus.push(CpuTimer {
                cpu: CpuId(cpu),
                stats: TimerStats::from_histogram(&h, 0, None),
                ..CpuTimer::default()
            });
        }
        r.all = TimerStats::from_histogram(&all, 0, None);
        r
    }

    #[test]
    fn tail_injection_gets_a_significant_verdict() {
        let a = timer(&[(0, 5_000, 5_000), (0, 6_000, 4_000), (0, 9_000, 100), (1, 5_500, 9_000)]);
        let b = timer(&[(0, 5_000, 5_000), (0, 6_000, 4_000), (0, 700_000, 300), (1, 5_500, 9_000)]);
        let c = compare(vec![RunInput::timer("A", "a.json", &a), RunInput::timer("B", "b.json", &b)]);
        assert_eq!(c.rows.iter().map(|r| r.scope.as_str()).collect::<Vec<_>>(), ["all", "CPU 0", "CPU 1"]);
        assert_eq!(c.verdicts.len(), 1);
        assert!(c.verdicts[0].starts_with("B's p99 is "), "{}", c.verdicts[0]);
        assert!(c.verdicts[0].contains("significant"), "{}", c.verdicts[0]);
        // CPU 1 is identical in both.
        let cpu1 = c.rows[2].tests[0].as_ref().expect("test");
        assert!(!cpu1.significant);
    }

    #[test]
    fn identical_runs_say_no_significant_difference() {
        let a = timer(&[(0, 5_000, 5_000), (0, 6_000, 4_000), (0, 9_000, 100)]);
        let c = compare(vec![RunInput::timer("A", "a", &a), RunInput::timer("B", "b", &a)]);
        assert!(c.verdicts[0].starts_with("no significant difference between A and B"), "{}", c.verdicts[0]);
    }

    #[test]
    fn letters() {
        assert_eq!((letter(0), letter(2), letter(26)), ("A".to_string(), "C".to_string(), "R27".to_string()));
        assert_eq!(fmt_p(0.5), "0.500");
        assert_eq!(fmt_p(2e-5), "2e-5");
    }
}
