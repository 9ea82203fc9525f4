//! Tick storms: the scheduler tick's hrtimer (`tick_sched_timer`, `tick_nohz_handler` since 6.x) expiring
//! again and again far faster than any HZ allows (a tick is at least 1 ms apart at HZ=1000), as when the
//! nohz code keeps re-arming it to fire at once: the CPU spends its time entering the timer interrupt.

use latscope_model::{CpuId, Event, EventKind, Nanos};
use serde::Serialize;
use std::collections::BTreeMap;

/// Tick expiries closer than this are a storm (10 kHz; the fastest regular tick, HZ=1000, is 1 ms).
pub const STORM_INTERVAL: Nanos = Nanos::from_us(100);
/// Fewest consecutive fast expiries that make a storm.
pub const STORM_MIN_EXPIRIES: u32 = 5;

/// The tick's hrtimer callbacks, by kernel generation.
const TICK_FUNCTIONS: [&str; 2] = ["tick_sched_timer", "tick_nohz_handler"];

/// One run of tick expiries faster than [`STORM_INTERVAL`] on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TickStorm {
    /// CPU.
    pub cpu: CpuId,
    /// The tick callback.
    pub function: String,
    /// Expiries in the run.
    pub expiries: u32,
    /// The first expiry.
    pub start: Nanos,
    /// The last expiry.
    pub end: Nanos,
    /// The median time between two expiries.
    #[serde(rename = "median_interval_ns")]
    pub median_interval: Nanos,
    /// Index of the first expiry event.
    pub start_index: usize,
    /// Index of the last one.
    pub end_index: usize,
}

impl TickStorm {
    /// Expiries per second at the median interval.
    pub fn rate_hz(&self) -> u64 {
        1_000_000_000 / self.median_interval.0.max(1)
    }
}

struct Run {
    function: String,
    /// Its first and last expiry events (a storm's evidence).
    first: Event,
    last: Event,
    intervals: Vec<u64>,
    start: Nanos,
    end: Nanos,
    start_index: usize,
    end_index: usize,
}

impl Run {
    fn storm(mut self, cpu: CpuId) -> Option<TickStorm> {
        let expiries = self.intervals.len() as u32 + 1;
        if expiries < STORM_MIN_EXPIRIES {
            return None;
        }
        self.intervals.sort_unstable();
        Some(TickStorm {
            cpu,
            function: self.function,
            expiries,
            start: self.start,
            end: self.end,
            median_interval: Nanos(self.intervals[self.intervals.len() / 2]),
            start_index: self.start_index,
            end_index: self.end_index,
        })
    }
}

/// The tick storms of a trace, longest (most expiries) first.
pub fn tick_storms(events: &[Event]) -> Vec<TickStorm> {
    let mut s = TickStorms::default();
    for (i, e) in events.iter().enumerate() {
        s.step(i, e);
    }
    s.finish()
}

/// Tick storms found one event at a time: the state is the current run of fast expiries per CPU.
#[derive(Default)]
pub struct TickStorms {
    runs: BTreeMap<CpuId, Run>,
    out: Vec<TickStorm>,
    lines: Vec<(usize, Event)>,
}

impl TickStorms {
    /// The trace's event `i`.
    pub fn step(&mut self, i: usize, e: &Event) {
        let EventKind::HrtimerExpireEntry { function, .. } = &e.kind else { return };
        if !TICK_FUNCTIONS.contains(&&**function) {
            return;
        }
        match self.runs.get_mut(&e.cpu) {
            Some(r) if e.ts - r.end < STORM_INTERVAL => {
                r.intervals.push((e.ts - r.end).0);
                r.end = e.ts;
                r.end_index = i;
                r.last = e.clone();
            }
            _ => {
                let fresh = Run {
                    function: function.to_string(),
                    first: e.clone(),
                    last: e.clone(),
                    intervals: Vec::new(),
                    start: e.ts,
                    end: e.ts,
                    start_index: i,
                    end_index: i,
                };
                if let Some(old) = self.runs.insert(e.cpu, fresh) {
                    self.end(e.cpu, old);
                }
            }
        }
    }

    fn end(&mut self, cpu: CpuId, r: Run) {
        let lines = [(r.start_index, r.first.clone()), (r.end_index, r.last.clone())];
        if let Some(s) = r.storm(cpu) {
            self.out.push(s);
            self.lines.extend(lines);
        }
    }

    /// The storms, longest (most expiries) first.
    pub fn finish(self) -> Vec<TickStorm> {
        self.finish_with_lines().0
    }

    /// The storms, longest (most expiries) first, and their first and last expiry events by index.
    pub fn finish_with_lines(mut self) -> (Vec<TickStorm>, Vec<(usize, Event)>) {
        for (cpu, r) in std::mem::take(&mut self.runs) {
            self.end(cpu, r);
        }
        self.out.sort_by_key(|s| std::cmp::Reverse(s.expiries));
        (self.out, self.lines)
    }
}
