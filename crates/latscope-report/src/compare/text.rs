//! The text rendering of a [`Comparison`]: runs legend, one block per scope with a line per run, the
//! difference against the baseline and the test outcome, then the verdicts.

use super::{fmt_p, reasons, Comparison, ScopeStats};
use std::fmt::Write;

fn us(ns: u64) -> String {
    let v = ns as f64 / 1e3;
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn diff(a: &ScopeStats, b: &ScopeStats) -> String {
    if a.p99_ns == 0 {
        return "-".into();
    }
    let r = b.p99_ns as f64 / a.p99_ns as f64;
    let d = b.p99_ns as i64 - a.p99_ns as i64;
    format!("{:+.1} us ({r:.2}×)", d as f64 / 1e3)
}

/// Renders the comparison as text.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Runs (times in us; first run is the baseline):");
    for r in &c.runs {
        let _ = writeln!(out, "  {}  {} ({:?})", r.letter, r.name, r.measure);
    }
    let head = ["run", "count", "min", "p50", "p99", "p99.9", "max", "noise%", "p99 vs A", "test vs A"];
    let widths = [4, 11, 8, 8, 8, 8, 9, 7, 20, 0];
    for row in &c.rows {
        let _ = writeln!(out, "\n{}", if row.scope == "all" { "All CPUs" } else { &row.scope });
        let mut line = String::from("  ");
        for (h, w) in head.iter().zip(widths) {
            let _ = write!(line, "{h:>w$} ");
        }
        let _ = writeln!(out, "{}", line.trim_end());
        let base = row.runs.first().and_then(|s| s.as_ref());
        for (i, (run, stats)) in c.runs.iter().zip(&row.runs).enumerate() {
            let Some(s) = stats else {
                let _ = writeln!(out, "  {:>4} (not measured)", run.letter);
                continue;
            };
            let test = if i == 0 {
                "baseline".to_string()
            } else {
                match row.tests.get(i - 1).and_then(|t| t.as_ref()) {
                    Some(t) if t.significant => format!("significant ({})", reasons(t)),
                    Some(t) => format!("not significant (KS D={:.2}, MW p={})", t.ks_d, fmt_p(t.mw_p)),
                    None => "-".into(),
                }
            };
            let d = match (i, base) {
                (0, _) | (_, None) => String::new(),
                (_, Some(a)) => diff(a, s),
            };
            let noise = s.noise_pct.map_or("-".to_string(), |p| format!("{p:.3}"));
            let cells = [
                run.letter.clone(),
                s.count.to_string(),
                us(s.min_ns),
                us(s.p50_ns),
                us(s.p99_ns),
                us(s.p999_ns),
                us(s.max_ns),
                noise,
                d,
                test,
            ];
            let mut line = String::from("  ");
            for (cell, w) in cells.iter().zip(widths) {
                let _ = write!(line, "{cell:>w$} ");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    if !c.warnings.is_empty() {
        let _ = writeln!(out);
        for w in &c.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
    }
    let _ = writeln!(out);
    for v in &c.verdicts {
        let _ = writeln!(out, "Verdict: {v}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_analyze::compare::{compare, Measure, RunInput};
    use latscope_model::{LatencyHistogram, Nanos};

    fn run(letter: &str, values: &[(u64, u64)]) -> RunInput {
        let mut h = LatencyHistogram::new();
        for (v, n) in values {
            h.record_n(Nanos(*v), *n);
        }
        let s = ScopeStats {
            count: h.count(),
            min_ns: h.summary(None).min_ns,
            p50_ns: h.quantile(0.5).0,
            p99_ns: h.quantile(0.99).0,
            p999_ns: h.quantile(0.999).0,
            max_ns: h.summary(None).max_ns,
            noise_pct: None,
            histogram: h.buckets(),
            window_max_ns: Vec::new(),
        };
        RunInput {
            letter: letter.into(),
            name: format!("{letter}.json"),
            measure: Measure::Timer,
            cpus: vec![(1, s.clone())],
            all: s,
            setup: Default::default(),
        }
    }

    /// Snapshot of the text table on fixed input.
    #[test]
    fn snapshot() {
        let a = run("A", &[(4_000, 900), (5_000, 95), (9_000, 5)]);
        let b = run("B", &[(4_000, 900), (5_000, 50), (800_000, 50)]);
        let text = render(&Comparison::from(compare(vec![a, b]).expect("same kind")));
        let expected = "Runs (times in us; first run is the baseline):
  A  A.json (Timer)
  B  B.json (Timer)

All CPUs
   run       count      min      p50      p99    p99.9       max  noise%             p99 vs A test vs A
     A        1000      4.0      4.0      5.0      9.0       9.0       -                      baseline
     B        1000      4.0      4.0      800      800       800       -  +795.3 us (159.96×) significant (tail)

CPU 1
   run       count      min      p50      p99    p99.9       max  noise%             p99 vs A test vs A
     A        1000      4.0      4.0      5.0      9.0       9.0       -                      baseline
     B        1000      4.0      4.0      800      800       800       -  +795.3 us (159.96×) significant (tail)

warning: B's tail difference is counted sample by sample: without per-window rows (measure with --window 1s) one burst of late samples cannot be told from a lasting difference

Verdict: B's p99 is 160× A's (800 us vs 5 us, max 800 vs 9 us): B is worse, significant (tail; KS D=0.05, Mann–Whitney p=0.724, share above 2× A's p99: 0.00 % → 5.00 %)
";
        assert_eq!(text, expected, "\n{text}");
    }
}
