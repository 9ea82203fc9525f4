//! [`Explanation`]: one cause of latency or noise as data — what kind of cause it is ([`CauseKind`]), how
//! much it explains, who or what did it ([`Culprit`]), the trace events that prove it and the remedy
//! ([`Hint`]). Every analysis produces these; the remedy is worded in one table in `latscope-analyze`
//! and the sentence in `latscope-report`: a new cause is one variant the compiler walks you through.

use crate::{CpuId, Nanos, Pid, TaskName};
use serde::{Deserialize, Serialize};

/// What caused (a share of) a latency or a gap. The JSON names are the snake_case variant names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// From a timer's expiry to the entry of the interrupt that ran it; what held the interrupt back is in
    /// [`Explanation::within`].
    TimerIrqDelay,
    /// The interrupt handler that ran the timer (entry to exit).
    IrqHandler,
    /// Another hard IRQ handler.
    Irq,
    /// An architecture vector (IPI, local timer) other than the one that ran the timer.
    Vector,
    /// The periodic scheduler tick (the `local_timer` vector in a noise gap).
    TimerTick,
    /// A softirq.
    Softirq,
    /// An NMI handler.
    Nmi,
    /// A task of higher or equal priority ran (or, for a task that is not real-time, any other task).
    BlockingTask,
    /// A lower-priority task held the CPU although a real-time task was runnable: preemption was disabled
    /// (or the kernel is not preemptible there).
    PreemptOff,
    /// The CPU was idle (leaving an idle state, or switching from idle).
    Idle,
    /// Interrupts were disabled.
    IrqsOff,
    /// Bottom halves (softirqs) were disabled in a task (`local_bh_disable`, `spin_lock_bh`).
    BhOff,
    /// Interrupts or preemption were disabled (a latency tracer that measures both).
    PreemptOrIrqsOff,
    /// A late interrupt came into this kernel code: interrupts may have been off there (the code is named
    /// in the culprit's chain), or the CPU was stalled below the kernel while it ran; what is known does
    /// not decide which.
    KernelCode,
    /// The RT bandwidth limit (`kernel.sched_rt_runtime_us`) kept a runnable real-time task off the CPU.
    RtThrottling,
    /// From the task's switch-in to the return of the sleeping system call.
    ReturnToUser,
    /// Time no kernel event accounts for: the hardware, firmware (SMI) or a hypervisor took the CPU; or, with
    /// the culprit's place [`Place::Kernel`] (a stretch inside an interrupt), that interrupt's own code: the
    /// trace cannot tell which.
    NoKernelEvent,
    /// Kernel events without a handler or task switch of their own.
    OtherKernelEvent,
    /// The wakeup path of the scheduler, as a wakeup-latency tracer (`wakeup`, `wakeup_rt`) measured it.
    WakeupLatency,
    /// Time spent in kernel functions, from a function-graph trace.
    FunctionTime,
    /// The ring buffer lost events: a cause may be missing.
    LostEvents,
    /// A configuration the audit judged a latency risk.
    Configuration,
    /// Latency was measured, but no trace covers it: the cause is not known.
    NotTraced,
}

impl CauseKind {
    /// The JSON name (`blocking_task`).
    pub fn as_str(self) -> &'static str {
        match self {
            CauseKind::TimerIrqDelay => "timer_irq_delay",
            CauseKind::IrqHandler => "irq_handler",
            CauseKind::Irq => "irq",
            CauseKind::Vector => "vector",
            CauseKind::TimerTick => "timer_tick",
            CauseKind::Softirq => "softirq",
            CauseKind::Nmi => "nmi",
            CauseKind::BlockingTask => "blocking_task",
            CauseKind::PreemptOff => "preempt_off",
            CauseKind::Idle => "idle",
            CauseKind::IrqsOff => "irqs_off",
            CauseKind::BhOff => "bh_off",
            CauseKind::PreemptOrIrqsOff => "preempt_or_irqs_off",
            CauseKind::KernelCode => "kernel_code",
            CauseKind::RtThrottling => "rt_throttling",
            CauseKind::ReturnToUser => "return_to_user",
            CauseKind::NoKernelEvent => "no_kernel_event",
            CauseKind::OtherKernelEvent => "other_kernel_event",
            CauseKind::WakeupLatency => "wakeup_latency",
            CauseKind::FunctionTime => "function_time",
            CauseKind::LostEvents => "lost_events",
            CauseKind::Configuration => "configuration",
            CauseKind::NotTraced => "not_traced",
        }
    }

    /// Whether this is interrupt work (hard IRQ, vector, tick, softirq, NMI) other than the handler that
    /// ran the timer.
    pub fn is_interference(self) -> bool {
        matches!(self, CauseKind::Irq | CauseKind::Vector | CauseKind::TimerTick | CauseKind::Softirq | CauseKind::Nmi)
    }
}

/// A task as a culprit: name, pid and kernel priority when a scheduler event showed it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskRef {
    /// Task name.
    pub comm: TaskName,
    /// Pid (thread id).
    pub pid: Pid,
    /// Kernel priority: below 100 SCHED_FIFO/RR (user priority `99 - prio`), 100–139 SCHED_OTHER.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio: Option<i32>,
    /// When the task is a thread of latscope itself (this run's, or another latscope run's): which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latscope: Option<Box<LatscopeThread>>,
}

/// What one of latscope's worker threads does, as its name says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatscopeWorker {
    /// `latscope-rdN`: the trace reader of CPU N.
    Reader,
    /// `latscope-tN`: the timer thread measuring CPU N.
    Timer,
    /// `latscope-noiseN`: the noise loop on CPU N.
    Noise,
}

/// The worker a thread name is (`latscope-rd1`, `latscope-t1`, `latscope-noise1`) and its CPU; `None` for any
/// other name (`latscope` itself included: the main thread).
pub fn latscope_worker(comm: &str) -> Option<(LatscopeWorker, crate::CpuId)> {
    let numbered = |prefix: &str| {
        let n = comm.strip_prefix(prefix).filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))?;
        n.parse().ok().map(crate::CpuId)
    };
    // `latscope-t` is a prefix of no other worker name, but test the longer ones first all the same.
    [
        ("latscope-noise", LatscopeWorker::Noise),
        ("latscope-rd", LatscopeWorker::Reader),
        ("latscope-t", LatscopeWorker::Timer),
    ]
    .into_iter()
    .find_map(|(prefix, kind)| numbered(prefix).map(|cpu| (kind, cpu)))
}

/// A thread of latscope: a culprit that is the measurement itself, or a concurrent measurement.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LatscopeThread {
    /// The pid of the other latscope run it belongs to; `None` for this run's own thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_run: Option<Pid>,
    /// What the thread does: `main thread`, `trace reader`, `timer thread`, `noise loop`, or its name.
    pub role: String,
}

impl TaskRef {
    /// A task with a known priority.
    pub fn new(comm: impl Into<TaskName>, pid: Pid, prio: Option<i32>) -> TaskRef {
        TaskRef { comm: comm.into(), pid, prio, latscope: None }
    }

    /// Whether it ran under a real-time policy (kernel prio 0–99).
    pub fn is_rt(&self) -> bool {
        self.prio.is_some_and(is_rt_prio)
    }
}

/// Whether a kernel priority is a real-time one (SCHED_FIFO/RR: 0–99).
pub fn is_rt_prio(prio: i32) -> bool {
    (0..100).contains(&prio)
}

/// Where the CPU was when a late interrupt finally came, as a kernel stack taken there shows it (or, for
/// idle, the trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "in", rename_all = "snake_case")]
pub enum Place {
    /// User space: nothing in the kernel was holding the interrupt.
    UserSpace,
    /// The idle loop, in states that take at most `exit_max_ns` to leave (when known).
    Idle {
        /// The slowest exit of the idle states the CPU could be in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_max_ns: Option<Nanos>,
    },
    /// Kernel code (the culprit's chain).
    Kernel,
    /// Not known: a task was running, but no stack was recorded at the interrupt. `stacks_traced` when the
    /// trace has stacks at other interrupts (the kernel did not take this one), else the trace has none.
    Unknown {
        /// Whether the trace has kernel stacks elsewhere.
        stacks_traced: bool,
    },
}

/// Who or what caused it. Which fields are set depends on the [`CauseKind`]: a task for tasks and for
/// code that ran in one, an IRQ number and name for interrupts, a function chain for code.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Culprit {
    /// The task that ran, or in which the code ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskRef>,
    /// The IRQ number, for hard IRQs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq: Option<u32>,
    /// The name of what it was when it is not a task: IRQ handler (`virtio0`), vector (`local_timer`),
    /// softirq (`TIMER`), NMI handler, timer callback, function, sysctl, audit finding id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The code, innermost function first (`console_unlock+0xc0`, `vprintk_emit`, …), when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
    /// The system call the task was in, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall: Option<String>,
    /// Where the CPU was when a late interrupt came, when a stack or the trace shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<Place>,
    /// For a task that held the CPU: the code where it finally gave it up (innermost first), when the
    /// stack at the switch away from it shows it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yielded_at: Vec<String>,
}

impl Culprit {
    /// A culprit known by name only.
    pub fn named(name: impl Into<String>) -> Culprit {
        Culprit { name: name.into(), ..Culprit::default() }
    }

    /// A task.
    pub fn task(task: TaskRef) -> Culprit {
        Culprit { task: Some(task), ..Culprit::default() }
    }

    /// A hard IRQ.
    pub fn irq(irq: Option<u32>, name: impl Into<String>) -> Culprit {
        Culprit { irq, name: name.into(), ..Culprit::default() }
    }

    /// The same culprit with a function chain.
    pub fn with_chain(mut self, chain: Vec<String>) -> Culprit {
        self.chain = chain;
        self
    }

    /// The task's pid, when the culprit is a task.
    pub fn pid(&self) -> Option<Pid> {
        self.task.as_ref().map(|t| t.pid)
    }
}

/// A culprit pattern recognised from what is known about such code, with its own remedy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// printk writing to a console with interrupts disabled.
    ConsolePrint,
    /// The RT bandwidth (throttling) timer being started from `enqueue_task_rt`.
    RtBandwidthTimer,
    /// The scheduler tick firing far faster than HZ allows (a tick storm).
    TickStorm,
}

/// What to do about a cause. Worded in one table (`latscope-analyze`'s `remedy`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hint {
    /// The known pattern recognised in the culprit, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<Pattern>,
    /// Why it matters, when the cause alone does not say (a known pattern's explanation).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// The concrete remedy (empty when nothing can be done from here).
    pub remedy: String,
}

/// One cause of latency or noise and what it explains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// What kind of cause.
    pub cause: CauseKind,
    /// How much latency (or noise) it explains.
    #[serde(rename = "magnitude_ns")]
    pub magnitude: Nanos,
    /// Its share of the whole latency or noise, percent, when it is a share of one.
    #[serde(default, rename = "share_pct", skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Occurrences summed into `magnitude` (1 for a single one).
    pub count: u64,
    /// The longest single occurrence, when several were summed.
    #[serde(default, rename = "max_ns", skip_serializing_if = "Option::is_none")]
    pub max: Option<Nanos>,
    /// The CPU it happened on, when one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuId>,
    /// Who or what.
    pub culprit: Culprit,
    /// Indices of the trace events that prove it, when it comes from a trace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<usize>,
    /// What to do about it (for the explanations that lead a verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<Hint>,
    /// What happened inside it, largest first (what held back a timer interrupt, what ran in a gap).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<Explanation>,
    /// The sentence a report renders for it, for readers of the JSON (filled by `latscope-report`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sentence: String,
}

impl Explanation {
    /// Maps every event index of its evidence and of what it holds (`within`) through `to`: an explanation found
    /// in a window of a trace, whose indices count the window's events, then points into the whole trace.
    pub fn map_evidence(&mut self, to: &dyn Fn(usize) -> usize) {
        for i in &mut self.evidence {
            *i = to(*i);
        }
        for w in &mut self.within {
            w.map_evidence(to);
        }
    }

    /// One occurrence of `cause` by `culprit`, explaining `magnitude` on `cpu`.
    pub fn new(cause: CauseKind, culprit: Culprit, magnitude: Nanos, cpu: Option<CpuId>) -> Explanation {
        Explanation {
            cause,
            magnitude,
            share: None,
            count: 1,
            max: None,
            cpu,
            culprit,
            evidence: Vec::new(),
            hint: None,
            within: Vec::new(),
            sentence: String::new(),
        }
    }

    /// The same explanation with its share of `whole` set (percent).
    pub fn share_of(mut self, whole: Nanos) -> Explanation {
        self.share = Some(if whole.0 == 0 { 0.0 } else { self.magnitude.0 as f64 * 100.0 / whole.0 as f64 });
        self
    }

    /// Whether `other` is the same cause by the same culprit (to be summed with it).
    pub fn same_as(&self, other: &Explanation) -> bool {
        self.cause == other.cause
            && self.culprit.name == other.culprit.name
            && self.culprit.pid() == other.culprit.pid()
            && self.culprit.irq == other.culprit.irq
            && self.culprit.chain == other.culprit.chain
    }

    /// Adds `other` (the same cause) into this one: magnitudes and counts summed, the longest kept.
    pub fn absorb(&mut self, other: &Explanation) {
        let longest = self.max.unwrap_or(self.magnitude).max(other.max.unwrap_or(other.magnitude));
        self.magnitude = self.magnitude + other.magnitude;
        self.count += other.count;
        self.max = Some(longest);
        if self.culprit.task.as_ref().is_some_and(|t| t.prio.is_none()) {
            if let (Some(t), Some(o)) = (self.culprit.task.as_mut(), other.culprit.task.as_ref()) {
                t.prio = o.prio;
            }
        }
    }
}

/// Sums explanations of the same cause and culprit, keeping the first one's place.
pub fn merge_same(list: Vec<Explanation>) -> Vec<Explanation> {
    let mut out: Vec<Explanation> = Vec::with_capacity(list.len());
    for e in list {
        match out.iter_mut().find(|x| x.same_as(&e)) {
            Some(x) => x.absorb(&e),
            None => out.push(e),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_typed_and_round_trips() {
        let mut e = Explanation::new(
            CauseKind::BlockingTask,
            Culprit::task(TaskRef::new("spin", 60, Some(2))),
            Nanos::from_us(580),
            Some(CpuId(1)),
        )
        .share_of(Nanos::from_us(612));
        e.hint = Some(Hint { pattern: None, why: String::new(), remedy: "move spin off CPU 1".into() });
        let v = serde_json::to_value(&e).expect("json");
        assert_eq!(v["cause"], "blocking_task");
        assert_eq!(v["magnitude_ns"], 580_000);
        assert_eq!(v["culprit"]["task"]["pid"], 60);
        assert!(v.get("within").is_none() && v.get("sentence").is_none());
        let back: Explanation = serde_json::from_value(v).expect("back");
        assert_eq!(back, e);
        for k in [CauseKind::TimerIrqDelay, CauseKind::NoKernelEvent, CauseKind::PreemptOrIrqsOff] {
            assert_eq!(serde_json::to_value(k).expect("kind"), k.as_str());
        }
    }

    #[test]
    fn merging_sums_the_same_culprit_only() {
        let tick = |us| Explanation::new(CauseKind::Vector, Culprit::named("local_timer"), Nanos::from_us(us), None);
        let list = merge_same(vec![tick(10), tick(30), tick(5)]);
        assert_eq!(list.len(), 1);
        assert_eq!((list[0].magnitude, list[0].count, list[0].max), (Nanos::from_us(45), 3, Some(Nanos::from_us(30))));
        let other = Explanation::new(CauseKind::Irq, Culprit::irq(Some(30), "virtio0"), Nanos::from_us(1), None);
        assert_eq!(merge_same(vec![tick(1), other]).len(), 2);
    }
}
