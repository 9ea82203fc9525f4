//! Irqs-off sections (from preemptirq events, or the flags column): the longest per CPU with caller and parent,
//! a histogram, and the interrupt and timers each one delayed.

use crate::hrtimer::{HrtimerExpiry, PrintedLateness};
use crate::timeline::{IrqsOffSection, Timeline};
use latscope_model::{Bucket, CpuId, LatencyHistogram, Nanos, Summary};
use serde::Serialize;

/// How long after an irqs-off section an interrupt entry still counts as "held back by it".
pub const DELAYED_IRQ_SLACK: Nanos = Nanos::from_us(100);

/// The interrupt that ran right after a section, and the timers it delivered late.
#[derive(Clone, Debug, Serialize)]
pub struct DelayedIrq {
    /// The interrupt (`irq 3 arch_timer`, `local_timer`).
    pub name: String,
    /// Its entry time.
    pub entry: Nanos,
    /// Index of its entry event.
    pub entry_index: Option<usize>,
    /// Index of its exit event.
    pub exit_index: Option<usize>,
    /// Traced hrtimer expiries in it whose expiry time fell inside the section.
    pub timers: Vec<HrtimerExpiry>,
    /// Lateness prints made inside it (a module's own "delta"/"overruns" report).
    pub printed: Vec<PrintedLateness>,
}

/// One section and what it delayed.
#[derive(Clone, Debug, Serialize)]
pub struct IrqsOffFinding {
    /// The section.
    pub section: IrqsOffSection,
    /// The interrupt it held back, when one entered right after it.
    pub delayed: Option<DelayedIrq>,
}

/// Irqs-off sections of one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct CpuIrqsOff {
    /// CPU.
    pub cpu: CpuId,
    /// Duration statistics.
    pub summary: Summary,
    /// Histogram buckets of the durations.
    pub buckets: Vec<Bucket>,
    /// Longest sections first.
    pub longest: Vec<IrqsOffFinding>,
}

/// The irqs-off part of an analysis.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IrqsOffReport {
    /// Whether the sections came from preemptirq events (exact) or only from the flags column (lower bounds).
    pub from_preemptirq: bool,
    /// Per CPU.
    pub cpus: Vec<CpuIrqsOff>,
}

impl IrqsOffReport {
    /// The longest section over all CPUs.
    pub fn longest(&self) -> Option<&IrqsOffFinding> {
        self.cpus.iter().filter_map(|c| c.longest.first()).max_by_key(|f| f.section.duration())
    }
}

/// Builds the report: the `top` longest sections per CPU with what they delayed.
pub fn report(
    timeline: &Timeline,
    expiries: &[HrtimerExpiry],
    printed: &[PrintedLateness],
    top: usize,
) -> IrqsOffReport {
    let mut rep = IrqsOffReport::default();
    for (cpu_id, cpu) in &timeline.cpus {
        if cpu.irqs_off.is_empty() {
            continue;
        }
        let mut h = LatencyHistogram::new();
        for s in &cpu.irqs_off {
            h.record(s.duration());
            if matches!(s.source, crate::timeline::IrqsOffSource::Preemptirq { .. }) {
                rep.from_preemptirq = true;
            }
        }
        let mut sorted: Vec<&IrqsOffSection> = cpu.irqs_off.iter().collect();
        sorted.sort_by_key(|s| std::cmp::Reverse(s.duration()));
        let longest = sorted
            .into_iter()
            .take(top)
            .map(|s| IrqsOffFinding { section: s.clone(), delayed: delayed_irq(timeline, s, expiries, printed) })
            .collect();
        rep.cpus.push(CpuIrqsOff { cpu: *cpu_id, summary: h.summary(None), buckets: h.buckets(), longest });
    }
    rep
}

/// The first interrupt entered on the section's CPU within [`DELAYED_IRQ_SLACK`] after it ended.
fn delayed_irq(
    timeline: &Timeline,
    s: &IrqsOffSection,
    expiries: &[HrtimerExpiry],
    printed: &[PrintedLateness],
) -> Option<DelayedIrq> {
    let cpu = timeline.cpu(s.cpu)?;
    let first = cpu.contexts.partition_point(|c| c.start < s.end);
    let ctx = cpu.contexts.get(first)?;
    if ctx.start > s.end + DELAYED_IRQ_SLACK {
        return None;
    }
    let inside = |cpu_id: CpuId, ts: Nanos| cpu_id == s.cpu && ts >= ctx.start && ts <= ctx.end;
    let timers = expiries
        .iter()
        .filter(|x| inside(x.cpu, x.ts))
        .filter(|x| x.expires_at.is_some_and(|at| at < s.end))
        .cloned()
        .collect();
    let printed = printed.iter().filter(|p| inside(p.cpu, p.ts)).cloned().collect();
    Some(DelayedIrq {
        name: ctx.activity.label(),
        entry: ctx.start,
        entry_index: ctx.entry_index,
        exit_index: ctx.exit_index,
        timers,
        printed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace;

    #[test]
    fn longest_section_and_the_irq_it_delayed() {
        let events = trace(
            "\
        app-42      [006] d..1    50.000001: irq_disable: caller=x+0x1/0x2 parent=vprintk_emit+0x1/0x2
        app-42      [006] d..1    50.000002: irq_enable: caller=x+0x2/0x2 parent=vprintk_emit+0x1/0x2
        app-42      [006] d..1    50.000010: irq_disable: caller=console_unlock+0xc0/0x510 parent=vprintk_emit+0x1/0x2
        app-42      [006] d..1    50.005010: irq_enable: caller=console_unlock+0x39c/0x510 parent=vprintk_emit+0x1/0x2
        app-42      [006] d.h1    50.005011: irq_handler_entry: irq=3 name=arch_timer
        app-42      [006] d.h1    50.005012: hrtimer_cb: 8 overruns
        app-42      [006] d.h1    50.005013: irq_handler_exit: irq=3 ret=handled
",
        );
        let tl = Timeline::build(&events);
        let printed: Vec<_> = crate::hrtimer::report(&events, &tl, &[], 5, &Default::default()).printed;
        let r = report(&tl, &[], &printed, 5);
        assert!(r.from_preemptirq);
        let f = r.longest().expect("a section");
        assert_eq!(f.section.duration(), Nanos(5_000_000));
        let d = f.delayed.as_ref().expect("delayed irq");
        assert_eq!(d.name, "irq 3 arch_timer");
        assert_eq!(d.printed[0].overruns, Some(8));
        assert_eq!(r.cpus[0].summary.count, 2);
    }
}
