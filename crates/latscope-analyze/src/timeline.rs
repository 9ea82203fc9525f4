//! Per-CPU timeline: what each CPU was doing at every instant (task, hard IRQ, vector, softirq, NMI,
//! idle), with nesting, built by one state machine over the event stream; plus irqs-off sections.

use crate::flag_sections::{Disabled, FlagSection, FlagTracker, Sampled};
use latscope_model::event::softirq_name;
use latscope_model::event::Toggle;
use latscope_model::{CpuId, Event, EventKind, Nanos, Pid, TaskName, Text};
use rustc_hash::FxHashMap;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// How many of the latest-started contexts a point lookup examines: contexts containing a point started
/// among the last few (only contexts nested in them can start later), so lookups stay O(log n).
pub const CONTEXT_LOOKBACK: usize = 256;

/// What a CPU was running.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Activity {
    /// A task (pid 0 is idle and reported as [`Activity::Idle`]). `prio` is the kernel prio when known.
    Task {
        /// Task name.
        comm: TaskName,
        /// Pid.
        pid: Pid,
        /// Kernel priority (0..99 RT, 100..139 normal) when a scheduler event showed it.
        prio: Option<i32>,
    },
    /// The idle task.
    Idle,
    /// A hard IRQ handler (`irq_handler_entry`).
    Irq {
        /// IRQ number.
        irq: u32,
        /// Handler name (`arch_timer`, `eth0`).
        name: Text,
    },
    /// An architecture vector (`local_timer`, `reschedule`, `call_function`…).
    Vector {
        /// Vector name without `_entry`.
        name: Text,
    },
    /// A softirq vector.
    Softirq {
        /// Vector number.
        vec: u32,
        /// Vector name (`TIMER`, `NET_RX`…).
        name: Text,
    },
    /// An NMI handler.
    Nmi {
        /// Handler symbol.
        handler: Text,
    },
    /// A hard interrupt the trace shows only in the flags column (`h`), no irq or vector event: from its
    /// first to its last `h` event.
    HardIrq {
        /// The handler, when a traced function shows it (the function `handle_irq_event` called), or
        /// `hrtimer_interrupt` when hrtimers expired in it.
        handler: Option<Text>,
    },
}

impl Activity {
    /// Whether this is interrupt context (IRQ, vector, softirq or NMI).
    pub fn is_interrupt(&self) -> bool {
        matches!(
            self,
            Activity::Irq { .. }
                | Activity::Vector { .. }
                | Activity::Softirq { .. }
                | Activity::Nmi { .. }
                | Activity::HardIrq { .. }
        )
    }

    /// A short label: `irq 3 arch_timer`, `softirq TIMER`, `cyclictest:1213`, `idle`.
    pub fn label(&self) -> String {
        match self {
            Activity::Task { comm, pid, .. } => format!("{comm}:{pid}"),
            Activity::Idle => "idle".into(),
            Activity::Irq { irq, name } => format!("irq {irq} {name}"),
            Activity::Vector { name } => name.to_string(),
            Activity::Softirq { name, .. } => format!("softirq {name}"),
            Activity::Nmi { handler } => format!("nmi {handler}"),
            Activity::HardIrq { handler: Some(h) } => format!("hard irq {h}"),
            Activity::HardIrq { handler: None } => "hard irq".into(),
        }
    }
}

/// An interrupt-context span (IRQ, vector, softirq or NMI) with its nesting depth and self time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContextSpan {
    /// What ran.
    pub activity: Activity,
    /// Entry time.
    pub start: Nanos,
    /// Exit time.
    pub end: Nanos,
    /// 1 for a context entered from task level, 2 when nested in another context, …
    pub depth: u32,
    /// Time spent in this context itself, nested contexts excluded.
    pub self_time: Nanos,
    /// Index of the entry event in the analysed slice (for evidence).
    pub entry_index: Option<usize>,
    /// Index of the exit event.
    pub exit_index: Option<usize>,
}

impl ContextSpan {
    /// `end - start`.
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }
}

/// A stretch of time on one CPU with the innermost activity that ran in it. Segments are contiguous.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Segment {
    /// Start.
    pub start: Nanos,
    /// End.
    pub end: Nanos,
    /// Innermost activity.
    pub activity: Activity,
}

/// A CPU's [`Segment`]s in time order, held compactly: each names its activity by number in a table of the
/// CPU's distinct activities (24 bytes a segment instead of 48: a 6.7 M-event trace has 3.6 M segments and a
/// few thousand activities). Serialized as the list of segments.
#[derive(Clone, Debug, Default)]
pub struct Segments {
    list: Vec<Slot>,
    activities: Vec<Activity>,
    ids: FxHashMap<Activity, u32>,
}

/// One segment: its times and its activity's number in [`Segments::activities`].
#[derive(Clone, Copy, Debug)]
struct Slot {
    start: Nanos,
    end: Nanos,
    activity: u32,
}

impl Segments {
    /// How many segments.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Segment `i`.
    pub fn get(&self, i: usize) -> Option<Segment> {
        self.list.get(i).map(|s| self.segment(s))
    }

    /// The segments in time order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Segment> + ExactSizeIterator + '_ {
        self.list.iter().map(|s| self.segment(s))
    }

    fn segment(&self, s: &Slot) -> Segment {
        Segment { start: s.start, end: s.end, activity: self.activity(s).clone() }
    }

    fn activity(&self, s: &Slot) -> &Activity {
        // Every slot's number was handed out by `id`, so it is in the table.
        &self.activities[s.activity as usize]
    }

    /// The number of `a` in the table, added when new. A trace cannot hold 2^32 distinct activities (each
    /// needs an event, and the events are in memory).
    fn id(&mut self, a: Activity) -> u32 {
        if let Some(&id) = self.ids.get(&a) {
            return id;
        }
        let id = u32::try_from(self.activities.len()).unwrap_or(u32::MAX);
        self.activities.push(a.clone());
        self.ids.insert(a, id);
        id
    }

    /// Adds `[start, end)` of `activity`, extending the last segment when it is the same activity and ends
    /// at `start`.
    fn close(&mut self, start: Nanos, end: Nanos, activity: Activity) {
        let id = self.id(activity);
        match self.list.last_mut() {
            Some(last) if last.activity == id && last.end == start => last.end = end,
            _ => self.list.push(Slot { start, end, activity: id }),
        }
    }

    /// Gives the latest segments of task `pid` without a prio (back to the last segment of another task,
    /// across interrupts) the activity `fixed`.
    fn fix_prio(&mut self, pid: Pid, fixed: Activity) {
        let fixed = self.id(fixed);
        for i in (0..self.list.len()).rev() {
            match &self.activities[self.list[i].activity as usize] {
                Activity::Task { pid: p, prio: None, .. } if *p == pid => self.list[i].activity = fixed,
                a if a.is_interrupt() => {}
                _ => break,
            }
        }
    }
}

impl Serialize for Segments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// Where an irqs-off section was seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum IrqsOffSource {
    /// `preemptirq:irq_disable` … `irq_enable`.
    Preemptirq {
        /// Caller of the disable (`console_unlock+0xc0/0x510`).
        caller: Text,
        /// Its parent.
        parent: Text,
        /// Caller of the enable.
        end_caller: Text,
        /// Parent of the enable.
        end_parent: Text,
    },
    /// A run of events whose flags column shows irqs off: sampled evidence (see [`crate::flag_sections`]).
    Flags {
        /// How many events show it, how far apart at most.
        sampled: Sampled,
        /// The task of the last event, when the run went across a task switch.
        #[serde(skip_serializing_if = "Option::is_none")]
        end_task: Option<(TaskName, Pid)>,
        /// Where the first event shows the CPU ([`crate::flag_sections::place`]).
        from: Text,
        /// Where the last one does.
        to: Text,
    },
}

/// One section with interrupts disabled on a CPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IrqsOffSection {
    /// CPU.
    pub cpu: CpuId,
    /// When interrupts were disabled.
    pub start: Nanos,
    /// When they were enabled again.
    pub end: Nanos,
    /// Task running at the time.
    pub comm: TaskName,
    /// Its pid.
    pub pid: Pid,
    /// How the section was found.
    pub source: IrqsOffSource,
    /// Index of the first event (for evidence).
    pub start_index: usize,
    /// Index of the last event.
    pub end_index: usize,
}

impl IrqsOffSection {
    /// `end - start`.
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }
}

/// Everything known about one CPU.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CpuTimeline {
    /// Contiguous segments, innermost activity, in time order.
    pub segments: Segments,
    /// Interrupt-context spans, sorted by start.
    pub contexts: Vec<ContextSpan>,
    /// Irqs-off sections, sorted by start.
    pub irqs_off: Vec<IrqsOffSection>,
    /// Sections with bottom halves or preemption disabled, from the flags column, sorted by start.
    pub disabled: Vec<FlagSection>,
    /// First and last event time on this CPU.
    pub span: Option<(Nanos, Nanos)>,
    /// Tasks found running without their `sched_switch` in the trace, in event order.
    pub untraced_switches: Vec<UntracedSwitch>,
    /// Kernel stacks recorded beside events (a stack trigger, `<stack trace>`): (index of the event, index
    /// of the stack that follows it on this CPU), in event order.
    pub stacks: Vec<(usize, usize)>,
}

impl CpuTimeline {
    /// The innermost activity at `ts` (the segment containing it).
    pub fn activity_at(&self, ts: Nanos) -> Option<&Activity> {
        let list = &self.segments.list;
        let i = list.partition_point(|s| s.end <= ts);
        list.get(i).filter(|s| s.start <= ts).map(|s| self.segments.activity(s))
    }

    /// The task running at `ts` (ignoring interrupt contexts): the last task segment that started at or before it.
    pub fn task_at(&self, ts: Nanos) -> Option<&Activity> {
        let list = &self.segments.list;
        let i = list.partition_point(|s| s.start <= ts);
        list[..i].iter().rev().map(|s| self.segments.activity(s)).find(|a| !a.is_interrupt())
    }

    /// Segments overlapping `[start, end)`, clipped to it.
    pub fn segments_in(&self, start: Nanos, end: Nanos) -> Vec<Segment> {
        let list = &self.segments.list;
        let first = list.partition_point(|s| s.end <= start);
        list[first..]
            .iter()
            .take_while(|s| s.start < end)
            .map(|s| Segment {
                start: s.start.max(start),
                end: s.end.min(end),
                activity: self.segments.activity(s).clone(),
            })
            .filter(|s| s.end > s.start)
            .collect()
    }

    /// The frames of the kernel stack recorded right after event `index` on this CPU, when one was, with the
    /// stack event's index.
    pub fn stack_of<'e>(&self, index: usize, events: &'e [Event]) -> Option<(usize, &'e [Text])> {
        let i = self.stacks.binary_search_by_key(&index, |s| s.0).ok()?;
        let at = self.stacks[i].1;
        match &events.get(at)?.kind {
            EventKind::Stack { frames } => Some((at, frames)),
            _ => None,
        }
    }

    /// The innermost interrupt context containing `ts`.
    pub fn context_at(&self, ts: Nanos) -> Option<&ContextSpan> {
        let i = self.contexts.partition_point(|c| c.start <= ts);
        self.contexts[..i].iter().rev().take(CONTEXT_LOOKBACK).filter(|c| c.end >= ts).max_by_key(|c| c.depth)
    }
}

/// A task found running on a CPU whose switch to it is not in the trace (lost, filtered or elided events;
/// some kernels do not trace the switch away from a polling idle task): placed after the CPU's last event
/// before the task's first one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct UntracedSwitch {
    /// Index of the task's first event (in the analysed slice).
    pub index: usize,
    /// The task (0: idle).
    pub pid: Pid,
    /// When it took over: the CPU's previous event.
    pub at: Nanos,
}

/// Per-CPU timelines of a whole trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timeline {
    /// One timeline per CPU seen.
    pub cpus: BTreeMap<CpuId, CpuTimeline>,
    /// Exits that had no matching entry (trace started inside the context), per CPU.
    pub unmatched_exits: BTreeMap<CpuId, u64>,
}

impl Timeline {
    /// Runs the per-CPU state machine over `events` (time-ordered).
    pub fn build(events: &[Event]) -> Timeline {
        let mut states: BTreeMap<CpuId, CpuState> = BTreeMap::new();
        let mut tl = Timeline::default();
        for (idx, e) in events.iter().enumerate() {
            let st = states.entry(e.cpu).or_insert_with(|| CpuState::new(e, true));
            let out = tl.cpus.entry(e.cpu).or_default();
            st.step(idx, e, out, &mut tl.unmatched_exits);
        }
        for (cpu, st) in states {
            if let Some(out) = tl.cpus.get_mut(&cpu) {
                st.finish(out);
            }
        }
        for c in tl.cpus.values_mut() {
            c.contexts.sort_by_key(|s| (s.start, s.depth));
            c.irqs_off.sort_by_key(|s| s.start);
        }
        tl
    }

    /// The timeline of `cpu`, if it had events.
    pub fn cpu(&self, cpu: CpuId) -> Option<&CpuTimeline> {
        self.cpus.get(&cpu)
    }
}

/// The timeline's state machine over a stream of events, for a trace too large to hold: it keeps the CPUs'
/// state only, hands each interrupt context on as it ends, and forgets everything else it finds.
#[derive(Default)]
pub struct ContextStream {
    cpus: BTreeMap<CpuId, (CpuState, CpuTimeline)>,
    unmatched: BTreeMap<CpuId, u64>,
}

impl ContextStream {
    /// The trace's event `idx`; `ended` gets the contexts it closed.
    pub fn step(&mut self, idx: usize, e: &Event, ended: &mut dyn FnMut(CpuId, &ContextSpan)) {
        let (st, out) = self.cpus.entry(e.cpu).or_insert_with(|| (CpuState::new(e, false), CpuTimeline::default()));
        st.step(idx, e, out, &mut self.unmatched);
        out.hand_on(e.cpu, ended);
    }

    /// The end of the trace: `ended` gets the contexts still open, closed at each CPU's last event.
    pub fn finish(self, ended: &mut dyn FnMut(CpuId, &ContextSpan)) {
        for (cpu, (st, mut out)) in self.cpus {
            st.finish(&mut out);
            out.hand_on(cpu, ended);
        }
    }
}

impl CpuTimeline {
    /// Hands the contexts on to `ended` and forgets what else was found.
    fn hand_on(&mut self, cpu: CpuId, ended: &mut dyn FnMut(CpuId, &ContextSpan)) {
        for c in self.contexts.drain(..) {
            ended(cpu, &c);
        }
        self.segments.list.clear();
        self.irqs_off.clear();
        self.disabled.clear();
        self.untraced_switches.clear();
        self.stacks.clear();
    }
}

struct OpenContext {
    activity: Activity,
    start: Nanos,
    child_time: Nanos,
    entry_index: usize,
}

struct OpenIrqsOff {
    start: Nanos,
    caller: Text,
    parent: Text,
    start_index: usize,
    comm: TaskName,
    pid: Pid,
}

struct CpuState {
    /// Whether it builds the whole timeline (segments, flag sections); else only the interrupt contexts.
    whole: bool,
    cpu: CpuId,
    task: Activity,
    stack: Vec<OpenContext>,
    seg_start: Nanos,
    last_ts: Nanos,
    first_ts: Nanos,
    irqs_off: Option<OpenIrqsOff>,
    saw_preemptirq: bool,
    flags: FlagTracker,
    /// While a [`Activity::HardIrq`] inferred from the flags column is the innermost context: the time of
    /// its last `h` event (it ended after that).
    inferred_irq: Option<Nanos>,
    /// When the CPU's previous event closed a device interrupt's handler (`irq_handler_exit`) and left no
    /// context open: its time and IRQ number.
    irq_exit: Option<(Nanos, u32)>,
    /// The CPU's last event that is not a stack.
    last_index: Option<usize>,
}

fn task_activity(comm: &TaskName, pid: Pid, prio: Option<i32>) -> Activity {
    if pid == 0 {
        Activity::Idle
    } else {
        Activity::Task { comm: *comm, pid, prio }
    }
}

/// Whether `e` is the wakeup of IRQ `irq`'s thread (`irq/26-virtio0-`).
fn wakes_irq_thread(e: &Event, irq: u32) -> bool {
    match &e.kind {
        EventKind::SchedWakeup { comm, .. } => {
            comm.strip_prefix("irq/").and_then(|r| r.split_once('-')).is_some_and(|(n, _)| n.parse() == Ok(irq))
        }
        _ => false,
    }
}

/// Two `h` events further apart than this are taken as two interrupts (nothing shows the CPU left the first
/// in between, but nothing shows it stayed either).
pub const INFERRED_IRQ_MAX_GAP: Nanos = Nanos::from_us(100);

/// The callers through which a traced function is an interrupt handler (kernel/irq/handle.c across versions:
/// the function that calls `action->handler`). `handle_irq_event` only wraps them.
const IRQ_HANDLER_CALLERS: [&str; 3] = ["__handle_irq_event_percpu", "handle_irq_event_percpu", "handle_IRQ_event"];

/// What those callers also call besides the handlers: the IRQ core's own steps and the lock and preempt-count
/// helpers (a 6.4 `handle_irq_event_percpu` calls `__handle_irq_event_percpu`, `add_interrupt_randomness` and
/// `note_interrupt`, around the `rtl8169_interrupt` that `__handle_irq_event_percpu` calls).
const IRQ_CORE_CALLEES: [&str; 11] = [
    "__handle_irq_event_percpu",
    "add_interrupt_randomness",
    "note_interrupt",
    "record_irq_time",
    "__irq_wake_thread",
    "irq_wake_thread",
    "preempt_count_",
    "_raw_spin_",
    "__raw_spin_",
    "trace_hardirqs_",
    "lockdep_",
];

/// The timer interrupt's entry points: a function call in or from them is the hrtimer interrupt.
const TIMER_INTERRUPTS: [&str; 3] = ["hrtimer_interrupt", "smp_apic_timer_interrupt", "local_apic_timer_interrupt"];

/// The interrupt handler an event inside a hard interrupt shows: a function called by the generic IRQ
/// code, or the hrtimer interrupt when an hrtimer expires.
fn irq_handler_shown(e: &Event) -> Option<Text> {
    match &e.kind {
        EventKind::Function { func, parent: Some(p) }
            if IRQ_HANDLER_CALLERS.contains(&crate::symbol::bare(p))
                && !IRQ_CORE_CALLEES.iter().any(|c| crate::symbol::bare(func).starts_with(c)) =>
        {
            Some(Text::from(crate::symbol::bare(func)))
        }
        EventKind::HrtimerExpireEntry { .. } => Some(Text::from("hrtimer_interrupt")),
        EventKind::Function { func, parent } => [Some(func), parent.as_ref()]
            .into_iter()
            .flatten()
            .map(|f| crate::symbol::bare(f))
            .find(|f| TIMER_INTERRUPTS.contains(f))
            .map(|_| Text::from("hrtimer_interrupt")),
        _ => None,
    }
}

impl CpuState {
    fn new(e: &Event, whole: bool) -> CpuState {
        CpuState {
            whole,
            cpu: e.cpu,
            task: task_activity(&e.comm, e.pid, None),
            stack: Vec::new(),
            seg_start: e.ts,
            last_ts: e.ts,
            first_ts: e.ts,
            irqs_off: None,
            saw_preemptirq: false,
            flags: FlagTracker::default(),
            inferred_irq: None,
            irq_exit: None,
            last_index: None,
        }
    }

    fn innermost(&self) -> Activity {
        self.stack.last().map(|c| c.activity.clone()).unwrap_or_else(|| self.task.clone())
    }

    /// Closes the current segment at `ts` (the innermost activity is about to change).
    fn cut(&mut self, ts: Nanos, out: &mut CpuTimeline) {
        if ts > self.seg_start && self.whole {
            out.segments.close(self.seg_start, ts, self.innermost());
        }
        self.seg_start = self.seg_start.max(ts);
    }

    fn push(&mut self, idx: usize, e: &Event, activity: Activity, out: &mut CpuTimeline) {
        self.cut(e.ts, out);
        self.stack.push(OpenContext { activity, start: e.ts, child_time: Nanos::ZERO, entry_index: idx });
    }

    fn pop_matching(
        &mut self,
        idx: usize,
        e: &Event,
        matches: impl Fn(&Activity) -> bool,
        out: &mut CpuTimeline,
        unmatched: &mut BTreeMap<CpuId, u64>,
    ) {
        let Some(pos) = self.stack.iter().rposition(|c| matches(&c.activity)) else {
            *unmatched.entry(self.cpu).or_default() += 1;
            return;
        };
        self.cut(e.ts, out);
        // Contexts opened above the matching one lost their exit: close them here too.
        while self.stack.len() > pos {
            let Some(open) = self.stack.pop() else { break };
            let exit_index = if self.stack.len() == pos { Some(idx) } else { None };
            self.close(open, e.ts, exit_index, out);
        }
    }

    fn close(&mut self, open: OpenContext, end: Nanos, exit_index: Option<usize>, out: &mut CpuTimeline) {
        let total = end - open.start;
        if let Some(parent) = self.stack.last_mut() {
            parent.child_time = parent.child_time + total;
        }
        out.contexts.push(ContextSpan {
            activity: open.activity,
            start: open.start,
            end,
            depth: self.stack.len() as u32 + 1,
            self_time: total - open.child_time,
            entry_index: Some(open.entry_index),
            exit_index,
        });
    }

    fn step(&mut self, idx: usize, e: &Event, out: &mut CpuTimeline, unmatched: &mut BTreeMap<CpuId, u64>) {
        // A stack belongs to the event before it on the same CPU (the trigger writes it right after).
        if matches!(e.kind, EventKind::Stack { .. }) {
            if let Some(last) = self.last_index.take() {
                out.stacks.push((last, idx));
            }
            // Taken in the context that is current: it says nothing else, but the CPU was there then.
            self.last_ts = self.last_ts.max(e.ts);
            return;
        }
        self.last_index = Some(idx);
        let current = match &self.task {
            Activity::Task { pid, .. } => Some(*pid),
            Activity::Idle => Some(0),
            _ => None,
        };
        if !matches!(e.kind, EventKind::Lost { .. }) && current != Some(e.pid) && e.pid >= 0 {
            // Another task is current but its switch is not in the trace (see [`UntracedSwitch`]): it took
            // over after the previous task's last event. A `sched_switch` away from a task the trace never
            // switched to says the same.
            let at = self.last_ts;
            self.cut(at, out);
            self.task = task_activity(&e.comm, e.pid, None);
            out.untraced_switches.push(UntracedSwitch { index: idx, pid: e.pid, at });
        }
        self.last_ts = e.ts;
        if self.whole {
            self.flags.step(self.cpu, idx, e);
        }
        let irq_exit = self.irq_exit.take();
        self.infer_hardirq(idx, e, irq_exit, out);
        match &e.kind {
            EventKind::IrqHandlerEntry { irq, name } => {
                self.push(idx, e, Activity::Irq { irq: *irq, name: name.clone() }, out)
            }
            EventKind::IrqHandlerExit { irq, .. } => {
                let irq = *irq;
                self.pop_matching(idx, e, |a| matches!(a, Activity::Irq { irq: i, .. } if *i == irq), out, unmatched);
                if self.stack.is_empty() {
                    self.irq_exit = Some((e.ts, irq));
                }
            }
            EventKind::VectorEntry { name, .. } => self.push(idx, e, Activity::Vector { name: name.clone() }, out),
            EventKind::VectorExit { name, .. } => {
                let n = name.clone();
                self.pop_matching(idx, e, |a| matches!(a, Activity::Vector { name } if *name == n), out, unmatched)
            }
            EventKind::SoftirqEntry { vec, name } => {
                let name = if name.is_empty() { Text::from(softirq_name(*vec)) } else { name.clone() };
                self.push(idx, e, Activity::Softirq { vec: *vec, name }, out)
            }
            EventKind::SoftirqExit { vec, .. } => {
                let v = *vec;
                self.pop_matching(idx, e, |a| matches!(a, Activity::Softirq { vec, .. } if *vec == v), out, unmatched)
            }
            EventKind::NmiHandler { handler, delta, .. } => {
                // nmi_handler is emitted when the handler returns; it carries the handler's duration.
                let start = e.ts - *delta;
                if start >= self.seg_start {
                    self.cut(start, out);
                    self.stack.push(OpenContext {
                        activity: Activity::Nmi { handler: handler.clone() },
                        start,
                        child_time: Nanos::ZERO,
                        entry_index: idx,
                    });
                    self.cut(e.ts, out);
                    if let Some(open) = self.stack.pop() {
                        self.close(open, e.ts, Some(idx), out);
                    }
                }
            }
            EventKind::SchedSwitch { prev_comm, prev_pid, prev_prio, next_comm, next_pid, next_prio, .. } => {
                if let Activity::Task { prio: None, .. } | Activity::Idle = self.task {
                    // Give the segments of the outgoing task its prio when the first switch reveals it.
                    out.segments.fix_prio(*prev_pid, task_activity(prev_comm, *prev_pid, Some(*prev_prio)));
                }
                self.task = task_activity(prev_comm, *prev_pid, Some(*prev_prio));
                self.cut(e.ts, out);
                self.task = task_activity(next_comm, *next_pid, Some(*next_prio));
            }
            EventKind::Preemptirq { toggle: Toggle::IrqDisable, caller, parent } => {
                self.saw_preemptirq = true;
                if self.irqs_off.is_none() {
                    self.irqs_off = Some(OpenIrqsOff {
                        start: e.ts,
                        caller: caller.clone(),
                        parent: parent.clone(),
                        start_index: idx,
                        comm: e.comm,
                        pid: e.pid,
                    });
                }
            }
            EventKind::Preemptirq { toggle: Toggle::IrqEnable, caller, parent } => {
                self.saw_preemptirq = true;
                if let Some(open) = self.irqs_off.take() {
                    out.irqs_off.push(IrqsOffSection {
                        cpu: self.cpu,
                        start: open.start,
                        end: e.ts,
                        comm: open.comm,
                        pid: open.pid,
                        source: IrqsOffSource::Preemptirq {
                            caller: open.caller,
                            parent: open.parent,
                            end_caller: caller.clone(),
                            end_parent: parent.clone(),
                        },
                        start_index: open.start_index,
                        end_index: idx,
                    });
                }
            }
            _ => {}
        }
        // When a context is entered, the irqs-off section that preceded it (if any) ends for the
        // purposes of "what delayed the IRQ": the hardware took the interrupt, so irqs were on.
    }

    /// Hard-interrupt context only the flags column shows: an `h` event with no interrupt context open opens
    /// a [`Activity::HardIrq`]; the first later event at another level closes it at the last `h` event (when
    /// it really ended in between is not known). It opens at the event, or, when that event wakes the thread
    /// of the interrupt whose handler exited just before (`irq/N-…` after `irq_handler_exit: irq=N`), at that
    /// exit: the IRQ core wakes the handler's thread from the same hard interrupt, which never left.
    fn infer_hardirq(&mut self, idx: usize, e: &Event, irq_exit: Option<(Nanos, u32)>, out: &mut CpuTimeline) {
        let f = e.flags;
        if !f.has(latscope_model::Flags::KNOWN) || matches!(e.kind, EventKind::Stack { .. } | EventKind::Lost { .. }) {
            return;
        }
        let own_context = matches!(
            e.kind,
            EventKind::IrqHandlerEntry { .. }
                | EventKind::IrqHandlerExit { .. }
                | EventKind::VectorEntry { .. }
                | EventKind::VectorExit { .. }
                | EventKind::NmiHandler { .. }
        );
        let hard = f.in_hardirq() && !f.in_softirq() && !f.in_nmi();
        match self.inferred_irq {
            Some(last) if !hard || own_context || e.ts - last > INFERRED_IRQ_MAX_GAP => {
                self.inferred_irq = None;
                if last >= self.seg_start {
                    self.cut(last, out);
                }
                if let Some(open) = self.stack.pop() {
                    self.close(open, last, None, out);
                }
            }
            Some(_) => {
                self.inferred_irq = Some(e.ts);
                if let Some(name) = irq_handler_shown(e) {
                    if let Some(OpenContext { activity: Activity::HardIrq { handler: h @ None }, .. }) =
                        self.stack.last_mut()
                    {
                        *h = Some(name);
                    }
                }
                return;
            }
            None => {}
        }
        if hard && !own_context && self.stack.is_empty() {
            let start = match irq_exit {
                Some((exit, irq)) if wakes_irq_thread(e, irq) && e.ts - exit <= INFERRED_IRQ_MAX_GAP => exit,
                _ => e.ts,
            };
            self.cut(start, out);
            self.stack.push(OpenContext {
                activity: Activity::HardIrq { handler: irq_handler_shown(e) },
                start,
                child_time: Nanos::ZERO,
                entry_index: idx,
            });
            self.inferred_irq = Some(e.ts);
        }
    }

    fn finish(mut self, out: &mut CpuTimeline) {
        if let Some(last) = self.inferred_irq.take() {
            if last >= self.seg_start {
                self.cut(last, out);
            }
            if let Some(open) = self.stack.pop() {
                self.close(open, last, None, out);
            }
        }
        let end = self.last_ts;
        self.cut(end, out);
        while let Some(open) = self.stack.pop() {
            self.close(open, end, None, out);
        }
        for f in self.flags.finish(self.cpu) {
            match f.disabled {
                // Preemptirq events measure the sections exactly: the flags add nothing then.
                Disabled::Irqs if self.saw_preemptirq => {}
                Disabled::Irqs => out.irqs_off.push(IrqsOffSection {
                    cpu: f.cpu,
                    start: f.start,
                    end: f.end,
                    comm: f.comm,
                    pid: f.pid,
                    source: IrqsOffSource::Flags { sampled: f.sampled, end_task: f.end_task, from: f.from, to: f.to },
                    start_index: f.start_index,
                    end_index: f.end_index,
                }),
                _ => out.disabled.push(f),
            }
        }
        out.span = Some((self.first_ts, end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ev, trace};

    #[test]
    fn nesting_self_time_and_segments() {
        let events = trace(
            "\
 cyclictest-10      [000] .....     0.000001: tracing_mark_write: x
 cyclictest-10      [000] d.h..     0.000002: local_timer_entry: vector=236
 cyclictest-10      [000] ..s..     0.0000025: softirq_entry: vec=1 [action=TIMER]
 cyclictest-10      [000] ..s..     0.0000027: softirq_exit: vec=1 [action=TIMER]
 cyclictest-10      [000] d.h..     0.000003: local_timer_exit: vector=236
 cyclictest-10      [000] d..2.     0.000004: sched_switch: prev_comm=cyclictest prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
     <idle>-0       [000] .....     0.000005: tracing_mark_write: y
",
        );
        let tl = Timeline::build(&events);
        let cpu = tl.cpu(CpuId(0)).expect("cpu 0");
        assert_eq!(cpu.contexts.len(), 2);
        let lt = &cpu.contexts[0];
        assert_eq!(lt.activity, Activity::Vector { name: "local_timer".into() });
        assert_eq!(lt.duration(), Nanos(1000));
        assert_eq!(lt.self_time, Nanos(800));
        assert_eq!(cpu.contexts[1].depth, 2);
        let labels: Vec<_> = cpu.segments.iter().map(|s| (s.start.0, s.end.0, s.activity.label())).collect();
        assert_eq!(
            labels,
            vec![
                (1000, 2000, "cyclictest:10".to_string()),
                (2000, 2500, "local_timer".to_string()),
                (2500, 2700, "softirq TIMER".to_string()),
                (2700, 3000, "local_timer".to_string()),
                (3000, 4000, "cyclictest:10".to_string()),
                (4000, 5000, "idle".to_string()),
            ]
        );
        // The first switch revealed the outgoing task's prio.
        assert_eq!(
            cpu.segments.get(0).map(|s| s.activity),
            Some(Activity::Task { comm: "cyclictest".into(), pid: 10, prio: Some(19) })
        );
        assert_eq!(cpu.task_at(Nanos(2600)).map(|a| a.label()), Some("cyclictest:10".into()));
        assert_eq!(cpu.context_at(Nanos(2600)).map(|c| c.activity.label()), Some("softirq TIMER".into()));
        let clipped = cpu.segments_in(Nanos(2600), Nanos(4500));
        assert_eq!(clipped.first().map(|s| s.start), Some(Nanos(2600)));
        assert_eq!(clipped.last().map(|s| s.end), Some(Nanos(4500)));
    }

    #[test]
    fn a_missing_switch_is_inferred_from_the_current_pid() {
        let events = vec![
            ev(1000, 0, "cyclictest", 10, EventKind::Print { ip: None, text: "sleep".into() }),
            ev(9000, 0, "<idle>", 0, EventKind::VectorEntry { name: "local_timer".into(), vector: None }),
            ev(9500, 0, "<idle>", 0, EventKind::VectorExit { name: "local_timer".into(), vector: None }),
        ];
        let tl = Timeline::build(&events);
        let cpu = tl.cpu(CpuId(0)).expect("cpu");
        assert_eq!(cpu.activity_at(Nanos(5000)), Some(&Activity::Idle));
        assert_eq!(cpu.task_at(Nanos(9200)), Some(&Activity::Idle));
    }

    #[test]
    fn a_switch_away_from_a_task_never_switched_to_starts_it_after_the_last_event() {
        // As on a kernel that does not trace the switch away from a polling idle task: the CPU idles, the
        // thread is woken, and the next scheduler event is the thread going back to sleep.
        let events = trace(
            "\
 cyclictest-10      [001] d..2.     0.000100: sched_switch: prev_comm=cyclictest prev_pid=10 prev_prio=4 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
     <idle>-0       [001] d.h..     0.001010: sched_wakeup: comm=cyclictest pid=10 prio=4 target_cpu=001
 cyclictest-10      [001] d..2.     0.001050: sched_switch: prev_comm=cyclictest prev_pid=10 prev_prio=4 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
",
        );
        let tl = Timeline::build(&events);
        let cpu = tl.cpu(CpuId(1)).expect("cpu 1");
        let labels: Vec<_> = cpu.segments.iter().map(|s| (s.start.0, s.end.0, s.activity.label())).collect();
        assert_eq!(
            labels,
            vec![(100_000, 1_010_000, "idle".to_string()), (1_010_000, 1_050_000, "cyclictest:10".to_string()),]
        );
        assert_eq!(
            cpu.segments.get(1).map(|s| s.activity),
            Some(Activity::Task { comm: "cyclictest".into(), pid: 10, prio: Some(4) })
        );
    }

    #[test]
    fn irqs_off_from_preemptirq_and_unmatched_exit() {
        let events = vec![
            ev(0, 1, "a", 5, EventKind::IrqHandlerExit { irq: 3, handled: true }),
            ev(
                100,
                1,
                "a",
                5,
                EventKind::Preemptirq {
                    toggle: Toggle::IrqDisable,
                    caller: "f+0x1/0x2".into(),
                    parent: "g+0x3/0x4".into(),
                },
            ),
            ev(
                900,
                1,
                "a",
                5,
                EventKind::Preemptirq {
                    toggle: Toggle::IrqEnable,
                    caller: "f+0x9/0x2".into(),
                    parent: "g+0x3/0x4".into(),
                },
            ),
        ];
        let tl = Timeline::build(&events);
        assert_eq!(tl.unmatched_exits.get(&CpuId(1)), Some(&1));
        let s = &tl.cpu(CpuId(1)).expect("cpu").irqs_off[0];
        assert_eq!(s.duration(), Nanos(800));
        assert!(matches!(&s.source, IrqsOffSource::Preemptirq { caller, .. } if &**caller == "f+0x1/0x2"));
    }
}
