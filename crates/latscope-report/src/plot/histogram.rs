//! The latency histogram plot, OSADL style: one line per CPU (or per run), log-scaled count axis, the
//! maximum of each series marked.

use super::{color, err, fmt_us, nice_step, PlotError, SIZE};
use latscope_model::Bucket;
use plotters::coord::combinators::IntoLogRange;
use plotters::prelude::*;

/// One histogram to draw: a CPU of a run, or a whole run when comparing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistSeries {
    /// Legend label (`CPU 1`, `A: bare-metal.json`).
    pub label: String,
    /// Non-empty buckets, ns, ascending.
    pub buckets: Vec<Bucket>,
    /// The largest value, ns (marked on the plot).
    pub max_ns: u64,
}

impl HistSeries {
    /// Total count.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }

    /// The value (ns) at quantile `q`, from the buckets (upper bound of the bucket that reaches it).
    pub fn quantile_ns(&self, q: f64) -> u64 {
        let total = self.count();
        if total == 0 {
            return 0;
        }
        let target = (q * total as f64).ceil().max(1.0) as u64;
        let mut cum = 0;
        for b in &self.buckets {
            cum += b.count;
            if cum >= target {
                return b.high_ns;
            }
        }
        self.buckets.last().map_or(0, |b| b.high_ns)
    }
}

/// How the x axis of a latency histogram is scaled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum XScale {
    /// Linear us with bins of this width (us): the OSADL look, used when the tail is not too long.
    Linear { bin_us: f64, max_us: f64 },
    /// Log us with this many bins per decade (bins never narrower than `resolution_us`): used when the
    /// maximum is far beyond the median.
    Log { min_us: f64, max_us: f64, per_decade: f64, resolution_us: f64 },
}

/// Picks the x scale for the series: linear unless the largest maximum is over 50× the largest median.
pub fn choose_scale(series: &[HistSeries]) -> XScale {
    let max_us =
        series.iter().map(|s| s.max_ns.max(s.buckets.last().map_or(0, |b| b.high_ns))).max().unwrap_or(0) as f64 / 1e3;
    let median_us = series.iter().map(|s| s.quantile_ns(0.5)).max().unwrap_or(0) as f64 / 1e3;
    let min_us = series.iter().filter_map(|s| s.buckets.first().map(|b| b.low_ns)).min().unwrap_or(0) as f64 / 1e3;
    let max_us = max_us.max(0.001);
    let resolution = resolution_us(series).min(max_us / 10.0);
    if median_us > 0.0 && max_us / median_us > 50.0 {
        XScale::Log {
            min_us: (min_us / 1.3).max(0.001),
            max_us: max_us * 1.3,
            per_decade: 25.0,
            resolution_us: resolution,
        }
    } else {
        let bin_us = nice_step((max_us / 150.0).max(resolution));
        XScale::Linear { bin_us, max_us: (max_us / bin_us).ceil() * bin_us + bin_us }
    }
}

/// The data's own resolution, us: imported tools bin by 1 us, so bins finer than that would draw a comb
/// of empty bins. The largest over the series of the smallest step between their buckets (series with
/// at least 5 buckets; 0 when none).
pub fn resolution_us(series: &[HistSeries]) -> f64 {
    series
        .iter()
        .filter(|s| s.buckets.len() >= 5)
        .filter_map(|s| s.buckets.windows(2).map(|w| w[1].low_ns.saturating_sub(w[0].low_ns)).filter(|d| *d > 0).min())
        .max()
        .unwrap_or(0) as f64
        / 1e3
}

/// Re-bins `buckets` for the x scale: returns (bin start us, bin end us, count) for every bin in range,
/// empty bins included (so the line drops to the floor between populated bins).
pub fn rebin(buckets: &[Bucket], scale: XScale) -> Vec<(f64, f64, u64)> {
    let edges: Vec<f64> = match scale {
        XScale::Linear { bin_us, max_us } => {
            let n = (max_us / bin_us).ceil().max(1.0) as usize;
            (0..=n).map(|i| i as f64 * bin_us).collect()
        }
        XScale::Log { min_us, max_us, per_decade, resolution_us } => {
            let lo = min_us.log10();
            let n = ((max_us.log10() - lo) * per_decade).ceil().max(1.0) as usize;
            let mut edges: Vec<f64> = Vec::with_capacity(n + 1);
            for e in (0..=n).map(|i| 10f64.powf(lo + i as f64 / per_decade)) {
                match edges.last() {
                    Some(last) if e - last < resolution_us && e < max_us => {}
                    _ => edges.push(e),
                }
            }
            edges
        }
    };
    let mut bins: Vec<(f64, f64, u64)> = edges.windows(2).map(|w| (w[0], w[1], 0)).collect();
    if bins.is_empty() {
        return bins;
    }
    for b in buckets {
        let mid = (b.low_ns as f64 + b.high_ns as f64) / 2.0 / 1e3;
        let idx = edges.partition_point(|e| *e <= mid).saturating_sub(1).min(bins.len() - 1);
        bins[idx].2 += b.count;
    }
    bins
}

/// Draws the histogram plot. `title` goes on top; every series gets its colour, legend entry and a
/// vertical marker at its maximum.
pub fn histogram_svg(title: &str, series: &[HistSeries]) -> Result<String, PlotError> {
    let series: Vec<&HistSeries> = series.iter().filter(|s| s.count() > 0).collect();
    if series.is_empty() {
        return Ok(super::empty_svg(title, "no samples to plot"));
    }
    let owned: Vec<HistSeries> = series.iter().map(|s| (*s).clone()).collect();
    let scale = choose_scale(&owned);
    let binned: Vec<Vec<(f64, f64, u64)>> = owned.iter().map(|s| rebin(&s.buckets, scale)).collect();
    let max_count = binned.iter().flatten().map(|b| b.2).max().unwrap_or(1).max(1) as f64;
    let floor = 0.5;
    let y_range = (floor..max_count * 3.0).log_scale();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err("histogram"))?;
        let x_desc = match scale {
            XScale::Linear { bin_us, .. } => format!("latency, us (bins of {} us)", fmt_us(bin_us)),
            XScale::Log { .. } => "latency, us (log scale)".to_string(),
        };
        // A label near the right edge goes left of its line so it is not clipped.
        let label_x = |mx: f64| match scale {
            XScale::Linear { max_us, .. } if mx > 0.85 * max_us => mx - 0.1 * max_us,
            XScale::Log { max_us, .. } if mx > max_us / 1.8 => mx / 1.6,
            _ => mx,
        };
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_desc.as_str())
                    .y_desc("samples (log scale)")
                    .x_label_formatter(&|v| fmt_us(*v))
                    .y_label_formatter(&|v| format!("{v:.0}"))
                    .light_line_style(RGBColor(235, 235, 235))
                    .draw()
                    .map_err(err("histogram"))?;
                for (i, (s, bins)) in owned.iter().zip(&binned).enumerate() {
                    let c = color(i);
                    let mut pts = Vec::with_capacity(bins.len() * 2);
                    for (lo, hi, n) in bins {
                        let y = if *n == 0 { floor } else { *n as f64 };
                        pts.push((*lo, y));
                        pts.push((*hi, y));
                    }
                    chart
                        .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                        .map_err(err("histogram"))?
                        .label(format!("{} (max {} us)", s.label, fmt_us(s.max_ns as f64 / 1e3)))
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
                    let mx = s.max_ns as f64 / 1e3;
                    chart
                        .draw_series(DashedLineSeries::new(
                            vec![(mx, floor), (mx, max_count * 3.0)],
                            6,
                            4,
                            c.stroke_width(1),
                        ))
                        .map_err(err("histogram"))?;
                    chart
                        .draw_series(std::iter::once(Text::new(
                            format!("max {}", fmt_us(mx)),
                            (label_x(mx), floor * 1.25 * 2.2f64.powi(i as i32 % 6 + 1)),
                            ("sans-serif", 12).into_font().color(&c),
                        )))
                        .map_err(err("histogram"))?;
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(RGBColor(180, 180, 180))
                    .position(SeriesLabelPosition::UpperRight)
                    .draw()
                    .map_err(err("histogram"))?;
            }};
        }
        match scale {
            XScale::Linear { max_us, .. } => {
                let chart = ChartBuilder::on(&root)
                    .caption(title, ("sans-serif", 20))
                    .margin(12)
                    .x_label_area_size(42)
                    .y_label_area_size(64)
                    .build_cartesian_2d(0f64..max_us, y_range)
                    .map_err(err("histogram"))?;
                draw!(chart);
            }
            XScale::Log { min_us, max_us, .. } => {
                let chart = ChartBuilder::on(&root)
                    .caption(title, ("sans-serif", 20))
                    .margin(12)
                    .x_label_area_size(42)
                    .y_label_area_size(64)
                    .build_cartesian_2d((min_us..max_us).log_scale(), y_range)
                    .map_err(err("histogram"))?;
                draw!(chart);
            }
        }
        root.present().map_err(err("histogram"))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::xml_check;
    use latscope_model::{LatencyHistogram, Nanos};

    fn series(label: &str, values: &[(u64, u64)]) -> HistSeries {
        let mut h = LatencyHistogram::new();
        for (v, n) in values {
            h.record_n(Nanos(*v), *n);
        }
        HistSeries { label: label.into(), buckets: h.buckets(), max_ns: h.summary(None).max_ns }
    }

    #[test]
    fn rebin_keeps_every_count() {
        let s = series("CPU 0", &[(3_000, 100), (4_000, 50), (80_000, 1)]);
        let scale = choose_scale(std::slice::from_ref(&s));
        assert!(matches!(scale, XScale::Linear { .. }), "{scale:?}");
        let bins = rebin(&s.buckets, scale);
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 151);
        let hot = bins.iter().find(|b| b.2 == 100).expect("bin with the 3 us values");
        assert!(hot.0 <= 3.0 && hot.1 > 3.0, "{hot:?}");
    }

    #[test]
    fn long_tail_switches_to_log_scale() {
        let s = series("CPU 1", &[(2_000, 10_000), (50_000_000, 3)]);
        let scale = choose_scale(std::slice::from_ref(&s));
        assert!(matches!(scale, XScale::Log { .. }));
        let bins = rebin(&s.buckets, scale);
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 10_003);
    }

    #[test]
    fn tool_resolution_avoids_a_comb_of_empty_bins() {
        // 1 us buckets as cyclictest writes them, with a long tail (log scale).
        let values: Vec<(u64, u64)> = (5..40).map(|us| (us * 1000, 1000 - us)).chain([(5_000_000, 1)]).collect();
        let s = series("CPU 0", &values);
        assert!((resolution_us(std::slice::from_ref(&s)) - 1.0).abs() < 0.02);
        let scale = choose_scale(std::slice::from_ref(&s));
        assert!(matches!(scale, XScale::Log { .. }), "{scale:?}");
        let bins = rebin(&s.buckets, scale);
        let body: Vec<&(f64, f64, u64)> = bins.iter().filter(|b| b.0 >= 5.0 && b.1 <= 39.0).collect();
        assert!(body.iter().all(|b| b.2 > 0), "empty bins inside the 5–39 us body: {body:?}");
    }

    #[test]
    fn quantiles_from_buckets() {
        let s = series("x", &[(1_000, 90), (10_000, 9), (100_000, 1)]);
        assert_eq!(s.quantile_ns(0.5), 1_000);
        assert!((9_990..=10_010).contains(&s.quantile_ns(0.99)));
        assert!(s.quantile_ns(1.0) >= 99_900);
    }

    #[test]
    fn svg_is_valid_and_labels_cpus_and_max() {
        let a = series("CPU 0", &[(3_000, 1000), (4_000, 300), (25_000, 2)]);
        let b = series("CPU 1", &[(3_500, 800), (60_000, 1)]);
        let svg = histogram_svg("Timer latency", &[a, b]).expect("plot");
        assert!(xml_check::element_count(&svg) > 20);
        let texts = xml_check::texts(&svg);
        for want in ["Timer latency", "CPU 0 (max 25 us)", "CPU 1 (max 60 us)", "max 60", "samples (log scale)"] {
            assert!(texts.contains(want), "missing text {want:?} in {texts}");
        }
    }

    #[test]
    fn no_samples_gives_a_message_not_a_blank() {
        let svg = histogram_svg("Timer latency", &[HistSeries::default()]).expect("plot");
        assert!(xml_check::texts(&svg).contains("no samples"));
    }
}
