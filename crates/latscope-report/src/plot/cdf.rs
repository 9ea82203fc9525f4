//! The percentile plot: latency against percentile with a log-scaled tail axis (p50 … p99.999), one line
//! per CPU or per run, so the tails of different runs can be read side by side.

use super::histogram::HistSeries;
use super::{color, err, fmt_us, PlotError, SIZE};
use plotters::coord::combinators::IntoLogRange;
use plotters::prelude::*;

/// The "nines" of quantile `q`: −log10(1 − q); 90 % is 1, 99 % is 2, 99.9 % is 3.
pub fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-12).log10()
}

/// The percentile label of a nines value: 1 → `90`, 2.0 → `99`, 0 → `0`.
pub fn percentile_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let digits = (x.round() as i32 - 2).clamp(0, 6) as usize;
    let s = format!("{p:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The step points (nines, latency us) of one series: each bucket spans the quantiles it covers.
/// Quantiles beyond what the sample count resolves (q = 1) are drawn at `x_max`.
pub fn percentile_points(s: &HistSeries, x_max: f64) -> Vec<(f64, f64)> {
    let total = s.count();
    let mut pts = Vec::with_capacity(s.buckets.len() * 2);
    if total == 0 {
        return pts;
    }
    let mut cum = 0u64;
    for b in &s.buckets {
        let x0 = nines(cum as f64 / total as f64).min(x_max);
        cum += b.count;
        let x1 = if cum >= total { x_max } else { nines(cum as f64 / total as f64).min(x_max) };
        let y = (b.high_ns as f64 / 1e3).max(0.001);
        pts.push((x0, y));
        pts.push((x1, y));
    }
    pts
}

/// Draws the percentile plot of `series`.
pub fn cdf_svg(title: &str, series: &[HistSeries]) -> Result<String, PlotError> {
    let series: Vec<&HistSeries> = series.iter().filter(|s| s.count() > 0).collect();
    if series.is_empty() {
        return Ok(super::empty_svg(title, "no samples to plot"));
    }
    let max_count = series.iter().map(|s| s.count()).max().unwrap_or(1) as f64;
    // Resolve as many nines as the largest run supports, at least p99.9 and at most p99.999 + max.
    let x_max = (max_count.log10().ceil()).clamp(3.0, 5.0) + 1.0;
    let lines: Vec<Vec<(f64, f64)>> = series.iter().map(|s| percentile_points(s, x_max)).collect();
    let y_min = lines.iter().flatten().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let y_max = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err("percentile"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..x_max, ((y_min / 1.5).max(0.001)..y_max * 1.5).log_scale())
            .map_err(err("percentile"))?;
        let x_fmt = |x: &f64| if (*x - x_max).abs() < 1e-9 { "max".to_string() } else { percentile_label(*x) };
        chart
            .configure_mesh()
            .x_labels(x_max as usize + 1)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&|v| fmt_us(*v))
            .x_desc("percentile (log-scaled tail: each step is one more nine)")
            .y_desc("latency, us (log scale)")
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err("percentile"))?;
        for (i, (s, pts)) in series.iter().zip(lines).enumerate() {
            let c = color(i);
            let p99 = s.quantile_ns(0.99) as f64 / 1e3;
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(err("percentile"))?
                .label(format!("{} (p99 {} us, max {} us)", s.label, fmt_us(p99), fmt_us(s.max_ns as f64 / 1e3)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err("percentile"))?;
        root.present().map_err(err("percentile"))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::xml_check;
    use latscope_model::{LatencyHistogram, Nanos};

    #[test]
    fn nines_and_labels() {
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
        assert_eq!(percentile_label(1.0), "90");
        assert_eq!(percentile_label(2.0), "99");
        assert_eq!(percentile_label(3.0), "99.9");
        assert_eq!(percentile_label(5.0), "99.999");
        assert_eq!(percentile_label(0.0), "0");
    }

    #[test]
    fn points_reach_the_max_at_the_right_edge() {
        let mut h = LatencyHistogram::new();
        h.record_n(Nanos(2_000), 999);
        h.record(Nanos(90_000));
        let s = HistSeries { label: "CPU 0".into(), buckets: h.buckets(), max_ns: 90_000 };
        let pts = percentile_points(&s, 4.0);
        let last = pts.last().expect("points");
        assert_eq!(last.0, 4.0);
        assert!((last.1 - 90.0).abs() < 0.1, "{last:?}");
        // 99.9 % of the samples are at 2 us: the step at 2 us ends at three nines.
        assert!((pts[1].0 - 3.0).abs() < 1e-6 && (pts[1].1 - 2.0).abs() < 0.01, "{pts:?}");
    }

    #[test]
    fn svg_is_valid_with_percentile_ticks() {
        let mut h = LatencyHistogram::new();
        for i in 1..=20_000u64 {
            h.record(Nanos(1_000 + (i * 7919) % 5_000));
        }
        h.record(Nanos(400_000));
        let s = HistSeries { label: "CPU 1".into(), buckets: h.buckets(), max_ns: 400_000 };
        let svg = cdf_svg("Percentiles", &[s]).expect("plot");
        assert!(xml_check::element_count(&svg) > 10);
        let t = xml_check::texts(&svg);
        for want in ["Percentiles", "99.9", "max", "CPU 1 (p99"] {
            assert!(t.contains(want), "missing {want:?} in {t}");
        }
    }
}
