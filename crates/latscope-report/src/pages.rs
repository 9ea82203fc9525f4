//! The report pages of each result kind — timer, noise, audit, comparison, `latscope run` — built from the
//! result data into [`Page`]s with their plots, tables, verdicts and sidebar.

use crate::compare::{Comparison, Measure, RunSeries};
use crate::html::{Block, Page, Plot, Section};
use crate::plot::causes::{causes_svg, CauseBar, CauseSegment};
use crate::plot::cdf::cdf_svg;
use crate::plot::cpu_timeline::{cpu_timeline_svg, Mark, Timeline};
use crate::plot::histogram::{histogram_svg, HistSeries};
use crate::plot::over_time::{over_time_svg, TimePoint, TimeSeries};
use crate::plot::{empty_svg, PlotError};
use crate::slices::CpuSlices;
use crate::text::{analysis_verdicts, explain, noise_causes, traced_wakeups, verdict};
use latscope_model::noise_result::NoiseResult;
use latscope_model::{AuditResult, CauseKind, CpuId, GraphWindow, Nanos, Pid, RunResult, TimerResult, WakeupGraph};

fn us(ns: u64) -> String {
    Nanos(ns).to_string()
}

fn plot(id: &str, title: &str, caption: &str, svg: Result<String, PlotError>) -> Block {
    // A plot that fails to draw still leaves a visible box saying why.
    let svg = svg.unwrap_or_else(|e| empty_svg(title, &e.to_string()));
    Block::Plot(Plot { id: id.into(), title: title.into(), svg, caption: caption.into() })
}

/// The sections of a timer result; ids are prefixed with `prefix` (`timer`).
pub fn timer_sections(r: &TimerResult, prefix: &str) -> Vec<Section> {
    let series: Vec<HistSeries> = r
        .cpus
        .iter()
        .map(|c| HistSeries {
            label: format!("CPU {}", c.cpu.0),
            buckets: c.stats.histogram.clone(),
            max_ns: c.stats.max_ns,
        })
        .collect();
    let mut head = vec!["CPU", "samples", "min", "avg", "p50", "p99", "p99.9", "p99.99", "max", "overruns"];
    if r.options.threshold_ns.is_some() {
        head.push("above threshold");
    }
    let mut rows = Vec::new();
    let all = std::iter::once(("all".to_string(), &r.all));
    for (label, s) in r.cpus.iter().map(|c| (c.cpu.0.to_string(), &c.stats)).chain(all) {
        let p = |l: &str| s.percentile(l).map_or("-".into(), us);
        let mut row = vec![
            label,
            s.count.to_string(),
            us(s.min_ns),
            Nanos(s.avg_ns.round() as u64).to_string(),
            p("50"),
            p("99"),
            p("99.9"),
            p("99.99"),
            us(s.max_ns),
            s.overruns.to_string(),
        ];
        if r.options.threshold_ns.is_some() {
            row.push(match (s.above_threshold, s.above_threshold_pct) {
                (Some(n), Some(pct)) => format!("{n} ({pct:.3} %)"),
                _ => "-".into(),
            });
        }
        rows.push(row);
    }
    let over: Vec<TimeSeries> = r
        .cpus
        .iter()
        .map(|c| TimeSeries {
            label: format!("CPU {}", c.cpu.0),
            points: c
                .windows
                .iter()
                .map(|w| TimePoint { offset_ns: w.offset_ns, max_ns: w.max_ns as f64, mean_ns: Some(w.mean_ns) })
                .collect(),
        })
        .collect();
    let mut worst_rows = Vec::new();
    for c in &r.cpus {
        for (i, w) in c.worst.iter().take(5).enumerate() {
            worst_rows.push(vec![
                c.cpu.0.to_string(),
                (i + 1).to_string(),
                us(w.latency_ns),
                format!("{:.6}", w.expected_ns as f64 / 1e9),
                w.missed_periods.to_string(),
            ]);
        }
    }
    let interval = match &r.imported {
        Some(i) if i.interval_ns.is_none() => " (interval unknown)".to_string(),
        _ if r.options.interval_ns > 0 => format!(" every {}", us(r.options.interval_ns)),
        _ => String::new(),
    };
    let mut main = Section {
        id: format!("{prefix}-latency"),
        heading: format!("Timer wakeup latency{interval}"),
        blocks: vec![
            Block::Table { head: head.iter().map(|s| s.to_string()).collect(), rows },
            plot(
                &format!("{prefix}-histogram"),
                "Latency histogram per CPU",
                "Samples per latency bin on a log count axis (OSADL style): rare outliers stay visible; the \
                 dashed line marks each CPU's maximum.",
                histogram_svg("Wakeup latency", &series),
            ),
            plot(
                &format!("{prefix}-percentiles"),
                "Percentiles",
                "Latency at each percentile; the x axis adds one nine per step, so the tail (p99 … p99.999) gets \
                 as much room as the body.",
                cdf_svg("Wakeup latency percentiles", &series),
            ),
            plot(
                &format!("{prefix}-over-time"),
                "Latency over time",
                "Per-window maximum (solid) and mean (dashed): bursts and periodic patterns show here.",
                over_time_svg("Wakeup latency over time", "latency", &over),
            ),
        ],
    };
    if let Some(trace) = &r.trace {
        let rows: Vec<Vec<String>> = trace
            .worst
            .iter()
            .map(|w| {
                let remedy = w.headline.as_ref().and_then(explain::remedy).unwrap_or_default();
                vec![
                    w.cpu.0.to_string(),
                    w.sample_latency_ns.to_string(),
                    if w.found() { w.trace_latency_ns.to_string() } else { "not in trace".into() },
                    if w.found() { traced_wakeups::sentence(w) } else { traced_wakeups::note(w).unwrap_or_default() },
                    remedy.to_string(),
                ]
            })
            .collect();
        if !rows.is_empty() {
            main.blocks.push(Block::Text(format!(
                "The worst wakeups explained from the trace ({} events{}):",
                trace.events,
                if trace.lost_events > 0 { format!(", {} lost", trace.lost_events) } else { String::new() }
            )));
            main.blocks.push(Block::Table {
                head: ["CPU", "measured", "in the trace", "what happened", "remedy"].map(String::from).to_vec(),
                rows,
            });
        }
        if let Some(g) = &trace.graph {
            main.blocks.extend(graph_blocks(g));
        }
        if !trace.irq_worst.is_empty() {
            main.blocks.push(Block::Text("The worst timer IRQ latencies (timerlat), explained from the trace:".into()));
            main.blocks.push(Block::Table {
                head: ["CPU", "activation", "IRQ latency", "what held the interrupt", "remedy"]
                    .map(String::from)
                    .to_vec(),
                rows: trace.irq_worst.iter().map(traced_wakeups::irq_row).collect(),
            });
        }
    }
    if !worst_rows.is_empty() {
        main.blocks.push(Block::Text("The worst wakeups (CLOCK_MONOTONIC time of the expected wakeup):".into()));
        main.blocks.push(Block::Table {
            head: ["CPU", "rank", "latency", "expected at (s)", "missed periods"].map(String::from).to_vec(),
            rows: worst_rows,
        });
    }
    vec![main]
}

/// `--graph`: the function-graph diff of the worst wakeup against the median one, as the text shows it.
fn graph_blocks(g: &WakeupGraph) -> Vec<Block> {
    let at = |w: &GraphWindow| format!("{:.6} s ({} late)", w.expected_ns as f64 / 1e9, us(w.latency_ns()));
    let mut intro = format!(
        "Function graph of CPU {}: the worst wakeup, due at {}, against the median of the {} traced wakeups, due \
         at {}. The calls in the worst wakeup's window took {}, in the normal one's {}.",
        g.cpu,
        at(&g.worst),
        g.wakeups,
        at(&g.normal),
        us(g.worst_calls_ns),
        us(g.normal_calls_ns)
    );
    if let Some((m, after)) = g.measured_after_window() {
        intro.push_str(&format!(
            " latscope measured {} for the worst wakeup: {} of it came after the switch-in, outside the window, so \
             these calls do not show where it went.",
            us(m),
            us(after)
        ));
    }
    let rows: Vec<Vec<String>> = g
        .entries
        .iter()
        .filter(|e| e.extra_ns > 0)
        .take(20)
        .map(|e| {
            vec![
                us(e.extra_ns.unsigned_abs()),
                traced_wakeups::graph_kind(e).to_string(),
                traced_wakeups::graph_path(e),
                traced_wakeups::graph_hot_path(e).unwrap_or_default(),
            ]
        })
        .collect();
    if rows.is_empty() {
        return vec![Block::Text(format!(
            "{intro} No call of the worst wakeup is absent or shorter in the normal one."
        ))];
    }
    vec![
        Block::Text(intro),
        Block::Table { head: ["adds", "how", "calls", "where its time went"].map(String::from).to_vec(), rows },
    ]
}

/// The noise causes of each CPU: what the trace attributed the gaps to, when traced (the noise the trace
/// did not cover left unattributed); otherwise RT throttling from the gap pattern and the rest.
pub fn noise_cause_bars(r: &NoiseResult) -> Vec<CauseBar> {
    let seg = |kind, label: String, ns| CauseSegment { kind, label, ns };
    r.cpus
        .iter()
        .map(|c| {
            let traced = r.causes.as_ref().and_then(|t| t.cpus.iter().find(|t| t.cpu == c.cpu));
            let mut causes = Vec::new();
            match traced {
                Some(t) => {
                    causes.extend(t.causes.iter().map(|x| seg(x.cause, noise_causes::label(x), x.magnitude.0)));
                    let rest = c.noise_ns.saturating_sub(t.attributed_ns.0);
                    if rest > 0 {
                        causes.push(seg(CauseKind::NotTraced, "not attributed (outside the trace)".into(), rest));
                    }
                }
                None => {
                    let throttled = c.rt_throttling.throttled_ns.min(c.noise_ns);
                    if throttled > 0 {
                        causes.push(seg(CauseKind::RtThrottling, "RT throttling".into(), throttled));
                    }
                    let rest = c.noise_ns - throttled;
                    causes.push(seg(CauseKind::NotTraced, "not attributed (no trace)".into(), rest));
                }
            }
            CauseBar { label: format!("CPU {}", c.cpu.0), causes }
        })
        .collect()
}

/// The sections of a noise result.
pub fn noise_sections(r: &NoiseResult, prefix: &str) -> Vec<Section> {
    let series: Vec<HistSeries> = r
        .cpus
        .iter()
        .map(|c| HistSeries { label: format!("CPU {}", c.cpu.0), buckets: c.histogram.clone(), max_ns: c.max_gap_ns })
        .collect();
    let rows = r
        .cpus
        .iter()
        .map(|c| {
            vec![
                c.cpu.0.to_string(),
                c.loops.to_string(),
                if c.loop_ns > 0.0 { format!("{:.1} ns", c.loop_ns) } else { "-".into() },
                us(c.runtime_ns),
                us(c.noise_ns),
                format!("{:.4} %", c.noise_pct),
                us(c.max_gap_ns),
                c.gaps.count.to_string(),
                format!("{:.1}", c.gaps.per_second),
            ]
        })
        .collect();
    let over: Vec<TimeSeries> = r
        .cpus
        .iter()
        .map(|c| TimeSeries {
            label: format!("CPU {}", c.cpu.0),
            points: c
                .windows
                .iter()
                .map(|w| TimePoint { offset_ns: w.offset_ns, max_ns: w.max_gap_ns as f64, mean_ns: None })
                .collect(),
        })
        .collect();
    let mut blocks = vec![
        Block::Table {
            head: ["CPU", "loops", "loop cost", "runtime", "noise", "noise share", "longest gap", "gaps", "gaps/s"]
                .map(String::from)
                .to_vec(),
            rows,
        },
        plot(
            &format!("{prefix}-causes"),
            "Noise by cause",
            "Time lost to gaps above the threshold on each CPU, split by cause.",
            causes_svg("Noise by cause", &noise_cause_bars(r)),
        ),
        plot(
            &format!("{prefix}-histogram"),
            "Loop iteration time per CPU",
            "Every iteration of the spinning loop on a log count axis: the body is the loop's own cost, \
             everything to the right is an interruption; the dashed line marks the longest gap.",
            histogram_svg("Loop iteration time", &series),
        ),
        plot(
            &format!("{prefix}-over-time"),
            "Longest gap over time",
            "Per-window longest gap: periodic noise (RT throttling, ticks) shows as a regular pattern.",
            over_time_svg("Longest gap per window", "longest gap", &over),
        ),
    ];
    for c in &r.cpus {
        if let Some(s) = crate::text::noise::throttling_sentence(c.cpu.0, &c.rt_throttling) {
            blocks.insert(1, Block::Callout(s));
        }
    }
    let mut gap_rows = Vec::new();
    for c in &r.cpus {
        for g in c.gaps.top.iter().take(5) {
            gap_rows.push(vec![c.cpu.0.to_string(), us(g.duration_ns.0), format!("{:.6}", g.start_ns.0 as f64 / 1e9)]);
        }
    }
    if !gap_rows.is_empty() {
        blocks.push(Block::Text("The longest gaps (CLOCK_MONOTONIC start):".into()));
        blocks.push(Block::Table { head: ["CPU", "gap", "start (s)"].map(String::from).to_vec(), rows: gap_rows });
    }
    let mut irq_rows = Vec::new();
    for c in &r.cpus {
        for d in c.counters.interrupts.iter().chain(&c.counters.softirqs).take(8) {
            irq_rows.push(vec![c.cpu.0.to_string(), d.id.clone(), d.description.clone(), d.delta.to_string()]);
        }
    }
    if !irq_rows.is_empty() {
        blocks.push(Block::Text(
            "Interrupt and softirq counts during the run (/proc/interrupts, /proc/softirqs):".into(),
        ));
        blocks.push(Block::Table {
            head: ["CPU", "line", "description", "count"].map(String::from).to_vec(),
            rows: irq_rows,
        });
    }
    vec![Section { id: format!("{prefix}-noise"), heading: "OS and hardware noise".into(), blocks }]
}

/// The report page of a timer result.
pub fn timer_page(r: &TimerResult, name: &str) -> Page {
    let mut text = Vec::new();
    let _ = crate::text::timer::write_timer(&mut text, r);
    let mut sections = timer_sections(r, "timer");
    sections.push(Section {
        id: "text".into(),
        heading: "Text summary".into(),
        blocks: vec![Block::Pre(String::from_utf8_lossy(&text).into_owned())],
    });
    Page {
        title: format!("latscope timer: {name}"),
        subtitle: format!("{} CPUs, max {}", r.cpus.len(), us(r.all.max_ns)),
        metadata: vec![("Run".into(), r.metadata.clone())],
        findings: r.findings.clone(),
        warnings: r.warnings.clone(),
        sections,
    }
}

/// The report page of a noise result.
pub fn noise_page(r: &NoiseResult, name: &str) -> Page {
    let mut text = Vec::new();
    let _ = crate::text::noise::write_noise(&mut text, r);
    let mut sections = noise_sections(r, "noise");
    sections.push(Section {
        id: "text".into(),
        heading: "Text summary".into(),
        blocks: vec![Block::Pre(String::from_utf8_lossy(&text).into_owned())],
    });
    let max = r.cpus.iter().map(|c| c.max_gap_ns).max().unwrap_or(0);
    Page {
        title: format!("latscope noise: {name}"),
        subtitle: format!("{} CPUs, longest gap {}", r.cpus.len(), us(max)),
        metadata: vec![("Run".into(), r.metadata.clone())],
        findings: r.findings.clone(),
        warnings: r.warnings.clone(),
        sections,
    }
}

/// The report page of an audit result.
pub fn audit_page(r: &AuditResult, name: &str) -> Page {
    Page {
        title: format!("latscope audit: {name}"),
        subtitle: crate::html::severity_counts(&r.findings),
        metadata: vec![("Machine".into(), r.metadata.clone())],
        findings: Vec::new(),
        warnings: Vec::new(),
        sections: vec![Section {
            id: "findings".into(),
            heading: "Findings".into(),
            blocks: vec![Block::Findings(r.findings.clone())],
        }],
    }
}

/// The report page of a comparison, with overlaid histograms and percentile plots.
pub fn compare_page(c: &Comparison, metadata: Vec<(String, latscope_model::RunMetadata)>) -> Page {
    let series: Vec<HistSeries> = c.runs.iter().map(|r| r.series()).collect();
    let what = match c.runs.first().map(|r| r.measure) {
        Some(Measure::Noise) => "Loop iteration time",
        _ => "Wakeup latency",
    };
    let mut blocks: Vec<Block> = c.verdicts.iter().map(|v| Block::Callout(v.clone())).collect();
    blocks.push(plot(
        "compare-histogram",
        "Histograms, all CPUs",
        "Each run's histogram over all its CPUs on a log count axis, maxima marked.",
        histogram_svg(what, &series),
    ));
    blocks.push(plot(
        "compare-percentiles",
        "Percentiles, all CPUs",
        "Each run's latency per percentile, log-scaled tail.",
        cdf_svg(&format!("{what} percentiles"), &series),
    ));
    blocks.push(Block::Pre(crate::compare::text::render(c)));
    let mut per_cpu = Vec::new();
    for row in c.rows.iter().skip(1) {
        let s: Vec<HistSeries> = c
            .runs
            .iter()
            .zip(&row.runs)
            .filter_map(|(r, st)| {
                st.as_ref().map(|st| HistSeries {
                    label: format!("{}: {}", r.letter, r.name),
                    buckets: st.histogram.clone(),
                    max_ns: st.max_ns,
                })
            })
            .collect();
        let id = format!("compare-{}", row.scope.to_lowercase().replace(' ', "-"));
        per_cpu.push(plot(
            &format!("{id}-percentiles"),
            &format!("Percentiles, {}", row.scope),
            "The runs on this CPU.",
            cdf_svg(&format!("{what} percentiles, {}", row.scope), &s),
        ));
    }
    let mut sections = vec![Section { id: "compare".into(), heading: "Comparison".into(), blocks }];
    if !per_cpu.is_empty() {
        sections.push(Section { id: "compare-cpus".into(), heading: "Per CPU".into(), blocks: per_cpu });
    }
    Page {
        title: "latscope compare".into(),
        subtitle: c.runs.iter().map(|r| format!("{} = {}", r.letter, r.name)).collect::<Vec<_>>().join(", "),
        metadata,
        findings: Vec::new(),
        warnings: c.warnings.clone(),
        sections,
    }
}

/// Timelines of the worst wakeups of a timer result drawn from traced `slices` (same clock as the
/// samples: ftrace `mono` is CLOCK_MONOTONIC). At most `n` per run, the worst first.
pub fn worst_case_timelines(r: &TimerResult, slices: &CpuSlices, measured: &[(CpuId, Pid)], n: usize) -> Vec<Block> {
    let mut out = Vec::new();
    for (i, (cpu, w)) in
        r.worst_first().into_iter().filter(|(cpu, _)| slices.cpus.contains_key(cpu)).take(n).enumerate()
    {
        let pad = (w.latency_ns / 2).clamp(50_000, 2_000_000);
        let t = Timeline {
            title: format!("CPU {}: wakeup {} late", cpu.0, us(w.latency_ns)),
            from: Nanos(w.expected_ns.saturating_sub(pad)),
            to: Nanos(w.actual_ns + pad / 2),
            slices: slices.cpus.get(&cpu).cloned().unwrap_or_default(),
            marks: vec![
                Mark { ts: Nanos(w.expected_ns), label: "expected wakeup".into() },
                Mark { ts: Nanos(w.actual_ns), label: format!("woke (+{})", us(w.latency_ns)) },
            ],
            measured_pid: measured.iter().find(|m| m.0 == cpu).map(|m| m.1),
        };
        out.push(plot(
            &format!("timeline-{}", i + 1),
            &format!("What ran on CPU {} around worst wakeup #{}", cpu.0, i + 1),
            "Tasks, IRQs and softirqs on the CPU from the trace; the measured thread is green, the vertical \
             lines are the expected and the actual wakeup.",
            cpu_timeline_svg(&t),
        ));
    }
    out
}

/// The report page of `latscope run`: verdict first, then the measurements, timelines and the audit.
pub fn run_page(r: &RunResult, timelines: Vec<Block>) -> Page {
    let mut blocks: Vec<Block> = Vec::new();
    if r.causes.is_empty() {
        blocks.push(Block::Callout("No cause of latency stood out in this run.".into()));
    }
    for (i, c) in r.causes.iter().enumerate() {
        blocks.push(Block::Callout(format!("{}. {}", i + 1, verdict::title(c))));
        let mut items: Vec<String> = verdict::evidence(c).into_iter().map(|e| format!("evidence: {e}")).collect();
        if let Some(remedy) = verdict::remedy(c) {
            items.push(format!("remedy: {remedy}"));
        }
        blocks.push(Block::List(items));
    }
    if !r.skipped.is_empty() {
        blocks.push(Block::Text("Skipped:".into()));
        blocks.push(Block::List(r.skipped.iter().map(|m| m.to_string()).collect()));
    }
    let mut sections = vec![Section { id: "verdict".into(), heading: "Verdict".into(), blocks }];
    if let Some(t) = &r.timer {
        sections.extend(timer_sections(t, "timer"));
    }
    if !timelines.is_empty() {
        sections.push(Section {
            id: "worst-cases".into(),
            heading: "Worst cases, from the trace".into(),
            blocks: timelines,
        });
    }
    if let Some(n) = &r.noise {
        sections.extend(noise_sections(n, "noise"));
    }
    let mut findings = Vec::new();
    if let Some(a) = &r.audit {
        findings = a.findings.clone();
    }
    let mut warnings = r.warnings.clone();
    for w in r.timer.iter().flat_map(|t| &t.warnings).chain(r.noise.iter().flat_map(|n| &n.warnings)) {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    Page {
        title: format!(
            "latscope run on {}",
            if r.metadata.hostname.is_empty() { "this machine" } else { &r.metadata.hostname }
        ),
        subtitle: format!(
            "{} each measurement, {} found{}",
            us(r.duration_each_ns),
            crate::human::counted(r.causes.len() as u64, "cause", "causes"),
            if r.skipped.is_empty() {
                String::new()
            } else {
                format!(", {} skipped", crate::human::counted(r.skipped.len() as u64, "part", "parts"))
            }
        ),
        metadata: vec![("Machine and run".into(), r.metadata.clone())],
        findings,
        warnings,
        sections,
    }
}

/// The report page of `latscope analyze`: the verdicts with their hints, the decomposed wakeups with a
/// CPU timeline of each (drawn from `events`), and the IRQ/softirq duration table.
pub fn analysis_page(a: &latscope_analyze::analysis::Analysis, events: &[latscope_model::Event]) -> Page {
    let mut blocks: Vec<Block> = Vec::new();
    if a.verdicts.is_empty() {
        blocks.push(Block::Callout("Nothing in this trace crossed the reporting limits.".into()));
    }
    for v in &a.verdicts {
        blocks.push(Block::Callout(analysis_verdicts::sentence(a, v)));
        let mut items = Vec::new();
        items.extend(explain::why(&v.explanation).map(|w| format!("why: {w}")));
        items.extend(explain::remedy(&v.explanation).map(|r| format!("remedy: {r}")));
        if !items.is_empty() {
            blocks.push(Block::List(items));
        }
    }
    let mut sections = vec![Section { id: "verdict".into(), heading: "Verdict".into(), blocks }];
    if !a.wakeups.is_empty() {
        let built = crate::slices::build(events);
        let mut blocks = vec![Block::Table {
            head: ["task", "CPU", "latency", "largest part", "explanation"].map(String::from).to_vec(),
            rows: a
                .wakeups
                .iter()
                .map(|w| {
                    let top = w.headline.as_ref();
                    let sentence = explain::with_remedy(analysis_verdicts::wakeup_sentence(w), top);
                    vec![
                        format!("{}:{}", w.task.comm, w.task.pid),
                        w.cpu.0.to_string(),
                        us(w.latency.0),
                        top.map_or("-".into(), |c| format!("{} ({})", explain::label(c), us(c.magnitude.0))),
                        sentence,
                    ]
                })
                .collect(),
        }];
        for (i, w) in a.wakeups.iter().take(3).enumerate() {
            let pad = Nanos((w.latency.0 / 4).clamp(20_000, 1_000_000));
            let t = Timeline {
                title: format!("CPU {}: {}:{} woke {} late", w.cpu.0, w.task.comm, w.task.pid, us(w.latency.0)),
                from: w.start.saturating_sub(pad),
                to: w.end + pad,
                slices: built.cpus.get(&w.cpu).cloned().unwrap_or_default(),
                marks: vec![
                    Mark { ts: w.start, label: "expected wakeup".into() },
                    Mark {
                        ts: w.switch_in,
                        label: format!("switched in (+{})", us(w.switch_in.saturating_sub(w.start).0)),
                    },
                ],
                measured_pid: Some(w.task.pid),
            };
            blocks.push(plot(
                &format!("wakeup-{}", i + 1),
                &format!("What ran on CPU {} around wakeup #{}", w.cpu.0, i + 1),
                "Tasks, IRQs and softirqs on the CPU from the trace; the woken task is green.",
                cpu_timeline_svg(&t),
            ));
        }
        sections.push(Section { id: "wakeups".into(), heading: "Wakeups, decomposed".into(), blocks });
    }
    if !a.irq_stats.is_empty() {
        let rows = a
            .irq_stats
            .iter()
            .take(20)
            .map(|s| {
                vec![
                    format!("{} {}", s.kind, s.name),
                    s.cpu.0.to_string(),
                    s.summary.count.to_string(),
                    us(s.summary.max_ns),
                    us(s.total.0),
                ]
            })
            .collect();
        sections.push(Section {
            id: "irq-stats".into(),
            heading: "IRQ, softirq and vector durations".into(),
            blocks: vec![Block::Table {
                head: ["handler", "CPU", "count", "max", "total"].map(String::from).to_vec(),
                rows,
            }],
        });
    }
    let mut warnings = Vec::new();
    for (cpu, n) in &a.source.lost {
        if *n > 0 {
            warnings.push(format!("CPU {}: {n} events lost: conclusions may miss something", cpu.0));
        }
    }
    Page {
        title: format!("latscope analyze: {}", a.source.name),
        subtitle: format!("{} events over {}, {} verdict(s)", a.source.events, us(a.source.span.0), a.verdicts.len()),
        metadata: Vec::new(),
        findings: Vec::new(),
        warnings,
        sections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuTimer, LatencyHistogram, RunMetadata, TimerOptions, TimerStats, WindowRow};

    fn timer() -> TimerResult {
        let mut r = TimerResult::new(
            RunMetadata::default(),
            TimerOptions { interval_ns: 1_000_000, ..TimerOptions::default() },
        );
        let mut all = LatencyHistogram::new();
        for cpu in 0..2u32 {
            let mut h = LatencyHistogram::new();
            for i in 0..5_000u64 {
                h.record(Nanos(3_000 + (i * 37) % 4_000 + u64::from(cpu) * 500));
            }
            h.record(Nanos(250_000));
            all.merge(&h);
            r.cpus.push(CpuTimer {
                cpu: CpuId(cpu),
                stats: TimerStats::from_histogram(&h, 0, None),
                windows: (0..5)
                    .map(|i| WindowRow {
                        index: i,
                        offset_ns: i * 1_000_000_000,
                        max_ns: 9_000,
                        mean_ns: 4_000.0,
                        ..WindowRow::default()
                    })
                    .collect(),
                ..CpuTimer::default()
            });
        }
        r.all = TimerStats::from_histogram(&all, 0, None);
        r
    }

    #[test]
    fn analysis_page_draws_the_decomposed_wakeups() {
        use latscope_analyze::analysis::{analyze, AnalyzeOptions};
        // cyclictest blocked by a SCHED_FIFO 97 spinner, recorded on this VM.
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/live/spinner-cyclictest-trace.txt");
        let trace = latscope_decode::decode_file(&p).expect("decode");
        let a = analyze("fixture", &trace, &AnalyzeOptions::default());
        let page = analysis_page(&a, &trace.events);
        let files = page.render();
        assert!(files.index_html.contains("latscope analyze: fixture"));
        assert!(!a.wakeups.is_empty(), "the fixture has decomposable wakeups");
        assert_eq!(files.svgs.len(), a.wakeups.len().min(3));
        let texts: String = files.svgs.iter().map(|(_, s)| s.as_str()).collect();
        assert!(texts.contains("expected wakeup") && texts.contains("switched in"));
        for (_, svg) in &files.svgs {
            roxmltree::Document::parse(svg).expect("valid svg");
        }
        if !a.irq_stats.is_empty() {
            assert!(files.index_html.contains("IRQ, softirq and vector durations"));
        }
    }

    /// `timer --trace --graph`'s diff in the report: computed from a real function_graph capture (Debian 6.1 in
    /// the qemu guest, a shell writing `<3>` messages to /dev/kmsg on the measured CPU; fixtures/dat/README.md),
    /// the page lists the calls only the worst wakeup made, with the times the diff gives them.
    #[test]
    fn the_graph_diff_is_in_the_timer_page() {
        use latscope_model::EventKind;
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/dat/debian-6.1.0-56-amd64-qemu-kmsg-function_graph-v7.dat");
        let ev = latscope_decode::decode_file(&p).expect("decode").events;
        let tid = ev
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::HrtimerStart { function, mode, .. }
                    if &**function == "hrtimer_wakeup" && &**mode == "ABS" =>
                {
                    Some(e.pid)
                }
                _ => None,
            })
            .expect("the measuring thread");
        let g = latscope_analyze::wakeup_graph::compare(&ev, CpuId(1), tid, &[]).expect("compared");
        let top = g.entries.iter().find(|e| e.extra_ns > 0).expect("an extra call").clone();
        let mut r = timer();
        r.trace = Some(latscope_model::TimerTrace { graph: Some(g), ..latscope_model::TimerTrace::default() });
        let html = timer_page(&r, "t.json").render().index_html;
        assert!(html.contains("Function graph of CPU 1: the worst wakeup"), "no graph section");
        let last = top.path.last().expect("path").to_string();
        assert!(html.contains(&last), "the largest extra call {last} is not on the page");
        assert!(html.contains(&us(top.extra_ns.unsigned_abs())), "its time is not on the page");
        assert!(html.contains("only in the worst"));
    }

    #[test]
    fn traced_wakeups_are_listed_with_their_explanation() {
        let mut r = timer();
        use latscope_model::{Culprit, Explanation, Hint, TaskRef};
        let mut h = Explanation::new(
            CauseKind::BlockingTask,
            Culprit::task(TaskRef::new("spin", 60, Some(2))),
            Nanos::from_us(580),
            Some(CpuId(1)),
        );
        h.hint = Some(Hint { remedy: "move spin off CPU 1".into(), ..Hint::default() });
        r.trace = Some(latscope_model::TimerTrace {
            worst: vec![latscope_model::TracedWakeup {
                matched: latscope_model::SampleMatch::Wakeup,
                cpu: CpuId(1),
                sample_latency_ns: Nanos(612_000),
                trace_latency_ns: Nanos(610_000),
                headline: Some(h),
                ..latscope_model::TracedWakeup::default()
            }],
            events: 1234,
            ..latscope_model::TimerTrace::default()
        });
        let html = timer_page(&r, "t.json").render().index_html;
        assert!(html.contains("explained from the trace (1234 events)"), "table header");
        assert!(
            html.contains("spin (pid 60, SCHED_FIFO/RR prio 97) running on CPU 1")
                && html.contains("move spin off CPU 1"),
            "{html}"
        );
    }

    #[test]
    fn timer_page_has_every_plot_and_the_table() {
        let page = timer_page(&timer(), "t.json");
        let ids: Vec<&str> = page.plots().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["timer-histogram", "timer-percentiles", "timer-over-time"]);
        let files = page.render();
        assert_eq!(files.svgs.len(), 3);
        assert!(files.index_html.contains("<td>all</td>"));
        for (_, svg) in &files.svgs {
            roxmltree::Document::parse(svg).expect("valid svg");
        }
    }
}
