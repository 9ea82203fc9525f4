//! The verdicts of a trace analysis, as data: one per finding worth stating (a latency tracer's maximum,
//! the longest irqs-off section, the latest timer, the worst wakeup, RT throttling, a function-graph
//! difference or the slowest call, lost events), each a typed [`Explanation`] with the trace lines that
//! prove it; latency-tracer result first, then by size, lost events last. `latscope-report` words them.

use crate::disabled::DisabledReport;
use crate::flag_sections::{Disabled, FlagSection};
use crate::funcgraph::{FuncGraphReport, TreeDiff};
use crate::hrtimer::HrtimerReport;
use crate::irqsoff::IrqsOffReport;
use crate::latency_report::LatencyReport;
use crate::remedy::{self, RemedyContext};
use crate::reported::ReportedLatency;
use crate::throttling::ThrottleSummary;
use crate::tick_storm::TickStorm;
use crate::timeline::IrqsOffSource;
use crate::wakeup::WakeupBreakdown;
use crate::{patterns, symbol};
use latscope_model::{CauseKind, CpuId, Culprit, Event, EventKind, Explanation, Nanos, Pattern, TaskRef};
use serde::Serialize;
use std::collections::BTreeMap;

/// Irqs-off sections shorter than this get no verdict of their own (they stay in the statistics).
pub const MIN_IRQS_OFF: Nanos = Nanos::from_us(100);
/// Timer lateness below this gets no verdict.
pub const MIN_LATENESS: Nanos = Nanos::from_us(100);

/// What a verdict is about; the details are in the analysis part of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// A latency tracer's recorded maximum ([`LatencyReport`]).
    LatencyTrace,
    /// The longest irqs-off section ([`IrqsOffReport::longest`]); sampled from the flags column when
    /// [`Verdict::section`] is set.
    IrqsOff,
    /// The longest section with bottom halves or preemption disabled, from the flags column
    /// ([`Verdict::section`]).
    Disabled,
    /// The latest hrtimer (the first of [`HrtimerReport::late`]).
    HrtimerLate,
    /// The worst wakeup (the first breakdown).
    Wakeup,
    /// RT throttling ([`ThrottleSummary`]).
    RtThrottling,
    /// A function-graph difference (see [`Verdict::diff`]).
    FuncGraphDiff,
    /// The slowest function-graph call and where its time went ([`FuncGraphReport`]).
    FuncGraphSlowest,
    /// A latency the trace states itself ([`crate::analysis::Analysis::anchor`]): the explanation of its
    /// wakeup when the trace has it, else [`CauseKind::NotTraced`].
    Reported,
    /// An rtla timerlat auto-analysis, or the worst latency of an rtla table ([`crate::rtla`]).
    Rtla,
    /// A tick storm ([`crate::analysis::Analysis::tick_storms`]).
    TickStorm,
    /// The hwlat tracer's worst sample ([`crate::analysis::Analysis::hwlat`]): time the CPU did not run the
    /// kernel with interrupts off.
    Hwlat,
    /// The osnoise tracer's longest single noise and what made it ([`crate::analysis::Analysis::osnoise`]).
    Osnoise,
    /// The timerlat tracer's worst sample and what delayed it ([`crate::analysis::Analysis::timerlat`]).
    Timerlat,
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

/// Which two calls a function-graph difference compares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "between", rename_all = "snake_case")]
pub enum Compared {
    /// A normal and an abnormal trace (`--diff NORMAL ABNORMAL`).
    Traces {
        /// The normal trace's name.
        normal: String,
        /// The abnormal trace's name.
        abnormal: String,
    },
    /// The slowest call of one trace against the median call of the same root function.
    SlowestAndMedian,
}

/// A function-graph difference a verdict states.
#[derive(Clone, Debug, Serialize)]
pub struct DiffVerdict {
    /// What was compared.
    pub compared: Compared,
    /// The aligned trees.
    pub diff: TreeDiff,
}

/// One conclusion.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// What it is about.
    pub kind: VerdictKind,
    /// How big the finding is (the wakeup's latency, the section's length, the timer's lateness…): what the
    /// verdicts are ordered by and the threshold is checked against.
    #[serde(rename = "magnitude_ns")]
    pub magnitude: Nanos,
    /// The cause, what it explains of the finding, its culprit and remedy.
    pub explanation: Explanation,
    /// For a function-graph difference: what was compared and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<DiffVerdict>,
    /// For a section read from the flags column: the section, with its evidence's granularity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<FlagSection>,
    /// The trace lines that prove it.
    pub evidence: Vec<EvidenceLine>,
}

/// The parts of an analysis the verdicts are drawn from.
pub struct VerdictParts<'a> {
    /// The latency tracer's report, for latency-tracer traces.
    pub latency_trace: Option<&'a LatencyReport>,
    /// Irqs-off sections.
    pub irqs_off: &'a IrqsOffReport,
    /// Sections with bottom halves or preemption disabled.
    pub disabled: &'a DisabledReport,
    /// The latency the trace states that anchors the explanation, and whether the first of `wakeups` is
    /// its wakeup.
    pub reported: Option<(&'a ReportedLatency, bool)>,
    /// Tick storms, most expiries first.
    pub tick_storms: &'a [TickStorm],
    /// hrtimer lateness.
    pub hrtimers: &'a HrtimerReport,
    /// The decomposed wakeups, worst first.
    pub wakeups: &'a [WakeupBreakdown],
    /// RT throttling, when seen.
    pub throttling: Option<&'a ThrottleSummary>,
    /// Function-graph trees, when the trace has them.
    pub funcgraph: Option<&'a FuncGraphReport>,
    /// Events lost per CPU.
    pub lost: &'a BTreeMap<CpuId, u64>,
    /// Whether some CPU lost an unknown number of events.
    pub lost_unknown: bool,
}

pub(crate) fn lines(events: &dyn Evidence, idx: impl IntoIterator<Item = usize>) -> Vec<EvidenceLine> {
    let mut v: Vec<usize> = idx.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    v.into_iter().filter_map(|index| Some(EvidenceLine { index, event: events.event(index)?.clone() })).collect()
}

/// Where the verdicts' evidence lines are read from: the analysed events, or, for a trace analysed in
/// windows, the events its findings name, by index.
pub trait Evidence {
    /// The event at index `i`, when held.
    fn event(&self, i: usize) -> Option<&Event>;
    /// Every event, when all are held (a latency tracer's report shows the last kernel stack).
    fn all(&self) -> &[Event];
}

impl Evidence for Vec<Event> {
    fn event(&self, i: usize) -> Option<&Event> {
        self.get(i)
    }
    fn all(&self) -> &[Event] {
        self
    }
}

/// A verdict whose evidence lines are its explanation's evidence.
fn verdict(kind: VerdictKind, explanation: Explanation, events: &dyn Evidence) -> Verdict {
    let evidence = lines(events, explanation.evidence.iter().copied());
    Verdict { kind, magnitude: explanation.magnitude, explanation, diff: None, section: None, evidence }
}

/// The explanation with its evidence and the hint for its pattern (recognised from its culprit unless
/// given).
fn finished(mut e: Explanation, evidence: Vec<usize>, pattern: Option<Pattern>, ctx: &RemedyContext) -> Explanation {
    e.evidence = evidence;
    let pattern = pattern.or_else(|| patterns::recognise(&e));
    remedy::with_hint(e, pattern, ctx)
}

/// The largest finding among `verdicts` (lost events are not one).
pub fn worst(verdicts: &[Verdict]) -> Nanos {
    verdicts.iter().filter(|v| v.kind != VerdictKind::LostEvents).map(|v| v.magnitude).max().unwrap_or_default()
}

/// All verdicts of the analysis `p` (computed from `events`).
pub fn verdicts(p: &VerdictParts<'_>, events: &dyn Evidence, ctx: &RemedyContext) -> Vec<Verdict> {
    let mut out = Vec::new();
    let mut skip_wakeup = false;
    if let Some((r, anchored)) = p.reported {
        out.push(reported(r, anchored.then(|| p.wakeups.first()).flatten(), events, ctx));
        skip_wakeup = anchored;
    }
    if let Some(r) = p.latency_trace {
        out.push(latency_trace(r, events, ctx));
    }
    let mut sized = Vec::new();
    if let Some(s) = p.tick_storms.first() {
        let mut e =
            Explanation::new(CauseKind::TimerTick, Culprit::named(s.function.clone()), s.end - s.start, Some(s.cpu));
        e.count = u64::from(s.expiries);
        e.max = Some(s.median_interval);
        let e = finished(e, vec![s.start_index, s.end_index], Some(Pattern::TickStorm), ctx);
        sized.push(verdict(VerdictKind::TickStorm, e, events));
    }
    sized.extend(irqs_off(p.irqs_off, events, ctx));
    for kind in [Disabled::BottomHalves, Disabled::Preemption] {
        sized.extend(p.disabled.longest_dense(kind).and_then(|s| flag_section(s, events, ctx)));
    }
    sized.extend(late_timer(p, events, ctx));
    if let Some(w) = p.wakeups.first().filter(|_| !skip_wakeup) {
        if let Some(h) = w.headline.clone() {
            sized.push(Verdict { magnitude: w.latency, ..verdict(VerdictKind::Wakeup, h, events) });
        }
    }
    sized.extend(p.throttling.and_then(|t| throttling(t, events, ctx)));
    if let Some(f) = p.funcgraph {
        sized.extend(f.diff.as_ref().and_then(|d| diff_verdict(d, Compared::SlowestAndMedian, ctx)));
        sized.extend(slowest_call(f, ctx));
    }
    sized.sort_by_key(|v| std::cmp::Reverse(v.magnitude));
    // A long section whose events are too sparse to state it is still said, as what its events show, when
    // nothing else stands out (a latency tracer's report is measured by the tracer, not by its flags).
    if out.is_empty() && sized.is_empty() {
        sized.extend(sparse_section(p, events));
    }
    out.extend(sized);
    if p.lost.values().sum::<u64>() > 0 || p.lost_unknown {
        let e = Explanation::new(CauseKind::LostEvents, Culprit::default(), Nanos::ZERO, None);
        out.push(verdict(VerdictKind::LostEvents, remedy::with_hint(e, None, ctx), events));
    }
    out
}

/// The latency the trace states, explained by its wakeup (`w`) when the trace has it: the wakeup's headline
/// with the stated latency as the magnitude; else not explained by this trace.
fn reported(r: &ReportedLatency, w: Option<&WakeupBreakdown>, events: &dyn Evidence, ctx: &RemedyContext) -> Verdict {
    let mut idx = vec![r.index];
    let e = match w.and_then(|w| w.headline.clone().map(|h| (w, h))) {
        Some((w, h)) => {
            idx.extend(w.evidence.iter().copied());
            Explanation { evidence: Vec::new(), ..h }
        }
        None => {
            let task = TaskRef::new(r.comm, r.pid, None);
            remedy::with_hint(
                Explanation::new(CauseKind::NotTraced, Culprit::task(task), r.latency, Some(r.cpu)),
                None,
                ctx,
            )
        }
    };
    let mut e = e;
    e.evidence = idx;
    let v = verdict(VerdictKind::Reported, e, events);
    Verdict { magnitude: r.latency, ..v }
}

fn latency_trace(r: &LatencyReport, events: &dyn Evidence, ctx: &RemedyContext) -> Verdict {
    let culprit = Culprit {
        task: r.task.as_ref().map(|(comm, pid)| TaskRef::new(comm.as_str(), *pid, None)),
        name: r
            .big
            .as_ref()
            .and_then(|b| b.func.as_deref())
            .or(r.started_at.as_deref())
            .map(|f| symbol::bare(f).to_string())
            .unwrap_or_default(),
        chain: r.chain.clone(),
        ..Culprit::default()
    };
    let mut idx: Vec<usize> = r.big.iter().flat_map(|b| [b.index, b.index + 1]).collect();
    idx.extend(events.all().iter().rposition(|e| matches!(e.kind, EventKind::Stack { .. })));
    // An excerpt's largest gap says little about a section mostly left out: the work it repeats does.
    let repeated = r.excerpt.as_ref().and_then(|x| x.repeated.first());
    let (culprit, idx) = match repeated {
        Some(c) => (
            Culprit { name: c.func.to_string(), chain: vec![c.func.to_string(), c.parent.to_string()], ..culprit },
            vec![c.index],
        ),
        None => (culprit, idx),
    };
    let e = Explanation::new(r.cause, culprit, r.latency, r.cpu);
    verdict(VerdictKind::LatencyTrace, finished(e, idx, r.pattern, ctx), events)
}

/// A section with bottom halves or preemption off, from the flags column, as a verdict: only when dense
/// enough and long enough; its evidence is its first and last event.
fn flag_section(s: &FlagSection, events: &dyn Evidence, ctx: &RemedyContext) -> Option<Verdict> {
    if s.duration() < MIN_IRQS_OFF || !s.dense() {
        return None;
    }
    let cause = match s.disabled {
        Disabled::Irqs => CauseKind::IrqsOff,
        Disabled::BottomHalves => CauseKind::BhOff,
        Disabled::Preemption => CauseKind::PreemptOff,
    };
    let task = TaskRef::new(s.comm, s.pid, None);
    let e = Explanation::new(cause, Culprit::task(task), s.duration(), Some(s.cpu));
    let v = verdict(VerdictKind::Disabled, finished(e, vec![s.start_index, s.end_index], None, ctx), events);
    Some(Verdict { section: Some(s.clone()), ..v })
}

fn irqs_off(r: &IrqsOffReport, events: &dyn Evidence, ctx: &RemedyContext) -> Option<Verdict> {
    // Sections from the flags column are sampled: stated only when their events are dense (see
    // [`FlagSection::dense`]), with their granularity.
    let dense = |s: &crate::timeline::IrqsOffSection| match &s.source {
        IrqsOffSource::Preemptirq { .. } => true,
        IrqsOffSource::Flags { sampled, .. } => sampled.dense_over(s.duration()),
    };
    let f = r
        .cpus
        .iter()
        .flat_map(|c| c.longest.iter())
        .filter(|f| dense(&f.section))
        .max_by_key(|f| f.section.duration())?;
    let s = &f.section;
    if s.duration() < MIN_IRQS_OFF {
        return None;
    }
    let mut idx = vec![s.start_index, s.end_index];
    if let Some(d) = &f.delayed {
        idx.extend(d.entry_index);
        idx.extend(d.exit_index);
        idx.extend(d.printed.iter().map(|p| p.index));
        idx.extend(d.timers.iter().flat_map(|t| [Some(t.index), t.start_index]).flatten());
    }
    let e = crate::hrtimer::irqs_off_explanation(s, s.duration());
    let v = verdict(VerdictKind::IrqsOff, finished(e, idx, None, ctx), events);
    Some(Verdict { section: flag_section_of(s), ..v })
}

/// The longest section of the flags column (irqs, bottom halves or preemption off) of at least
/// [`MIN_IRQS_OFF`] whose events are too sparse to state it ([`FlagSection::dense`]), as a verdict that says
/// only what its events show: its [`Verdict::section`] is not dense, and it has no remedy (what to do first
/// is to measure it).
fn sparse_section(p: &VerdictParts<'_>, events: &dyn Evidence) -> Option<Verdict> {
    let irqs = p.irqs_off.cpus.iter().flat_map(|c| c.longest.iter()).filter_map(|f| flag_section_of(&f.section));
    let others = p.disabled.cpus.iter().flat_map(|c| c.longest.iter()).cloned();
    let s = irqs.chain(others).filter(|s| !s.dense() && s.duration() >= MIN_IRQS_OFF).max_by_key(|s| s.duration())?;
    let (kind, cause) = match s.disabled {
        Disabled::Irqs => (VerdictKind::IrqsOff, CauseKind::IrqsOff),
        Disabled::BottomHalves => (VerdictKind::Disabled, CauseKind::BhOff),
        Disabled::Preemption => (VerdictKind::Disabled, CauseKind::PreemptOff),
    };
    let mut e = Explanation::new(cause, Culprit::task(TaskRef::new(s.comm, s.pid, None)), s.duration(), Some(s.cpu));
    e.evidence = vec![s.start_index, s.end_index];
    Some(Verdict { section: Some(s.clone()), ..verdict(kind, e, events) })
}

/// An irqs-off section read from the flags column, as a [`FlagSection`]; `None` for one measured by
/// preemptirq events.
fn flag_section_of(s: &crate::timeline::IrqsOffSection) -> Option<FlagSection> {
    match &s.source {
        IrqsOffSource::Flags { sampled, end_task, from, to } => Some(FlagSection {
            cpu: s.cpu,
            disabled: Disabled::Irqs,
            start: s.start,
            end: s.end,
            comm: s.comm,
            pid: s.pid,
            end_task: *end_task,
            from: from.clone(),
            to: to.clone(),
            sampled: *sampled,
            start_index: s.start_index,
            end_index: s.end_index,
        }),
        IrqsOffSource::Preemptirq { .. } => None,
    }
}

fn late_timer(p: &VerdictParts<'_>, events: &dyn Evidence, ctx: &RemedyContext) -> Option<Verdict> {
    let l = p.hrtimers.late.first()?;
    let lateness = l.expiry.lateness.unwrap_or_default();
    // A wakeup breakdown that covers this expiry already explains it.
    let covered = p.wakeups.iter().any(|w| w.switch_in >= l.expiry.ts && w.start <= l.expiry.ts);
    if lateness < MIN_LATENESS || covered {
        return None;
    }
    let cpu = Some(l.expiry.cpu);
    let mut e =
        Explanation::new(CauseKind::TimerIrqDelay, Culprit::named(l.expiry.function.to_string()), lateness, cpu);
    // What held the interrupt back, as the lateness report decided it.
    e.within = l.before.first().cloned().into_iter().collect();
    let idx = [Some(l.expiry.index), l.expiry.start_index].into_iter().flatten().collect();
    Some(verdict(VerdictKind::HrtimerLate, finished(e, idx, None, ctx), events))
}

fn throttling(t: &ThrottleSummary, events: &dyn Evidence, ctx: &RemedyContext) -> Option<Verdict> {
    let g = t.gaps.first()?;
    let e = Explanation::new(CauseKind::RtThrottling, Culprit::task(g.task.clone()), t.max, Some(g.cpu));
    Some(verdict(VerdictKind::RtThrottling, finished(e, g.evidence.clone(), None, ctx), events))
}

fn slowest_call(f: &FuncGraphReport, ctx: &RemedyContext) -> Option<Verdict> {
    let root = f.slowest.first()?;
    let chain: Vec<String> = f.hot_path.iter().rev().map(|s| s.func.to_string()).collect();
    let culprit = Culprit::named(root.func.to_string()).with_chain(chain);
    let e = Explanation::new(CauseKind::FunctionTime, culprit, root.total.unwrap_or_default(), Some(root.cpu));
    let explanation = finished(e, Vec::new(), None, ctx);
    Some(Verdict {
        kind: VerdictKind::FuncGraphSlowest,
        magnitude: explanation.magnitude,
        explanation,
        diff: None,
        section: None,
        evidence: Vec::new(),
    })
}

/// The verdict on a function-graph difference, when the abnormal tree is slower: the entry that adds most
/// time is the culprit (innermost function first in its chain), every added entry is `within` it.
pub fn diff_verdict(d: &TreeDiff, compared: Compared, ctx: &RemedyContext) -> Option<Verdict> {
    if d.extra <= 0 {
        return None;
    }
    let entry = |e: &crate::funcgraph::DiffEntry| {
        let chain: Vec<String> = e.path.iter().rev().map(|p| p.to_string()).collect();
        let culprit = Culprit::named(e.func()).with_chain(chain);
        Explanation::new(CauseKind::FunctionTime, culprit, Nanos(e.extra.max(0) as u64), None)
    };
    let top = d.entries.iter().find(|e| e.extra > 0)?;
    let mut e = Explanation { magnitude: Nanos(d.extra as u64), ..entry(top) };
    e.within = d.entries.iter().filter(|x| x.extra > 0).map(entry).collect();
    let pattern = d.patterns.first().copied();
    let explanation = finished(e, Vec::new(), pattern, ctx);
    Some(Verdict {
        kind: VerdictKind::FuncGraphDiff,
        magnitude: explanation.magnitude,
        explanation,
        diff: Some(DiffVerdict { compared, diff: d.clone() }),
        section: None,
        evidence: Vec::new(),
    })
}
