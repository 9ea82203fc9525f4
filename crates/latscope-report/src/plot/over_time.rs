//! Latency (or noise) over time: the per-window maximum (solid) and mean (dashed) of each CPU, so bursts
//! and periodic patterns show.

use super::{color, err, fmt_us, PlotError, SIZE};
use plotters::coord::combinators::IntoLogRange;
use plotters::prelude::*;

/// One window of one series.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimePoint {
    /// Window start, ns since the start of the run.
    pub offset_ns: u64,
    /// Largest value in the window, ns.
    pub max_ns: f64,
    /// Mean value in the window, ns (`None` when the source has no mean, e.g. noise windows).
    pub mean_ns: Option<f64>,
}

/// The windows of one CPU (or run).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimeSeries {
    /// Legend label.
    pub label: String,
    /// Windows in time order.
    pub points: Vec<TimePoint>,
}

/// Draws the over-time plot; `what` names the quantity on the y axis (`latency`, `longest gap`).
pub fn over_time_svg(title: &str, what: &str, series: &[TimeSeries]) -> Result<String, PlotError> {
    let series: Vec<&TimeSeries> = series.iter().filter(|s| !s.points.is_empty()).collect();
    if series.is_empty() {
        return Ok(super::empty_svg(title, "no per-window data: run with --window DUR (e.g. --window 1s)"));
    }
    let t_max = series.iter().flat_map(|s| &s.points).map(|p| p.offset_ns).max().unwrap_or(0) as f64 / 1e9;
    let values = series.iter().flat_map(|s| &s.points).flat_map(|p| [Some(p.max_ns), p.mean_ns]).flatten();
    let (mut lo, mut hi) = (f64::INFINITY, 0f64);
    for v in values.filter(|v| *v > 0.0) {
        lo = lo.min(v / 1e3);
        hi = hi.max(v / 1e3);
    }
    if !lo.is_finite() {
        lo = 0.001;
        hi = 1.0;
    }
    let x_range = 0f64..(t_max * 1.02).max(1e-3);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err("over-time"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range, ((lo / 1.5).max(0.001)..hi * 2.0).log_scale())
            .map_err(err("over-time"))?;
        chart
            .configure_mesh()
            .x_desc("time since start, s")
            .y_desc(format!("{what}, us (log scale)"))
            .y_label_formatter(&|v| fmt_us(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err("over-time"))?;
        let floor = (lo / 1.5).max(0.001);
        for (i, s) in series.iter().enumerate() {
            let c = color(i);
            let pt = |p: &TimePoint, v: f64| (p.offset_ns as f64 / 1e9, (v / 1e3).max(floor));
            let max_pts: Vec<(f64, f64)> = s.points.iter().map(|p| pt(p, p.max_ns)).collect();
            chart
                .draw_series(LineSeries::new(max_pts, c.stroke_width(2)).point_size(2))
                .map_err(err("over-time"))?
                .label(format!("{} max", s.label))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
            let mean_pts: Vec<(f64, f64)> = s.points.iter().filter_map(|p| p.mean_ns.map(|m| pt(p, m))).collect();
            if !mean_pts.is_empty() {
                chart
                    .draw_series(DashedLineSeries::new(mean_pts, 5, 3, c.stroke_width(1)))
                    .map_err(err("over-time"))?
                    .label(format!("{} mean", s.label))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(1)));
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err("over-time"))?;
        root.present().map_err(err("over-time"))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::xml_check;

    #[test]
    fn draws_max_and_mean_per_series() {
        let points = (0..10u64)
            .map(|i| TimePoint {
                offset_ns: i * 1_000_000_000,
                max_ns: if i == 4 { 900_000.0 } else { 20_000.0 },
                mean_ns: Some(3_000.0),
            })
            .collect();
        let svg = over_time_svg("Latency over time", "latency", &[TimeSeries { label: "CPU 0".into(), points }])
            .expect("plot");
        assert!(xml_check::element_count(&svg) > 10);
        let t = xml_check::texts(&svg);
        assert!(t.contains("CPU 0 max") && t.contains("CPU 0 mean") && t.contains("time since start"), "{t}");
    }

    #[test]
    fn without_windows_it_says_how_to_get_them() {
        let svg = over_time_svg("Latency over time", "latency", &[]).expect("plot");
        assert!(xml_check::texts(&svg).contains("--window"));
    }
}
