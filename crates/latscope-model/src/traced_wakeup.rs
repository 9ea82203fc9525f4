//! [`TracedWakeup`]: one measured timer sample explained from the trace taken during the run (`--trace`):
//! how it was matched to the trace, its parts as typed [`Explanation`]s and the one that explains most.

use crate::{CpuId, Explanation, Nanos, Pid, TaskRef};
use serde::{Deserialize, Serialize};

/// How a measured sample was matched to the trace, or why it was not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum SampleMatch {
    /// Its wakeup is in the trace (matched by the thread's id and the time).
    Wakeup,
    /// The trace has no wakeup for it: the thread was not asleep at its deadline (kept off its CPU before
    /// it could sleep), so the late part is what ran on its CPU from the expected wakeup on.
    NotAsleep,
    /// The sample lies outside the trace's time span (the rolling window had let it go).
    OutsideTrace {
        /// The trace's first event, CLOCK_MONOTONIC ns.
        first_ns: Nanos,
        /// Its last event.
        last_ns: Nanos,
    },
    /// The trace holds no events.
    #[default]
    EmptyTrace,
    /// No wakeup of the thread ends in the `tolerance_ns` before the thread read its clock (events lost?).
    NoWakeup {
        /// How long before the clock read a wakeup's end may lie.
        tolerance_ns: Nanos,
    },
    /// The trace covers the sample, but no wakeup matches and what it shows on the CPU (other tasks,
    /// interrupts) covers less than half of the lateness: what held the thread is not in the trace.
    NothingRan,
}

impl SampleMatch {
    /// Whether the trace explains the sample (its wakeup, or what ran instead).
    pub fn found(&self) -> bool {
        matches!(self, SampleMatch::Wakeup | SampleMatch::NotAsleep)
    }
}

/// A worst sample of `latscope timer --trace` and what the trace says about it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TracedWakeup {
    /// The measured CPU.
    pub cpu: CpuId,
    /// The measuring thread (trace `pid`).
    pub tid: Pid,
    /// Sample number on its CPU.
    pub seq: u64,
    /// Expected wakeup, CLOCK_MONOTONIC ns (the trace clock is `mono`).
    pub expected_ns: Nanos,
    /// The latency the thread measured itself, ns.
    pub sample_latency_ns: Nanos,
    /// How the sample was matched to the trace; the fields below are empty when it was not.
    pub matched: SampleMatch,
    /// The measuring thread as the trace names it, with its kernel priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskRef>,
    /// The timer callback that woke it (`hrtimer_wakeup`), when traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer: Option<String>,
    /// From the entry of the interrupt that ran the timer to the timer's callback, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_delay_ns: Option<Nanos>,
    /// Other hrtimer callbacks that ran in the same interrupt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_timers: Vec<String>,
    /// The latency the trace shows: expected time to the return of `clock_nanosleep` (or the switch-in).
    pub trace_latency_ns: Nanos,
    /// When the trace shows the thread woken (`sched_waking`), CLOCK_MONOTONIC ns.
    #[serde(default)]
    pub woken_ns: Nanos,
    /// When it was switched in, CLOCK_MONOTONIC ns.
    #[serde(default)]
    pub switch_in_ns: Nanos,
    /// The parts of the latency: timer IRQ delay (with what held the interrupt back `within` it), the
    /// handler that ran the timer, other interrupts, tasks that ran, idle, return to user space.
    pub shares: Vec<Explanation>,
    /// The trace latency minus every share (negative when shares overlap), ns.
    pub remainder_ns: i64,
    /// The cause that explains most of it, with its remedy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<Explanation>,
}

impl TracedWakeup {
    /// Whether the trace explains this sample.
    pub fn found(&self) -> bool {
        self.matched.found()
    }

    /// The summed magnitude of the shares of one kind.
    pub fn total_of(&self, kind: crate::CauseKind) -> Option<Nanos> {
        let mut it = self.shares.iter().filter(|s| s.cause == kind).peekable();
        it.peek()?;
        Some(it.fold(Nanos::ZERO, |a, s| a + s.magnitude))
    }
}

/// Everything `--trace` adds to a timer result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimerTrace {
    /// The worst samples, explained, worst first.
    pub worst: Vec<TracedWakeup>,
    /// Events decoded from the capture (without kernel stacks and lost-event markers).
    pub events: u64,
    /// Kernel stacks recorded in the capture (the `stacktrace` triggers), apart from the events.
    #[serde(default)]
    pub stacks: u64,
    /// Events the ring buffer lost.
    pub lost_events: u64,
    /// Whether the capture was frozen at the first threshold crossing (`--stop-on-threshold`).
    pub frozen: bool,
    /// Samples marked in the trace (`trace_marker`) during the run.
    pub marks: u64,
    /// What the capture lacked and other notes.
    pub notes: Vec<String>,
    /// `--graph`: the worst wakeup's function graph against a normal one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<crate::WakeupGraph>,
    /// `--backend timerlat`: the worst timer IRQ latencies, explained, worst first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irq_worst: Vec<TracedIrqSample>,
}

/// One of timerlat's worst timer-IRQ-latency samples and what the trace says about it: its activation's
/// wakeup of the timerlat thread, explained like a thread sample, whose timer IRQ delay (and what held the
/// interrupt back, `within` it) and callback delay make up the IRQ latency.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TracedIrqSample {
    /// The measured CPU.
    pub cpu: CpuId,
    /// Sample number on its CPU (timerlat's activation `#N` is `seq + 1`).
    pub seq: u64,
    /// When the timer expired, CLOCK_MONOTONIC ns.
    pub expected_ns: Nanos,
    /// The IRQ latency timerlat measured, ns.
    pub irq_latency_ns: Nanos,
    /// The same activation's thread sample (its latency from the trace's timerlat record), explained.
    pub activation: TracedWakeup,
}
