//! The self-contained HTML report: a [`Page`] of sections (plots, tables, text, findings) with the run
//! metadata and audit findings in a sidebar beside the plots, rendered to one `index.html` with the SVGs
//! inlined (no network, no CDN, no script) plus each SVG as its own file for reuse.

use crate::plot::escape;
use latscope_model::{Finding, RunMetadata, Severity};
use std::fmt::Write;

/// One plot: its SVG and where it goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plot {
    /// File stem and element id (`timer-histogram`): written as `<id>.svg`, shown as `#plot-<id>`.
    pub id: String,
    /// Heading above the plot.
    pub title: String,
    /// The SVG document.
    pub svg: String,
    /// One sentence on how to read it.
    pub caption: String,
}

/// A block of content in a section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    /// A plot.
    Plot(Plot),
    /// A table with a header row; cells are plain text.
    Table { head: Vec<String>, rows: Vec<Vec<String>> },
    /// A paragraph.
    Text(String),
    /// A highlighted paragraph (verdicts).
    Callout(String),
    /// Preformatted text (the text renderer's output).
    Pre(String),
    /// A bulleted list.
    List(Vec<String>),
    /// Findings with severity, evidence and fixes.
    Findings(Vec<Finding>),
}

/// A titled section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Section {
    /// Anchor id.
    pub id: String,
    /// Heading.
    pub heading: String,
    /// Content in order.
    pub blocks: Vec<Block>,
}

/// A whole report page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Page {
    /// Title (also the `<title>`).
    pub title: String,
    /// One line under the title.
    pub subtitle: String,
    /// Run metadata shown in the sidebar (several when comparing runs).
    pub metadata: Vec<(String, RunMetadata)>,
    /// Audit findings shown in the sidebar.
    pub findings: Vec<Finding>,
    /// Warnings shown in the sidebar.
    pub warnings: Vec<String>,
    /// The main column.
    pub sections: Vec<Section>,
}

/// The files of a report directory: `index.html` and the SVGs beside it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReportFiles {
    /// The page.
    pub index_html: String,
    /// (`<id>.svg`, SVG text) for every plot.
    pub svgs: Vec<(String, String)>,
}

const CSS: &str = "
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#e3e3e3;--bg:#fafafa;--ok:#2e7d32;--info:#1565c0;--warn:#b26a00;--fail:#c62828}
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:var(--fg);background:var(--bg)}
header{padding:18px 28px;background:#fff;border-bottom:1px solid var(--line)}header h1{margin:0;font-size:24px}
header p{margin:4px 0 0;color:var(--muted)}
.layout{display:grid;grid-template-columns:minmax(0,1fr) 340px;gap:24px;padding:20px 28px;align-items:start}
@media (max-width:1100px){.layout{grid-template-columns:1fr}}
main section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 18px;margin-bottom:20px}
main h2{margin:0 0 10px;font-size:19px}aside{position:sticky;top:12px}
aside .box{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 14px;margin-bottom:16px}
aside h3{margin:0 0 8px;font-size:15px}dl{margin:0;display:grid;grid-template-columns:auto 1fr;gap:2px 10px;font-size:13px}
dt{color:var(--muted)}dd{margin:0;word-break:break-word}
figure.plot{margin:0 0 18px}figure.plot svg{max-width:100%;height:auto;display:block;border:1px solid var(--line);border-radius:4px}
figure.plot h3{margin:6px 0;font-size:15px}figcaption{color:var(--muted);font-size:13px;margin-top:4px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:right}th{background:#f3f3f3}
th:first-child,td:first-child{text-align:left}
pre{background:#f6f8fa;padding:10px;border-radius:6px;overflow:auto;font-size:12px}
.callout{border-left:4px solid var(--info);background:#eef4fb;padding:8px 12px;margin:8px 0;font-weight:600}
.finding{border-left:4px solid var(--line);padding:4px 10px;margin:8px 0;font-size:13px}
.finding.fail{border-color:var(--fail)}.finding.warn{border-color:var(--warn)}.finding.info{border-color:var(--info)}.finding.ok{border-color:var(--ok)}
.sev{font-weight:700;text-transform:uppercase;font-size:11px;margin-right:6px}.sev.fail{color:var(--fail)}.sev.warn{color:var(--warn)}
.sev.info{color:var(--info)}.sev.ok{color:var(--ok)}.finding ul{margin:4px 0;padding-left:18px}code{font-size:12px}
.warn-list{font-size:13px;padding-left:18px;margin:0}
";

fn findings_html(out: &mut String, findings: &[Finding]) {
    for f in findings {
        let sev = f.severity.as_str();
        let _ = write!(
            out,
            "<div class=\"finding {sev}\"><span class=\"sev {sev}\">{sev}</span><strong>{}</strong>",
            escape(&f.title)
        );
        if !f.why.is_empty() {
            let _ = write!(out, "<div>{}</div>", escape(&f.why));
        }
        if !f.evidence.is_empty() {
            out.push_str("<ul>");
            for e in &f.evidence {
                let _ = write!(
                    out,
                    "<li>{} = <code>{}</code> <span style=\"color:var(--muted)\">({})</span></li>",
                    escape(&e.fact),
                    escape(&e.value),
                    escape(&e.from)
                );
            }
            out.push_str("</ul>");
        }
        for fix in &f.fix {
            let _ = write!(out, "<div>fix: <code>{}</code>", escape(&fix.action));
            if !fix.note.is_empty() {
                let _ = write!(out, " — {}", escape(&fix.note));
            }
            out.push_str("</div>");
        }
        out.push_str("</div>");
    }
}

fn metadata_html(out: &mut String, label: &str, m: &RunMetadata) {
    let _ = write!(out, "<div class=\"box\"><h3>{}</h3><dl>", escape(label));
    let duration = if m.duration_ns > 0 { format!("{:.1} s", m.duration_ns as f64 / 1e9) } else { String::new() };
    let rows = [
        ("tool", m.tool_version.clone()),
        ("host", m.hostname.clone()),
        ("kernel", m.kernel_release.clone()),
        ("build", m.kernel_version.clone()),
        ("preemption", m.preemption_model.clone()),
        ("CPU", m.cpu_model.clone()),
        ("CPUs", if m.cpu_count > 0 { m.cpu_count.to_string() } else { String::new() }),
        ("hypervisor", m.hypervisor.clone().unwrap_or_else(|| "none".into())),
        ("clocksource", m.clocksource.clone()),
        ("start", m.start_time.clone()),
        ("duration", duration),
        ("command", m.args.join(" ")),
        ("cmdline", m.kernel_cmdline.clone()),
    ];
    for (k, v) in rows {
        if !v.is_empty() {
            let _ = write!(out, "<dt>{k}</dt><dd>{}</dd>", escape(&v));
        }
    }
    out.push_str("</dl></div>");
}

/// Counts findings per severity: `2 fail, 5 warn, 3 info, 10 ok`.
pub fn severity_counts(findings: &[Finding]) -> String {
    let parts: Vec<String> = [Severity::Fail, Severity::Warn, Severity::Info, Severity::Ok]
        .iter()
        .map(|s| (s, findings.iter().filter(|f| f.severity == *s).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    parts.join(", ")
}

impl Page {
    /// Every plot on the page, in order.
    pub fn plots(&self) -> impl Iterator<Item = &Plot> {
        self.sections.iter().flat_map(|s| &s.blocks).filter_map(|b| match b {
            Block::Plot(p) => Some(p),
            _ => None,
        })
    }

    /// Renders `index.html` and the SVG files.
    pub fn render(&self) -> ReportFiles {
        let mut out = String::with_capacity(64 * 1024);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
             <title>{}</title><style>{CSS}</style></head><body>\n<header><h1>{}</h1><p>{}</p></header>\n<div class=\"layout\"><main>\n",
            escape(&self.title),
            escape(&self.title),
            escape(&self.subtitle)
        );
        for s in &self.sections {
            let _ = writeln!(out, "<section id=\"{}\"><h2>{}</h2>", escape(&s.id), escape(&s.heading));
            for b in &s.blocks {
                match b {
                    Block::Plot(p) => {
                        let _ = write!(
                            out,
                            "<figure class=\"plot\" id=\"plot-{id}\" data-plot=\"{id}\"><h3>{}</h3>\n{}\n\
                             <figcaption>{} <a href=\"{id}.svg\">{id}.svg</a></figcaption></figure>\n",
                            escape(&p.title),
                            strip_xml_decl(&p.svg),
                            escape(&p.caption),
                            id = escape(&p.id),
                        );
                    }
                    Block::Table { head, rows } => {
                        out.push_str("<table><thead><tr>");
                        for h in head {
                            let _ = write!(out, "<th>{}</th>", escape(h));
                        }
                        out.push_str("</tr></thead><tbody>");
                        for r in rows {
                            out.push_str("<tr>");
                            for c in r {
                                let _ = write!(out, "<td>{}</td>", escape(c));
                            }
                            out.push_str("</tr>");
                        }
                        out.push_str("</tbody></table>\n");
                    }
                    Block::Text(t) => {
                        let _ = writeln!(out, "<p>{}</p>", escape(t));
                    }
                    Block::Callout(t) => {
                        let _ = writeln!(out, "<div class=\"callout\">{}</div>", escape(t));
                    }
                    Block::Pre(t) => {
                        let _ = writeln!(out, "<pre>{}</pre>", escape(t));
                    }
                    Block::List(items) => {
                        out.push_str("<ul>");
                        for i in items {
                            let _ = write!(out, "<li>{}</li>", escape(i));
                        }
                        out.push_str("</ul>\n");
                    }
                    Block::Findings(f) => findings_html(&mut out, f),
                }
            }
            out.push_str("</section>\n");
        }
        out.push_str("</main><aside>\n");
        for (label, m) in &self.metadata {
            metadata_html(&mut out, label, m);
        }
        if !self.findings.is_empty() {
            let mut shown: Vec<&Finding> = self.findings.iter().filter(|f| f.severity > Severity::Ok).collect();
            shown.sort_by_key(|f| std::cmp::Reverse(f.severity));
            let _ = write!(
                out,
                "<div class=\"box\" id=\"findings\"><h3>Audit findings ({})</h3>",
                severity_counts(&self.findings)
            );
            let owned: Vec<Finding> = shown.into_iter().cloned().collect();
            findings_html(&mut out, &owned);
            out.push_str("</div>\n");
        }
        if !self.warnings.is_empty() {
            out.push_str("<div class=\"box\" id=\"warnings\"><h3>Warnings</h3><ul class=\"warn-list\">");
            for w in &self.warnings {
                let _ = write!(out, "<li>{}</li>", escape(w));
            }
            out.push_str("</ul></div>\n");
        }
        out.push_str("</aside></div></body></html>\n");
        let svgs = self.plots().map(|p| (format!("{}.svg", p.id), p.svg.clone())).collect();
        ReportFiles { index_html: out, svgs }
    }
}

/// Drops a leading `<?xml …?>` declaration so the SVG can be inlined in HTML.
fn strip_xml_decl(svg: &str) -> &str {
    let t = svg.trim_start();
    if t.starts_with("<?xml") {
        t.find("?>").map_or(t, |i| &t[i + 2..])
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_plots_inline_and_as_files_with_sidebar() {
        let page = Page {
            title: "latscope timer <test>".into(),
            subtitle: "2 CPUs".into(),
            metadata: vec![("Run".into(), RunMetadata { hostname: "vm".into(), ..RunMetadata::default() })],
            findings: vec![Finding::new("rt", Severity::Warn, "RT throttling on", "stops RT tasks")],
            warnings: vec!["no mlockall".into()],
            sections: vec![Section {
                id: "latency".into(),
                heading: "Latency".into(),
                blocks: vec![
                    Block::Plot(Plot {
                        id: "timer-histogram".into(),
                        title: "Histogram".into(),
                        svg: "<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"><rect/></svg>".into(),
                        caption: "log count".into(),
                    }),
                    Block::Table {
                        head: vec!["CPU".into(), "max".into()],
                        rows: vec![vec!["0".into(), "12 us".into()]],
                    },
                ],
            }],
        };
        let files = page.render();
        let html = &files.index_html;
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>latscope timer &lt;test&gt;</title>"));
        assert!(html.contains("id=\"plot-timer-histogram\""));
        assert!(html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\"><rect/></svg>"));
        assert!(!html.contains("<?xml"));
        assert!(html.contains("RT throttling on") && html.contains("1 warn") && html.contains("no mlockall"));
        assert!(!html.contains("http://") || !html.contains("src=\"http"), "no external resources");
        assert_eq!(files.svgs.len(), 1);
        assert_eq!(files.svgs[0].0, "timer-histogram.svg");
    }
}
