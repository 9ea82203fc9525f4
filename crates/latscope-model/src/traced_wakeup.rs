//! [`TracedWakeup`]: one measured timer sample explained from the trace taken during the run (`--trace`).

use crate::{CpuId, Pid};
use serde::{Deserialize, Serialize};

/// One named share of a traced wakeup's latency.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyShare {
    /// What it is: `timer_irq_delay`, `irq_handler`, `irq`, `vector`, `softirq`, `nmi`, `blocking_task`,
    /// `idle`, `irqs_off`, `rt_throttling`, `return_to_user`.
    pub kind: String,
    /// IRQ name, softirq vector, task comm, …
    pub name: String,
    /// Task pid (blocking tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<Pid>,
    /// Kernel priority of the task (below 100: SCHED_FIFO/RR, user priority `99 - prio`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio: Option<i32>,
    /// How long, ns.
    pub duration_ns: u64,
    /// Occurrences summed.
    pub count: u32,
}

/// A worst sample of `latscope timer --trace` and what the trace says about it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedWakeup {
    /// The measured CPU.
    pub cpu: CpuId,
    /// The measuring thread (trace `pid`).
    pub tid: Pid,
    /// Sample number on its CPU.
    pub seq: u64,
    /// Expected wakeup, CLOCK_MONOTONIC ns (the trace clock is `mono`).
    pub expected_ns: u64,
    /// The latency the thread measured itself, ns.
    pub sample_latency_ns: u64,
    /// Whether the trace holds this wakeup (matched by tid and time); the fields below are empty otherwise.
    pub found: bool,
    /// The latency the trace shows: expected time to the return of `clock_nanosleep` (or the switch-in).
    pub trace_latency_ns: u64,
    /// When the trace shows the thread woken (`sched_waking`), CLOCK_MONOTONIC ns.
    #[serde(default)]
    pub woken_ns: u64,
    /// When it was switched in, CLOCK_MONOTONIC ns.
    #[serde(default)]
    pub switch_in_ns: u64,
    /// Expected time to the entry of the interrupt that ran the timer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_irq_delay_ns: Option<u64>,
    /// The interrupt handler that ran the timer (its name in `irq_handler_name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_handler_ns: Option<u64>,
    /// Name of that interrupt (`local_timer`, an IRQ's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_handler_name: Option<String>,
    /// Other interrupts, vectors, softirqs and NMIs, by name.
    pub interference: Vec<LatencyShare>,
    /// Tasks that ran while the thread was woken but waiting, with pid and priority.
    pub blocking: Vec<LatencyShare>,
    /// Everything else (idle exit, irqs-off, return to user, RT throttling).
    pub other: Vec<LatencyShare>,
    /// The trace latency minus every share (negative when shares overlap), ns.
    pub remainder_ns: i64,
    /// What happened, in one sentence.
    pub explanation: String,
    /// What to do about it.
    pub remedy: String,
    /// Why the wakeup was not found, when it was not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Everything `--trace` adds to a timer result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerTrace {
    /// The worst samples, explained, worst first.
    pub worst: Vec<TracedWakeup>,
    /// Events decoded from the capture.
    pub events: u64,
    /// Events the ring buffer lost.
    pub lost_events: u64,
    /// Whether the capture was frozen at the first threshold crossing (`--stop-on-threshold`).
    pub frozen: bool,
    /// Samples marked in the trace (`trace_marker`) during the run.
    pub marks: u64,
    /// What the capture lacked and other notes.
    pub notes: Vec<String>,
}
