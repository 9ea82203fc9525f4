//! [`TraceStats`]: the whole trace's statistics that one pass finds in state bounded by its CPUs, tasks,
//! locks and interrupt sources (tick storms, priority inheritance, lock contention, interrupt durations, RT
//! throttling, latscope's own threads, the tick periods, the kernel tracers' records), taken by the streamed
//! pass over a trace too large to hold with the same code the whole-trace analysis runs over its events.

use crate::hrtimer_expiries::TickPeriods;
use crate::irq_stats::{IrqStat, IrqStats};
use crate::keep::keep_largest;
use crate::kernel_tracers::KernelTracers;
use crate::latscope_threads::{LatscopeThreads, ThreadsNamed};
use crate::lock_contention::{LockContention, LockReport};
use crate::pi_boost::{PiBoosts, PiReport};
use crate::throttling::{ThrottleGap, ThrottleGaps};
use crate::tick_storm::{TickStorm, TickStorms};
use crate::timeline::ContextStream;
use latscope_model::{CpuId, Event, Nanos};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// What the pass found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TraceStats {
    /// Tick storms, most expiries first.
    pub tick_storms: Vec<TickStorm>,
    /// Priority inheritance boosts.
    pub pi: PiReport,
    /// Kernel lock contention.
    pub locks: LockReport,
    /// Interrupt, vector, softirq and NMI durations per source and CPU.
    pub irq_stats: Vec<IrqStat>,
    /// Every RT throttling gap's start and end, in the order they ended (16 bytes a gap; a gap lasts at least
    /// [`crate::throttling::MIN_THROTTLE_GAP`]).
    pub throttle_spans: Vec<(Nanos, Nanos)>,
    /// The longest throttling gaps (as many as asked for), longest first, without what ran instead (the
    /// window around each finds that).
    pub throttle_longest: Vec<ThrottleGap>,
    /// The first and last expiry events of each tick storm, by index (their verdict's evidence).
    #[serde(skip)]
    pub storm_lines: Vec<(usize, Event)>,
    /// latscope's own threads, as the trace names them.
    #[serde(skip)]
    pub threads: LatscopeThreads,
    /// The tick period per CPU (what the hrtimer expiries need before they are paired).
    #[serde(skip)]
    pub tick_periods: FxHashMap<CpuId, Nanos>,
    /// The kernel tracers' records (timerlat, osnoise, hwlat).
    #[serde(skip)]
    pub kernel: KernelTracers,
}

/// The pass: feed it every record in order with [`StatsStream::step`], then [`StatsStream::finish`].
pub struct StatsStream {
    top: usize,
    storms: TickStorms,
    pi: PiBoosts,
    locks: LockContention,
    contexts: ContextStream,
    irqs: IrqStats,
    throttle: ThrottleGaps,
    threads: ThreadsNamed,
    periods: TickPeriods,
    kernel: KernelTracers,
    spans: Vec<(Nanos, Nanos)>,
    longest: Vec<ThrottleGap>,
}

impl StatsStream {
    /// A pass that keeps the `top` longest throttling gaps.
    pub fn new(top: usize) -> StatsStream {
        StatsStream {
            top: top.max(1),
            storms: TickStorms::default(),
            pi: PiBoosts::default(),
            locks: LockContention::default(),
            contexts: ContextStream::default(),
            irqs: IrqStats::default(),
            throttle: ThrottleGaps::default(),
            threads: ThreadsNamed::default(),
            periods: TickPeriods::default(),
            kernel: KernelTracers::default(),
            spans: Vec::new(),
            longest: Vec::new(),
        }
    }

    /// The trace's record `i`.
    pub fn step(&mut self, i: usize, e: &Event) {
        self.storms.step(i, e);
        self.pi.step(i, e);
        self.locks.step(i, e);
        self.threads.step(e);
        self.periods.step(e);
        self.kernel.step(i, e);
        let irqs = &mut self.irqs;
        self.contexts.step(i, e, &mut |cpu, c| irqs.add(cpu, c));
        if let Some(g) = self.throttle.step(i, e) {
            self.spans.push((g.start, g.end));
            self.longest.push(g);
            // As [`crate::throttling::summary`] orders them: of two as long, the first ended.
            keep_largest(&mut self.longest, self.top, false, ThrottleGap::duration);
        }
    }

    /// What the pass found.
    pub fn finish(mut self) -> TraceStats {
        keep_largest(&mut self.longest, self.top, true, ThrottleGap::duration);
        let mut irqs = self.irqs;
        self.contexts.finish(&mut |cpu, c| irqs.add(cpu, c));
        let (tick_storms, storm_lines) = self.storms.finish_with_lines();
        TraceStats {
            tick_storms,
            storm_lines,
            threads: self.threads.finish(),
            tick_periods: self.periods.finish(),
            kernel: self.kernel,
            pi: self.pi.finish(),
            locks: self.locks.finish(),
            irq_stats: irqs.finish(),
            throttle_spans: self.spans,
            throttle_longest: self.longest,
        }
    }
}
