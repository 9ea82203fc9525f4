//! [`Found`]: what one window of a trace analysed in windows found that the merged lists and verdicts draw
//! from, with the whole trace's event indices, and the events those indices name (the verdicts' evidence
//! lines), taken while the window's events are still held.

use crate::analysis::Analysis;
use crate::flag_sections::FlagSection;
use crate::hrtimer::{HrtimerExpiry, LateExpiry};
use crate::irqsoff::IrqsOffFinding;
use crate::reported::ReportedLatency;
use crate::throttling::ThrottleGap;
use crate::wakeup::WakeupBreakdown;
use latscope_model::Event;
use std::cell::RefCell;

/// A window's findings, with global indices.
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// Its worst wakeups, decomposed.
    pub wakeups: Vec<WakeupBreakdown>,
    /// Its longest irqs-off sections per CPU.
    pub irqs_off: Vec<IrqsOffFinding>,
    /// Its longest sections with bottom halves or preemption disabled per CPU and kind.
    pub disabled: Vec<FlagSection>,
    /// Its latest hrtimer expiries.
    pub late: Vec<LateExpiry>,
    /// Its longest RT throttling gaps, with what ran instead.
    pub throttle: Vec<ThrottleGap>,
    /// The latencies it states itself.
    pub reported: Vec<ReportedLatency>,
    /// The events every index above names, by global index.
    pub lines: Vec<(usize, Event)>,
    /// The kernel tracers' records the window was planned around, explained.
    pub kernel: crate::kernel_tracers::Explained,
}

impl Found {
    /// What `a` (the analysis of `events`) found, its indices mapped through `global`.
    pub fn of(a: &Analysis, events: &[Event], global: &dyn Fn(usize) -> usize) -> Found {
        let used = RefCell::new(Vec::new());
        let g = |i: usize| {
            used.borrow_mut().push(i);
            global(i)
        };
        let mut found = Found {
            wakeups: a.wakeups.clone(),
            irqs_off: a.irqs_off.cpus.iter().flat_map(|c| c.longest.iter().cloned()).collect(),
            disabled: a.disabled.cpus.iter().flat_map(|c| c.longest.iter().cloned()).collect(),
            late: a.hrtimers.late.clone(),
            throttle: a.throttling.as_ref().map(|t| t.gaps.clone()).unwrap_or_default(),
            reported: a.reported.clone(),
            lines: Vec::new(),
            kernel: Default::default(),
        };
        for b in &mut found.wakeups {
            b.map_evidence(&g);
        }
        for f in &mut found.irqs_off {
            f.section.start_index = g(f.section.start_index);
            f.section.end_index = g(f.section.end_index);
            if let Some(d) = &mut f.delayed {
                d.entry_index = d.entry_index.map(g);
                d.exit_index = d.exit_index.map(g);
                for x in &mut d.timers {
                    map_expiry(x, &g);
                }
                for p in &mut d.printed {
                    p.index = g(p.index);
                }
            }
        }
        for s in &mut found.disabled {
            s.start_index = g(s.start_index);
            s.end_index = g(s.end_index);
        }
        for l in &mut found.late {
            map_expiry(&mut l.expiry, &g);
            for b in &mut l.before {
                b.map_evidence(&g);
            }
            if let Some(t) = &mut l.thread {
                for i in &mut t.evidence {
                    *i = g(*i);
                }
            }
        }
        for t in &mut found.throttle {
            for i in &mut t.evidence {
                *i = g(*i);
            }
            for c in &mut t.ran_instead {
                c.map_evidence(&g);
            }
        }
        for r in &mut found.reported {
            r.index = g(r.index);
        }
        let mut used = used.into_inner();
        used.sort_unstable();
        used.dedup();
        found.lines = used.into_iter().filter_map(|i| Some((global(i), events.get(i)?.clone()))).collect();
        found
    }
}

fn map_expiry(x: &mut HrtimerExpiry, g: &dyn Fn(usize) -> usize) {
    x.index = g(x.index);
    x.start_index = x.start_index.map(g);
    x.skipped_by = x.skipped_by.map(g);
}
