//! [`Trigger`]: the capture beside a measurement reacting to its progress. Polled with each CPU's progress
//! (largest latency so far, samples above the threshold, the latest of them), it marks every new worst
//! and every threshold crossing in the trace — written from the sample's CPU — holds the rolling window
//! around it, and with `stop_on_threshold` freezes the capture at the first crossing, like `cyclictest -b`.
//!
//! ```no_run
//! use latscope_model::{CpuId, CpuList, Nanos};
//! use latscope_sys::tracefs::{Capture, CaptureConfig, CpuProgress, Retention, Trigger};
//! let cfg = CaptureConfig {
//!     cpus: Some(CpuList(vec![CpuId(1)])),
//!     retention: Retention::Window { span: Nanos::from_secs(12), max_bytes: 96 << 20 },
//!     ..CaptureConfig::default()
//! };
//! let mut trigger = Trigger::new(Capture::start(&cfg)?, true);
//! // Every 10 ms while the measurement runs, with what its threads published:
//! trigger.poll([CpuProgress { cpu: CpuId(1), max_ns: 80_000, above_threshold: 1, last_above: Some((5, 80_005)) }]);
//! let (marks, frozen) = (trigger.marks(), trigger.is_frozen());
//! let data = trigger.into_capture().finish()?; // decoded and explained by the binary
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::capture::Capture;
use super::marker::Marker;
use crate::measure::clock;
use latscope_model::{CpuId, Nanos};

/// How much trace is held before the previous poll (the marked sample happened since then).
pub const HOLD_BEFORE: Nanos = Nanos::from_ms(20);
/// How much trace is held after the poll that saw a marked sample.
pub const HOLD_AFTER: Nanos = Nanos::from_ms(2);

/// One CPU's progress as its measuring thread publishes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuProgress {
    /// The CPU.
    pub cpu: CpuId,
    /// Largest latency so far, ns.
    pub max_ns: u64,
    /// Samples above the threshold so far.
    pub above_threshold: u64,
    /// The latest sample above the threshold, as (expected, actual) CLOCK_MONOTONIC ns.
    pub last_above: Option<(u64, u64)>,
}

/// A capture driven by a measurement's progress. Owns the capture until [`Trigger::into_capture`].
#[derive(Debug)]
pub struct Trigger {
    capture: Capture,
    marker: Marker,
    watch: Watch,
    marks: u64,
}

impl Trigger {
    /// Watches `capture`; `stop_on_threshold` freezes it at the first threshold crossing.
    pub fn new(capture: Capture, stop_on_threshold: bool) -> Trigger {
        let marker = capture.marker();
        Trigger { capture, marker, watch: Watch::new(clock::now(), stop_on_threshold), marks: 0 }
    }

    /// Compares each CPU's progress (in the same CPU order every poll) with the previous poll: marks the
    /// new worsts and crossings, holds the window from a little before the previous poll to a little after
    /// now, and freezes on a crossing when asked to.
    pub fn poll(&mut self, progress: impl IntoIterator<Item = CpuProgress>) {
        let step = self.watch.step(clock::now(), progress);
        for (cpu, text) in &step.marks {
            if mark_on(&self.marker, *cpu, text) {
                self.marks += 1;
            }
        }
        if let Some((from, to)) = step.hold {
            self.capture.hold(from, to);
        }
        if step.freeze {
            self.capture.freeze();
        }
    }

    /// Marks written into the trace so far.
    pub fn marks(&self) -> u64 {
        self.marks
    }

    /// Whether a threshold crossing froze the capture.
    pub fn is_frozen(&self) -> bool {
        self.capture.is_frozen()
    }

    /// The capture, while it records (to add stack triggers once the run's threads are known).
    pub fn capture(&self) -> &Capture {
        &self.capture
    }

    /// The capture, to finish and decode.
    pub fn into_capture(self) -> Capture {
        self.capture
    }
}

/// What one poll asks of the capture.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Step {
    /// Marker texts, each to be written from its CPU.
    marks: Vec<(CpuId, String)>,
    /// The window to hold, when a sample was marked.
    hold: Option<(Nanos, Nanos)>,
    /// Freeze the capture now.
    freeze: bool,
}

/// The progress seen at the previous poll: the decisions of [`Trigger::poll`], without the capture.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Watch {
    last_max: Vec<u64>,
    last_above: Vec<u64>,
    last_poll: Nanos,
    stop_on_threshold: bool,
    frozen: bool,
}

impl Watch {
    fn new(now: Nanos, stop_on_threshold: bool) -> Watch {
        Watch { last_max: Vec::new(), last_above: Vec::new(), last_poll: now, stop_on_threshold, frozen: false }
    }

    fn step(&mut self, now: Nanos, progress: impl IntoIterator<Item = CpuProgress>) -> Step {
        let mut step = Step::default();
        for (i, s) in progress.into_iter().enumerate() {
            if i >= self.last_max.len() {
                self.last_max.resize(i + 1, 0);
                self.last_above.resize(i + 1, 0);
            }
            let crossed = s.above_threshold > self.last_above[i];
            let new_worst = s.max_ns > self.last_max[i];
            if !(crossed || new_worst) {
                continue;
            }
            let text = match s.last_above.filter(|_| crossed) {
                Some((expected, actual)) => format!(
                    "latscope: cpu={} threshold crossed: latency={} ns expected={expected} ({} above so far)",
                    s.cpu,
                    actual.saturating_sub(expected),
                    s.above_threshold
                ),
                None => format!("latscope: cpu={} new worst: latency={} ns", s.cpu, s.max_ns),
            };
            step.marks.push((s.cpu, text));
            // The sample happened since the previous poll: hold from a little before it to now.
            step.hold = Some((self.last_poll.saturating_sub(HOLD_BEFORE), now + HOLD_AFTER));
            if crossed && self.stop_on_threshold && !self.frozen {
                step.freeze = true;
                self.frozen = true;
            }
            self.last_above[i] = s.above_threshold;
            self.last_max[i] = s.max_ns;
        }
        self.last_poll = now;
        step
    }
}

/// Writes a mark from the sample's CPU: the kernel refuses (`EBADF`) a `trace_marker` write from a CPU
/// outside the instance's `tracing_cpumask`. The calling (SCHED_OTHER) thread moves there for the write
/// and back, so it runs while the measuring thread sleeps — the cost cyclictest's in-thread marks have.
fn mark_on(marker: &Marker, cpu: CpuId, text: &str) -> bool {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if cpu.0 as usize >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it (index checked above);
    // sched_{get,set}affinity(0, …) act on the calling thread.
    unsafe {
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut old) != 0 {
            return false;
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu.0 as usize, &mut one);
        if libc::sched_setaffinity(0, size, &one) != 0 {
            return false;
        }
        let ok = marker.mark(text).unwrap_or(false);
        libc::sched_setaffinity(0, size, &old);
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cpu: u32, max_ns: u64, above: u64, last_above: Option<(u64, u64)>) -> CpuProgress {
        CpuProgress { cpu: CpuId(cpu), max_ns, above_threshold: above, last_above }
    }

    #[test]
    fn marks_new_worsts_and_crossings_and_holds_around_them() {
        let mut w = Watch::new(Nanos::from_ms(100), false);
        let s = w.step(Nanos::from_ms(110), [cpu(0, 0, 0, None), cpu(1, 30_000, 0, None)]);
        assert_eq!(s.marks, vec![(CpuId(1), "latscope: cpu=1 new worst: latency=30000 ns".to_string())]);
        assert_eq!(s.hold, Some((Nanos::from_ms(80), Nanos::from_ms(112))));
        assert!(!s.freeze);
        // Nothing new: nothing to mark or hold.
        assert_eq!(w.step(Nanos::from_ms(120), [cpu(0, 0, 0, None), cpu(1, 30_000, 0, None)]), Step::default());
        // A crossing names the sample's latency and deadline, and the count so far.
        let s = w.step(Nanos::from_ms(130), [cpu(0, 0, 0, None), cpu(1, 250_000, 1, Some((1_000, 251_000)))]);
        assert_eq!(
            s.marks,
            vec![(
                CpuId(1),
                "latscope: cpu=1 threshold crossed: latency=250000 ns expected=1000 (1 above so far)".to_string()
            )]
        );
        assert_eq!(s.hold, Some((Nanos::from_ms(100), Nanos::from_ms(132))));
        assert!(!s.freeze, "no freeze without stop_on_threshold");
    }

    #[test]
    fn freezes_once_at_the_first_crossing_when_asked() {
        let mut w = Watch::new(Nanos::ZERO, true);
        assert!(!w.step(Nanos::from_ms(10), [cpu(2, 5_000, 0, None)]).freeze, "a new worst below the threshold");
        assert!(w.step(Nanos::from_ms(20), [cpu(2, 90_000, 1, Some((7, 90_007)))]).freeze);
        let s = w.step(Nanos::from_ms(30), [cpu(2, 95_000, 2, Some((9, 95_009)))]);
        assert!(!s.freeze && s.marks.len() == 1, "later crossings are marked, the capture frozen once: {s:?}");
        // The hold window never starts before time 0.
        let mut w = Watch::new(Nanos::from_ms(5), false);
        assert_eq!(w.step(Nanos::from_ms(6), [cpu(0, 1, 0, None)]).hold, Some((Nanos::ZERO, Nanos::from_ms(8))));
    }
}
