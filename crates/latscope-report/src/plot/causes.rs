//! Noise by cause: one stacked bar per CPU, each segment the time one cause (an IRQ, a softirq, RT
//! throttling, a task, "no kernel event") took, with the same colour for the same cause on every bar.

use super::cause_colors::{cause_color, shade};
use super::{err, PlotError, SIZE};
use latscope_model::CauseKind;
use plotters::prelude::*;

/// One cause's part of a bar.
#[derive(Clone, Debug, PartialEq)]
pub struct CauseSegment {
    /// The cause (its colour).
    pub kind: CauseKind,
    /// Its label in the legend (`IRQ 30 virtio0`).
    pub label: String,
    /// The time it took, ns.
    pub ns: u64,
}

/// The causes of one CPU's noise.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CauseBar {
    /// Bar label (`CPU 1`).
    pub label: String,
    /// The causes, in any order.
    pub causes: Vec<CauseSegment>,
}

/// Draws the stacked bars. Causes are stacked largest first (by their total over all bars).
pub fn causes_svg(title: &str, bars: &[CauseBar]) -> Result<String, PlotError> {
    let total = |b: &CauseBar| b.causes.iter().map(|c| c.ns).sum::<u64>();
    if bars.is_empty() || bars.iter().all(|b| total(b) == 0) {
        return Ok(super::empty_svg(title, "no noise above the threshold to attribute"));
    }
    // Cause order: by overall total, largest first, so the big ones sit at the bottom of every bar.
    let mut names: Vec<(String, u64, CauseKind)> = Vec::new();
    for b in bars {
        for c in &b.causes {
            match names.iter_mut().find(|(n, _, _)| *n == c.label) {
                Some(e) => e.1 += c.ns,
                None => names.push((c.label.clone(), c.ns, c.kind)),
            }
        }
    }
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let y_max = bars.iter().map(total).max().unwrap_or(1) as f64 / 1e6 * 1.15;
    let n = bars.len() as u32;
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err("noise-by-cause"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(64)
            .build_cartesian_2d((0u32..n.saturating_sub(1)).into_segmented(), 0f64..y_max.max(1e-6))
            .map_err(err("noise-by-cause"))?;
        let x_fmt = |v: &SegmentValue<u32>| match v {
            SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&x_fmt)
            .y_desc("noise, ms")
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err("noise-by-cause"))?;
        for (ci, (name, sum, kind)) in names.iter().enumerate() {
            let nth = names[..ci].iter().filter(|(_, _, k)| k == kind).count();
            let c = shade(cause_color(*kind), nth);
            let mut rects = Vec::new();
            for (bi, bar) in bars.iter().enumerate() {
                let below: u64 = names[..ci]
                    .iter()
                    .map(|(n, _, _)| bar.causes.iter().filter(|x| x.label == *n).map(|x| x.ns).sum::<u64>())
                    .sum();
                let mine: u64 = bar.causes.iter().filter(|x| x.label == *name).map(|x| x.ns).sum();
                if mine == 0 {
                    continue;
                }
                let (y0, y1) = (below as f64 / 1e6, (below + mine) as f64 / 1e6);
                let bi = bi as u32;
                let mut r =
                    Rectangle::new([(SegmentValue::Exact(bi), y0), (SegmentValue::Exact(bi + 1), y1)], c.filled());
                r.set_margin(0, 0, 18, 18);
                rects.push(r);
            }
            let share = 100.0 * *sum as f64 / names.iter().map(|x| x.1).sum::<u64>().max(1) as f64;
            chart
                .draw_series(rects)
                .map_err(err("noise-by-cause"))?
                .label(format!("{name} ({share:.1} %)"))
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err("noise-by-cause"))?;
        root.present().map_err(err("noise-by-cause"))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::xml_check;

    #[test]
    fn stacks_causes_with_shares_in_the_legend() {
        let seg = |kind, label: &str, ns| CauseSegment { kind, label: label.into(), ns };
        let bars = vec![
            CauseBar {
                label: "CPU 0".into(),
                causes: vec![
                    seg(CauseKind::RtThrottling, "RT throttling", 150_000_000),
                    seg(CauseKind::NoKernelEvent, "no kernel event", 50_000_000),
                ],
            },
            CauseBar {
                label: "CPU 1".into(),
                causes: vec![seg(CauseKind::NoKernelEvent, "no kernel event", 50_000_000)],
            },
        ];
        let svg = causes_svg("Noise by cause", &bars).expect("plot");
        let t = xml_check::texts(&svg);
        for want in ["CPU 0", "CPU 1", "RT throttling (60.0 %)", "no kernel event (40.0 %)", "noise, ms"] {
            assert!(t.contains(want), "missing {want:?} in {t}");
        }
        let doc = roxmltree::Document::parse(&svg).expect("xml");
        // Three bar segments plus two legend swatches (plus the background and plot frame).
        let filled = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
        assert!(filled >= 5, "{filled} rects");
    }

    #[test]
    fn no_noise_gives_a_message() {
        let svg = causes_svg("Noise by cause", &[CauseBar { label: "CPU 0".into(), causes: vec![] }]).expect("plot");
        assert!(xml_check::texts(&svg).contains("no noise"));
    }
}
