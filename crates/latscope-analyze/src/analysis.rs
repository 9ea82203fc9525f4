//! [`Analysis`]: everything `latscope analyze` finds in one trace (latency-tracer report, irqs-off sections,
//! hrtimer lateness, wakeup breakdowns, RT throttling, function-graph trees and diff, IRQ statistics), and
//! the verdict sentences that lead the report, each with the trace lines that prove it.

use crate::funcgraph::{self, CallNode, FuncGraphReport, TreeDiff};
use crate::hints::{self, Hint};
use crate::hrtimer::{self, HrtimerReport};
use crate::irq_stats::{irq_stats, IrqStat};
use crate::irqsoff::{self, IrqsOffReport};
use crate::latency_report::{latency_report, LatencyReport};
use crate::symbol;
use crate::timeline::{IrqsOffSource, Timeline};
use crate::wakeup::{self, ThrottleGap, WakeupBreakdown, WakeupContext, WakeupSelection};
use latscope_model::DecodedTrace;
use latscope_model::{CpuId, Event, Nanos};
use serde::Serialize;
use std::collections::BTreeMap;

/// What to analyse and how much to report.
#[derive(Clone, Debug, Default)]
pub struct AnalyzeOptions {
    /// Which wakeups to decompose, and how many.
    pub selection: WakeupSelection,
    /// Findings above this make [`Analysis::exceeded`] true.
    pub threshold: Option<Nanos>,
}

/// Where the analysed events came from.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SourceInfo {
    /// File name (or `live`).
    pub name: String,
    /// Recognised format.
    pub format: Option<String>,
    /// Tracer named by the trace.
    pub tracer: Option<String>,
    /// Number of events.
    pub events: u64,
    /// CPUs that had events.
    pub cpus: Vec<CpuId>,
    /// First to last event.
    #[serde(rename = "span_ns")]
    pub span: Nanos,
    /// Events lost per CPU.
    pub lost: BTreeMap<CpuId, u64>,
    /// CPUs with a lost-events marker of unknown count.
    pub lost_unknown: Vec<CpuId>,
    /// Decoder warnings (lines skipped).
    pub warnings: Vec<String>,
}

/// What a verdict is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// A latency tracer's recorded maximum.
    LatencyTrace,
    /// An irqs-off section.
    IrqsOff,
    /// A late hrtimer.
    HrtimerLate,
    /// A wakeup latency breakdown.
    Wakeup,
    /// RT throttling.
    RtThrottling,
    /// A function-graph difference.
    FuncGraphDiff,
    /// The slowest function-graph call and where its time went.
    FuncGraphSlowest,
    /// Events were lost: conclusions may be incomplete.
    LostEvents,
}

/// A trace line that proves a verdict.
#[derive(Clone, Debug, Serialize)]
pub struct EvidenceLine {
    /// Index of the event in the analysed trace.
    pub index: usize,
    /// The event.
    pub event: Event,
}

/// One conclusion.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// What it is about.
    pub kind: VerdictKind,
    /// How big the finding is (the latency, section length, lateness…).
    #[serde(rename = "magnitude_ns")]
    pub magnitude: Nanos,
    /// The sentence.
    pub sentence: String,
    /// Known causes and their remedies.
    pub hints: Vec<Hint>,
    /// The trace lines that prove it.
    pub evidence: Vec<EvidenceLine>,
}

/// RT throttling over the whole trace.
#[derive(Clone, Debug, Serialize)]
pub struct ThrottleSummary {
    /// Number of gaps.
    pub count: usize,
    /// Median gap.
    #[serde(rename = "median_ns")]
    pub median: Nanos,
    /// Longest gap.
    #[serde(rename = "max_ns")]
    pub max: Nanos,
    /// Sum of the gaps.
    #[serde(rename = "total_ns")]
    pub total: Nanos,
    /// Time from the first gap's start to the last gap's end (over which `total` was taken away).
    #[serde(rename = "over_ns")]
    pub over: Nanos,
    /// Median time from one gap's start to the next (the RT period when throttling every period).
    #[serde(rename = "interval_ns")]
    pub interval: Option<Nanos>,
    /// The longest gaps.
    pub gaps: Vec<ThrottleGap>,
}

/// Everything found in one trace.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// Always [`latscope_model::wire::SCHEMA`].
    pub schema: &'static str,
    /// Always `analysis`.
    pub kind: &'static str,
    /// Where the events came from.
    pub source: SourceInfo,
    /// The conclusions, most important first.
    pub verdicts: Vec<Verdict>,
    /// Latency-tracer report, for latency-tracer traces.
    pub latency_trace: Option<LatencyReport>,
    /// Irqs-off sections.
    pub irqs_off: IrqsOffReport,
    /// hrtimer lateness.
    pub hrtimers: HrtimerReport,
    /// The worst wakeups, decomposed.
    pub wakeups: Vec<WakeupBreakdown>,
    /// RT throttling, when seen.
    pub throttling: Option<ThrottleSummary>,
    /// Function-graph trees, when the trace has them.
    pub funcgraph: Option<FuncGraphReport>,
    /// `--diff NORMAL ABNORMAL`: the aligned trees.
    pub diff: Option<TreeDiff>,
    /// IRQ / softirq / vector duration statistics.
    pub irq_stats: Vec<IrqStat>,
    /// The threshold the findings were checked against.
    #[serde(rename = "threshold_ns")]
    pub threshold: Option<Nanos>,
    /// Whether a finding exceeded it.
    pub exceeded: bool,
}

impl Analysis {
    /// The largest finding.
    pub fn worst(&self) -> Nanos {
        self.verdicts
            .iter()
            .filter(|v| v.kind != VerdictKind::LostEvents)
            .map(|v| v.magnitude)
            .max()
            .unwrap_or_default()
    }
}

fn source_info(name: &str, t: &DecodedTrace) -> SourceInfo {
    let mut cpus: Vec<CpuId> = t.events.iter().map(|e| e.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let span = match (t.events.first(), t.events.last()) {
        (Some(a), Some(b)) => b.ts - a.ts,
        _ => Nanos::ZERO,
    };
    SourceInfo {
        name: name.to_string(),
        format: t.info.format.map(|f| format!("{f:?}")),
        tracer: t.info.tracer.clone(),
        events: t.events.len() as u64,
        cpus,
        span,
        lost: t.info.lost.clone(),
        lost_unknown: t.info.lost_unknown.clone(),
        warnings: t.warnings.iter().map(|w| format!("{}: {}", w.location, w.message)).collect(),
    }
}

/// Analyses one decoded trace.
pub fn analyze(name: &str, trace: &DecodedTrace, opts: &AnalyzeOptions) -> Analysis {
    let events = &trace.events;
    let top = opts.selection.top.max(1);
    let timeline = Timeline::build(events);
    let expiries = hrtimer::expiries(events);
    let hrtimers = hrtimer::report(events, &timeline, &expiries, top);
    let irqs_off = irqsoff::report(&timeline, &expiries, &hrtimers.printed, top);
    let ctx = WakeupContext { events, timeline: &timeline, expiries: &expiries };
    let wakeups = wakeup::decompose_wakeups(&ctx, &opts.selection);
    let throttling = throttle_summary(wakeup::throttle_gaps(events, &timeline), top);
    let trees = funcgraph::call_trees(events);
    let funcgraph = (!trees.is_empty()).then(|| funcgraph::report(&trees, top));
    let latency_trace = trace.info.latency.as_ref().map(|h| latency_report(h, events));
    let mut a = Analysis {
        schema: latscope_model::wire::SCHEMA,
        kind: "analysis",
        source: source_info(name, trace),
        verdicts: Vec::new(),
        latency_trace,
        irqs_off,
        hrtimers,
        wakeups,
        throttling,
        funcgraph,
        diff: None,
        irq_stats: irq_stats(&timeline),
        threshold: opts.threshold,
        exceeded: false,
    };
    a.verdicts = crate::verdict::verdicts(&a, events);
    finish(&mut a);
    a
}

/// Analyses `abnormal` and diffs its function-graph trees against `normal`'s.
pub fn analyze_diff(normal: (&str, &DecodedTrace), abnormal: (&str, &DecodedTrace), opts: &AnalyzeOptions) -> Analysis {
    let mut a = analyze(abnormal.0, abnormal.1, opts);
    let n = funcgraph::call_trees(&normal.1.events);
    let ab = funcgraph::call_trees(&abnormal.1.events);
    a.diff = diff_roots(&n, &ab);
    if let Some(v) =
        a.diff.as_ref().and_then(|d| crate::verdict::diff_verdict(d, &format!("{} vs {}", normal.0, abnormal.0)))
    {
        a.verdicts.insert(0, v);
    }
    finish(&mut a);
    a
}

fn diff_roots(normal: &[CallNode], abnormal: &[CallNode]) -> Option<TreeDiff> {
    let ab = funcgraph::pick_root(abnormal, normal)?;
    let n = normal.iter().filter(|t| t.func == ab.func).min_by_key(|t| t.total).or_else(|| normal.first())?;
    Some(funcgraph::diff(n, ab))
}

fn finish(a: &mut Analysis) {
    a.exceeded = a.threshold.is_some_and(|t| a.worst() > t);
}

fn throttle_summary(mut gaps: Vec<ThrottleGap>, top: usize) -> Option<ThrottleSummary> {
    if gaps.is_empty() {
        return None;
    }
    let mut starts: Vec<Nanos> = gaps.iter().map(|g| g.start).collect();
    starts.sort_unstable();
    let mut intervals: Vec<Nanos> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    intervals.sort_unstable();
    let mut durations: Vec<Nanos> = gaps.iter().map(ThrottleGap::duration).collect();
    durations.sort_unstable();
    let count = gaps.len();
    let total = durations.iter().fold(Nanos::ZERO, |a, d| a + *d);
    let first = gaps.iter().map(|g| g.start).min().unwrap_or_default();
    let last = gaps.iter().map(|g| g.end).max().unwrap_or_default();
    gaps.sort_by_key(|g| std::cmp::Reverse(g.duration()));
    gaps.truncate(top);
    Some(ThrottleSummary {
        count,
        median: durations[(count - 1) / 2],
        max: durations[count - 1],
        total,
        over: last - first,
        interval: (!intervals.is_empty()).then(|| intervals[(intervals.len() - 1) / 2]),
        gaps,
    })
}

/// A duration for a sentence: `950 ns`, `12.4 us`, `10.966 ms`, `1.5 s`.
pub fn human(d: Nanos) -> String {
    let n = d.0;
    if n < 1_000 {
        format!("{n} ns")
    } else if n < 1_000_000 {
        format!("{} us", trim3(n as f64 / 1e3))
    } else if n < 1_000_000_000 {
        format!("{} ms", trim3(n as f64 / 1e6))
    } else {
        format!("{} s", trim3(n as f64 / 1e9))
    }
}

fn trim3(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `console_unlock+0xc0/0x510 (parent vprintk_emit)` style for an irqs-off source.
pub fn section_where(source: &IrqsOffSource) -> Option<(String, String, String)> {
    match source {
        IrqsOffSource::Preemptirq { caller, parent, end_caller, .. } => Some((
            symbol::short(caller).to_string(),
            symbol::short(end_caller).to_string(),
            symbol::bare(parent).to_string(),
        )),
        IrqsOffSource::Flags => None,
    }
}

/// Whether a hint applies to an irqs-off section's caller or parent.
pub fn section_hints(source: &IrqsOffSource) -> Vec<Hint> {
    match section_where(source) {
        Some((c, e, p))
            if [c.as_str(), e.as_str(), p.as_str()].iter().any(|s| hints::is_console_func(symbol::bare(s))) =>
        {
            vec![hints::console_print()]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        assert_eq!(human(Nanos(10_966_000)), "10.966 ms");
        assert_eq!(human(Nanos(9_656_000)), "9.656 ms");
        assert_eq!(human(Nanos(7_505)), "7.505 us");
        assert_eq!(human(Nanos(950)), "950 ns");
        assert_eq!(human(Nanos(50_000_000)), "50 ms");
    }
}
