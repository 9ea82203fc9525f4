//! [`KernelTracers`]: the kernel tracers' records of a trace (timerlat, osnoise, hwlat) taken one at a time,
//! and [`KernelReports`]: their reports and the verdicts that lead `analyze`'s. The worst timerlat sample and
//! the longest single noise are explained from the events around them ([`Explained::around`]): the whole
//! trace's, or, for a trace analysed in windows, those of the window planned around each
//! ([`KernelTracers::samples`]); both paths run the same code.

use crate::hwlat::{self, HwlatReport, HwlatStream};
use crate::osnoise_report::{self, OsnoiseReport, OsnoiseStream, SingleNoise};
use crate::remedy::RemedyContext;
use crate::timerlat_report::{self, TimerlatReport, TimerlatStream, WorstSample};
use crate::verdict::{Evidence, Verdict};
use latscope_model::{CpuId, Event, Nanos};
use serde::Serialize;

/// The kernel tracers' records of a trace, fed one at a time, in state bounded by the CPUs and the noise
/// sources (see each stream).
#[derive(Clone, Debug, Default)]
pub struct KernelTracers {
    timerlat: TimerlatStream,
    osnoise: OsnoiseStream,
    hwlat: HwlatStream,
}

/// Which tracer's record a [`KernelSample`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelTracer {
    /// The worst timerlat sample.
    Timerlat,
    /// The longest osnoise single noise.
    Osnoise,
}

/// A kernel tracer's record explained from the events before it, on its CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KernelSample {
    /// Which.
    pub tracer: KernelTracer,
    /// Index of its record in the trace.
    pub index: u64,
    /// Its CPU.
    pub cpu: CpuId,
    /// When it was recorded.
    pub at: Nanos,
    /// How long before `at` what explains it began (the sample's latency, the noise's length).
    #[serde(rename = "length_ns")]
    pub length: Nanos,
}

impl KernelSample {
    /// `tracer`'s record `e`, at index `index`, explained from `length` before it.
    pub fn new(tracer: KernelTracer, index: usize, e: &Event, length: Nanos) -> KernelSample {
        KernelSample { tracer, index: index as u64, cpu: e.cpu, at: e.ts, length }
    }
}

/// The records explained, with the trace's indices, and the records they name.
#[derive(Clone, Debug, Default)]
pub struct Explained {
    /// The worst timerlat sample.
    pub timerlat: Option<WorstSample>,
    /// The longest single noise.
    pub osnoise: Option<SingleNoise>,
    /// The records their indices name, by index.
    pub lines: Vec<(usize, Event)>,
}

impl Explained {
    /// The `samples` that `events` hold (the trace's records from index `first_index` on), explained.
    pub fn around(samples: &[KernelSample], events: &[Event], first_index: u64) -> Explained {
        let mut x = Explained::default();
        let first = usize::try_from(first_index).unwrap_or(usize::MAX);
        let global = |i: usize| i + first;
        for s in samples {
            let Some(local) = usize::try_from(s.index).ok().and_then(|i| i.checked_sub(first)) else { continue };
            let indices = match s.tracer {
                KernelTracer::Timerlat => keep(timerlat_report::worst_sample(events, local), &mut x.timerlat, &global),
                KernelTracer::Osnoise => keep(osnoise_report::single_noise(events, local), &mut x.osnoise, &global),
            };
            x.lines.extend(indices.into_iter().filter_map(|i| Some((global(i), events.get(i)?.clone()))));
        }
        x
    }

    /// What `all` explained, each record from the first that holds it.
    pub fn merged<'a>(all: impl IntoIterator<Item = &'a Explained>) -> Explained {
        let mut x = Explained::default();
        for e in all {
            if x.timerlat.is_none() {
                x.timerlat.clone_from(&e.timerlat);
            }
            if x.osnoise.is_none() {
                x.osnoise.clone_from(&e.osnoise);
            }
            x.lines.extend(e.lines.iter().cloned());
        }
        x
    }
}

/// An explained record: it names records of the trace by index.
pub trait NamesRecords {
    /// The indices of the records it names.
    fn indices(&self) -> Vec<usize>;
    /// Maps each index by `g`.
    fn map_indices(&mut self, g: &dyn Fn(usize) -> usize);
}

/// Keeps `found`, its indices mapped by `global`, in `slot`; returns its indices before.
fn keep<T: NamesRecords>(found: Option<T>, slot: &mut Option<T>, global: &dyn Fn(usize) -> usize) -> Vec<usize> {
    let Some(mut x) = found else { return Vec::new() };
    let indices = x.indices();
    x.map_indices(global);
    *slot = Some(x);
    indices
}

impl KernelTracers {
    /// The trace's record `index`.
    pub fn step(&mut self, index: usize, e: &Event) {
        self.timerlat.step(index, e);
        self.osnoise.step(index, e);
        self.hwlat.step(index, e);
    }

    /// The records to explain from the events before them: the worst timerlat sample, the longest single noise.
    pub fn samples(&self) -> Vec<KernelSample> {
        self.timerlat.worst().into_iter().chain(self.osnoise.longest()).collect()
    }

    /// The records the verdicts may show, by index: those the streams kept and those `explained` names.
    pub fn evidence_lines(&self, explained: Explained) -> Vec<(usize, Event)> {
        let mut v = self.osnoise.lines();
        v.extend(self.hwlat.worst_line());
        v.extend(explained.lines);
        v
    }

    /// The reports, with the records `explained`.
    pub fn reports(&self, explained: &Explained) -> KernelReports {
        KernelReports {
            hwlat: self.hwlat.finish(),
            osnoise: self.osnoise.report(explained.osnoise.clone()),
            timerlat: self.timerlat.report(explained.timerlat.clone()),
        }
    }
}

/// The kernel tracers' reports of a trace.
#[derive(Clone, Debug, Default)]
pub struct KernelReports {
    /// The hwlat tracer's samples.
    pub hwlat: Option<HwlatReport>,
    /// The osnoise tracer's records.
    pub osnoise: Option<OsnoiseReport>,
    /// The timerlat tracer's samples.
    pub timerlat: Option<TimerlatReport>,
}

impl KernelReports {
    /// The reports on all of `events`.
    pub fn of(events: &[Event]) -> KernelReports {
        let mut k = KernelTracers::default();
        for (i, e) in events.iter().enumerate() {
            k.step(i, e);
        }
        k.reports(&Explained::around(&k.samples(), events, 0))
    }

    /// Puts their verdicts ahead of `verdicts`: the timerlat sample's, else the single noise's (in a timerlat
    /// trace the osnoise events explain its samples: the verdict is about the samples), then the hwlat
    /// sample's. `events`: where their evidence lines are read.
    pub fn lead_verdicts(&self, verdicts: &mut Vec<Verdict>, events: &dyn Evidence, ctx: &RemedyContext) {
        if let Some(v) = self.hwlat.as_ref().and_then(|h| hwlat::verdict(h, events, ctx)) {
            verdicts.insert(0, v);
        }
        let osnoise = self.osnoise.as_ref().filter(|_| self.timerlat.is_none());
        if let Some(v) = osnoise.and_then(|o| osnoise_report::verdict(o, events, ctx)) {
            verdicts.insert(0, v);
        }
        if let Some(v) = self.timerlat.as_ref().and_then(|t| timerlat_report::verdict(t, events, ctx)) {
            verdicts.insert(0, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace;

    /// A timerlat trace with the osnoise events, of a 6.1-rt guest with injected spins (fixtures/dat/README.md
    /// has its origin).
    const TIMERLAT: &str = include_str!("../../../fixtures/dat/debian-6.1.0-56-rt-amd64-qemu-timerlat.txt");
    /// An osnoise trace of the same guest, with injected spins.
    const OSNOISE: &str = include_str!("../../../fixtures/dat/debian-6.1.0-56-rt-amd64-qemu-osnoise.txt");

    /// Each record explained from the events of a window planned as the windowed analysis plans it (from the
    /// start of what explains it, less a margin, to the record) is explained as from all the events.
    fn a_window_explains_as_the_whole_trace(text: &str, tracer: KernelTracer) -> Explained {
        let events = trace(text);
        let mut k = KernelTracers::default();
        for (i, e) in events.iter().enumerate() {
            k.step(i, e);
        }
        let samples: Vec<KernelSample> = k.samples().into_iter().filter(|s| s.tracer == tracer).collect();
        assert_eq!(samples.len(), 1, "{samples:?}");
        let s = samples[0];
        let whole = Explained::around(&samples, &events, 0);
        let from = s.at.saturating_sub(s.length).saturating_sub(Nanos::from_ms(1));
        let first = events.iter().position(|e| e.ts >= from).expect("events from the window's start");
        let last = s.index as usize;
        assert!(first > 0 && last + 1 < events.len(), "the window holds part of the trace: {first}..={last}");
        let window = Explained::around(&samples, &events[first..=last], first as u64);
        assert_eq!(window.timerlat, whole.timerlat);
        assert_eq!(window.osnoise, whole.osnoise);
        let mut lines = window.lines.clone();
        lines.sort_by_key(|(i, _)| *i);
        // The records named are those of the whole trace at the same indices.
        assert!(!lines.is_empty() && lines.iter().all(|(i, e)| events[*i] == *e));
        // A window that does not hold the record explains nothing.
        let none = Explained::around(&samples, &events[last + 1..], last as u64 + 1);
        assert!(none.timerlat.is_none() && none.osnoise.is_none() && none.lines.is_empty());
        whole
    }

    #[test]
    fn the_worst_timerlat_sample_is_explained_in_its_window() {
        let x = a_window_explains_as_the_whole_trace(TIMERLAT, KernelTracer::Timerlat);
        let w = x.timerlat.expect("worst sample");
        // The spinner's thread noise is inside it, and its IRQ sample is named.
        assert!(w.irq_index.is_some() && !w.within.is_empty(), "{w:?}");
    }

    #[test]
    fn the_longest_single_noise_is_explained_in_its_window() {
        let x = a_window_explains_as_the_whole_trace(OSNOISE, KernelTracer::Osnoise);
        let n = x.osnoise.expect("longest single noise");
        assert!(!n.within.is_empty(), "{n:?}");
    }

    #[test]
    fn the_reports_of_a_trace_are_those_of_its_streams() {
        // The whole trace's reports and verdicts as `analyze` gives them: the timerlat sample leads.
        let events = trace(TIMERLAT);
        let k = KernelReports::of(&events);
        let (t, o) = (k.timerlat.as_ref().expect("timerlat"), k.osnoise.as_ref().expect("osnoise"));
        assert_eq!(t.worst.as_ref().map(|w| w.noise_events), Some(true));
        assert!(o.longest_interference.is_some());
        let mut verdicts = Vec::new();
        k.lead_verdicts(&mut verdicts, &events, &RemedyContext::default());
        let kinds: Vec<_> = verdicts.iter().map(|v| v.kind).collect();
        assert_eq!(kinds, [crate::verdict::VerdictKind::Timerlat]);
    }
}
