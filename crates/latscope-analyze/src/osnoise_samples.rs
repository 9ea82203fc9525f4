//! The kernel's osnoise tracer output (`EventKind::Osnoise` noise and `sample_threshold` records,
//! `EventKind::OsnoiseSample` periods, read as they arrive) ➜ what a noise run measures per CPU: each noise
//! above the threshold as a gap (the `sample_threshold` the osnoise thread saw), the noise by source (IRQ,
//! softirq, thread, NMI, and hardware: a noise with no interference behind it) and the tracer's own
//! per-period accounting, summarised into the same `CpuNoise` rows as the loop backend's.

use crate::noise::{summarize, CpuLoop, LoopRun};
use latscope_model::event::OsnoiseKind;
use latscope_model::noise_result::{
    CounterDeltas, CpuNoise, Gap, NoiseEnvironment, NoiseOptions, NoiseSource, NoiseSourceKind, OsnoisePeriods,
};
use latscope_model::{CpuId, Event, EventKind, LatencyHistogram, Nanos};
use serde::Serialize;
use std::collections::BTreeMap;

/// How the records are gathered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsnoiseSetup {
    /// The measured CPUs; records of other CPUs are ignored.
    pub cpus: Vec<CpuId>,
    /// When the run ends (its duration elapsed), CLOCK_MONOTONIC (the trace's `mono` clock): records from
    /// then on are not counted. `None`: every record counts.
    pub end: Option<Nanos>,
    /// Gaps kept per CPU for the lists and windows (more are counted, not kept).
    pub gap_capacity: usize,
    /// A single noise above it ends the run (`osnoise/stop_tracing_us`); `add` says when one came.
    pub stop_above: Option<Nanos>,
}

/// What one source did on one CPU.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    count: u64,
    total: u64,
    max: u64,
}

/// One CPU's records so far.
#[derive(Clone, Debug)]
struct CpuRecords {
    cpu: CpuId,
    histogram: LatencyHistogram,
    gaps: Vec<Gap>,
    gap_count: u64,
    dropped: u64,
    noise: Nanos,
    max_gap: Gap,
    stopped: bool,
    periods: OsnoisePeriods,
    sources: BTreeMap<(NoiseSourceKind, String, Option<u32>), Tally>,
}

impl CpuRecords {
    fn new(cpu: CpuId) -> CpuRecords {
        CpuRecords {
            cpu,
            histogram: LatencyHistogram::new(),
            gaps: Vec::new(),
            gap_count: 0,
            dropped: 0,
            noise: Nanos::ZERO,
            max_gap: Gap::default(),
            stopped: false,
            periods: OsnoisePeriods::default(),
            sources: BTreeMap::new(),
        }
    }
}

/// The osnoise records of a run, per CPU: in state bounded by the CPUs (a histogram each, `gap_capacity`
/// gaps) and the noise sources (one entry of about 100 bytes per IRQ line, softirq, NMI and thread by command
/// and pid that interfered: a trace of many short-lived threads grows by one entry a thread, not a record).
#[derive(Clone, Debug)]
pub struct OsnoiseSamples {
    setup: OsnoiseSetup,
    cpus: Vec<CpuRecords>,
}

/// One CPU's figures so far, for a live line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OsnoiseLive {
    /// The CPU.
    pub cpu: CpuId,
    /// Noises above the threshold.
    pub gaps: u64,
    /// Their total.
    pub noise: Nanos,
    /// The longest.
    pub max_gap: Nanos,
}

impl OsnoiseSamples {
    /// No records yet.
    pub fn new(setup: OsnoiseSetup) -> OsnoiseSamples {
        let cpus = setup.cpus.iter().map(|&cpu| CpuRecords::new(cpu)).collect();
        OsnoiseSamples { setup, cpus }
    }

    /// Measures `cpu` too, from its next record on, placed in CPU order (among CPUs measured in order).
    pub fn measure(&mut self, cpu: CpuId) {
        if let Err(at) = self.cpus.binary_search_by_key(&cpu, |c| c.cpu) {
            self.cpus.insert(at, CpuRecords::new(cpu));
        }
    }

    /// Takes one event; returns whether it was a single noise above `stop_above`. Other events, other CPUs
    /// and records after the end are ignored, except a period's record that comes after the end for a
    /// period that began before it (the tracer writes it when the period ends).
    pub fn add(&mut self, e: &Event) -> bool {
        let began = match &e.kind {
            EventKind::OsnoiseSample { runtime, .. } => e.ts.saturating_sub(*runtime),
            _ => e.ts,
        };
        if self.setup.end.is_some_and(|end| began > end) {
            return false;
        }
        let stop_above = self.setup.stop_above;
        let capacity = self.setup.gap_capacity;
        let Some(c) = self.cpus.iter_mut().find(|c| c.cpu == e.cpu) else { return false };
        match &e.kind {
            EventKind::Osnoise { kind: OsnoiseKind::SampleThreshold, number, duration, .. } => {
                // The record is written as the osnoise thread sees the noise end: its start is that time
                // minus its length, on the trace's clock (the record's own `start` is on the tracer's).
                let gap = Gap { start_ns: e.ts.saturating_sub(*duration), duration_ns: *duration };
                c.histogram.record(*duration);
                c.gap_count += 1;
                c.noise = c.noise + *duration;
                if *duration > c.max_gap.duration_ns {
                    c.max_gap = gap;
                }
                if c.gaps.len() < capacity {
                    c.gaps.push(gap);
                } else {
                    c.dropped += 1;
                }
                if *number == Some(0) {
                    tally(&mut c.sources, NoiseSourceKind::Hardware, "", None, *duration);
                }
                let above = stop_above.is_some_and(|s| *duration > s);
                c.stopped |= above;
                above
            }
            EventKind::Osnoise { kind, name, number, duration, .. } => {
                let source = match kind {
                    OsnoiseKind::Irq => NoiseSourceKind::Irq,
                    OsnoiseKind::Softirq => NoiseSourceKind::Softirq,
                    OsnoiseKind::Thread => NoiseSourceKind::Thread,
                    OsnoiseKind::Nmi => NoiseSourceKind::Nmi,
                    OsnoiseKind::SampleThreshold => return false,
                };
                tally(&mut c.sources, source, name, *number, *duration);
                false
            }
            EventKind::OsnoiseSample { runtime, noise, max_single, counts } => {
                let p = &mut c.periods;
                p.periods += 1;
                p.runtime_ns += runtime.0;
                p.noise_ns += noise.0;
                p.max_period_noise_ns = p.max_period_noise_ns.max(noise.0);
                p.max_single_ns = p.max_single_ns.max(max_single.0);
                p.counts.hw += counts.hw;
                p.counts.nmi += counts.nmi;
                p.counts.irq += counts.irq;
                p.counts.softirq += counts.softirq;
                p.counts.thread += counts.thread;
                false
            }
            _ => false,
        }
    }

    /// Noises above the threshold so far, all CPUs.
    pub fn gap_count(&self) -> u64 {
        self.cpus.iter().map(|c| c.gap_count).sum()
    }

    /// Periods the tracer reported so far, all CPUs.
    pub fn period_count(&self) -> u64 {
        self.cpus.iter().map(|c| c.periods.periods).sum()
    }

    /// Each CPU's figures so far.
    pub fn live(&self) -> Vec<OsnoiseLive> {
        self.cpus
            .iter()
            .map(|c| OsnoiseLive { cpu: c.cpu, gaps: c.gap_count, noise: c.noise, max_gap: c.max_gap.duration_ns })
            .collect()
    }

    /// The per-CPU rows of a noise result: the gaps accounted as the loop backend's (over `run`, with
    /// `runtime` of it measured per CPU), the tracer's periods and the sources, most time first.
    /// `counters`: each CPU's `/proc` deltas, when read.
    pub fn summarize(
        &self,
        run: LoopRun,
        runtime: Nanos,
        options: &NoiseOptions,
        env: &NoiseEnvironment,
        counters: &dyn Fn(CpuId) -> CounterDeltas,
    ) -> Vec<CpuNoise> {
        let loops: Vec<CpuLoop<'_>> = self
            .cpus
            .iter()
            .map(|c| CpuLoop {
                cpu: c.cpu,
                loops: 0,
                loop_cycles: 0.0,
                min_cycles: 0,
                runtime,
                histogram: &c.histogram,
                gaps: &c.gaps,
                gap_count: c.gap_count,
                dropped: c.dropped,
                noise: c.noise,
                max_gap: c.max_gap,
                stopped_on_threshold: c.stopped,
                counters: counters(c.cpu),
            })
            .collect();
        let mut rows = summarize(&loops, run, options, env);
        for (row, a) in rows.iter_mut().zip(self.accounting()) {
            row.periods = Some(a.periods);
            row.sources = a.sources;
        }
        rows
    }

    /// Each CPU's accounting: the tracer's periods (with the share of the runtime left) and the noise by
    /// source, most time first.
    pub fn accounting(&self) -> Vec<OsnoiseCpu> {
        self.cpus
            .iter()
            .map(|c| {
                let mut periods = c.periods.clone();
                periods.available_pct = if periods.runtime_ns > 0 {
                    100.0 * (1.0 - periods.noise_ns as f64 / periods.runtime_ns as f64)
                } else {
                    0.0
                };
                let mut sources: Vec<NoiseSource> = c
                    .sources
                    .iter()
                    .map(|((kind, name, number), t)| NoiseSource {
                        kind: *kind,
                        name: name.clone(),
                        number: *number,
                        count: t.count,
                        total_ns: t.total,
                        max_ns: t.max,
                    })
                    .collect();
                sources.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(b.count.cmp(&a.count)));
                OsnoiseCpu { cpu: c.cpu, periods, sources, noises: c.gap_count, noise_ns: c.noise.0 }
            })
            .collect()
    }
}

/// One CPU's osnoise accounting over the records read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OsnoiseCpu {
    /// The CPU.
    pub cpu: CpuId,
    /// The tracer's own per-period accounting, summed (what `rtla osnoise top` shows).
    pub periods: OsnoisePeriods,
    /// The noise by source (the `irq/softirq/thread/nmi_noise` events; hardware: the single noises with no
    /// interference behind them), most time first.
    pub sources: Vec<NoiseSource>,
    /// Single noises above the tracer's threshold (`sample_threshold` records).
    pub noises: u64,
    /// Their total, ns.
    pub noise_ns: u64,
}

fn tally(
    sources: &mut BTreeMap<(NoiseSourceKind, String, Option<u32>), Tally>,
    kind: NoiseSourceKind,
    name: &str,
    number: Option<u32>,
    duration: Nanos,
) {
    let t = sources.entry((kind, name.trim().to_string(), number)).or_default();
    t.count += 1;
    t.total += duration.0;
    t.max = t.max.max(duration.0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_decode::decode_bytes;

    /// A hand-written timeline in the kernel's osnoise text (its CPU 1 noise lines as a 6.1-rt guest printed
    /// them, one CPU 0 line and a period line added) that makes the accounting checkable by hand; the real
    /// records are decoded in `tests/osnoise_fixture.rs`.
    const TRACE: &str = "# tracer: osnoise
#
       osnoise/1-138     [001] .......     4.162313: sample_threshold: start 4.223980243 duration 532674 ns interference 0
       osnoise/1-138     [001] dn.h3..     4.164186: irq_noise: local_timer:236 start 4.226272560 duration 122887 ns
       ktimers/1-28      [001] d...3..     4.164345: thread_noise: ktimers/1:28 start 4.226470530 duration 86011 ns
              sh-117     [001] d...3..     4.164700: thread_noise:       sh:117 start 4.226562155 duration 349226 ns
       osnoise/1-138     [001] .......     4.164746: sample_threshold: start 4.226219242 duration 738959 ns interference 3
       osnoise/0-137     [000] .......     4.164750: sample_threshold: start 4.226219242 duration 9000 ns interference 0
       osnoise/1-138     [001] .......     4.166168: sample_threshold: start 4.228372218 duration 9705 ns interference 0
       osnoise/1-138     [001] .......     4.200000:      100000      20000  80.00000        738      2      0      1      0      2
";

    fn samples(end: Option<Nanos>, capacity: usize) -> OsnoiseSamples {
        let t = decode_bytes("osnoise.txt", TRACE.as_bytes()).expect("decode");
        let mut s = OsnoiseSamples::new(OsnoiseSetup {
            cpus: vec![CpuId(1)],
            end,
            gap_capacity: capacity,
            stop_above: Some(Nanos::from_us(700)),
        });
        let stops: Vec<bool> = t.events.iter().map(|e| s.add(e)).collect();
        assert_eq!(stops.iter().filter(|x| **x).count(), usize::from(end.is_none()), "{stops:?}");
        s
    }

    #[test]
    fn accounts_gaps_sources_and_periods() {
        let s = samples(None, 10);
        let c = &s.cpus[0];
        assert_eq!(c.gap_count, 3);
        assert_eq!(c.noise, Nanos(532_674 + 738_959 + 9_705));
        // The gap ends at the record's time on the trace clock.
        assert_eq!(c.max_gap, Gap { start_ns: Nanos(4_164_746_000 - 738_959), duration_ns: Nanos(738_959) });
        assert!(c.stopped);
        let get = |k, n: &str| c.sources.iter().find(|((kk, nn, _), _)| *kk == k && nn == n).map(|(_, t)| *t);
        let hw = get(NoiseSourceKind::Hardware, "").expect("hardware");
        assert_eq!((hw.count, hw.total, hw.max), (2, 532_674 + 9_705, 532_674));
        let sh = get(NoiseSourceKind::Thread, "sh").expect("sh");
        assert_eq!((sh.count, sh.total), (1, 349_226));
        assert!(c.sources.contains_key(&(NoiseSourceKind::Irq, "local_timer".into(), Some(236))));
        assert!(c.sources.contains_key(&(NoiseSourceKind::Thread, "ktimers/1".into(), Some(28))));
        assert_eq!((c.periods.periods, c.periods.noise_ns, c.periods.max_single_ns), (1, 20_000_000, 738_000));
        assert_eq!((c.periods.counts.hw, c.periods.counts.irq, c.periods.counts.thread), (2, 1, 2));
    }

    #[test]
    fn keeps_what_fits_and_stops_at_the_end() {
        let s = samples(None, 1);
        assert_eq!((s.cpus[0].gaps.len(), s.cpus[0].dropped, s.cpus[0].gap_count), (1, 2, 3));
        // Noises after the end are not counted; the period that began before it (4.1 to 4.2 s) is.
        let s = samples(Some(Nanos(4_164_700_000)), 10);
        assert_eq!((s.cpus[0].gap_count, s.cpus[0].periods.periods), (1, 1));
        let s = samples(Some(Nanos(4_050_000_000)), 10);
        assert_eq!((s.cpus[0].gap_count, s.cpus[0].periods.periods), (0, 0));
    }

    #[test]
    fn summarizes_into_noise_rows() {
        let s = samples(None, 10);
        let run = LoopRun { start: Nanos::from_secs(4), end: Nanos(4_200_000_000), counter_hz: 0.0 };
        let options = NoiseOptions { threshold_ns: 5_000, ..NoiseOptions::default() };
        let rows = s
            .summarize(run, Nanos::from_ms(200), &options, &NoiseEnvironment::default(), &|_| CounterDeltas::default());
        let r = &rows[0];
        assert_eq!((r.gaps.count, r.max_gap_ns, r.runtime_ns), (3, 738_959, 200_000_000));
        assert!(r.stopped_on_threshold);
        assert_eq!(r.sources[0].kind, NoiseSourceKind::Hardware);
        assert_eq!(r.sources[1].name, "sh");
        let p = r.periods.as_ref().expect("periods");
        assert!((p.available_pct - 80.0).abs() < 1e-9, "{}", p.available_pct);
        assert_eq!(r.histogram.iter().map(|b| b.count).sum::<u64>(), 3);
    }
}
