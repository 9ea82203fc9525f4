//! SVG plots drawn with `plotters` (SVG backend, no font files): each function returns the SVG as a string.

pub mod cause_colors;
pub mod causes;
pub mod cdf;
pub mod cpu_timeline;
pub mod histogram;
pub mod over_time;

use plotters::style::RGBColor;

/// A plot could not be drawn (the message names the plot and what went wrong).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotError(pub String);

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlotError {}

/// Converts a plotters drawing error into a [`PlotError`] naming the plot.
pub(crate) fn err<E: std::fmt::Debug>(plot: &str) -> impl Fn(E) -> PlotError + '_ {
    move |e| PlotError(format!("{plot} plot: {e:?}"))
}

/// Default plot size, pixels.
pub const SIZE: (u32, u32) = (900, 420);

/// A colour-blind-friendly palette (Okabe–Ito), one colour per series.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(240, 228, 66),
];

/// The colour of series number `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Formats a value in µs for an axis label: `12`, `1.5`, `0.25`, `12k` for ≥ 10 000 µs.
pub fn fmt_us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{}k", trim(v / 1000.0))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A "nice" step (1, 2 or 5 × 10^k) at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

/// Escapes text for XML/HTML content and attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// An SVG saying there is nothing to draw, with the reason (so a report never shows a blank box).
pub fn empty_svg(title: &str, reason: &str) -> String {
    let (w, h) = (SIZE.0, 120);
    format!(
        "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" xmlns=\"http://www.w3.org/2000/svg\">\
         <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#FFFFFF\"/>\
         <text x=\"20\" y=\"40\" font-family=\"sans-serif\" font-size=\"18\">{}</text>\
         <text x=\"20\" y=\"75\" font-family=\"sans-serif\" font-size=\"14\" fill=\"#555555\">{}</text></svg>",
        escape(title),
        escape(reason)
    )
}

#[cfg(test)]
pub(crate) mod xml_check {
    //! Well-formedness check of generated SVG, shared by the plot tests.

    /// Parses `svg` as XML and returns the document's element count; panics with the parser's message.
    pub fn element_count(svg: &str) -> usize {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("invalid SVG XML: {e}\n{svg}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        doc.descendants().filter(|n| n.is_element()).count()
    }

    /// All text content of `<text>` elements, joined by `|`.
    pub fn texts(svg: &str) -> String {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("invalid SVG XML: {e}"));
        doc.descendants().filter(|n| n.has_tag_name("text")).filter_map(|n| n.text()).collect::<Vec<_>>().join("|")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.2), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(70.0), 100.0);
    }

    #[test]
    fn formats_microseconds() {
        assert_eq!(fmt_us(12.0), "12");
        assert_eq!(fmt_us(1.5), "1.5");
        assert_eq!(fmt_us(50_000.0), "50k");
        assert_eq!(fmt_us(0.25), "0.25");
    }

    #[test]
    fn empty_plot_is_valid_and_says_why() {
        let svg = empty_svg("Latency over time", "run with --window <5 & 6>");
        assert!(xml_check::element_count(&svg) >= 3);
        assert!(xml_check::texts(&svg).contains("run with --window <5 & 6>"));
    }
}
