//! The typed event every decoder produces and every analysis consumes.

use crate::{CpuId, Flags, Nanos, SyscallArgs, TaskName};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Shared immutable text (function, IRQ and event names): decoders intern repeated strings. Task names
/// are [`TaskName`]s.
pub type Text = Arc<str>;

/// A process or thread id as the kernel prints it (0 is the idle task; -1 when unknown).
pub type Pid = i32;

/// One trace event, whatever format it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Timestamp in the trace's clock (or relative time for latency-tracer output).
    pub ts: Nanos,
    /// CPU that recorded the event.
    pub cpu: CpuId,
    /// Current task's pid.
    pub pid: Pid,
    /// Thread-group id when the format shows it.
    pub tgid: Option<Pid>,
    /// Current task's name (may be truncated by the format, e.g. 8 chars in latency output).
    pub comm: TaskName,
    /// Context flags.
    pub flags: Flags,
    /// What happened.
    pub kind: EventKind,
}

/// Which preempt/irq toggle a `preemptirq` event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Toggle {
    /// `irq_disable`
    IrqDisable,
    /// `irq_enable`
    IrqEnable,
    /// `preempt_disable`
    PreemptDisable,
    /// `preempt_enable`
    PreemptEnable,
}

/// Which scheduler wakeup event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeupKind {
    /// `sched_waking`: the wakeup was requested.
    Waking,
    /// `sched_wakeup`: the task was put on the run queue.
    Wakeup,
    /// `sched_wakeup_new`: a new task was put on the run queue.
    WakeupNew,
}

/// Which jiffies-timer (`timer:timer_*`) event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerOp {
    /// `timer_init`
    Init,
    /// `timer_start`
    Start,
    /// `timer_cancel`
    Cancel,
    /// `timer_expire_entry`
    ExpireEntry,
    /// `timer_expire_exit`
    ExpireExit,
}

/// Which osnoise tracer event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OsnoiseKind {
    /// `thread_noise`
    Thread,
    /// `irq_noise`
    Irq,
    /// `softirq_noise`
    Softirq,
    /// `nmi_noise`
    Nmi,
    /// `sample_threshold`
    SampleThreshold,
}

/// How many interferences of each source one osnoise period counted (the kernel's `hw_count` … `thread_count`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsnoiseCounts {
    /// Noise with no NMI, IRQ, softirq or thread behind it: hardware, firmware (SMI) or the hypervisor.
    pub hw: u32,
    /// NMIs.
    pub nmi: u32,
    /// Hard IRQs.
    pub irq: u32,
    /// Softirqs.
    pub softirq: u32,
    /// Threads that ran instead of the osnoise thread.
    pub thread: u32,
}

/// The context a timerlat sample was taken in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerlatContext {
    /// The timer IRQ.
    Irq,
    /// The timerlat kernel thread.
    Thread,
    /// A user-space timerlat thread.
    User,
}

/// A field value of an event we have no typed variant for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FieldValue {
    /// An integer field.
    Int(i64),
    /// Any other field, as text.
    Str(Text),
}

/// One named field of an [`EventKind::Other`] event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Field {
    /// Field name.
    pub name: Text,
    /// Field value.
    pub value: FieldValue,
}

/// What an event reports. Analyses match on these variants; field lookup by name happens in decoders only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// `irq:irq_handler_entry`
    IrqHandlerEntry { irq: u32, name: Text },
    /// `irq:irq_handler_exit`
    IrqHandlerExit { irq: u32, handled: bool },
    /// `irq:softirq_entry`
    SoftirqEntry { vec: u32, name: Text },
    /// `irq:softirq_exit`
    SoftirqExit { vec: u32, name: Text },
    /// `irq:softirq_raise`
    SoftirqRaise { vec: u32, name: Text },
    /// `irq_vectors:*_entry` (local_timer, reschedule, call_function, …): `name` without the suffix.
    VectorEntry { name: Text, vector: Option<u32> },
    /// `irq_vectors:*_exit`
    VectorExit { name: Text, vector: Option<u32> },
    /// `timer:hrtimer_init` / `hrtimer_setup`
    HrtimerInit { hrtimer: u64, clockid: Text, mode: Text },
    /// `timer:hrtimer_start`: `expires`/`softexpires` in the timer's clock, ns.
    HrtimerStart { hrtimer: u64, function: Text, expires: Nanos, softexpires: Nanos, mode: Text },
    /// `timer:hrtimer_cancel`
    HrtimerCancel { hrtimer: u64 },
    /// `timer:hrtimer_expire_entry`: `now` in the timer's clock, ns.
    HrtimerExpireEntry { hrtimer: u64, function: Text, now: Nanos },
    /// `timer:hrtimer_expire_exit`
    HrtimerExpireExit { hrtimer: u64 },
    /// `timer:timer_*` (jiffies timers); `expires`/`now` in jiffies.
    Timer { op: TimerOp, timer: u64, function: Option<Text>, expires: Option<u64>, now: Option<u64> },
    /// `sched:sched_switch`. `prev_state` as the kernel prints it (`R`, `S`, `D`, `R+`, `I`…).
    SchedSwitch {
        prev_comm: TaskName,
        prev_pid: Pid,
        prev_prio: i32,
        prev_state: Text,
        next_comm: TaskName,
        next_pid: Pid,
        next_prio: i32,
    },
    /// `sched:sched_waking`, `sched_wakeup`, `sched_wakeup_new`
    SchedWakeup { kind: WakeupKind, comm: TaskName, pid: Pid, prio: i32, target_cpu: Option<CpuId> },
    /// `sched:sched_migrate_task`
    SchedMigrate { comm: TaskName, pid: Pid, prio: i32, orig_cpu: CpuId, dest_cpu: CpuId },
    /// `sched:sched_pi_setprio`: priority inheritance changed `pid`'s priority (kernel prio numbers: a
    /// boost lowers the number to a waiter's, the end of the boost raises it back).
    SchedPiSetprio { comm: TaskName, pid: Pid, oldprio: i32, newprio: i32 },
    /// `lock:contention_begin`: the current task (or interrupt) starts waiting for a contended kernel lock
    /// at `lock`; `flags` are the kernel's `LCB_F_*` bits ([`lock_flags`]: spin, read, write, rt, percpu,
    /// mutex).
    LockContentionBegin { lock: u64, flags: u32 },
    /// `lock:contention_end`: it got the lock at `lock` (`ret` 0) or gave up (a signal, a timeout).
    LockContentionEnd { lock: u64, ret: i32 },
    /// `preemptirq:*` with the caller and its parent (`console_unlock+0xc0/0x510`).
    Preemptirq { toggle: Toggle, caller: Text, parent: Text },
    /// `nmi:nmi_handler`
    NmiHandler { handler: Text, delta: Nanos, handled: u32 },
    /// `raw_syscalls:sys_enter` or `syscalls:sys_enter_NAME` (then `name` is set).
    SysEnter { nr: Option<i32>, name: Option<Text>, args: SyscallArgs },
    /// `raw_syscalls:sys_exit` or `syscalls:sys_exit_NAME`.
    SysExit { nr: Option<i32>, name: Option<Text>, ret: i64 },
    /// `ftrace:print`/`bprint`/`bputs`, `tracing_mark_write`, trace_printk and trace_marker text.
    Print { ip: Option<Text>, text: Text },
    /// `timerlat:timerlat_sample` or a timerlat tracer line.
    Timerlat { context: TimerlatContext, seqnum: u64, latency: Nanos },
    /// `osnoise:*_noise` and `sample_threshold`. `number`: the IRQ's vector (`irq_noise`), the softirq's
    /// vector, the thread's pid (`thread_noise`), the interferences counted in the noise
    /// (`sample_threshold`); `None` for `nmi_noise` or when the record does not say. `start` is on the
    /// tracer's own clock (trace_clock_local), which may differ from the event's timestamp clock.
    Osnoise { kind: OsnoiseKind, name: Text, number: Option<u32>, start: Nanos, duration: Nanos },
    /// The osnoise tracer's record of one period (`ftrace:osnoise`; its text line `RUNTIME NOISE %AVAIL
    /// MAX-SINGLE HW NMI IRQ SIRQ THREAD`): the runtime measured, the noise in it, the longest single
    /// noise, and how many interferences of each source it counted (HW: noise with no interrupt, NMI or
    /// thread behind it). The kernel gives microseconds.
    OsnoiseSample { runtime: Nanos, noise: Nanos, max_single: Nanos, counts: OsnoiseCounts },
    /// The hwlat tracer's sample (`ftrace:hwlat`, or its `#1 inner/outer(us): 11/12 ts:… count:6` line): the
    /// longest gap between two back-to-back clock reads (`inner`) and between two loop turns (`outer`) in
    /// one sampling width with interrupts off; `count` gaps over the threshold in it; the NMIs that ran in
    /// the width and their total time when the kernel shows it; `wall` the sample's CLOCK_REALTIME when
    /// the format has it (the text does).
    Hwlat {
        seqnum: u32,
        count: u32,
        nmi_count: u32,
        inner: Nanos,
        outer: Nanos,
        nmi_total: Option<Nanos>,
        wall: Option<Nanos>,
    },
    /// `workqueue:workqueue_execute_start`
    WorkqueueStart { work: u64, function: Text },
    /// `workqueue:workqueue_execute_end`
    WorkqueueEnd { work: u64, function: Option<Text> },
    /// function tracer entry (`func <-parent`).
    Function { func: Text, parent: Option<Text> },
    /// function_graph entry (`func() {`).
    GraphEntry { depth: u32, func: Text },
    /// function_graph return (`}`), with the call's duration when shown.
    GraphExit { depth: u32, func: Option<Text>, duration: Option<Nanos> },
    /// function_graph leaf (`func();`): entry and return in one line.
    GraphLeaf { depth: u32, func: Text, duration: Option<Nanos> },
    /// A stack trace attached to the previous event (`<stack trace>` with ` => frame` lines). Shared:
    /// decoders give a stack recorded again the frames of its first recording (a trace repeats a few hundred
    /// stacks hundreds of thousands of times).
    Stack { frames: Arc<[Text]> },
    /// Events the ring buffer dropped at this point (`[LOST N EVENTS]`); `None` when the count is unknown.
    Lost { count: Option<u64> },
    /// Any other event, kept with its fields.
    Other { system: Option<Text>, name: Text, fields: Vec<Field> },
}

impl EventKind {
    /// The event's name as ftrace spells it (`sched_switch`, `irq_handler_entry`, `local_timer_entry`…).
    pub fn name(&self) -> String {
        match self {
            EventKind::IrqHandlerEntry { .. } => "irq_handler_entry".into(),
            EventKind::IrqHandlerExit { .. } => "irq_handler_exit".into(),
            EventKind::SoftirqEntry { .. } => "softirq_entry".into(),
            EventKind::SoftirqExit { .. } => "softirq_exit".into(),
            EventKind::SoftirqRaise { .. } => "softirq_raise".into(),
            EventKind::VectorEntry { name, .. } => format!("{name}_entry"),
            EventKind::VectorExit { name, .. } => format!("{name}_exit"),
            EventKind::HrtimerInit { .. } => "hrtimer_init".into(),
            EventKind::HrtimerStart { .. } => "hrtimer_start".into(),
            EventKind::HrtimerCancel { .. } => "hrtimer_cancel".into(),
            EventKind::HrtimerExpireEntry { .. } => "hrtimer_expire_entry".into(),
            EventKind::HrtimerExpireExit { .. } => "hrtimer_expire_exit".into(),
            EventKind::Timer { op, .. } => match op {
                TimerOp::Init => "timer_init",
                TimerOp::Start => "timer_start",
                TimerOp::Cancel => "timer_cancel",
                TimerOp::ExpireEntry => "timer_expire_entry",
                TimerOp::ExpireExit => "timer_expire_exit",
            }
            .into(),
            EventKind::SchedSwitch { .. } => "sched_switch".into(),
            EventKind::SchedWakeup { kind, .. } => match kind {
                WakeupKind::Waking => "sched_waking",
                WakeupKind::Wakeup => "sched_wakeup",
                WakeupKind::WakeupNew => "sched_wakeup_new",
            }
            .into(),
            EventKind::SchedMigrate { .. } => "sched_migrate_task".into(),
            EventKind::SchedPiSetprio { .. } => "sched_pi_setprio".into(),
            EventKind::LockContentionBegin { .. } => "contention_begin".into(),
            EventKind::LockContentionEnd { .. } => "contention_end".into(),
            EventKind::Preemptirq { toggle, .. } => match toggle {
                Toggle::IrqDisable => "irq_disable",
                Toggle::IrqEnable => "irq_enable",
                Toggle::PreemptDisable => "preempt_disable",
                Toggle::PreemptEnable => "preempt_enable",
            }
            .into(),
            EventKind::NmiHandler { .. } => "nmi_handler".into(),
            EventKind::SysEnter { name: Some(n), .. } => format!("sys_enter_{n}"),
            EventKind::SysEnter { .. } => "sys_enter".into(),
            EventKind::SysExit { name: Some(n), .. } => format!("sys_exit_{n}"),
            EventKind::SysExit { .. } => "sys_exit".into(),
            EventKind::Print { .. } => "print".into(),
            EventKind::Timerlat { .. } => "timerlat_sample".into(),
            EventKind::Hwlat { .. } => "hwlat".into(),
            EventKind::Osnoise { kind, .. } => match kind {
                OsnoiseKind::Thread => "thread_noise",
                OsnoiseKind::Irq => "irq_noise",
                OsnoiseKind::Softirq => "softirq_noise",
                OsnoiseKind::Nmi => "nmi_noise",
                OsnoiseKind::SampleThreshold => "sample_threshold",
            }
            .into(),
            EventKind::OsnoiseSample { .. } => "osnoise".into(),
            EventKind::WorkqueueStart { .. } => "workqueue_execute_start".into(),
            EventKind::WorkqueueEnd { .. } => "workqueue_execute_end".into(),
            EventKind::Function { .. } => "function".into(),
            EventKind::GraphEntry { .. } => "funcgraph_entry".into(),
            EventKind::GraphExit { .. } => "funcgraph_exit".into(),
            EventKind::GraphLeaf { .. } => "funcgraph_leaf".into(),
            EventKind::Stack { .. } => "kernel_stack".into(),
            EventKind::Lost { .. } => "lost_events".into(),
            EventKind::Other { name, .. } => name.to_string(),
        }
    }
}

/// A trace's events as `trace-cmd report` counts them — without kernel stacks (each belongs to the event
/// before it) and lost-events markers — and, apart, its kernel stacks.
pub fn count_events_and_stacks(events: &[Event]) -> (u64, u64) {
    events.iter().fold((0, 0), |(n, stacks), e| match e.kind {
        EventKind::Stack { .. } => (n, stacks + 1),
        EventKind::Lost { .. } => (n, stacks),
        _ => (n + 1, stacks),
    })
}

/// The kernel's softirq vector names, indexed by vector number (`include/linux/interrupt.h`).
pub const SOFTIRQ_NAMES: [&str; 10] =
    ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

/// The name of softirq vector `vec`, or `"?"` beyond the known ten.
pub fn softirq_name(vec: u32) -> &'static str {
    SOFTIRQ_NAMES.get(vec as usize).copied().unwrap_or("?")
}

/// The kernel's `LCB_F_*` lock-contention flags (include/trace/events/lock.h), as `lock:contention_begin`
/// prints them.
pub mod lock_flags {
    /// A spinning lock (spinlock, rwlock).
    pub const SPIN: u32 = 1 << 0;
    /// Taken for reading.
    pub const READ: u32 = 1 << 1;
    /// Taken for writing.
    pub const WRITE: u32 = 1 << 2;
    /// An rt_mutex (every spinlock_t and mutex on PREEMPT_RT).
    pub const RT: u32 = 1 << 3;
    /// A per-CPU rw-semaphore.
    pub const PERCPU: u32 = 1 << 4;
    /// A mutex.
    pub const MUTEX: u32 = 1 << 5;
    /// Each flag with the name the kernel prints.
    pub const NAMES: [(u32, &str); 6] =
        [(SPIN, "SPIN"), (READ, "READ"), (WRITE, "WRITE"), (RT, "RT"), (PERCPU, "PERCPU"), (MUTEX, "MUTEX")];

    /// `SPIN|WRITE` → the bits; `None` when a name is unknown.
    pub fn parse(text: &str) -> Option<u32> {
        text.split('|')
            .filter(|n| !n.is_empty())
            .try_fold(0, |bits, n| NAMES.iter().find(|(_, name)| *name == n.trim()).map(|(b, _)| bits | b))
    }

    /// The bits as the kernel prints them (`SPIN|WRITE`); unknown bits in hex.
    pub fn names(bits: u32) -> String {
        let mut out: Vec<String> = NAMES.iter().filter(|(b, _)| bits & b != 0).map(|(_, n)| n.to_string()).collect();
        let known = NAMES.iter().fold(0, |a, (b, _)| a | b);
        if bits & !known != 0 {
            out.push(format!("{:#x}", bits & !known));
        }
        out.join("|")
    }
}
