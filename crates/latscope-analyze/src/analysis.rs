//! [`Analysis`]: everything `latscope analyze` finds in one trace (latency-tracer report, irqs-off sections,
//! hrtimer lateness, wakeup breakdowns, RT throttling, function-graph trees and diff, IRQ statistics), and
//! the verdicts that lead the report, each a typed explanation with the trace lines that prove it.

use crate::disabled::{self, DisabledReport};
use crate::funcgraph::{self, CallNode, FuncGraphReport, TreeDiff};
use crate::hrtimer::{self, HrtimerReport};
use crate::irq_stats::{irq_stats, IrqStat};
use crate::irqsoff::{self, IrqsOffReport};
use crate::latency_report::{latency_report, LatencyReport};
use crate::parallel;
use crate::remedy::RemedyContext;
use crate::reported::{self, ReportedLatency};
use crate::throttling::{self, ThrottleSummary};
use crate::tick_storm::{tick_storms, TickStorm};
use crate::timeline::Timeline;
use crate::verdict::{self, Verdict, VerdictParts};
use crate::wakeup::{self, WakeupBreakdown, WakeupContext, WakeupSelection};
use latscope_model::{CpuId, Nanos};
use latscope_model::{DecodedTrace, TraceInfo, Warning};
use serde::Serialize;
use std::collections::BTreeMap;

/// What to analyse and how much to report.
#[derive(Clone, Debug, Default)]
pub struct AnalyzeOptions {
    /// Which wakeups to decompose, and how many.
    pub selection: WakeupSelection,
    /// Findings above this make [`Analysis::exceeded`] true.
    pub threshold: Option<Nanos>,
    /// What the remedies may use about the machine the trace came from (nothing, by default).
    pub remedy: RemedyContext,
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
    /// Number of events, as `trace-cmd report` counts them (without kernel stacks and lost-event markers).
    pub events: u64,
    /// Kernel stacks recorded after events.
    pub stacks: u64,
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
    /// Whether the times count clock cycles, not ns (a cycle clock without a conversion in the file).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cycles: bool,
    /// Words the author of a pasted trace wrote after its lines (`FILE:LINE: <==== try to wake up …`): read,
    /// not decoded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
    /// Sections with bottom halves or preemption disabled (flags column).
    pub disabled: DisabledReport,
    /// hrtimer lateness.
    pub hrtimers: HrtimerReport,
    /// The worst wakeups, decomposed.
    pub wakeups: Vec<WakeupBreakdown>,
    /// RT throttling, when seen.
    pub throttling: Option<ThrottleSummary>,
    /// Latencies the trace states itself (cyclictest's threshold mark, synthetic latency events).
    pub reported: Vec<ReportedLatency>,
    /// The one the explanation is anchored on (an index into `reported`); when its task's wakeup is in the
    /// trace, it is the first of `wakeups` and `anchored_wakeup` is set.
    pub anchor: Option<usize>,
    /// Whether the first of `wakeups` is the anchor's wakeup.
    pub anchored_wakeup: bool,
    /// Tick storms, most expiries first.
    pub tick_storms: Vec<TickStorm>,
    /// Priority inheritance (`sched_pi_setprio`): the tasks boosted because a higher-priority task waited
    /// on a lock they held.
    pub pi: crate::pi_boost::PiReport,
    /// Kernel lock contention (`lock:contention_begin`/`end`): the locks waited for and the longest waits.
    pub locks: crate::lock_contention::LockReport,
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
    /// What an rtla timerlat output said, when that was the input (`crate::rtla`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtla: Option<latscope_model::RtlaOutput>,
    /// The hwlat tracer's samples, when the trace has them (`crate::hwlat`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hwlat: Option<crate::hwlat::HwlatReport>,
    /// The osnoise tracer's records, when the trace has them (`crate::osnoise_report`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub osnoise: Option<crate::osnoise_report::OsnoiseReport>,
    /// The timerlat tracer's samples, when the trace has them (`crate::timerlat_report`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timerlat: Option<crate::timerlat_report::TimerlatReport>,
    /// When the trace was too large to hold and was analysed in windows (`crate::windowed`): why, and the
    /// windows; the rest of the analysis is then the whole trace's all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windowed: Option<crate::windowed::Windowed>,
}

impl Analysis {
    /// The largest finding.
    pub fn worst(&self) -> Nanos {
        verdict::worst(&self.verdicts)
    }
}

fn source_info(name: &str, t: &DecodedTrace) -> SourceInfo {
    // A set of the few CPUs, not a vector of one entry per event sorted (0.1 s at 6 M events).
    let mut seen = std::collections::BTreeSet::new();
    let mut last = None;
    for e in &t.events {
        if last != Some(e.cpu) {
            seen.insert(e.cpu);
            last = Some(e.cpu);
        }
    }
    let cpus: Vec<CpuId> = seen.into_iter().collect();
    let span = match (t.events.first(), t.events.last()) {
        (Some(a), Some(b)) => b.ts - a.ts,
        _ => Nanos::ZERO,
    };
    let (events, stacks) = latscope_model::count_events_and_stacks(&t.events);
    SourceInfo { events, stacks, cpus, span, ..SourceInfo::described(name, &t.info, &t.warnings) }
}

impl SourceInfo {
    /// What the input named `name` said about itself (`info`) and what its decoder skipped (`warnings`); the
    /// counts, CPUs and span are left for the caller, who counted the events.
    pub fn described(name: &str, info: &TraceInfo, warnings: &[Warning]) -> SourceInfo {
        SourceInfo {
            name: name.to_string(),
            format: info.format.map(|f| format!("{f:?}")),
            tracer: info.tracer.clone(),
            lost: info.lost.clone(),
            lost_unknown: info.lost_unknown.clone(),
            warnings: warnings.iter().map(|w| format!("{}: {}", w.location, w.message)).collect(),
            cycles: info.cycles,
            notes: info.annotations.iter().map(|a| format!("{}: {}", a.location, a.text)).collect(),
            ..SourceInfo::default()
        }
    }
}

/// What the passes that read only the events find (run beside the wakeup pairing).
struct EventPasses {
    source: SourceInfo,
    reported: Vec<ReportedLatency>,
    storms: Vec<TickStorm>,
    funcgraph: Option<FuncGraphReport>,
    pi: crate::pi_boost::PiReport,
    locks: crate::lock_contention::LockReport,
    threads: crate::latscope_threads::LatscopeThreads,
}

impl EventPasses {
    fn run(name: &str, trace: &DecodedTrace, top: usize) -> EventPasses {
        let events = &trace.events;
        EventPasses {
            source: source_info(name, trace),
            reported: reported::reported(events),
            storms: tick_storms(events),
            funcgraph: crate::funcgraph_stream::report_of(events, top),
            pi: crate::pi_boost::pi_boosts(events),
            locks: crate::lock_contention::lock_contention(events),
            threads: crate::latscope_threads::LatscopeThreads::named_in(events),
        }
    }
}

/// Analyses one decoded trace. Passes that do not need each other's results run two at a time, on two
/// threads; the result is the same as running them in turn.
pub fn analyze(name: &str, trace: &DecodedTrace, opts: &AnalyzeOptions) -> Analysis {
    let events = &trace.events;
    let top = opts.selection.top.max(1);
    let (expiries, timeline) = parallel::both(|| hrtimer::expiries(events), || Timeline::build(events));
    let (gaps, (hrtimers, irqs_off, disabled, irq_stats)) = parallel::both(
        || throttling::throttle_gaps(events, &timeline),
        || {
            let hrtimers = hrtimer::report(events, &timeline, &expiries, top, &opts.remedy);
            let irqs_off = irqsoff::report(&timeline, &expiries, &hrtimers.printed, top);
            (hrtimers, irqs_off, disabled::report(&timeline, top), irq_stats(&timeline))
        },
    );
    let ctx = WakeupContext { remedy: opts.remedy.clone(), ..WakeupContext::new(events, &timeline, &expiries) };
    let (passes, mut wakeups) = parallel::both(
        || EventPasses::run(name, trace, top),
        || wakeup::decompose_wakeups_in(&ctx, &opts.selection, &gaps),
    );
    let EventPasses { source, reported, storms, funcgraph, pi, locks, threads } = passes;
    let anchor_at = reported::anchor(&reported);
    let anchor = anchor_at.and_then(|a| reported.iter().position(|r| r == a));
    // The wakeup the trace's own statement is about leads, whatever its size among the others.
    let anchored = anchor_at.and_then(|a| wakeup::decompose_before_in(&ctx, a.pid, a.ts, &gaps));
    let anchored_wakeup = anchored.is_some();
    if let Some(w) = anchored {
        wakeups.retain(|x| !(x.task.pid == w.task.pid && x.switch_in == w.switch_in));
        wakeups.insert(0, w);
    }
    let throttling = throttling::summary(gaps, top);
    let latency_trace = trace.info.latency.as_ref().map(|h| latency_report(h, events, &trace.info.elisions));
    let kernel = crate::kernel_tracers::KernelReports::of(events);
    let mut verdicts = verdict::verdicts(
        &VerdictParts {
            latency_trace: latency_trace.as_ref(),
            irqs_off: &irqs_off,
            disabled: &disabled,
            reported: anchor_at.map(|a| (a, anchored_wakeup)),
            tick_storms: &storms,
            hrtimers: &hrtimers,
            wakeups: &wakeups,
            throttling: throttling.as_ref(),
            funcgraph: funcgraph.as_ref(),
            lost: &source.lost,
            lost_unknown: !source.lost_unknown.is_empty(),
        },
        events,
        &opts.remedy,
    );
    kernel.lead_verdicts(&mut verdicts, events, &opts.remedy);
    let mut a = Analysis {
        schema: latscope_model::wire::SCHEMA,
        kind: "analysis",
        source,
        verdicts,
        latency_trace,
        irqs_off,
        disabled,
        hrtimers,
        wakeups,
        throttling,
        reported,
        anchor,
        anchored_wakeup,
        tick_storms: storms,
        pi,
        locks,
        funcgraph,
        diff: None,
        irq_stats,
        threshold: opts.threshold,
        exceeded: false,
        rtla: None,
        hwlat: kernel.hwlat,
        osnoise: kernel.osnoise,
        timerlat: kernel.timerlat,
        windowed: None,
    };
    threads.mark_analysis(&mut a);
    finish(&mut a);
    a
}

/// Analyses `abnormal` and diffs its function-graph trees against `normal`'s.
pub fn analyze_diff(normal: (&str, &DecodedTrace), abnormal: (&str, &DecodedTrace), opts: &AnalyzeOptions) -> Analysis {
    let mut a = analyze(abnormal.0, abnormal.1, opts);
    let n = funcgraph::call_trees(&normal.1.events);
    let ab = funcgraph::call_trees(&abnormal.1.events);
    a.diff = diff_roots(&n, &ab);
    let compared = verdict::Compared::Traces { normal: normal.0.to_string(), abnormal: abnormal.0.to_string() };
    if let Some(v) = a.diff.as_ref().and_then(|d| verdict::diff_verdict(d, compared, &opts.remedy)) {
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
