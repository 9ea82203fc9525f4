//! Merging the windows' findings into the whole trace's [`Analysis`]: the worst wakeups, the longest sections,
//! the latest timers and the longest throttling gaps, each as the whole-trace analysis would list it, with the
//! file's event indices, and the verdicts drawn from them.

use super::{Window, WindowReason};
use crate::analysis::Analysis;
use crate::disabled::{CpuDisabled, DisabledReport};
use crate::flag_sections::{Disabled, FlagSection};
use crate::hrtimer::LateExpiry;
use crate::irqsoff::{CpuIrqsOff, IrqsOffFinding, IrqsOffReport};
use crate::remedy::RemedyContext;
use crate::reported;
use crate::scan::{ScanResult, SectionCounts};
use crate::throttling::{self as throttle, ThrottleGap, ThrottleSummary};
use crate::timeline::IrqsOffSource;
use crate::verdict::{self, Verdict, VerdictParts};
use crate::wakeup::WakeupBreakdown;
use latscope_model::Event;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// The `top` worst wakeups the windows decomposed, worst first, the one the trace's own statement is about
/// leading as in the whole-trace analysis; and whether it leads.
pub fn worst(windows: &[Window], scan: &ScanResult, top: usize) -> (Vec<WakeupBreakdown>, bool) {
    let mut worst: Vec<WakeupBreakdown> = Vec::new();
    for b in windows.iter().flat_map(|w| &w.found.wakeups) {
        if !worst.iter().any(|x| x.task.pid == b.task.pid && x.switch_in == b.switch_in) {
            worst.push(b.clone());
        }
    }
    worst.sort_by_key(|b| (std::cmp::Reverse(b.latency), b.switch_in));
    let anchored = reported::anchor(&scan.reported).and_then(|a| {
        let w = windows
            .iter()
            .find(|w| w.analysis.anchored_wakeup && w.plan.reasons.contains(&WindowReason::Reported(a.clone())))?;
        w.found.wakeups.first().cloned()
    });
    let anchored_wakeup = anchored.is_some();
    if let Some(b) = anchored {
        worst.retain(|x| !(x.task.pid == b.task.pid && x.switch_in == b.switch_in));
        worst.insert(0, b);
    }
    worst.truncate(top);
    (worst, anchored_wakeup)
}

/// The windows' sections and late timers, with the whole trace's indices: per CPU (and kind) the `top` longest,
/// the `top` latest timers. Only those the streamed pass found in the whole trace count: a window that starts
/// inside a long section sees only its end, which is not a section of the trace. A window's irqs-off sections
/// from the flags column are left out on a CPU that has `preemptirq` events elsewhere in the trace, as the
/// whole-trace analysis leaves them out.
pub fn findings(
    windows: &[Window],
    scan: &ScanResult,
    top: usize,
) -> (Vec<IrqsOffFinding>, Vec<FlagSection>, Vec<LateExpiry>) {
    let mut irqs_off: Vec<IrqsOffFinding> = Vec::new();
    let mut disabled: Vec<FlagSection> = Vec::new();
    let mut late: Vec<LateExpiry> = Vec::new();
    let found: std::collections::HashSet<_> =
        scan.sections.iter().map(|c| (c.cpu, c.disabled, c.start, c.end)).collect();
    let is_found = |cpu, disabled, start, end| found.contains(&(cpu, disabled, start, end));
    let timers: std::collections::HashSet<_> = scan.late_timers.iter().map(|t| (t.cpu, t.at)).collect();
    for w in windows {
        for f in &w.found.irqs_off {
            let flags = matches!(f.section.source, IrqsOffSource::Flags { .. });
            let s = &f.section;
            if (flags && scan.preemptirq_cpus.contains(&s.cpu)) || !is_found(s.cpu, Disabled::Irqs, s.start, s.end) {
                continue;
            }
            irqs_off.push(f.clone());
        }
        disabled.extend(w.found.disabled.iter().filter(|s| is_found(s.cpu, s.disabled, s.start, s.end)).cloned());
        late.extend(w.found.late.iter().filter(|l| timers.contains(&(l.expiry.cpu, l.expiry.ts))).cloned());
    }
    irqs_off.sort_by_key(|f| (f.section.cpu, std::cmp::Reverse(f.section.duration()), f.section.start_index));
    irqs_off.dedup_by_key(|f| (f.section.cpu, f.section.start_index, f.section.end_index));
    keep_first_per(&mut irqs_off, top, |f| f.section.cpu);
    // As the whole-trace report orders them: dense sections first (they can be stated), then by length.
    disabled.sort_by_key(|s| {
        (s.cpu, s.disabled, std::cmp::Reverse(s.dense()), std::cmp::Reverse(s.end - s.start), s.start_index)
    });
    disabled.dedup_by_key(|s| (s.cpu, s.disabled, s.start_index, s.end_index));
    keep_first_per(&mut disabled, top, |s| (s.cpu, s.disabled));
    late.sort_by_key(|l| (std::cmp::Reverse(l.expiry.lateness), l.expiry.index));
    late.dedup_by_key(|l| l.expiry.index);
    late.truncate(top);
    (irqs_off, disabled, late)
}

/// The whole trace's RT throttling summary from the streamed pass, its longest gaps with what ran instead as
/// the window around each found it (nothing when the window did not find the gap: the task's switch-out that
/// began it was before the window).
pub fn throttling(windows: &[Window], scan: &ScanResult, top: usize) -> Option<ThrottleSummary> {
    let longest = scan.stats.throttle_longest.iter().map(|g| {
        let mut g = g.clone();
        let same = |x: &&ThrottleGap| (x.cpu, x.task.pid, x.start, x.end) == (g.cpu, g.task.pid, g.start, g.end);
        if let Some(x) = windows.iter().flat_map(|w| &w.found.throttle).find(same) {
            g.ran_instead = x.ran_instead.clone();
        }
        g
    });
    throttle::summary_of(&scan.stats.throttle_spans, longest.collect(), top)
}

/// The irqs-off and disabled reports of the whole trace: per CPU the streamed pass's counts and durations
/// (`counts`), with the merged longest sections.
pub fn section_reports(
    counts: &[SectionCounts],
    irqs_off_longest: Vec<IrqsOffFinding>,
    disabled_longest: Vec<FlagSection>,
) -> (IrqsOffReport, DisabledReport) {
    let mut irqs_off = IrqsOffReport::default();
    let mut disabled = DisabledReport::default();
    for c in counts {
        if c.irqs_off.count > 0 {
            irqs_off.from_preemptirq |= c.from_preemptirq;
            irqs_off.cpus.push(CpuIrqsOff {
                cpu: c.cpu,
                summary: c.irqs_off.clone(),
                buckets: c.irqs_off_buckets.clone(),
                longest: irqs_off_longest.iter().filter(|f| f.section.cpu == c.cpu).cloned().collect(),
            });
        }
        for (kind, count) in [(Disabled::BottomHalves, c.bottom_halves), (Disabled::Preemption, c.preemption)] {
            if count > 0 {
                let longest = disabled_longest.iter().filter(|s| (s.cpu, s.disabled) == (c.cpu, kind));
                disabled.cpus.push(CpuDisabled {
                    cpu: c.cpu,
                    disabled: kind,
                    count,
                    longest: longest.cloned().collect(),
                });
            }
        }
    }
    (irqs_off, disabled)
}

/// The verdicts over the whole trace, drawn from `a`'s merged lists as the whole-trace analysis draws them
/// from its own, their evidence lines read from `held`.
pub fn verdicts(a: &Analysis, held: &Held, ctx: &RemedyContext) -> Vec<Verdict> {
    let parts = VerdictParts {
        latency_trace: a.latency_trace.as_ref(),
        irqs_off: &a.irqs_off,
        disabled: &a.disabled,
        reported: a.anchor.and_then(|i| a.reported.get(i)).map(|r| (r, a.anchored_wakeup)),
        tick_storms: &a.tick_storms,
        hrtimers: &a.hrtimers,
        wakeups: &a.wakeups,
        throttling: a.throttling.as_ref(),
        funcgraph: a.funcgraph.as_ref(),
        lost: &a.source.lost,
        lost_unknown: !a.source.lost_unknown.is_empty(),
    };
    verdict::verdicts(&parts, held, ctx)
}

/// The events the windowed path holds for the verdicts' evidence, by the file's indices.
pub struct Held {
    /// Lines kept by index.
    lines: BTreeMap<usize, Event>,
    /// Every event of a latency-tracer trace (none otherwise).
    section: Vec<Event>,
}

impl Held {
    /// The lines the `windows` kept and the `others` the passes kept (the tick storms', the kernel tracers'),
    /// and, for a latency-tracer trace, its whole `section` (the tracer's snapshot).
    pub fn new(windows: &[Window], others: impl IntoIterator<Item = (usize, Event)>, section: Vec<Event>) -> Held {
        let mut lines: BTreeMap<usize, Event> = windows.iter().flat_map(|w| w.found.lines.iter().cloned()).collect();
        lines.extend(others);
        Held { lines, section }
    }
}

impl verdict::Evidence for Held {
    fn event(&self, i: usize) -> Option<&Event> {
        self.lines.get(&i).or_else(|| self.section.get(i))
    }
    fn all(&self) -> &[Event] {
        &self.section
    }
}

/// Keeps the first `top` of `v` of each `key`, in order.
fn keep_first_per<T, K: std::hash::Hash + Eq>(v: &mut Vec<T>, top: usize, key: impl Fn(&T) -> K) {
    let mut seen: FxHashMap<K, usize> = FxHashMap::default();
    v.retain(|x| {
        let n = seen.entry(key(x)).or_default();
        *n += 1;
        *n <= top
    });
}
