//! The timerlat tracer's samples in a trace ➜ what `analyze` says about them: each CPU's samples per context
//! (the timer IRQ's latency, the timerlat thread's, a user-space thread's), and the verdict on the worst
//! thread latency: how late its timer IRQ came and what ran on its CPU between the timer's expiry and the
//! thread's wakeup, read from the osnoise events the trace holds (as rtla's auto-analysis reads them).

use crate::kernel_tracers::{KernelSample, KernelTracer};
use crate::osnoise_report::{explain_interference, interference, Interference};
use crate::remedy;
use crate::verdict::{Evidence, Verdict, VerdictKind};
use latscope_model::event::TimerlatContext;
use latscope_model::{CauseKind, CpuId, Culprit, Event, EventKind, Explanation, Nanos, Place, TaskRef};
use serde::Serialize;
use std::collections::BTreeMap;

/// One context's samples on one CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ContextStats {
    /// Samples.
    pub count: u64,
    /// The worst latency, ns.
    #[serde(rename = "max_ns")]
    pub max: Nanos,
    /// Their mean, ns.
    #[serde(rename = "avg_ns")]
    pub avg: Nanos,
}

/// One CPU's samples.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimerlatCpu {
    /// The CPU.
    pub cpu: CpuId,
    /// The timer IRQ's latency.
    pub irq: Option<ContextStats>,
    /// The timerlat kernel thread's latency.
    pub thread: Option<ContextStats>,
    /// A user-space timerlat thread's latency.
    pub user: Option<ContextStats>,
}

/// The worst thread (or user-space, else IRQ) sample and what delayed it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorstSample {
    /// Index of its record.
    pub index: usize,
    /// The CPU.
    pub cpu: CpuId,
    /// Its activation id (`#N`), shared by the IRQ and thread samples of one period.
    pub seqnum: u64,
    /// The context it was taken in.
    pub context: TimerlatContext,
    /// Its latency, ns.
    #[serde(rename = "latency_ns")]
    pub latency: Nanos,
    /// The timer IRQ's latency of the same activation, and the index of its record.
    #[serde(rename = "irq_latency_ns")]
    pub irq_latency: Option<Nanos>,
    /// Index of the IRQ sample's record.
    pub irq_index: Option<usize>,
    /// The thread that took the sample (`timerlat/1`).
    pub thread: TaskRef,
    /// The interference events (osnoise events of its CPU) that ended between the timer's expiry and the
    /// sample, longest first.
    pub within: Vec<Interference>,
    /// Whether the trace has osnoise events at all (without them nothing says what ran).
    pub noise_events: bool,
    /// What no interference event accounts for, ns.
    #[serde(rename = "unaccounted_ns")]
    pub unaccounted: Nanos,
}

/// The timerlat samples of an analysed trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimerlatReport {
    /// Each CPU with samples.
    pub cpus: Vec<TimerlatCpu>,
    /// The worst sample and what delayed it.
    pub worst: Option<WorstSample>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    count: u64,
    max: Nanos,
    total: u64,
}

impl Sums {
    fn stats(&self) -> Option<ContextStats> {
        (self.count > 0).then(|| ContextStats { count: self.count, max: self.max, avg: Nanos(self.total / self.count) })
    }
}

/// The report on `events`' timerlat samples, or `None` when it has none.
pub fn report(events: &[Event]) -> Option<TimerlatReport> {
    let mut s = TimerlatStream::default();
    for (i, e) in events.iter().enumerate() {
        s.step(i, e);
    }
    s.report(s.worst().and_then(|w| worst_sample(events, w.index as usize)))
}

/// The timerlat samples of a trace, fed one record at a time: per CPU and context their count, worst and sum
/// (40 bytes each, 3 contexts a CPU), the worst sample's record and whether the trace has osnoise events.
#[derive(Clone, Debug, Default)]
pub struct TimerlatStream {
    sums: BTreeMap<(CpuId, u8), Sums>,
    /// The worst sample's record, and whether it is a thread's (or user-space) sample, not the IRQ's.
    worst: Option<(KernelSample, bool)>,
    noise_events: bool,
}

impl TimerlatStream {
    /// The trace's record `index`.
    pub fn step(&mut self, index: usize, e: &Event) {
        match &e.kind {
            EventKind::Timerlat { context, latency, .. } => {
                let slot = match context {
                    TimerlatContext::Irq => 0,
                    TimerlatContext::Thread => 1,
                    TimerlatContext::User => 2,
                };
                let s = self.sums.entry((e.cpu, slot)).or_default();
                s.count += 1;
                s.max = s.max.max(*latency);
                s.total = s.total.saturating_add(latency.0);
                // A thread's latency holds its IRQ's: the worst thread sample leads, an IRQ one only without any.
                let thread = slot != 0;
                if self.worst.map_or(true, |(w, t)| (thread, *latency) > (t, w.length)) {
                    self.worst = Some((KernelSample::new(KernelTracer::Timerlat, index, e, *latency), thread));
                }
            }
            EventKind::Osnoise { .. } => self.noise_events = true,
            _ => {}
        }
    }

    /// The worst sample's record so far (its length: its latency).
    pub fn worst(&self) -> Option<KernelSample> {
        self.worst.map(|(w, _)| w)
    }

    /// The report, with the worst sample as explained from the events around it ([`worst_sample`]); `None`
    /// without samples.
    pub fn report(&self, worst: Option<WorstSample>) -> Option<TimerlatReport> {
        self.worst?;
        let mut cpus: Vec<CpuId> = self.sums.keys().map(|k| k.0).collect();
        cpus.dedup();
        let cpus = cpus
            .into_iter()
            .map(|cpu| {
                let get = |slot| self.sums.get(&(cpu, slot)).and_then(Sums::stats);
                TimerlatCpu { cpu, irq: get(0), thread: get(1), user: get(2) }
            })
            .collect();
        let worst = worst.map(|w| WorstSample { noise_events: self.noise_events, ..w });
        Some(TimerlatReport { cpus, worst })
    }
}

/// The sample at `index` with its IRQ sample and the interferences between the timer's expiry and it: what
/// the events of its CPU from the expiry to it say (`noise_events` is the whole trace's: the report sets it).
pub fn worst_sample(events: &[Event], index: usize) -> Option<WorstSample> {
    let e = events.get(index)?;
    let EventKind::Timerlat { context, seqnum, latency } = e.kind else { return None };
    let expiry = e.ts.saturating_sub(latency);
    let mut within = Vec::new();
    let mut irq = None;
    for (i, x) in events[..index].iter().enumerate().rev().filter(|(_, x)| x.cpu == e.cpu) {
        if x.ts < expiry {
            break;
        }
        match &x.kind {
            EventKind::Timerlat { context: TimerlatContext::Irq, seqnum: s, latency: l }
                if *s == seqnum && context != TimerlatContext::Irq =>
            {
                irq = Some((*l, i));
            }
            EventKind::Osnoise { .. } => within.extend(interference(i, x)),
            _ => {}
        }
    }
    within.sort_by(|a, b| b.duration.cmp(&a.duration).then(a.index.cmp(&b.index)));
    let accounted = within.iter().fold(Nanos::ZERO, |t, i| t + i.duration);
    Some(WorstSample {
        index,
        cpu: e.cpu,
        seqnum,
        context,
        latency,
        irq_latency: irq.map(|(l, _)| l),
        irq_index: irq.map(|(_, i)| i),
        thread: TaskRef::new(e.comm, e.pid, None),
        within,
        noise_events: false,
        unaccounted: latency.saturating_sub(accounted),
    })
}

impl crate::kernel_tracers::NamesRecords for WorstSample {
    /// The indices of the records it names (its own, its IRQ sample's, its interferences'), mapped by `g`.
    fn map_indices(&mut self, g: &dyn Fn(usize) -> usize) {
        self.index = g(self.index);
        self.irq_index = self.irq_index.map(g);
        for i in &mut self.within {
            i.index = g(i.index);
        }
    }

    /// The indices of the records it names.
    fn indices(&self) -> Vec<usize> {
        let mut v = vec![self.index];
        v.extend(self.irq_index);
        v.extend(self.within.iter().map(|i| i.index));
        v
    }
}

/// The verdict on the worst sample: the interference that delayed it most, or, when more of it is time no
/// event accounts for, that time (kernel code with interrupts off, or time below the kernel: stacks or the
/// irqsoff tracer tell them apart); without osnoise events in the trace, only what was measured.
pub fn verdict(r: &TimerlatReport, events: &dyn Evidence, ctx: &remedy::RemedyContext) -> Option<Verdict> {
    let w = r.worst.as_ref()?;
    let ctx = ctx.for_victim(&w.thread);
    let mut e = match w.within.first().filter(|m| m.duration >= w.unaccounted) {
        Some(main) => {
            let mut e = remedy::with_hint(explain_interference(main, w.cpu), None, &ctx);
            e.max = Some(main.duration);
            e
        }
        None if w.noise_events => {
            let culprit = Culprit { place: Some(Place::Unknown { stacks_traced: false }), ..Culprit::default() };
            remedy::with_hint(
                Explanation::new(CauseKind::NoKernelEvent, culprit, w.unaccounted, Some(w.cpu)),
                None,
                &ctx,
            )
        }
        None => Explanation::new(CauseKind::NotTraced, Culprit::default(), w.latency, Some(w.cpu)),
    };
    e.magnitude = w.latency;
    e.evidence = vec![w.index];
    e.within = w.within.iter().map(|i| explain_interference(i, w.cpu)).collect();
    if !w.within.is_empty() && w.unaccounted > Nanos::ZERO {
        e.within.push(Explanation::new(CauseKind::NoKernelEvent, Culprit::default(), w.unaccounted, Some(w.cpu)));
    }
    let mut lines: Vec<usize> = vec![w.index];
    lines.extend(w.irq_index);
    lines.extend(w.within.first().map(|m| m.index));
    Some(Verdict {
        kind: VerdictKind::Timerlat,
        magnitude: w.latency,
        explanation: e,
        diff: None,
        section: None,
        evidence: crate::verdict::lines(events, lines),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_decode::decode_bytes;

    /// The kernel's timerlat text with the osnoise events (lines of a 6.1-rt guest's CPU 1): the thread's
    /// activation #43 waited behind a FIFO 97 spinner.
    const TRACE: &str = "# tracer: timerlat
#
 latscope-inject-122     [001] d..h...     7.851240: #43    context    irq timer_latency    125330 ns
 latscope-inject-122     [001] d..h1..     7.851281: irq_noise: local_timer:236 start 8.720098019 duration 74582 ns
 latscope-inject-122     [001] d...3..     7.888998: thread_noise: latscope-inject:122 start 8.720130741 duration 36922346 ns
      timerlat/1-119     [001] .......     7.889028: #43    context thread timer_latency  37911920 ns
";

    #[test]
    fn the_worst_thread_latency_names_the_thread_it_waited_for() {
        let t = decode_bytes("timerlat.txt", TRACE.as_bytes()).expect("decode");
        let r = report(&t.events).expect("report");
        let w = r.worst.as_ref().expect("worst");
        assert_eq!((w.index, w.seqnum, w.latency), (3, 43, Nanos(37_911_920)));
        assert_eq!((w.irq_latency, w.irq_index), (Some(Nanos(125_330)), Some(0)));
        let names: Vec<&str> = w.within.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["latscope-inject", "local_timer"]);
        assert_eq!(w.unaccounted, Nanos(37_911_920 - 36_922_346 - 74_582));
        assert_eq!(r.cpus[0].thread.map(|s| (s.count, s.max)), Some((1, Nanos(37_911_920))));
        let v = verdict(&r, &t.events, &remedy::RemedyContext::default()).expect("verdict");
        assert_eq!(
            (v.kind, v.explanation.cause, v.explanation.culprit.pid()),
            (VerdictKind::Timerlat, CauseKind::BlockingTask, Some(122))
        );
        assert_eq!(v.evidence.iter().map(|l| l.index).collect::<Vec<_>>(), [0, 2, 3]);
    }

    #[test]
    fn without_osnoise_events_nothing_is_named() {
        let t = decode_bytes("timerlat.txt", TRACE.as_bytes()).expect("decode");
        let events: Vec<Event> =
            t.events.iter().filter(|e| matches!(e.kind, EventKind::Timerlat { .. })).cloned().collect();
        let r = report(&events).expect("report");
        let v = verdict(&r, &events, &remedy::RemedyContext::default()).expect("verdict");
        assert_eq!((v.explanation.cause, v.magnitude), (CauseKind::NotTraced, Nanos(37_911_920)));
        assert!(!r.worst.as_ref().expect("worst").noise_events);
    }
}
