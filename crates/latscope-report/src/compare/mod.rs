//! `latscope compare` worded: the comparison computed by [`latscope_analyze::compare`] with a sentence
//! per verdict ("B's p99 is 3.1× A's … significant") and per warning, as the text table, the report page
//! and the JSON document (`comparison.json`) show it.

pub mod text;

use crate::human::human;
use crate::plot::histogram::HistSeries;
use latscope_analyze::compare::{CompareWarning, Difference, Direction, RunInput, ScopeRow, TestResult, Verdict};
pub use latscope_analyze::compare::{Measure, ScopeStats};
use latscope_model::Nanos;
use serde::{Deserialize, Serialize};

/// The comparison as it is rendered and written as JSON.
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

impl From<latscope_analyze::compare::Comparison> for Comparison {
    fn from(c: latscope_analyze::compare::Comparison) -> Comparison {
        // A run measured otherwise than the baseline carries that caveat in its verdict.
        let caveat = |b: &RunInput| {
            let setup: Vec<String> =
                c.warnings.iter().filter(|w| w.is_setup() && w.run() == b.letter).map(warning).collect();
            if setup.is_empty() {
                String::new()
            } else {
                format!(" — caveat: {}", setup.join("; "))
            }
        };
        let verdicts = match c.runs.first() {
            Some(a) => c.runs[1..].iter().zip(&c.verdicts).map(|(b, v)| verdict(a, b, v) + &caveat(b)).collect(),
            None => Vec::new(),
        };
        Comparison {
            schema: latscope_model::wire::SCHEMA.into(),
            kind: "compare".into(),
            verdicts,
            warnings: c.warnings.iter().map(warning).collect(),
            runs: c.runs,
            rows: c.rows,
        }
    }
}

/// A run's histogram over all its CPUs as a plot series (`A: file`).
pub trait RunSeries {
    /// The series.
    fn series(&self) -> HistSeries;
}

impl RunSeries for RunInput {
    fn series(&self) -> HistSeries {
        HistSeries {
            label: format!("{}: {}", self.letter, self.name),
            buckets: self.all.histogram.clone(),
            max_ns: self.all.max_ns,
        }
    }
}

fn fmt_ratio(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.1}×")
    }
}

/// The names of the rules that made a difference significant, comma separated (`body shift, tail`).
pub fn reasons(t: &TestResult) -> String {
    let name = |d: &Difference| match d {
        Difference::BodyShift => "body shift",
        Difference::Distribution => "distribution",
        Difference::Tail => "tail",
    };
    t.reasons.iter().map(name).collect::<Vec<_>>().join(", ")
}

/// The verdict sentence for run `b` against the baseline `a`.
pub fn verdict(a: &RunInput, b: &RunInput, v: &Verdict) -> String {
    let us = |ns: u64| crate::plot::fmt_us(ns as f64 / 1e3);
    let what = match a.measure {
        Measure::Timer => "p99",
        Measure::Noise => "p99 loop time",
    };
    let evidence = |t: &TestResult| {
        let windows = match (t.tail_windows_a, t.tail_windows_b, t.tail_windows_p) {
            (Some(wa), Some(wb), Some(p)) => format!(
                " in {wa} of {na} → {wb} of {nb} windows, Fisher p={}",
                fmt_p(p),
                na = a.all.window_max_ns.len(),
                nb = b.all.window_max_ns.len()
            ),
            (Some(wa), Some(wb), None) => format!(" in {wa} → {wb} windows"),
            _ => String::new(),
        };
        format!(
            "KS D={:.2}, Mann–Whitney p={}, share above 2× A's p99: {:.2} % → {:.2} %{windows}",
            t.ks_d,
            fmt_p(t.mw_p),
            t.tail_a_pct,
            t.tail_b_pct
        )
    };
    match v {
        Verdict::Significant { direction, test: t } => {
            let direction = match direction {
                Direction::Worse => "worse",
                Direction::Better => "better",
            };
            format!(
                "{b}'s {what} is {ratio} {a}'s ({pb} us vs {pa} us, max {mb} vs {ma} us): {b} is {direction}, \
                 significant ({reasons}; {evidence})",
                b = b.letter,
                a = a.letter,
                ratio = fmt_ratio(t.p99_ratio),
                pb = us(b.all.p99_ns),
                pa = us(a.all.p99_ns),
                mb = us(b.all.max_ns),
                ma = us(a.all.max_ns),
                reasons = reasons(t),
                evidence = evidence(t),
            )
        }
        Verdict::NotSignificant { test: t } => format!(
            "no significant difference between {a} and {b} ({what} {pa} us vs {pb} us, {b}/{a} = {ratio}; {evidence})",
            a = a.letter,
            b = b.letter,
            pa = us(a.all.p99_ns),
            pb = us(b.all.p99_ns),
            ratio = fmt_ratio(t.p99_ratio),
            evidence = evidence(t),
        ),
        Verdict::NoSamples => format!("{} or {} has no samples: nothing to compare", a.letter, b.letter),
    }
}

/// The sentence of a warning.
pub fn warning(w: &CompareWarning) -> String {
    match w {
        CompareWarning::IntervalDiffers { run, interval_ns, baseline, baseline_interval_ns } => format!(
            "{run} ran its timer every {} but {baseline} every {}: the latencies come from different loads",
            human(Nanos(*interval_ns)),
            human(Nanos(*baseline_interval_ns))
        ),
        CompareWarning::DurationDiffers { run, duration_ns, baseline, baseline_duration_ns } => format!(
            "{run} measured for {} but {baseline} for {}: the longer run had more chances to meet a rare delay",
            human(Nanos(*duration_ns)),
            human(Nanos(*baseline_duration_ns))
        ),
        CompareWarning::CpusDiffer { run, cpus, baseline, baseline_cpus } => format!(
            "{run} measured CPUs {} but {baseline} CPUs {}: the all-CPUs rows compare different CPUs",
            list(cpus),
            list(baseline_cpus)
        ),
        CompareWarning::CpuMissing { run, cpu } => format!("{run} did not measure CPU {cpu}"),
        CompareWarning::TailWithoutWindows { run } => format!(
            "{run}'s tail difference is counted sample by sample: without per-window rows (measure with --window \
             1s) one burst of late samples cannot be told from a lasting difference"
        ),
    }
}

fn list(cpus: &[u32]) -> String {
    cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The sentence of a refusal: runs of different kinds.
pub fn mismatch(m: &latscope_analyze::compare::KindMismatch) -> String {
    let kind = |x: Measure| match x {
        Measure::Timer => "a timer result (wakeup latency)",
        Measure::Noise => "a noise result (loop iteration times)",
    };
    format!(
        "{} ({}) is {} but {} ({}) is {}: they measure different quantities and cannot be compared; compare timer \
         results with timer results and noise results with noise results",
        m.run,
        m.name,
        kind(m.measure),
        m.baseline,
        m.baseline_name,
        kind(m.baseline_measure)
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_analyze::compare::compare;
    use latscope_model::TimerStats;
    use latscope_model::{CpuId, CpuTimer, LatencyHistogram, Nanos, RunMetadata, TimerOptions, TimerResult};

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

    fn worded(runs: Vec<RunInput>) -> Comparison {
        Comparison::from(compare(runs).expect("same kind"))
    }

    #[test]
    fn tail_injection_gets_a_significant_verdict() {
        let a = timer(&[(0, 5_000, 5_000), (0, 6_000, 4_000), (0, 9_000, 100), (1, 5_500, 9_000)]);
        let b = timer(&[(0, 5_000, 5_000), (0, 6_000, 4_000), (0, 700_000, 300), (1, 5_500, 9_000)]);
        let c = worded(vec![RunInput::timer("A", "a.json", &a), RunInput::timer("B", "b.json", &b)]);
        assert_eq!((c.schema.as_str(), c.kind.as_str()), ("latscope/1", "compare"));
        assert_eq!(c.verdicts.len(), 1);
        assert!(c.verdicts[0].starts_with("B's p99 is "), "{}", c.verdicts[0]);
        assert!(c.verdicts[0].contains("B is worse, significant (tail; KS D="), "{}", c.verdicts[0]);
    }

    #[test]
    fn identical_runs_say_no_significant_difference() {
        let a = timer(&[(0, 5_000, 5_000), (0, 6_000, 4_000), (0, 9_000, 100)]);
        let c = worded(vec![RunInput::timer("A", "a", &a), RunInput::timer("B", "b", &a)]);
        assert!(c.verdicts[0].starts_with("no significant difference between A and B"), "{}", c.verdicts[0]);
    }

    #[test]
    fn warnings_and_empty_runs_are_worded() {
        let a = timer(&[(0, 5_000, 100), (1, 5_000, 100)]);
        let empty = TimerResult::new(RunMetadata::default(), TimerOptions::default());
        let c = worded(vec![RunInput::timer("A", "a", &a), RunInput::timer("B", "b", &empty)]);
        assert_eq!(c.verdicts[0], "A or B has no samples: nothing to compare");
        assert_eq!(c.warnings[..1], ["B did not measure CPU 0".to_string()]);
    }

    #[test]
    fn another_kind_is_refused_and_another_setup_is_a_caveat_of_the_verdict() {
        let a = timer(&[(0, 5_000, 5_000), (0, 6_000, 4_000), (0, 9_000, 100)]);
        let mut noise = RunInput::timer("B", "b", &a);
        noise.measure = Measure::Noise;
        let refused = compare(vec![RunInput::timer("A", "a", &a), noise]).expect_err("another kind");
        assert_eq!(
            mismatch(&refused),
            "B (b) is a noise result (loop iteration times) but A (a) is a timer result (wakeup latency): they \
             measure different quantities and cannot be compared; compare timer results with timer results and \
             noise results with noise results"
        );
        let mut b = a.clone();
        b.options.interval_ns = 100_000;
        let mut base = a.clone();
        base.options.interval_ns = 1_000_000;
        let c = worded(vec![RunInput::timer("A", "a", &base), RunInput::timer("B", "b", &b)]);
        let caveat = "B ran its timer every 100 us but A every 1 ms: the latencies come from different loads";
        assert_eq!(c.warnings, [caveat]);
        assert!(c.verdicts[0].ends_with(&format!(" — caveat: {caveat}")), "{}", c.verdicts[0]);
    }

    #[test]
    fn p_values() {
        assert_eq!(fmt_p(0.5), "0.500");
        assert_eq!(fmt_p(2e-5), "2e-5");
        assert_eq!(fmt_p(1e-20), "<1e-15");
    }
}
