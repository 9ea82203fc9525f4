//! Two-sample tests on bucketed latency histograms: Kolmogorov–Smirnov, Mann–Whitney U (tie-corrected,
//! as every value in a bucket ties) and a tail test (share of samples above the baseline's p99, and of
//! windows holding such samples: Fisher's exact test), with the effect sizes that decide whether a
//! difference matters ([`Difference`]).

use latscope_model::Bucket;
use serde::{Deserialize, Serialize};

/// The outcome of comparing a run (B) with the baseline (A).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// Kolmogorov–Smirnov statistic: the largest gap between the two CDFs (0 … 1).
    pub ks_d: f64,
    /// Its asymptotic p-value.
    pub ks_p: f64,
    /// Mann–Whitney two-sided p-value (normal approximation with tie correction).
    pub mw_p: f64,
    /// Probability that a sample of B is larger than one of A (ties count half): 0.5 is no shift.
    pub prob_b_greater: f64,
    /// The tail test's level, ns: [`TAIL_LEVEL`] × A's p99.
    pub tail_threshold_ns: u64,
    /// Share of A's samples above the threshold, percent.
    pub tail_a_pct: f64,
    /// Share of B's samples above it, percent.
    pub tail_b_pct: f64,
    /// Two-proportion z-test p-value of those shares.
    pub tail_p: f64,
    /// Windows of A whose largest value is above the threshold, when both runs kept per-window rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_windows_a: Option<u64>,
    /// Windows of B above it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_windows_b: Option<u64>,
    /// Fisher's exact two-sided p-value of those window counts (out of each run's windows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_windows_p: Option<f64>,
    /// B's p99 / A's p99.
    pub p99_ratio: f64,
    /// B's median / A's median.
    #[serde(default)]
    pub p50_ratio: f64,
    /// Whether the difference is both statistically significant and large enough to matter.
    pub significant: bool,
    /// Which rules made it significant, empty when not.
    pub reasons: Vec<Difference>,
}

/// A rule by which two runs differ in a way that matters (in JSON: `body shift`, `distribution`, `tail`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Difference {
    /// The body moved: Mann–Whitney significant, P(B > A) far from ½ and the median moved by
    /// [`MIN_QUANTILE_RATIO`].
    #[serde(rename = "body shift")]
    BodyShift,
    /// The distributions differ: KS significant with D ≥ [`MIN_KS_D`] and the median or p99 moved.
    #[serde(rename = "distribution")]
    Distribution,
    /// The share of samples above [`TAIL_LEVEL`] × A's p99 changed by [`MIN_TAIL_RATIO`] (and
    /// [`MIN_TAIL_POINTS`]), significantly, and — when the runs kept per-window rows — the run with more
    /// of them has them in at least [`MIN_TAIL_WINDOWS`] windows, and in significantly more of its windows
    /// than the other run ([`WINDOW_ALPHA`]).
    #[serde(rename = "tail")]
    Tail,
}

/// p-value below which a test counts (latency samples are many and autocorrelated: be strict).
pub const ALPHA: f64 = 1e-3;
/// Smallest shift of the body that matters: |P(B > A) − 0.5|.
pub const MIN_SHIFT: f64 = 0.15;
/// Smallest KS distance that matters.
pub const MIN_KS_D: f64 = 0.15;
/// Smallest relative change of the median or p99 that matters for a body or distribution difference
/// (the median moves by a quarter between runs of one configuration on a busy VM).
pub const MIN_QUANTILE_RATIO: f64 = 1.5;
/// The tail test counts samples above this multiple of A's p99 ("clearly late").
pub const TAIL_LEVEL: f64 = 2.0;
/// Smallest change of the share above that level that matters (×), plus an absolute floor (percentage
/// points): latency tails come in bursts (a busy neighbour, a throttled period), so two runs of one
/// configuration can differ 2× in a share of a fraction of a percent.
pub const MIN_TAIL_RATIO: f64 = 3.0;
/// See [`MIN_TAIL_RATIO`].
pub const MIN_TAIL_POINTS: f64 = 0.5;
/// Late samples come in bursts (a vCPU stalled, a neighbour busy for a few ms): counted one by one, the
/// samples of one burst look like a significant tail. A tail counts as a difference only when it shows in
/// at least this many windows of the run that has it (one burst, even across a window boundary, does not).
pub const MIN_TAIL_WINDOWS: u64 = 3;
/// p-value below which the windows holding late samples differ between the runs (Fisher's exact test).
/// The samples of a window are not independent (a burst fills it), the windows are closer to it: a
/// machine that was worse for a second or two in one run (13 of 30 windows against 5 of 30, p = 0.047,
/// seen in two runs of one configuration here) is not a difference, a spinner that delays a wakeup in
/// every window (30 of 30 against 5 of 30, p = 5e-12) is.
pub const WINDOW_ALPHA: f64 = 0.01;

/// What the tests read of one run in one scope.
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    /// The histogram.
    pub histogram: &'a [Bucket],
    /// Each window's largest value; empty when the run kept no per-window rows.
    pub window_max_ns: &'a [u64],
}

/// Merged, sorted value grid of two bucket lists: (value ns, count in A, count in B).
fn grid(a: &[Bucket], b: &[Bucket]) -> Vec<(u64, u64, u64)> {
    let mut g: Vec<(u64, u64, u64)> = Vec::with_capacity(a.len() + b.len());
    g.extend(a.iter().map(|x| (x.high_ns, x.count, 0)));
    g.extend(b.iter().map(|x| (x.high_ns, 0, x.count)));
    g.sort_by_key(|x| x.0);
    let mut out: Vec<(u64, u64, u64)> = Vec::with_capacity(g.len());
    for (v, ca, cb) in g {
        match out.last_mut() {
            Some(last) if last.0 == v => {
                last.1 += ca;
                last.2 += cb;
            }
            _ => out.push((v, ca, cb)),
        }
    }
    out
}

/// Complementary error function (Numerical Recipes' erfc Chebyshev fit, relative error < 1.2e-7).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Two-sided p-value of a standard normal statistic.
pub fn normal_p(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
}

/// Kolmogorov's limiting distribution Q(λ) = 2 Σ (−1)^(j−1) e^(−2 j² λ²).
fn q_ks(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for j in 1..=100 {
        let j = j as f64;
        let term = 2.0 * (-1f64).powf(j - 1.0) * (-2.0 * j * j * lambda * lambda).exp();
        sum += term;
        if term.abs() < 1e-12 {
            break;
        }
    }
    sum.clamp(0.0, 1.0)
}

/// Kolmogorov–Smirnov: (D, p).
pub fn ks(a: &[Bucket], b: &[Bucket]) -> (f64, f64) {
    let g = grid(a, b);
    let (n, m) = (g.iter().map(|x| x.1).sum::<u64>() as f64, g.iter().map(|x| x.2).sum::<u64>() as f64);
    if n == 0.0 || m == 0.0 {
        return (0.0, 1.0);
    }
    let (mut fa, mut fb, mut d) = (0.0, 0.0, 0f64);
    for (_, ca, cb) in &g {
        fa += *ca as f64 / n;
        fb += *cb as f64 / m;
        d = d.max((fa - fb).abs());
    }
    let en = (n * m / (n + m)).sqrt();
    (d, q_ks((en + 0.12 + 0.11 / en) * d))
}

/// Mann–Whitney U with midranks for ties: (two-sided p, P(B > A) + ½ P(B = A)).
pub fn mann_whitney(a: &[Bucket], b: &[Bucket]) -> (f64, f64) {
    let g = grid(a, b);
    let (n, m) = (g.iter().map(|x| x.1).sum::<u64>() as f64, g.iter().map(|x| x.2).sum::<u64>() as f64);
    if n == 0.0 || m == 0.0 {
        return (1.0, 0.5);
    }
    let total = n + m;
    let (mut rank_sum_a, mut below, mut ties) = (0.0, 0.0, 0.0);
    for (_, ca, cb) in &g {
        let t = (*ca + *cb) as f64;
        let midrank = below + (t + 1.0) / 2.0;
        rank_sum_a += *ca as f64 * midrank;
        ties += t * t * t - t;
        below += t;
    }
    let u_a = rank_sum_a - n * (n + 1.0) / 2.0;
    let mean = n * m / 2.0;
    let var = n * m / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0)).max(1.0));
    let p = if var > 0.0 { normal_p((u_a - mean) / var.sqrt()) } else { 1.0 };
    // U_a counts the pairs where A is larger (ties half): P(B > A) is the rest.
    (p, 1.0 - u_a / (n * m))
}

/// ln(n!) by summation, exact enough for window counts (thousands at most).
fn ln_factorial(n: u64) -> f64 {
    (2..=n).map(|k| (k as f64).ln()).sum()
}

/// Fisher's exact test, two-sided: `ka` of `na` windows against `kb` of `nb`. The p-value sums the
/// probabilities of every table with the same margins that is no more likely than the one observed.
pub fn fisher_exact(ka: u64, na: u64, kb: u64, nb: u64) -> f64 {
    let (ka, kb) = (ka.min(na), kb.min(nb));
    let k = ka + kb;
    let n = na + nb;
    if n == 0 {
        return 1.0;
    }
    let ln_choose = |n: u64, k: u64| ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k);
    let denominator = ln_choose(n, k);
    let p_of = |x: u64| (ln_choose(na, x) + ln_choose(nb, k - x) - denominator).exp();
    let observed = p_of(ka);
    let (low, high) = (k.saturating_sub(nb), k.min(na));
    let p: f64 = (low..=high).map(p_of).filter(|p| *p <= observed * (1.0 + 1e-9)).sum();
    p.clamp(0.0, 1.0)
}

fn quantile(buckets: &[Bucket], q: f64) -> u64 {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    let target = (q * total as f64).ceil().max(1.0) as u64;
    let mut cum = 0;
    for b in buckets {
        cum += b.count;
        if cum >= target {
            return b.high_ns;
        }
    }
    buckets.last().map_or(0, |b| b.high_ns)
}

/// Tests B against the baseline A.
pub fn test(sa: Sample<'_>, sb: Sample<'_>) -> TestResult {
    let (a, b) = (sa.histogram, sb.histogram);
    let (ks_d, ks_p) = ks(a, b);
    let (mw_p, prob_b_greater) = mann_whitney(a, b);
    let p99_a = quantile(a, 0.99);
    let threshold = (p99_a as f64 * TAIL_LEVEL) as u64;
    let above = |x: &[Bucket]| -> (f64, f64) {
        let n: u64 = x.iter().map(|b| b.count).sum();
        let k: u64 = x.iter().filter(|b| b.high_ns > threshold).map(|b| b.count).sum();
        (k as f64, n as f64)
    };
    let ((ka, na), (kb, nb)) = (above(a), above(b));
    let (pa, pb) = (ka / na.max(1.0), kb / nb.max(1.0));
    let pooled = (ka + kb) / (na + nb).max(1.0);
    let se = (pooled * (1.0 - pooled) * (1.0 / na.max(1.0) + 1.0 / nb.max(1.0))).sqrt();
    let tail_p = if se > 0.0 { normal_p((pb - pa) / se) } else { 1.0 };
    let p99_ratio = quantile(b, 0.99) as f64 / p99_a.max(1) as f64;
    let p50_ratio = quantile(b, 0.5) as f64 / quantile(a, 0.5).max(1) as f64;
    let moved = |r: f64| r >= MIN_QUANTILE_RATIO || r <= 1.0 / MIN_QUANTILE_RATIO;
    let mut reasons = Vec::new();
    if mw_p < ALPHA && (prob_b_greater - 0.5).abs() >= MIN_SHIFT && moved(p50_ratio) {
        reasons.push(Difference::BodyShift);
    }
    if ks_p < ALPHA && ks_d >= MIN_KS_D && (moved(p50_ratio) || moved(p99_ratio)) {
        reasons.push(Difference::Distribution);
    }
    let floor = MIN_TAIL_POINTS / 100.0;
    let tail_moved = pb >= MIN_TAIL_RATIO * pa + floor || pa >= MIN_TAIL_RATIO * pb + floor;
    let windows_above = |s: Sample<'_>| s.window_max_ns.iter().filter(|m| **m > threshold).count() as u64;
    let windows =
        (!sa.window_max_ns.is_empty() && !sb.window_max_ns.is_empty()).then(|| (windows_above(sa), windows_above(sb)));
    let windows_p =
        windows.map(|(wa, wb)| fisher_exact(wa, sa.window_max_ns.len() as u64, wb, sb.window_max_ns.len() as u64));
    // The run with the larger tail must show it in several windows, and in significantly more of its
    // windows than the other, when the windows are known.
    let spread = match (windows, windows_p) {
        (Some((wa, wb)), Some(p)) => (if pb > pa { wb } else { wa }) >= MIN_TAIL_WINDOWS && p < WINDOW_ALPHA,
        _ => true,
    };
    if tail_p < ALPHA && tail_moved && spread {
        reasons.push(Difference::Tail);
    }
    TestResult {
        ks_d,
        ks_p,
        mw_p,
        prob_b_greater,
        tail_threshold_ns: threshold,
        tail_a_pct: 100.0 * pa,
        tail_b_pct: 100.0 * pb,
        tail_p,
        tail_windows_a: windows.map(|w| w.0),
        tail_windows_b: windows.map(|w| w.1),
        tail_windows_p: windows_p,
        p99_ratio,
        p50_ratio,
        significant: !reasons.is_empty(),
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{LatencyHistogram, Nanos};

    /// A sample without per-window rows.
    fn plain(h: &[Bucket]) -> Sample<'_> {
        Sample { histogram: h, window_max_ns: &[] }
    }

    fn test(a: &[Bucket], b: &[Bucket]) -> TestResult {
        super::test(plain(a), plain(b))
    }

    /// Each window's largest value when `values` are cut into windows of `n` samples.
    fn window_max(values: &[u64], n: usize) -> Vec<u64> {
        values.chunks(n).map(|w| w.iter().copied().max().unwrap_or(0)).collect()
    }

    fn hist(values: impl IntoIterator<Item = u64>) -> Vec<Bucket> {
        let mut h = LatencyHistogram::new();
        for v in values {
            h.record(Nanos(v));
        }
        h.buckets()
    }

    /// A deterministic pseudo-random sequence (xorshift), so tests need no RNG crate.
    fn noise(seed: u64, n: usize, base: u64, spread: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                base + x % spread
            })
            .collect()
    }

    #[test]
    fn erfc_matches_reference_values() {
        // erfc(0.5) = 0.4795001222, erfc(2) = 0.004677734981 (tables).
        assert!((erfc(0.5) - 0.479_500_122_2).abs() < 1e-6);
        assert!((erfc(2.0) - 0.004_677_734_981).abs() < 1e-7);
        assert!((normal_p(1.959_964) - 0.05).abs() < 1e-4);
    }

    /// scipy.stats.mannwhitneyu([1,2,3,4,5], [3,4,5,6,7], method="asymptotic", use_continuity=False):
    /// U1 = 4.5, p = 0.0918… ; ks_2samp D = 0.4.
    #[test]
    fn small_sample_matches_scipy() {
        let a = [1u64, 2, 3, 4, 5].map(|v| v * 1000);
        let b = [3u64, 4, 5, 6, 7].map(|v| v * 1000);
        let (p, pg) = mann_whitney(&hist(a), &hist(b));
        assert!((p - 0.0918).abs() < 2e-3, "p {p}");
        assert!((pg - (1.0 - 4.5 / 25.0)).abs() < 1e-9, "P(B>A) {pg}");
        let (d, _) = ks(&hist(a), &hist(b));
        assert!((d - 0.4).abs() < 1e-9);
    }

    #[test]
    fn same_distribution_is_not_significant() {
        let a = hist(noise(1, 20_000, 10_000, 5_000));
        let b = hist(noise(99, 20_000, 10_000, 5_000));
        let t = test(&a, &b);
        assert!(!t.significant, "{t:?}");
        assert!(t.ks_d < 0.05 && (t.p99_ratio - 1.0).abs() < 0.05, "{t:?}");
    }

    #[test]
    fn injected_tail_is_significant() {
        let a = hist(noise(1, 20_000, 10_000, 5_000));
        let mut bv = noise(7, 20_000, 10_000, 5_000);
        // Every 37th wakeup waits ~700 µs behind a spinner.
        for (i, v) in bv.iter_mut().enumerate() {
            if i % 37 == 0 {
                *v += 700_000;
            }
        }
        let t = test(&a, &hist(bv));
        assert!(t.significant && t.reasons.contains(&Difference::Tail), "{t:?}");
        assert!(t.p99_ratio > 10.0, "{t:?}");
        assert!(t.tail_b_pct > 3.0 * t.tail_a_pct);
    }

    /// Runs of one configuration on a busy VM differ by a few percent with p ≈ 0 at thousands of samples:
    /// that is not a difference that matters.
    #[test]
    fn small_real_shift_is_not_significant() {
        let a = hist(noise(5, 20_000, 18_000, 6_000));
        let b = hist(noise(6, 20_000, 19_500, 6_000));
        let t = test(&a, &b);
        assert!(t.mw_p < ALPHA, "the shift is statistically detectable: {t:?}");
        assert!(!t.significant, "{t:?}");
    }

    /// One burst of late samples (a stalled vCPU) in otherwise equal runs: counted sample by sample it is a
    /// significant tail; in the windows it sits in one, and the runs do not differ. A spinner that delays a
    /// wakeup in every window still does.
    #[test]
    fn one_burst_is_not_a_tail_difference_but_a_repeated_one_is() {
        let mut av = noise(11, 3_000, 30_000, 10_000);
        for v in &mut av[1_500..1_519] {
            *v += 300_000;
        }
        let bv = noise(12, 3_000, 30_000, 10_000);
        let (a, b) = (hist(av.clone()), hist(bv.clone()));
        let by_sample = test(&a, &b);
        assert!(by_sample.reasons.contains(&Difference::Tail), "the burst alone looks significant: {by_sample:?}");
        let (wa, wb) = (window_max(&av, 100), window_max(&bv, 100));
        let by_window =
            super::test(Sample { histogram: &a, window_max_ns: &wa }, Sample { histogram: &b, window_max_ns: &wb });
        assert!(!by_window.significant, "{by_window:?}");
        assert_eq!((by_window.tail_windows_a, by_window.tail_windows_b), (Some(1), Some(0)));
        let mut cv = noise(13, 3_000, 30_000, 10_000);
        for v in cv.iter_mut().step_by(10) {
            *v += 1_000_000;
        }
        let (c, wc) = (hist(cv.clone()), window_max(&cv, 100));
        let spinner =
            super::test(Sample { histogram: &a, window_max_ns: &wa }, Sample { histogram: &c, window_max_ns: &wc });
        assert!(spinner.significant && spinner.reasons.contains(&Difference::Tail), "{spinner:?}");
        assert_eq!(spinner.tail_windows_b, Some(30));
        assert!(spinner.tail_windows_p.is_some_and(|p| p < 1e-10), "{spinner:?}");
    }

    /// scipy.stats.fisher_exact([[5, 25], [13, 17]]) = 0.0470…, [[5, 25], [30, 0]] = 5.49e-12,
    /// [[0, 5], [5, 0]] = 2/252.
    #[test]
    fn fisher_exact_matches_reference_values() {
        assert!((fisher_exact(5, 30, 13, 30) - 0.047_022).abs() < 1e-5);
        assert!((fisher_exact(5, 30, 30, 30) / 5.489_9e-12 - 1.0).abs() < 1e-3);
        assert!((fisher_exact(0, 5, 5, 5) - 2.0 / 252.0).abs() < 1e-9);
        assert!((fisher_exact(3, 10, 3, 10) - 1.0).abs() < 1e-9);
        assert_eq!(fisher_exact(0, 0, 0, 0), 1.0);
    }

    /// Two runs of one configuration in a CI run (crates/latscope/tests/run_report_compare.rs): the
    /// machine was worse for a while during B, whose late samples (1.03 % against 0.17 %) lay in 13 of
    /// its 30 windows against 5 of 30. Counted by samples and with three windows enough, that was "B is
    /// worse, significant (tail)"; by windows it is not (Fisher p = 0.047).
    #[test]
    fn a_machine_worse_for_a_while_in_one_run_is_not_a_tail_difference() {
        let mut av = noise(21, 3_000, 20_000, 6_000);
        for w in 0..5 {
            av[w * 100 + 50] += 300_000;
        }
        let mut bv = noise(22, 3_000, 20_000, 6_000);
        let mut late = 0;
        for w in 0..13 {
            for k in 0..if w < 5 { 3 } else { 2 } {
                bv[w * 200 + 10 + k * 7] += 300_000;
                late += 1;
            }
        }
        assert_eq!(late, 31);
        let (a, b) = (hist(av.clone()), hist(bv.clone()));
        let (wa, wb) = (window_max(&av, 100), window_max(&bv, 100));
        let t = super::test(Sample { histogram: &a, window_max_ns: &wa }, Sample { histogram: &b, window_max_ns: &wb });
        assert!(t.tail_p < ALPHA && t.tail_b_pct >= MIN_TAIL_RATIO * t.tail_a_pct + MIN_TAIL_POINTS, "{t:?}");
        assert_eq!((t.tail_windows_a, t.tail_windows_b), (Some(5), Some(13)));
        assert!((t.tail_windows_p.unwrap_or(0.0) - 0.047).abs() < 1e-3, "{t:?}");
        assert!(!t.significant, "{t:?}");
    }

    #[test]
    fn differences_keep_their_json_names() {
        let all = [Difference::BodyShift, Difference::Distribution, Difference::Tail];
        let json = serde_json::to_string(&all).expect("serialises");
        assert_eq!(json, r#"["body shift","distribution","tail"]"#);
        assert_eq!(serde_json::from_str::<Vec<Difference>>(&json).expect("reads back"), all);
    }

    #[test]
    fn shifted_body_is_significant() {
        let a = hist(noise(3, 10_000, 10_000, 5_000));
        let b = hist(noise(4, 10_000, 20_000, 5_000));
        let t = test(&a, &b);
        assert!(t.significant && t.reasons.contains(&Difference::BodyShift), "{t:?}");
        assert!(t.prob_b_greater > 0.7);
    }
}
