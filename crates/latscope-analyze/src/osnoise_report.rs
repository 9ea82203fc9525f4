//! The osnoise tracer's records in a trace ➜ what `analyze` says about them: each CPU's accounting (the
//! tracer's periods and the noise by source, counted by [`OsnoiseSamples`] as `noise --backend osnoise`
//! counts them), the worst period, the longest single noise with the interferences inside it, and the
//! verdict that leads the report: the longest single noise and the source that made most of it.

use crate::kernel_tracers::{KernelSample, KernelTracer};
use crate::osnoise_samples::{OsnoiseCpu, OsnoiseSamples, OsnoiseSetup};
use crate::remedy;
use crate::verdict::{Evidence, Verdict, VerdictKind};
use latscope_model::event::OsnoiseKind;
use latscope_model::noise_result::NoiseSourceKind;
use latscope_model::{CauseKind, CpuId, Culprit, Event, EventKind, Explanation, Nanos, Pid, TaskRef};
use serde::Serialize;

/// The osnoise records of an analysed trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OsnoiseReport {
    /// Each CPU with osnoise records: the tracer's periods and the noise by source.
    pub cpus: Vec<OsnoiseCpu>,
    /// The period with the most noise (an `osnoise` period record).
    pub worst_period: Option<WorstPeriod>,
    /// The longest single noise the osnoise thread saw (a `sample_threshold` record).
    pub longest: Option<SingleNoise>,
    /// The longest interference of any source (an `irq/softirq/thread/nmi_noise` event).
    pub longest_interference: Option<Interference>,
}

/// One period's record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorstPeriod {
    /// Index of its record in the trace.
    pub index: usize,
    /// The CPU.
    pub cpu: CpuId,
    /// The runtime measured, ns.
    #[serde(rename = "runtime_ns")]
    pub runtime: Nanos,
    /// The noise in it, ns.
    #[serde(rename = "noise_ns")]
    pub noise: Nanos,
    /// The share of the runtime left to the osnoise thread, percent.
    pub available_pct: f64,
    /// Its longest single noise, ns (whole microseconds, as the tracer prints them).
    #[serde(rename = "max_single_ns")]
    pub max_single: Nanos,
}

/// One interference: an IRQ, softirq, NMI or thread that ran instead of the osnoise thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interference {
    /// Index of its event in the trace.
    pub index: usize,
    /// Which kind of source.
    pub kind: NoiseSourceKind,
    /// Its name (`ttyS0`, `local_timer`, `TIMER`, the thread's command).
    pub name: String,
    /// The IRQ's number or vector, the softirq's vector, the thread's pid.
    pub number: Option<u32>,
    /// How long it ran (without what nested in it), ns.
    #[serde(rename = "duration_ns")]
    pub duration: Nanos,
}

/// A single noise: time the osnoise thread did not run, as it measured it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SingleNoise {
    /// Index of its `sample_threshold` record.
    pub index: usize,
    /// The CPU.
    pub cpu: CpuId,
    /// The osnoise thread that measured it.
    pub thread: TaskRef,
    /// Its length, ns.
    #[serde(rename = "duration_ns")]
    pub duration: Nanos,
    /// The interferences the tracer counted in it (0: none, hardware).
    pub interference: Option<u32>,
    /// The interference events inside it (their start within it, on its CPU), longest first.
    pub within: Vec<Interference>,
    /// What no interference event accounts for, ns.
    #[serde(rename = "unaccounted_ns")]
    pub unaccounted: Nanos,
}

/// The report on `events`' osnoise records, or `None` when it has none.
pub fn report(events: &[Event]) -> Option<OsnoiseReport> {
    let mut s = OsnoiseStream::default();
    for (i, e) in events.iter().enumerate() {
        s.step(i, e);
    }
    s.report(s.longest().and_then(|l| single_noise(events, l.index as usize)))
}

/// The osnoise records of a trace, fed one at a time: each CPU's accounting ([`OsnoiseSamples`], bounded
/// as its text says), the worst period and the longest interference with their records, and the longest
/// single noise's record.
#[derive(Clone, Debug)]
pub struct OsnoiseStream {
    samples: OsnoiseSamples,
    seen: bool,
    worst_period: Option<(WorstPeriod, Event)>,
    longest: Option<KernelSample>,
    longest_interference: Option<(Interference, Event)>,
}

impl Default for OsnoiseStream {
    fn default() -> OsnoiseStream {
        let setup = OsnoiseSetup { cpus: Vec::new(), end: None, gap_capacity: 0, stop_above: None };
        OsnoiseStream {
            samples: OsnoiseSamples::new(setup),
            seen: false,
            worst_period: None,
            longest: None,
            longest_interference: None,
        }
    }
}

impl OsnoiseStream {
    /// The trace's record `index`.
    pub fn step(&mut self, index: usize, e: &Event) {
        if !is_osnoise(e) {
            return;
        }
        self.seen = true;
        self.samples.measure(e.cpu);
        self.samples.add(e);
        match &e.kind {
            EventKind::OsnoiseSample { runtime, noise, max_single, .. }
                if self.worst_period.as_ref().map_or(true, |(w, _)| *noise > w.noise) =>
            {
                let available_pct = if runtime.0 > 0 { 100.0 * (1.0 - noise.0 as f64 / runtime.0 as f64) } else { 0.0 };
                let w = WorstPeriod {
                    index,
                    cpu: e.cpu,
                    runtime: *runtime,
                    noise: *noise,
                    available_pct,
                    max_single: *max_single,
                };
                self.worst_period = Some((w, e.clone()));
            }
            EventKind::Osnoise { kind: OsnoiseKind::SampleThreshold, duration, .. }
                if self.longest.map_or(true, |l| *duration > l.length) =>
            {
                self.longest = Some(KernelSample::new(KernelTracer::Osnoise, index, e, *duration));
            }
            EventKind::Osnoise { .. } => {
                let longer = |i: &Interference| {
                    self.longest_interference.as_ref().map_or(true, |(l, _)| i.duration > l.duration)
                };
                if let Some(i) = interference(index, e).filter(longer) {
                    self.longest_interference = Some((i, e.clone()));
                }
            }
            _ => {}
        }
    }

    /// The longest single noise's record so far (its length: the noise's).
    pub fn longest(&self) -> Option<KernelSample> {
        self.longest
    }

    /// The records the verdict may show that the stream kept (the worst period's, the longest
    /// interference's), by index.
    pub fn lines(&self) -> Vec<(usize, Event)> {
        let period = self.worst_period.as_ref().map(|(w, e)| (w.index, e.clone()));
        let interference = self.longest_interference.as_ref().map(|(i, e)| (i.index, e.clone()));
        period.into_iter().chain(interference).collect()
    }

    /// The report, with the longest single noise as explained from the events before it ([`single_noise`]);
    /// `None` without osnoise records.
    pub fn report(&self, longest: Option<SingleNoise>) -> Option<OsnoiseReport> {
        self.seen.then(|| OsnoiseReport {
            cpus: self.samples.accounting(),
            worst_period: self.worst_period.as_ref().map(|(w, _)| w.clone()),
            longest,
            longest_interference: self.longest_interference.as_ref().map(|(i, _)| i.clone()),
        })
    }
}

fn is_osnoise(e: &Event) -> bool {
    matches!(e.kind, EventKind::Osnoise { .. } | EventKind::OsnoiseSample { .. })
}

/// An `irq/softirq/thread/nmi_noise` event as an interference.
pub fn interference(index: usize, e: &Event) -> Option<Interference> {
    let EventKind::Osnoise { kind, name, number, duration, .. } = &e.kind else { return None };
    let kind = match kind {
        OsnoiseKind::Irq => NoiseSourceKind::Irq,
        OsnoiseKind::Softirq => NoiseSourceKind::Softirq,
        OsnoiseKind::Thread => NoiseSourceKind::Thread,
        OsnoiseKind::Nmi => NoiseSourceKind::Nmi,
        OsnoiseKind::SampleThreshold => return None,
    };
    Some(Interference { index, kind, name: name.trim().to_string(), number: *number, duration: *duration })
}

/// The single noise recorded at `index`, with the interference events that began inside it: those of its
/// CPU since the CPU's previous single noise (the tracer writes each interference as it ends, and the
/// single noise when the osnoise thread runs again), their `start` and its own on the tracer's clock.
pub fn single_noise(events: &[Event], index: usize) -> Option<SingleNoise> {
    let e = events.get(index)?;
    let EventKind::Osnoise { kind: OsnoiseKind::SampleThreshold, start, duration, number, .. } = &e.kind else {
        return None;
    };
    let end = *start + *duration;
    let mut within = Vec::new();
    for (i, x) in events[..index].iter().enumerate().rev().filter(|(_, x)| x.cpu == e.cpu) {
        match &x.kind {
            EventKind::Osnoise { kind: OsnoiseKind::SampleThreshold, .. } => break,
            EventKind::Osnoise { start: s, .. } if *s >= *start && *s <= end => within.extend(interference(i, x)),
            _ => {}
        }
    }
    within.sort_by(|a, b| b.duration.cmp(&a.duration).then(a.index.cmp(&b.index)));
    let accounted = within.iter().fold(Nanos::ZERO, |t, i| t + i.duration);
    Some(SingleNoise {
        index,
        cpu: e.cpu,
        thread: TaskRef::new(e.comm, e.pid, None),
        duration: *duration,
        interference: *number,
        within,
        unaccounted: duration.saturating_sub(accounted),
    })
}

impl crate::kernel_tracers::NamesRecords for SingleNoise {
    /// The indices of the records it names (its own, its interferences'), mapped by `g`.
    fn map_indices(&mut self, g: &dyn Fn(usize) -> usize) {
        self.index = g(self.index);
        for i in &mut self.within {
            i.index = g(i.index);
        }
    }

    /// The indices of the records it names.
    fn indices(&self) -> Vec<usize> {
        std::iter::once(self.index).chain(self.within.iter().map(|i| i.index)).collect()
    }
}

/// x86's interrupt vectors the osnoise tracer names (`irq_vectors` tracepoints): the kernel's own
/// interrupts, not a device's IRQ line.
const VECTORS: &[&str] = &[
    "local_timer",
    "reschedule",
    "call_function",
    "call_function_single",
    "irq_work",
    "spurious_apic",
    "error_apic",
    "x86_platform_ipi",
    "thermal_apic",
    "threshold_apic",
    "deferred_error_apic",
];

/// The explanation of one interference (`magnitude` its duration).
pub fn explain_interference(i: &Interference, cpu: CpuId) -> Explanation {
    let (cause, culprit) = match i.kind {
        NoiseSourceKind::Thread => {
            let pid: Pid = i.number.map_or(0, |n| n as Pid);
            (CauseKind::BlockingTask, Culprit::task(TaskRef::new(i.name.as_str(), pid, None)))
        }
        NoiseSourceKind::Irq if VECTORS.contains(&i.name.as_str()) => (CauseKind::Vector, Culprit::named(&i.name)),
        NoiseSourceKind::Irq => (CauseKind::Irq, Culprit::irq(i.number, &i.name)),
        NoiseSourceKind::Softirq => (CauseKind::Softirq, Culprit::named(&i.name)),
        NoiseSourceKind::Nmi => (CauseKind::Nmi, Culprit::default()),
        NoiseSourceKind::Hardware => (CauseKind::NoKernelEvent, Culprit::default()),
    };
    let mut e = Explanation::new(cause, culprit, i.duration, Some(cpu));
    e.evidence = vec![i.index];
    e
}

/// The verdict on the longest single noise: the interference that made most of it (or time no kernel
/// event accounts for, when that is more of it), every interference and what nothing accounts for as its
/// `within`; on a
/// trace without single-noise records, the longest interference, else the worst period.
pub fn verdict(r: &OsnoiseReport, events: &dyn Evidence, ctx: &remedy::RemedyContext) -> Option<Verdict> {
    let mut lines: Vec<usize> = Vec::new();
    let explanation = if let Some(n) = &r.longest {
        lines.push(n.index);
        let ctx = ctx.for_victim(&n.thread);
        // The interference that made most of it leads, unless more of it is time no event accounts for.
        let mut e = match n.within.first().filter(|m| m.duration >= n.unaccounted) {
            Some(main) => {
                lines.push(main.index);
                let mut e = remedy::with_hint(explain_interference(main, n.cpu), None, &ctx);
                e.magnitude = n.duration;
                e.max = Some(main.duration);
                e
            }
            None => remedy::with_hint(
                Explanation::new(CauseKind::NoKernelEvent, Culprit::default(), n.duration, Some(n.cpu)),
                None,
                &ctx,
            ),
        };
        e.evidence = vec![n.index];
        e.count = u64::from(n.interference.unwrap_or(n.within.len() as u32)).max(1);
        e.within = n.within.iter().map(|i| explain_interference(i, n.cpu)).collect();
        if !n.within.is_empty() && n.unaccounted > Nanos::ZERO {
            e.within.push(Explanation::new(CauseKind::NoKernelEvent, Culprit::default(), n.unaccounted, Some(n.cpu)));
        }
        e
    } else if let Some(i) = &r.longest_interference {
        lines.push(i.index);
        let cpu = events.event(i.index)?.cpu;
        remedy::with_hint(explain_interference(i, cpu), None, ctx)
    } else {
        let w = r.worst_period.as_ref()?;
        Explanation::new(CauseKind::NotTraced, Culprit::default(), w.max_single, Some(w.cpu))
    };
    if let Some(w) = &r.worst_period {
        lines.push(w.index);
    }
    // Sorted and each once (`verdict::lines`).
    lines.extend(r.longest_interference.as_ref().map(|l| l.index));
    Some(Verdict {
        kind: VerdictKind::Osnoise,
        magnitude: explanation.magnitude,
        explanation,
        diff: None,
        section: None,
        evidence: crate::verdict::lines(events, lines),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_decode::decode_bytes;

    /// The kernel's osnoise text (lines of a 6.1-rt guest's CPU 1, one period line added): one single
    /// noise made of a thread and an IRQ nested in it, one with no interference behind it.
    const TRACE: &str = "# tracer: osnoise
#
 latscope-inject-556     [001] d..h1..    46.667262: irq_noise: ttyS0:4 start 47.319779946 duration 2770 ns
 latscope-inject-556     [001] d...3..    46.667333: thread_noise: latscope-inject:556 start 47.289467298 duration 30000369 ns
       osnoise/1-538     [001] .......    46.667625: sample_threshold: start 47.287437019 duration 32709535 ns interference 2
       osnoise/1-538     [001] .......    46.668000: sample_threshold: start 47.320000000 duration 40000 ns interference 0
       osnoise/1-538     [001] .......    46.700000:      100000      40000  60.00000       32709      1      0      1      0      1
";

    #[test]
    fn names_the_thread_that_made_the_longest_single_noise() {
        let t = decode_bytes("osnoise.txt", TRACE.as_bytes()).expect("decode");
        let r = report(&t.events).expect("report");
        let n = r.longest.as_ref().expect("longest");
        assert_eq!((n.index, n.duration, n.interference), (2, Nanos(32_709_535), Some(2)));
        assert_eq!(n.thread.pid, 538);
        let names: Vec<(&str, Nanos)> = n.within.iter().map(|i| (i.name.as_str(), i.duration)).collect();
        assert_eq!(names, [("latscope-inject", Nanos(30_000_369)), ("ttyS0", Nanos(2_770))]);
        assert_eq!(n.unaccounted, Nanos(32_709_535 - 30_000_369 - 2_770));
        let w = r.worst_period.as_ref().expect("period");
        assert_eq!((w.index, w.noise), (4, Nanos::from_ms(40)));
        assert!((w.available_pct - 60.0).abs() < 1e-9);
        let v = verdict(&r, &t.events, &remedy::RemedyContext::default()).expect("verdict");
        assert_eq!(v.magnitude, Nanos(32_709_535));
        assert_eq!(v.explanation.cause, CauseKind::BlockingTask);
        assert_eq!(v.explanation.culprit.pid(), Some(556));
        assert_eq!(v.explanation.max, Some(Nanos(30_000_369)));
        let within: Vec<CauseKind> = v.explanation.within.iter().map(|e| e.cause).collect();
        assert_eq!(within, [CauseKind::BlockingTask, CauseKind::Irq, CauseKind::NoKernelEvent]);
        let lines: Vec<usize> = v.evidence.iter().map(|l| l.index).collect();
        assert_eq!(lines, [1, 2, 4]);
    }

    #[test]
    fn a_single_noise_with_no_interference_is_hardware() {
        let t = decode_bytes("osnoise.txt", TRACE.as_bytes()).expect("decode");
        // Only the second single noise and the period.
        let events: Vec<Event> = t.events[3..].to_vec();
        let r = report(&events).expect("report");
        let v = verdict(&r, &events, &remedy::RemedyContext::default()).expect("verdict");
        assert_eq!((v.explanation.cause, v.magnitude), (CauseKind::NoKernelEvent, Nanos(40_000)));
        assert!(v.explanation.within.is_empty());
        assert!(r.longest_interference.is_none());
    }
}
