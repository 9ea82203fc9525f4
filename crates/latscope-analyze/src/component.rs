//! [`Component`]: one named share of a latency (timer IRQ delay, an IRQ, a blocking task, …).

use latscope_model::{CpuId, Nanos, Pid};
use serde::Serialize;

/// What kind of share of a latency a component is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentKind {
    /// From the timer's expiry to the entry of the IRQ that ran it.
    TimerIrqDelay,
    /// The IRQ handler that ran the timer (entry to exit).
    IrqHandler,
    /// Another hard IRQ.
    Irq,
    /// An architecture vector (IPI, local timer) other than the one that ran the timer.
    Vector,
    /// A softirq.
    Softirq,
    /// An NMI.
    Nmi,
    /// Another task ran while the woken task waited.
    BlockingTask,
    /// The CPU was idle (leaving an idle state, or scheduling from idle).
    Idle,
    /// Interrupts were disabled.
    IrqsOff,
    /// The RT bandwidth limit kept the task off the CPU.
    RtThrottling,
    /// From switch-in to the return of the sleeping system call.
    ReturnToUser,
}

impl ComponentKind {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentKind::TimerIrqDelay => "timer_irq_delay",
            ComponentKind::IrqHandler => "irq_handler",
            ComponentKind::Irq => "irq",
            ComponentKind::Vector => "vector",
            ComponentKind::Softirq => "softirq",
            ComponentKind::Nmi => "nmi",
            ComponentKind::BlockingTask => "blocking_task",
            ComponentKind::Idle => "idle",
            ComponentKind::IrqsOff => "irqs_off",
            ComponentKind::RtThrottling => "rt_throttling",
            ComponentKind::ReturnToUser => "return_to_user",
        }
    }
}

/// One share of a latency.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Component {
    /// What it is.
    pub kind: ComponentKind,
    /// Its name: IRQ name, softirq vector, task comm, the irqs-off caller, …
    pub name: String,
    /// How long it took.
    #[serde(rename = "duration_ns")]
    pub duration: Nanos,
    /// Task pid for blocking tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<Pid>,
    /// Task kernel priority for blocking tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prio: Option<i32>,
    /// CPU it happened on.
    pub cpu: CpuId,
    /// How many separate occurrences were summed.
    pub count: u32,
}

impl Component {
    /// A component with one occurrence.
    pub fn new(kind: ComponentKind, name: impl Into<String>, duration: Nanos, cpu: CpuId) -> Component {
        Component { kind, name: name.into(), duration, pid: None, prio: None, cpu, count: 1 }
    }
}
