//! The CPU timeline of an analysed worst case: what ran on the CPU around the late wakeup (tasks, hard
//! IRQs and vectors, softirqs, NMIs), drawn from trace events, with the expected and actual wakeup marked.

use super::{color, err, PlotError};
use crate::slices::{Slice, SliceKind};
use latscope_model::{Nanos, Pid};
use plotters::prelude::*;

/// A vertical marker on the timeline (expected wakeup, actual wakeup, a trace marker).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// When, trace clock.
    pub ts: Nanos,
    /// Label drawn beside the line.
    pub label: String,
}

/// Everything the timeline draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// Plot title (`CPU 1, worst wakeup: 812 us late`).
    pub title: String,
    /// Window start, trace clock.
    pub from: Nanos,
    /// Window end, trace clock.
    pub to: Nanos,
    /// The CPU's slices (any that overlap the window are drawn, clipped to it).
    pub slices: Vec<Slice>,
    /// Markers.
    pub marks: Vec<Mark>,
    /// The measured thread, drawn in its own colour.
    pub measured_pid: Option<Pid>,
}

const LANES: [&str; 3] = ["task", "IRQ / NMI", "softirq"];
const SIZE: (u32, u32) = (900, 300);

fn lane(kind: SliceKind) -> u32 {
    match kind {
        SliceKind::Task => 0,
        SliceKind::Irq | SliceKind::Vector | SliceKind::Nmi => 1,
        SliceKind::Softirq => 2,
    }
}

fn fill(s: &Slice, measured: Option<Pid>) -> RGBColor {
    match s.kind {
        SliceKind::Task if s.pid == Some(0) => RGBColor(210, 210, 210),
        SliceKind::Task if s.pid.is_some() && s.pid == measured => RGBColor(0, 158, 115),
        SliceKind::Task => {
            // Other tasks: one of a few blues by pid, so neighbouring tasks differ.
            const TASKS: [RGBColor; 4] =
                [RGBColor(86, 180, 233), RGBColor(120, 150, 210), RGBColor(70, 140, 190), RGBColor(150, 190, 230)];
            TASKS[s.pid.unwrap_or(0).unsigned_abs() as usize % TASKS.len()]
        }
        SliceKind::Irq => RGBColor(213, 94, 0),
        SliceKind::Vector => RGBColor(230, 159, 0),
        SliceKind::Softirq => RGBColor(204, 121, 167),
        SliceKind::Nmi => RGBColor(60, 60, 60),
    }
}

/// Draws the timeline.
pub fn cpu_timeline_svg(t: &Timeline) -> Result<String, PlotError> {
    if t.to <= t.from {
        return Ok(super::empty_svg(&t.title, "empty time window"));
    }
    let visible: Vec<&Slice> = t.slices.iter().filter(|s| s.end > t.from && s.start < t.to).collect();
    if visible.is_empty() {
        return Ok(super::empty_svg(&t.title, "no trace events on this CPU in the window"));
    }
    let us = |n: Nanos| (n.0 as f64 - t.from.0 as f64) / 1e3;
    let span = us(t.to);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err("cpu-timeline"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&t.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..span, (0u32..LANES.len() as u32 - 1).into_segmented())
            .map_err(err("cpu-timeline"))?;
        let y_fmt = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) => LANES.get(*i as usize).map(|s| s.to_string()).unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_label_formatter(&y_fmt)
            .x_label_formatter(&|v| super::fmt_us(*v))
            .x_desc(format!("us after {:.6} s (trace clock)", t.from.0 as f64 / 1e9))
            .light_line_style(RGBColor(240, 240, 240))
            .draw()
            .map_err(err("cpu-timeline"))?;
        // Pixels per us, to decide which slices are wide enough for a label.
        let px_per_us = (SIZE.0 as f64 - 110.0) / span.max(1e-9);
        for s in &visible {
            let (x0, x1) = (us(s.start.max(t.from)), us(s.end.min(t.to)));
            let l = lane(s.kind);
            let c = fill(s, t.measured_pid);
            let nest = (s.depth.saturating_sub(1).min(3) * 4) as i32;
            let mut r = Rectangle::new(
                [(x0, SegmentValue::Exact(l)), (x1.max(x0 + 0.4 / px_per_us), SegmentValue::Exact(l + 1))],
                c.filled(),
            );
            r.set_margin((12 + nest) as u32, 12, 0, 0);
            let mut edge = Rectangle::new(
                [(x0, SegmentValue::Exact(l)), (x1.max(x0 + 0.4 / px_per_us), SegmentValue::Exact(l + 1))],
                WHITE.stroke_width(1),
            );
            edge.set_margin((12 + nest) as u32, 12, 0, 0);
            chart.draw_series([r, edge]).map_err(err("cpu-timeline"))?;
            let label = match (s.kind, s.pid) {
                (SliceKind::Task, Some(pid)) if pid != 0 => format!("{} ({pid})", s.name),
                _ => s.name.clone(),
            };
            let width_px = (x1 - x0) * px_per_us;
            if width_px > 7.0 * label.chars().count() as f64 {
                chart
                    .draw_series(std::iter::once(Text::new(
                        label,
                        (x0 + 3.0 / px_per_us, SegmentValue::CenterOf(l)),
                        ("sans-serif", 12).into_font().color(&BLACK),
                    )))
                    .map_err(err("cpu-timeline"))?;
            }
        }
        for (i, m) in t.marks.iter().enumerate() {
            if m.ts < t.from || m.ts > t.to {
                continue;
            }
            let x = us(m.ts);
            let c = if i == 0 { color(1) } else { color(i + 1) };
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, SegmentValue::Exact(0)), (x, SegmentValue::Last)],
                    c.stroke_width(2),
                )))
                .map_err(err("cpu-timeline"))?;
            let y = SegmentValue::CenterOf((LANES.len() as u32 - 1).saturating_sub(i as u32 % 2));
            chart
                .draw_series(std::iter::once(Text::new(
                    m.label.clone(),
                    (x + 3.0 / px_per_us, y),
                    ("sans-serif", 12).into_font().color(&c),
                )))
                .map_err(err("cpu-timeline"))?;
        }
        root.present().map_err(err("cpu-timeline"))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::xml_check;
    use latscope_model::CpuId;

    fn slice(start: u64, end: u64, kind: SliceKind, name: &str, pid: Option<Pid>, depth: u32) -> Slice {
        Slice { cpu: CpuId(1), start: Nanos(start), end: Nanos(end), kind, name: name.into(), pid, prio: None, depth }
    }

    #[test]
    fn draws_lanes_labels_and_marks() {
        let t = Timeline {
            title: "CPU 1, worst wakeup 700 us late".into(),
            from: Nanos(1_000_000),
            to: Nanos(2_000_000),
            slices: vec![
                slice(900_000, 1_800_000, SliceKind::Task, "spinner", Some(4242), 0),
                slice(1_100_000, 1_110_000, SliceKind::Vector, "local_timer", None, 1),
                slice(1_800_000, 2_000_000, SliceKind::Task, "latscope-timer", Some(100), 0),
            ],
            marks: vec![
                Mark { ts: Nanos(1_100_000), label: "expected wakeup".into() },
                Mark { ts: Nanos(1_805_000), label: "woke (+705 us)".into() },
            ],
            measured_pid: Some(100),
        };
        let svg = cpu_timeline_svg(&t).expect("plot");
        assert!(xml_check::element_count(&svg) > 10);
        let texts = xml_check::texts(&svg);
        for want in ["spinner (4242)", "latscope-timer (100)", "expected wakeup", "woke (+705 us)", "IRQ / NMI"] {
            assert!(texts.contains(want), "missing {want:?} in {texts}");
        }
    }

    #[test]
    fn empty_window_is_explained() {
        let t = Timeline { title: "CPU 0".into(), from: Nanos(10), to: Nanos(20), ..Timeline::default() };
        assert!(xml_check::texts(&cpu_timeline_svg(&t).expect("plot")).contains("no trace events"));
    }
}
