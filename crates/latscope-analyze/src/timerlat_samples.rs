//! The kernel's timerlat samples (`EventKind::Timerlat`, read from the tracer's records as they arrive) ➜
//! what a timer run measures per CPU: the thread latency (the headline, as latscope's own threads
//! measure it) and the timer IRQ's latency beside it, each as histogram, windows, worst samples and live
//! counters, summarised into the same `TimerSummary` as the user-space backend's.

use crate::timer_summary::{summarize_timer, CpuSamples, TimerSummary};
use latscope_model::event::TimerlatContext;
use latscope_model::{
    keep_worst, CpuId, Event, EventKind, LatencyHistogram, Nanos, TimerProgress, WakeupSample, WindowAccum,
    WindowSeries,
};
use std::collections::BTreeMap;

/// How the samples are gathered: the same settings as the user-space backend's `TimerConfig`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerlatSetup {
    /// The measured CPUs; samples of other CPUs are ignored.
    pub cpus: Vec<CpuId>,
    /// timerlat's period (`osnoise/timerlat_period_us`): a thread latency of N periods missed N of them.
    pub interval: Nanos,
    /// When the run started, CLOCK_MONOTONIC (the trace's `mono` clock): window offsets count from it.
    pub start: Nanos,
    /// When the run ended (its duration elapsed): samples expected from then on are not counted, as the
    /// user-space threads stop at their last period inside the run. `None`: every sample counts.
    pub end: Option<Nanos>,
    /// Window length of the per-window rows; `None` keeps none.
    pub window: Option<Nanos>,
    /// Most windows kept per CPU and context.
    pub max_windows: usize,
    /// Latencies strictly above it are counted.
    pub threshold: Option<Nanos>,
    /// Worst samples kept per CPU and context.
    pub worst_kept: usize,
}

/// One context's (thread or IRQ) samples on one CPU.
#[derive(Clone, Debug)]
struct Side {
    histogram: LatencyHistogram,
    overruns: u64,
    windows: Option<WindowSeries>,
    worst: Vec<WakeupSample>,
    sum: u64,
    min: u64,
    last: u64,
    above: u64,
}

impl Side {
    fn new(setup: &TimerlatSetup) -> Side {
        Side {
            histogram: LatencyHistogram::new(),
            overruns: 0,
            windows: setup.window.map(|len| WindowSeries::new(setup.start.0, len, setup.max_windows)),
            worst: Vec::new(),
            sum: 0,
            min: u64::MAX,
            last: 0,
            above: 0,
        }
    }

    /// Records one sample: `actual` is the record's time, `latency` how late it came.
    fn record(&mut self, setup: &TimerlatSetup, seq: u64, actual: Nanos, latency: Nanos, missed: u64) -> bool {
        let above = setup.threshold.is_some_and(|t| latency > t);
        let expected = actual.0.saturating_sub(latency.0);
        self.histogram.record(latency);
        self.overruns += missed;
        self.sum = self.sum.saturating_add(latency.0);
        self.min = self.min.min(latency.0);
        self.last = latency.0;
        self.above += u64::from(above);
        // Windows are keyed by the expected time from the run's start, as the user-space threads key them.
        if let Some(w) = self.windows.as_mut() {
            w.record(expected, latency.0, above, missed);
        }
        if setup.worst_kept > 0 {
            let sample = WakeupSample {
                seq,
                expected_ns: expected,
                actual_ns: actual.0,
                latency_ns: latency.0,
                missed_periods: missed,
            };
            keep_worst(&mut self.worst, setup.worst_kept, sample);
        }
        above
    }

    /// The windows with the open one closed, and the worst samples worst first.
    fn finished(&self) -> Finished {
        let (windows, dropped) = self.windows.as_ref().map(WindowSeries::finished).unwrap_or_default();
        let mut worst = self.worst.clone();
        worst.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.seq.cmp(&b.seq)));
        Finished { windows, dropped, worst }
    }

    fn live(&self, cpu: CpuId) -> TimerProgress {
        let count = self.histogram.count();
        TimerProgress {
            cpu,
            count,
            cur_ns: self.last,
            min_ns: (self.min != u64::MAX).then_some(self.min),
            avg_ns: if count == 0 { 0.0 } else { self.sum as f64 / count as f64 },
            max_ns: self.histogram.inner().max(),
            overruns: self.overruns,
            above_threshold: self.above,
        }
    }
}

/// One side's windows (the open one closed; how many were dropped) and worst samples, worst first.
#[derive(Clone, Debug)]
struct Finished {
    windows: Vec<WindowAccum>,
    dropped: u64,
    worst: Vec<WakeupSample>,
}

/// Every measured CPU's thread and IRQ samples, fed one event at a time.
#[derive(Clone, Debug)]
pub struct TimerlatSamples {
    setup: TimerlatSetup,
    /// Per measured CPU: (thread, IRQ).
    cpus: Vec<(CpuId, Side, Side)>,
    /// Per measured CPU, the time of the latest timerlat record taken.
    last_seen: BTreeMap<CpuId, Nanos>,
    /// Samples of the user-return context (kernels with user-space timerlat threads), counted only.
    user_samples: u64,
}

impl TimerlatSamples {
    /// Empty accumulators for `setup`'s CPUs.
    pub fn new(setup: TimerlatSetup) -> TimerlatSamples {
        let cpus = setup.cpus.iter().map(|&c| (c, Side::new(&setup), Side::new(&setup))).collect();
        TimerlatSamples { setup, cpus, last_seen: BTreeMap::new(), user_samples: 0 }
    }

    /// Takes one event; only timerlat samples of measured CPUs count. Returns whether it was a thread
    /// sample above the threshold.
    pub fn add(&mut self, e: &Event) -> bool {
        let EventKind::Timerlat { context, seqnum, latency } = &e.kind else { return false };
        let Some((_, thread, irq)) = self.cpus.iter_mut().find(|(c, _, _)| *c == e.cpu) else { return false };
        let last = self.last_seen.entry(e.cpu).or_insert(e.ts);
        *last = (*last).max(e.ts);
        if self.setup.end.is_some_and(|end| e.ts.0.saturating_sub(latency.0) >= end.0) {
            return false;
        }
        // timerlat numbers its activations from 1; the user-space backend numbers its wakeups from 0.
        let seq = seqnum.saturating_sub(1);
        match context {
            TimerlatContext::Thread => {
                // The thread re-arms for the first period still ahead, skipping those it missed.
                let missed = latency.0 / self.setup.interval.0.max(1);
                thread.record(&self.setup, seq, e.ts, *latency, missed)
            }
            TimerlatContext::Irq => {
                irq.record(&self.setup, seq, e.ts, *latency, 0);
                false
            }
            TimerlatContext::User => {
                self.user_samples += 1;
                false
            }
        }
    }

    /// The thread latency's progress per CPU.
    pub fn live(&self) -> Vec<TimerProgress> {
        self.cpus.iter().map(|(c, t, _)| t.live(*c)).collect()
    }

    /// The worst thread samples kept so far, per CPU in no order (to hold their trace while it records).
    pub fn kept_worst(&self) -> Vec<(CpuId, WakeupSample)> {
        self.cpus.iter().flat_map(|(c, t, _)| t.worst.iter().map(move |w| (*c, *w))).collect()
    }

    /// The worst timer IRQ samples kept so far, per CPU in no order (to hold their trace while it records).
    pub fn kept_worst_irq(&self) -> Vec<(CpuId, WakeupSample)> {
        self.cpus.iter().flat_map(|(c, _, i)| i.worst.iter().map(move |w| (*c, *w))).collect()
    }

    /// Per measured CPU, the time of the latest timerlat record taken: a later read of the same pages
    /// takes only the records after it.
    pub fn last_seen(&self) -> BTreeMap<CpuId, Nanos> {
        self.last_seen.clone()
    }

    /// Thread samples so far, all CPUs.
    pub fn thread_samples(&self) -> u64 {
        self.cpus.iter().map(|(_, t, _)| t.histogram.count()).sum()
    }

    /// Samples of the user-return context seen (not measured here).
    pub fn user_samples(&self) -> u64 {
        self.user_samples
    }

    /// The thread latency's summary (the headline) and the IRQ latency's.
    pub fn summarize(&self) -> (TimerSummary, TimerSummary) {
        let side = |pick: fn(&(CpuId, Side, Side)) -> &Side| -> TimerSummary {
            let finished: Vec<(CpuId, &Side, Finished)> =
                self.cpus.iter().map(|c| (c.0, pick(c), pick(c).finished())).collect();
            let samples: Vec<CpuSamples<'_>> = finished
                .iter()
                .map(|(cpu, s, f)| CpuSamples {
                    cpu: *cpu,
                    histogram: &s.histogram,
                    overruns: s.overruns,
                    windows: &f.windows,
                    windows_dropped: f.dropped,
                    worst: &f.worst,
                })
                .collect();
            summarize_timer(&samples, self.setup.start, self.setup.threshold)
        };
        (side(|c| &c.1), side(|c| &c.2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace;

    /// The first activations of CPU 1 as Debian's 6.1 PREEMPT_RT kernel printed them under qemu TCG (the
    /// timerlat tracer in a tracefs instance; fixtures/README.md has its origin).
    const GUEST: &str = include_str!("../../../fixtures/events/timerlat-instance-6.1-rt-qemu.txt");

    fn setup() -> TimerlatSetup {
        TimerlatSetup {
            cpus: vec![CpuId(1)],
            interval: Nanos::from_ms(1),
            start: Nanos(6_960_000_000),
            end: None,
            window: Some(Nanos::from_ms(10)),
            max_windows: 100,
            threshold: Some(Nanos::from_ms(1)),
            worst_kept: 2,
        }
    }

    #[test]
    fn thread_and_irq_latencies_are_kept_apart() {
        let mut s = TimerlatSamples::new(setup());
        let events = trace(GUEST);
        // Thread samples above 1 ms: #2, #5, #6, #8, #9, #12, #15, #16 (IRQ samples are never counted).
        assert_eq!(events.iter().filter(|e| s.add(e)).count(), 8);
        let (thread, irq) = s.summarize();
        assert_eq!(thread.cpus.len(), 1);
        let t = &thread.cpus[0];
        assert_eq!((t.cpu, t.stats.count, t.stats.above_threshold), (CpuId(1), 16, Some(8)));
        // Each thread latency of N whole periods missed N of them: 9+9+2+1+8+5+1+15 periods.
        assert_eq!(t.stats.overruns, 50);
        // The histogram keeps 3 significant digits.
        assert!(t.stats.max_ns.abs_diff(15_895_130) < 16_000, "{}", t.stats.max_ns);
        assert!(t.stats.min_ns.abs_diff(68_780) < 100, "{}", t.stats.min_ns);
        // The worst two thread samples, worst first, with the expected time the latency implies.
        assert_eq!(
            t.worst,
            [
                WakeupSample {
                    seq: 15,
                    expected_ns: 7_032_857_000 - 15_895_130,
                    actual_ns: 7_032_857_000,
                    latency_ns: 15_895_130,
                    missed_periods: 15
                },
                WakeupSample {
                    seq: 4,
                    expected_ns: 6_988_973_000 - 9_010_460,
                    actual_ns: 6_988_973_000,
                    latency_ns: 9_010_460,
                    missed_periods: 9
                },
            ]
        );
        let i = &irq.cpus[0];
        assert_eq!((i.stats.count, i.stats.overruns), (16, 0));
        assert!(i.stats.min_ns.abs_diff(30_220) < 100, "{}", i.stats.min_ns);
        assert_eq!(i.worst[0].latency_ns, 15_742_370);
        // Windows of 10 ms from 6.96 s, by expected time.
        let w: Vec<(u64, u64)> = t.windows.iter().map(|w| (w.index, w.count)).collect();
        assert_eq!(w, [(0, 2), (1, 3), (2, 1), (3, 3), (4, 3), (5, 4)]);
        let live = s.live();
        assert_eq!((live[0].count, live[0].cur_ns, live[0].overruns), (16, 15_895_130, 50));
    }

    #[test]
    fn only_the_measured_cpus_count() {
        let mut s = TimerlatSamples::new(TimerlatSetup { cpus: vec![CpuId(0)], ..setup() });
        for e in &trace(GUEST) {
            s.add(e);
        }
        let (thread, irq) = s.summarize();
        assert_eq!((thread.all.count, irq.all.count, s.thread_samples()), (0, 0, 0));
    }

    #[test]
    fn samples_expected_after_the_end_do_not_count() {
        // The run ends at 7.0 s: activations #10 to #16 were due after it.
        let mut s = TimerlatSamples::new(TimerlatSetup { end: Some(Nanos(7_000_000_000)), ..setup() });
        for e in &trace(GUEST) {
            s.add(e);
        }
        let (thread, irq) = s.summarize();
        assert_eq!((thread.all.count, irq.all.count), (9, 9));
    }
}
