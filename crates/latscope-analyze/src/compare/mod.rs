//! Comparison of saved timer or noise runs: each run's statistics per CPU and over all CPUs (count, min,
//! p50, p99, p99.9, max, noise share), every run after the first tested against it, and a typed verdict
//! per run (significant — worse or better — or not, with the test's numbers). Data only: report words it.
//! Runs of different kinds (timer and noise) are refused; runs with another interval, duration or set of
//! CPUs than the baseline are compared with a warning that says so.

mod stats;

pub use stats::{
    Difference, Sample, TestResult, ALPHA, MIN_KS_D, MIN_QUANTILE_RATIO, MIN_SHIFT, MIN_TAIL_POINTS, MIN_TAIL_RATIO,
    MIN_TAIL_WINDOWS, TAIL_LEVEL, WINDOW_ALPHA,
};

use latscope_model::noise_result::NoiseResult;
use latscope_model::{Bucket, LatencyHistogram, TimerResult, TimerStats};
use serde::{Deserialize, Serialize};

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
    /// The largest value of each window of the run (`--window`), when it kept per-window rows: where in
    /// time the tail lies, so that one burst is not taken for a difference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub window_max_ns: Vec<u64>,
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
    /// Letter (`A`, `B`, …: see [`letter`]).
    pub letter: String,
    /// File name as given.
    pub name: String,
    /// What it measured.
    pub measure: Measure,
    /// Per-CPU statistics, by CPU number.
    pub cpus: Vec<(u32, ScopeStats)>,
    /// All CPUs together.
    pub all: ScopeStats,
    /// How it was measured, where the result says so.
    #[serde(default)]
    pub setup: Setup,
}

/// How a run was measured: what a comparison must know is the same before it reads a difference as one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setup {
    /// The timer's wakeup interval, ns (timer runs; `None` when the result does not say).
    pub interval_ns: Option<u64>,
    /// How long it measured, ns (`None` when the result does not say).
    pub duration_ns: Option<u64>,
}

/// Runs that cannot be compared at all: one measures another quantity than the baseline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindMismatch {
    /// The run's letter.
    pub run: String,
    /// The run's file name.
    pub name: String,
    /// What it measures.
    pub measure: Measure,
    /// The baseline's letter.
    pub baseline: String,
    /// The baseline's file name.
    pub baseline_name: String,
    /// What the baseline measures.
    pub baseline_measure: Measure,
}

/// Two durations within this ratio of each other count as the same (a `-D 10s` run measures a little more).
pub const SAME_DURATION_RATIO: f64 = 1.1;

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

/// Which way a run differs from the baseline: by its p99 over all CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Its p99 is at least the baseline's.
    Worse,
    /// Its p99 is below the baseline's.
    Better,
}

/// The conclusion for one run against the baseline, over all CPUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The run differs from the baseline in a way that matters.
    Significant {
        /// Worse or better.
        direction: Direction,
        /// The test: p99 ratio, KS D, Mann–Whitney p, tail shares, the rules that fired.
        test: TestResult,
    },
    /// No difference that matters.
    NotSignificant {
        /// The test.
        test: TestResult,
    },
    /// The run or the baseline has no samples: nothing to compare.
    NoSamples,
}

/// Something to know before reading the comparison.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareWarning {
    /// A run's timer woke at another interval than the baseline's: its latencies come from another load.
    IntervalDiffers {
        /// The run's letter.
        run: String,
        /// Its interval, ns.
        interval_ns: u64,
        /// The baseline's letter.
        baseline: String,
        /// The baseline's interval, ns.
        baseline_interval_ns: u64,
    },
    /// A run measured for another time than the baseline: its tail had more or fewer chances.
    DurationDiffers {
        /// The run's letter.
        run: String,
        /// Its duration, ns.
        duration_ns: u64,
        /// The baseline's letter.
        baseline: String,
        /// The baseline's duration, ns.
        baseline_duration_ns: u64,
    },
    /// A run measured other CPUs than the baseline: the all-CPUs rows compare different CPUs.
    CpusDiffer {
        /// The run's letter.
        run: String,
        /// Its CPUs.
        cpus: Vec<u32>,
        /// The baseline's letter.
        baseline: String,
        /// The baseline's CPUs.
        baseline_cpus: Vec<u32>,
    },
    /// A run has no data for a CPU another run measured.
    CpuMissing {
        /// The run's letter.
        run: String,
        /// The CPU.
        cpu: u32,
    },
    /// A run's tail difference rests on samples alone: without per-window rows, one burst of late samples
    /// cannot be told from a lasting difference.
    TailWithoutWindows {
        /// The run's letter.
        run: String,
    },
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The runs, first is the baseline.
    pub runs: Vec<RunInput>,
    /// `all` first, then per CPU.
    pub rows: Vec<ScopeRow>,
    /// One verdict per run after the first, in order, from the `all` row.
    pub verdicts: Vec<Verdict>,
    /// Things to know (different measures, CPUs missing in a run).
    pub warnings: Vec<CompareWarning>,
}

fn from_buckets(
    buckets: &[Bucket],
    noise_pct: Option<f64>,
    min: Option<u64>,
    max: Option<u64>,
    window_max_ns: Vec<u64>,
) -> ScopeStats {
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
        window_max_ns,
    }
}

fn timer_scope(s: &TimerStats, window_max_ns: Vec<u64>) -> ScopeStats {
    from_buckets(&s.histogram, s.above_threshold_pct, Some(s.min_ns), Some(s.max_ns), window_max_ns)
}

impl ScopeStats {
    /// What the tests read: the histogram and the windows' maxima.
    pub fn sample(&self) -> stats::Sample<'_> {
        stats::Sample { histogram: &self.histogram, window_max_ns: &self.window_max_ns }
    }
}

impl RunInput {
    /// A timer run.
    pub fn timer(letter: &str, name: &str, r: &TimerResult) -> RunInput {
        RunInput {
            letter: letter.into(),
            name: name.into(),
            measure: Measure::Timer,
            cpus: r
                .cpus
                .iter()
                .map(|c| (c.cpu.0, timer_scope(&c.stats, c.windows.iter().map(|w| w.max_ns).collect())))
                .collect(),
            all: timer_scope(&r.all, r.cpus.iter().flat_map(|c| &c.windows).map(|w| w.max_ns).collect()),
            setup: Setup {
                interval_ns: Some(r.options.interval_ns).filter(|i| *i > 0),
                duration_ns: measured(r.metadata.duration_ns, r.options.duration_ns),
            },
        }
    }

    /// A noise run.
    pub fn noise(letter: &str, name: &str, r: &NoiseResult) -> RunInput {
        let cpus: Vec<(u32, ScopeStats)> = r
            .cpus
            .iter()
            .map(|c| {
                let windows = c.windows.iter().map(|w| w.max_gap_ns).collect();
                (c.cpu.0, from_buckets(&c.histogram, Some(c.noise_pct), None, Some(c.max_gap_ns), windows))
            })
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
            all: from_buckets(
                &all.buckets(),
                pct,
                None,
                max,
                r.cpus.iter().flat_map(|c| &c.windows).map(|w| w.max_gap_ns).collect(),
            ),
            setup: Setup { interval_ns: None, duration_ns: measured(r.metadata.duration_ns, r.options.duration_ns) },
        }
    }
}

/// The duration a run measured for, else the one it asked for.
fn measured(measured_ns: u64, requested_ns: Option<u64>) -> Option<u64> {
    Some(measured_ns).filter(|d| *d > 0).or(requested_ns.filter(|d| *d > 0))
}

/// What differs in run `r`'s setup from the baseline's, as warnings.
fn setup_warnings(base: &RunInput, r: &RunInput) -> Vec<CompareWarning> {
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (base.setup.interval_ns, r.setup.interval_ns) {
        if a != b {
            out.push(CompareWarning::IntervalDiffers {
                run: r.letter.clone(),
                interval_ns: b,
                baseline: base.letter.clone(),
                baseline_interval_ns: a,
            });
        }
    }
    if let (Some(a), Some(b)) = (base.setup.duration_ns, r.setup.duration_ns) {
        if a.max(b) as f64 > a.min(b) as f64 * SAME_DURATION_RATIO {
            out.push(CompareWarning::DurationDiffers {
                run: r.letter.clone(),
                duration_ns: b,
                baseline: base.letter.clone(),
                baseline_duration_ns: a,
            });
        }
    }
    let cpus = |x: &RunInput| x.cpus.iter().map(|c| c.0).collect::<Vec<u32>>();
    if !base.cpus.is_empty() && !r.cpus.is_empty() && cpus(base) != cpus(r) {
        out.push(CompareWarning::CpusDiffer {
            run: r.letter.clone(),
            cpus: cpus(r),
            baseline: base.letter.clone(),
            baseline_cpus: cpus(base),
        });
    }
    out
}

impl CompareWarning {
    /// The run the warning is about.
    pub fn run(&self) -> &str {
        match self {
            CompareWarning::IntervalDiffers { run, .. }
            | CompareWarning::DurationDiffers { run, .. }
            | CompareWarning::CpusDiffer { run, .. }
            | CompareWarning::CpuMissing { run, .. }
            | CompareWarning::TailWithoutWindows { run } => run,
        }
    }

    /// Whether the run was measured otherwise than the baseline (its verdict carries a caveat).
    pub fn is_setup(&self) -> bool {
        matches!(
            self,
            CompareWarning::IntervalDiffers { .. }
                | CompareWarning::DurationDiffers { .. }
                | CompareWarning::CpusDiffer { .. }
        )
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

/// The verdict for a run from its test against the baseline over all CPUs (`None`: nothing to test).
fn verdict(test: Option<&TestResult>) -> Verdict {
    match test {
        Some(t) if t.significant => Verdict::Significant {
            direction: if t.p99_ratio >= 1.0 { Direction::Worse } else { Direction::Better },
            test: t.clone(),
        },
        Some(t) => Verdict::NotSignificant { test: t.clone() },
        None => Verdict::NoSamples,
    }
}

/// Compares the runs; the first is the baseline. Runs that measure another quantity than the baseline are
/// refused: no verdict compares a timer's wakeup latency with a noise loop's iteration times.
pub fn compare(runs: Vec<RunInput>) -> Result<Comparison, KindMismatch> {
    let mut warnings = Vec::new();
    if let Some(first) = runs.first() {
        for r in &runs[1..] {
            if r.measure != first.measure {
                return Err(KindMismatch {
                    run: r.letter.clone(),
                    name: r.name.clone(),
                    measure: r.measure,
                    baseline: first.letter.clone(),
                    baseline_name: first.name.clone(),
                    baseline_measure: first.measure,
                });
            }
            warnings.extend(setup_warnings(first, r));
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
                (Some(a), Some(b)) if a.count > 0 && b.count > 0 => Some(stats::test(a.sample(), b.sample())),
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
                warnings.push(CompareWarning::CpuMissing { run: r.letter.clone(), cpu });
            }
        }
        rows.push(row(format!("CPU {cpu}"), stats));
    }
    let verdicts = match rows.first() {
        Some(all) if !runs.is_empty() => all.tests.iter().map(|t| verdict(t.as_ref())).collect(),
        _ => Vec::new(),
    };
    if let Some(all) = rows.first() {
        for (r, t) in runs.iter().skip(1).zip(&all.tests) {
            if t.as_ref().is_some_and(|t| t.reasons.contains(&Difference::Tail) && t.tail_windows_a.is_none()) {
                warnings.push(CompareWarning::TailWithoutWindows { run: r.letter.clone() });
            }
        }
    }
    Ok(Comparison { runs, rows, verdicts, warnings })
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
        let c =
            compare(vec![RunInput::timer("A", "a.json", &a), RunInput::timer("B", "b.json", &b)]).expect("same kind");
        assert_eq!(c.rows.iter().map(|r| r.scope.as_str()).collect::<Vec<_>>(), ["all", "CPU 0", "CPU 1"]);
        assert_eq!(c.verdicts.len(), 1);
        let Verdict::Significant { direction, test } = &c.verdicts[0] else { panic!("{:?}", c.verdicts[0]) };
        assert_eq!(*direction, Direction::Worse);
        assert!(test.p99_ratio > 10.0 && test.reasons.contains(&Difference::Tail), "{test:?}");
        assert_eq!(Some(test), c.rows[0].tests[0].as_ref(), "the verdict carries the all-CPUs test");
        // CPU 1 is identical in both.
        let cpu1 = c.rows[2].tests[0].as_ref().expect("test");
        assert!(!cpu1.significant);
        // Without per-window rows the tail is counted sample by sample, and the comparison says so.
        assert_eq!(c.warnings, [CompareWarning::TailWithoutWindows { run: "B".into() }]);
    }

    #[test]
    fn a_better_run_is_significant_and_better() {
        let a = timer(&[(0, 20_000, 5_000), (0, 22_000, 4_000), (0, 30_000, 100)]);
        let b = timer(&[(0, 10_000, 5_000), (0, 11_000, 4_000), (0, 15_000, 100)]);
        let c = compare(vec![RunInput::timer("A", "a", &a), RunInput::timer("B", "b", &b)]).expect("same kind");
        let Verdict::Significant { direction: Direction::Better, test } = &c.verdicts[0] else {
            panic!("{:?}", c.verdicts)
        };
        assert!(test.p99_ratio < 0.6 && test.reasons.contains(&Difference::BodyShift), "{test:?}");
    }

    #[test]
    fn identical_runs_say_no_significant_difference() {
        let a = timer(&[(0, 5_000, 5_000), (0, 6_000, 4_000), (0, 9_000, 100)]);
        let c = compare(vec![RunInput::timer("A", "a", &a), RunInput::timer("B", "b", &a)]).expect("same kind");
        let Verdict::NotSignificant { test } = &c.verdicts[0] else { panic!("{:?}", c.verdicts[0]) };
        assert_eq!((test.ks_d, test.p99_ratio), (0.0, 1.0));
    }

    #[test]
    fn empty_runs_and_missing_cpus_are_data_and_another_kind_is_refused() {
        let a = timer(&[(0, 5_000, 100), (1, 5_000, 100)]);
        let empty = TimerResult::new(RunMetadata::default(), TimerOptions::default());
        let c = compare(vec![RunInput::timer("A", "a", &a), RunInput::timer("B", "b", &empty)]).expect("same kind");
        assert_eq!(c.verdicts, [Verdict::NoSamples]);
        assert_eq!(
            c.warnings,
            [
                CompareWarning::CpuMissing { run: "B".into(), cpu: 0 },
                CompareWarning::CpuMissing { run: "B".into(), cpu: 1 }
            ]
        );
        let mut noise = RunInput::timer("C", "c", &timer(&[(0, 5_000, 100)]));
        noise.measure = Measure::Noise;
        let refused = compare(vec![RunInput::timer("A", "a", &a), RunInput::timer("B", "b", &a), noise]);
        assert_eq!(
            refused,
            Err(KindMismatch {
                run: "C".into(),
                name: "c".into(),
                measure: Measure::Noise,
                baseline: "A".into(),
                baseline_name: "a".into(),
                baseline_measure: Measure::Timer
            })
        );
    }

    #[test]
    fn another_interval_duration_or_cpu_set_is_compared_with_a_warning() {
        let mut a = timer(&[(1, 5_000, 5_000), (1, 9_000, 100)]);
        a.options.interval_ns = 1_000_000;
        a.metadata.duration_ns = 10_000_000_000;
        let mut b = timer(&[(0, 5_000, 5_000), (0, 9_000, 100)]);
        b.options.interval_ns = 100_000;
        b.metadata.duration_ns = 60_000_000_000;
        let c = compare(vec![RunInput::timer("A", "a", &a), RunInput::timer("B", "b", &b)]).expect("same kind");
        assert_eq!(c.verdicts.len(), 1, "still compared");
        let setup: Vec<&CompareWarning> = c.warnings.iter().filter(|w| w.is_setup()).collect();
        assert_eq!(
            setup,
            [
                &CompareWarning::IntervalDiffers {
                    run: "B".into(),
                    interval_ns: 100_000,
                    baseline: "A".into(),
                    baseline_interval_ns: 1_000_000
                },
                &CompareWarning::DurationDiffers {
                    run: "B".into(),
                    duration_ns: 60_000_000_000,
                    baseline: "A".into(),
                    baseline_duration_ns: 10_000_000_000
                },
                &CompareWarning::CpusDiffer {
                    run: "B".into(),
                    cpus: vec![0],
                    baseline: "A".into(),
                    baseline_cpus: vec![1]
                },
            ]
        );
        // 10.0 s against 10.3 s is the same duration; the same interval and CPUs say nothing.
        b = a.clone();
        b.metadata.duration_ns = 10_300_000_000;
        let c = compare(vec![RunInput::timer("A", "a", &a), RunInput::timer("B", "b", &b)]).expect("same kind");
        assert!(c.warnings.iter().all(|w| !w.is_setup()), "{:?}", c.warnings);
    }

    #[test]
    fn letters() {
        assert_eq!((letter(0), letter(2), letter(26)), ("A".to_string(), "C".to_string(), "R27".to_string()));
    }
}
