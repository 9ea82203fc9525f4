//! Wakeup latency decomposition from standard tracepoints (rtla-style, no timerlat tracer): timer IRQ delay,
//! IRQ handler, IRQ/softirq/NMI interference, blocking tasks, idle exit, return to user, each a typed
//! [`Explanation`], and the one that explains most with its remedy; plus RT throttling.

use crate::held_back::{self, Arrival};
use crate::hrtimer::{activity_components, window_components, HrtimerExpiry};
use crate::remedy::{self, RemedyContext};
use crate::stacks::{interrupted, yielded, Interrupted};
use crate::throttling::{throttle_gaps, ThrottleGap};
use crate::timeline::{Activity, ContextSpan, Segment, Timeline, UntracedSwitch};
use latscope_model::event::WakeupKind;
use latscope_model::{
    is_rt_prio, CauseKind, CpuId, Culprit, Event, EventKind, Explanation, Nanos, Pid, Place, TaskRef, Text,
};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Which task's wakeups to decompose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskFilter {
    /// By pid.
    Pid(Pid),
    /// By name (exact, or a prefix of a name the trace truncated).
    Comm(String),
}

impl TaskFilter {
    /// `1213` → pid, anything else → comm.
    pub fn parse(s: &str) -> TaskFilter {
        match s.parse::<Pid>() {
            Ok(p) => TaskFilter::Pid(p),
            Err(_) => TaskFilter::Comm(s.to_string()),
        }
    }

    pub(crate) fn matches(&self, comm: &str, pid: Pid) -> bool {
        match self {
            TaskFilter::Pid(p) => *p == pid,
            TaskFilter::Comm(c) => comm == c || (matches!(comm.len(), 8 | 15) && c.starts_with(comm)),
        }
    }
}

/// Which wakeups to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeupSelection {
    /// `None`: every SCHED_FIFO/RR task (kernel prio below 100).
    pub task: Option<TaskFilter>,
    /// How many of the worst to decompose.
    pub top: usize,
}

impl Default for WakeupSelection {
    fn default() -> Self {
        WakeupSelection { task: None, top: 5 }
    }
}

/// A latency measured outside the trace (by `latscope timer`) to be explained from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownSample {
    /// CPU the measuring thread ran on.
    pub cpu: CpuId,
    /// When it should have woken, in trace time.
    pub expected: Nanos,
    /// The latency it measured.
    pub latency: Nanos,
}

/// Where a breakdown's start point came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StartPoint {
    /// The hrtimer's expiry (`hrtimer_start` was traced).
    TimerExpiry,
    /// The entry of the IRQ that woke the task (expiry unknown).
    IrqEntry,
    /// The `sched_waking` event.
    Waking,
    /// Given by the caller ([`KnownSample`]).
    Sample,
}

/// One wakeup, decomposed.
#[derive(Clone, Debug, Serialize)]
pub struct WakeupBreakdown {
    /// The woken task.
    pub task: TaskRef,
    /// CPU it was switched in on.
    pub cpu: CpuId,
    /// CPU the wakeup happened on.
    pub wake_cpu: CpuId,
    /// Start of the latency.
    pub start: Nanos,
    /// What the start is.
    pub start_point: StartPoint,
    /// `sched_waking` (or `sched_wakeup`) time.
    pub waking: Nanos,
    /// `sched_switch` to the task.
    pub switch_in: Nanos,
    /// End of the latency: the syscall's return when traced, else the switch-in.
    pub end: Nanos,
    /// `end - start`.
    #[serde(rename = "latency_ns")]
    pub latency: Nanos,
    /// The timer function that woke it, when it was a timer.
    pub timer: Option<Text>,
    /// Other hrtimers that ran in the same IRQ.
    pub other_timers: Vec<Text>,
    /// From the IRQ's entry to the timer callback (`hrtimer_expire_entry`): handler work before the wakeup.
    #[serde(rename = "callback_delay_ns")]
    pub callback_delay: Option<Nanos>,
    /// The parts, in time order of their kind (timer IRQ delay, handler, interference, tasks, return). The
    /// timer IRQ delay holds what held back the interrupt (irqs-off sections, idle, other IRQs) `within` it.
    pub components: Vec<Explanation>,
    /// Sum of the components.
    #[serde(rename = "sum_ns")]
    pub sum: Nanos,
    /// `latency - sum` (negative when the parts overlap).
    #[serde(rename = "remainder_ns")]
    pub remainder: i64,
    /// The part that explains most of the latency, classified against the woken task (a higher-priority
    /// task, or a lower-priority one that could not be preempted; for a timer IRQ delay, what held the
    /// interrupt back), with its remedy.
    pub headline: Option<Explanation>,
    /// Event indices that prove it (waking, timer, IRQ entry/exit, switch, sys_exit).
    pub evidence: Vec<usize>,
}

impl WakeupBreakdown {
    /// Maps every event index it holds through `to` (see [`Explanation::map_evidence`]).
    pub fn map_evidence(&mut self, to: &dyn Fn(usize) -> usize) {
        for i in &mut self.evidence {
            *i = to(*i);
        }
        for c in self.components.iter_mut().chain(self.headline.as_mut()) {
            c.map_evidence(to);
        }
    }
}

struct Record {
    waking_index: usize,
    /// The `sched_switch` that ran the task, or, when the trace lacks it, the task's first event after
    /// the wakeup (on the CPU it then ran on).
    switch_index: usize,
    /// When the task was switched in: the switch's time, or for an untraced switch the time of the CPU's
    /// last event before the task's first one (as [`Timeline`] places it).
    switch_at: Nanos,
    exit_index: Option<usize>,
    expiry: Option<usize>,
    /// The switch that preempted the task on its way back to user space, right after its `sys_exit`.
    preempt_index: Option<usize>,
    /// When it ran again after that preemption: the wakeup ends there for the thread that slept.
    resumed_at: Option<Nanos>,
}

/// A task switched out while still runnable this soon after its wakeup's `sys_exit` was preempted before it
/// reached user space: the thread sees its wakeup end only when it runs again (cyclictest's break value
/// counts that time, here measured 2 µs after the `sys_exit`).
pub const RETURN_PREEMPT_WINDOW: Nanos = Nanos::from_us(10);

/// A stretch with no kernel event inside the interrupt that woke the task is named as such (its code, or a
/// stall below the kernel) from this long, when it is also at least half of the interrupt's part: a timer
/// interrupt with a few callbacks takes microseconds, and its events (`hrtimer_expire_*`, `sched_waking`)
/// come microseconds apart.
pub const SILENT_IN_INTERRUPT: Nanos = Nanos::from_us(50);

/// The name of the idle task's part after the task was woken on its own CPU (the switch due), as the culprit of
/// a silence there.
pub const IDLE_SWITCH_DUE: &str = "the idle task, with the switch due";

/// The inputs every wakeup query needs, computed once.
pub struct WakeupContext<'a> {
    /// The events (time-ordered).
    pub events: &'a [Event],
    /// Their timeline.
    pub timeline: &'a Timeline,
    /// hrtimer expiries ([`crate::hrtimer::expiries`]).
    pub expiries: &'a [HrtimerExpiry],
    /// What the remedies may use about the machine (nothing, for a trace from elsewhere).
    pub remedy: RemedyContext,
}

impl<'a> WakeupContext<'a> {
    /// The context of `events` with their timeline and expiries, for a trace from an unknown machine.
    pub fn new(events: &'a [Event], timeline: &'a Timeline, expiries: &'a [HrtimerExpiry]) -> WakeupContext<'a> {
        WakeupContext { events, timeline, expiries, remedy: RemedyContext::default() }
    }
}

/// The state of pairing wakeups with the switch-in, the `sys_exit` and a preemption on the way back to
/// user space of the task they woke.
#[derive(Default)]
struct Pairing {
    /// Woken tasks not yet switched in: the waking's index and the hrtimer expiry it ran in.
    pending: FxHashMap<Pid, (usize, Option<usize>)>,
    /// Switched-in tasks whose record waits for the sleeping call's `sys_exit`.
    awaiting_exit: FxHashMap<Pid, usize>,
    /// Tasks whose record just got its `sys_exit`, and its time.
    returned: FxHashMap<Pid, (usize, Nanos)>,
    /// Tasks preempted on the way back to user space, waiting to run again.
    resuming: FxHashMap<Pid, usize>,
    out: Vec<Record>,
}

impl Pairing {
    /// `pid` runs from `at` on (its switch-in, traced or not, is event `index`).
    fn switched_in(&mut self, pid: Pid, index: usize, at: Nanos) {
        if let Some(r) = self.resuming.remove(&pid) {
            self.out[r].resumed_at = Some(at);
        }
        if let Some((w, x)) = self.pending.remove(&pid) {
            self.awaiting_exit.insert(pid, self.out.len());
            self.out.push(Record {
                waking_index: w,
                switch_index: index,
                switch_at: at,
                exit_index: None,
                expiry: x,
                preempt_index: None,
                resumed_at: None,
            });
        }
    }
}

impl WakeupContext<'_> {
    fn records(&self) -> Vec<Record> {
        let by_event: FxHashMap<usize, usize> = self.expiries.iter().enumerate().map(|(i, x)| (x.index, i)).collect();
        let mut in_expiry: FxHashMap<CpuId, usize> = FxHashMap::default();
        let mut pairs = Pairing::default();
        // Switch-ins the trace lacks, as the timeline placed them, in event order.
        let mut untraced: Vec<&UntracedSwitch> =
            self.timeline.cpus.values().flat_map(|c| &c.untraced_switches).collect();
        untraced.sort_unstable_by_key(|u| u.index);
        let mut untraced = untraced.into_iter().peekable();
        for (i, e) in self.events.iter().enumerate() {
            while let Some(u) = untraced.next_if(|u| u.index == i) {
                pairs.switched_in(u.pid, i, u.at);
            }
            match &e.kind {
                EventKind::HrtimerExpireEntry { .. } => {
                    if let Some(x) = by_event.get(&i) {
                        in_expiry.insert(e.cpu, *x);
                    }
                }
                EventKind::HrtimerExpireExit { .. } => {
                    in_expiry.remove(&e.cpu);
                }
                EventKind::SchedWakeup { kind: WakeupKind::Waking | WakeupKind::Wakeup, pid, .. } => {
                    pairs.pending.entry(*pid).or_insert((i, in_expiry.get(&e.cpu).copied()));
                }
                EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
                    pairs.awaiting_exit.remove(prev_pid);
                    // A waking seen while the task still ran cannot end a sleep that starts now.
                    if prev_pid != next_pid {
                        pairs.pending.remove(prev_pid);
                    }
                    if let Some((r, exit)) = pairs.returned.remove(prev_pid) {
                        if prev_state.starts_with('R') && e.ts - exit <= RETURN_PREEMPT_WINDOW {
                            pairs.out[r].preempt_index = Some(i);
                            pairs.resuming.insert(*prev_pid, r);
                        }
                    }
                    pairs.switched_in(*next_pid, i, e.ts);
                }
                EventKind::SysExit { .. } => {
                    if let Some(r) = pairs.awaiting_exit.remove(&e.pid) {
                        let on_cpu = pairs.out.get(r).is_some_and(|rec| self.events[rec.switch_index].cpu == e.cpu);
                        if on_cpu {
                            pairs.out[r].exit_index = Some(i);
                            pairs.returned.insert(e.pid, (r, e.ts));
                        }
                    }
                }
                _ => {}
            }
        }
        pairs.out
    }

    fn task_of(&self, r: &Record) -> Option<TaskRef> {
        match &self.events[r.waking_index].kind {
            EventKind::SchedWakeup { comm, pid, prio, .. } => Some(TaskRef::new(*comm, *pid, Some(*prio))),
            _ => None,
        }
    }

    /// The IRQ context the wakeup happened in (innermost hard IRQ or vector containing the waking).
    /// The longest stretch with no kernel event inside an interrupt part (its events `from..=to`), as a
    /// [`CauseKind::NoKernelEvent`] in kernel code named after the interrupt, when it is most of the part and
    /// at least [`SILENT_IN_INTERRUPT`]: the interrupt's code or a stall below the kernel, which the trace
    /// cannot tell apart.
    fn silent_part(&self, part: &Explanation, from: usize, to: usize) -> Option<Explanation> {
        let cpu = part.cpu?;
        let s = crate::silence::longest(self.events, cpu, from, to)?;
        let silent = s.duration().min(part.magnitude);
        if silent < SILENT_IN_INTERRUPT || silent.0 * 2 < part.magnitude.0 {
            return None;
        }
        let culprit = Culprit { place: Some(Place::Kernel), ..part.culprit.clone() };
        let mut e = Explanation::new(CauseKind::NoKernelEvent, culprit, silent, Some(cpu));
        e.evidence = vec![s.before, s.after];
        Some(e)
    }

    /// The events (first, last) around the longest silence in the idle segments of `cpu` among `segs`.
    fn silent_idle(&self, segs: &[Segment], cpu: CpuId) -> Option<(usize, usize)> {
        segs.iter()
            .filter(|s| matches!(s.activity, Activity::Idle))
            .filter_map(|s| {
                let from = self.events.partition_point(|e| e.ts < s.start);
                let to = self.events.partition_point(|e| e.ts <= s.end).checked_sub(1)?;
                crate::silence::longest(self.events, cpu, from, to)
            })
            .max_by_key(|s| s.duration())
            .map(|s| (s.before, s.after))
    }

    fn waking_irq(&self, r: &Record) -> Option<&ContextSpan> {
        let e = &self.events[r.waking_index];
        let cpu = self.timeline.cpu(e.cpu)?;
        let i = cpu.contexts.partition_point(|c| c.start <= e.ts);
        cpu.contexts[..i]
            .iter()
            .rev()
            .take(crate::timeline::CONTEXT_LOOKBACK)
            .filter(|c| {
                c.end >= e.ts
                    && matches!(c.activity, Activity::Irq { .. } | Activity::Vector { .. } | Activity::HardIrq { .. })
            })
            .min_by_key(|c| c.depth)
    }

    fn start_of(&self, r: &Record) -> (Nanos, StartPoint) {
        let waking = self.events[r.waking_index].ts;
        let irq = self.waking_irq(r);
        if let Some(at) = r.expiry.and_then(|x| self.expiries[x].expires_at) {
            if at <= waking {
                return (at, StartPoint::TimerExpiry);
            }
        }
        match irq {
            Some(c) => (c.start, StartPoint::IrqEntry),
            None => (waking, StartPoint::Waking),
        }
    }

    fn end_of(&self, r: &Record) -> Nanos {
        r.resumed_at.or(r.exit_index.map(|x| self.events[x].ts)).unwrap_or(r.switch_at)
    }

    /// The preemption on the way back to user space, as (preempted at, ran again at), when the trace holds both.
    fn preempted(&self, r: &Record) -> Option<(Nanos, Nanos)> {
        Some((self.events[r.preempt_index?].ts, r.resumed_at?))
    }

    fn decompose(&self, r: &Record, forced: Option<(Nanos, Nanos)>) -> Option<WakeupBreakdown> {
        self.decompose_with(r, forced, &[])
    }

    /// [`Self::decompose`] with the RT throttling gaps of the trace: wait time inside a gap on the task's CPU
    /// is one [`CauseKind::RtThrottling`] part instead of the tasks that ran meanwhile.
    fn decompose_with(
        &self,
        r: &Record,
        forced: Option<(Nanos, Nanos)>,
        gaps: &[ThrottleGap],
    ) -> Option<WakeupBreakdown> {
        let task = self.task_of(r)?;
        let we = &self.events[r.waking_index];
        let se = &self.events[r.switch_index];
        let (mut start, mut start_point) = self.start_of(r);
        let mut end = self.end_of(r);
        if let Some((s, e)) = forced {
            start = s;
            end = e;
            start_point = StartPoint::Sample;
        }
        let cpu = se.cpu;
        let irq = self.waking_irq(r);
        let mut components = Vec::new();
        let mut evidence = vec![r.waking_index];
        let timer = r.expiry.map(|x| self.expiries[x].function.clone());
        if let Some(x) = r.expiry {
            evidence.extend(self.expiries[x].start_index);
            evidence.push(self.expiries[x].index);
        }
        let mut other_timers = Vec::new();
        let callback_delay = irq.zip(r.expiry).map(|(c, x)| self.expiries[x].ts - c.start);
        let mut window_start = we.ts.max(start);
        if let Some(c) = irq {
            let by = interrupt_culprit(&c.activity);
            if c.start > start {
                let late = c.start - start;
                let mut delay = Explanation::new(CauseKind::TimerIrqDelay, by.clone(), late, Some(we.cpu));
                let mut before = window_components(self.timeline, we.cpu, start, c.start);
                before.retain(|x| x.magnitude > Nanos::ZERO);
                let arrival = Arrival::at(self.timeline, self.events, we.cpu, c.entry_index);
                delay.within = held_back::decide(before, late, we.cpu, arrival, &self.remedy);
                evidence.extend(arrival.stack.map(|s| s.0));
                components.push(delay);
            }
            let handler_end = if we.cpu == cpu { c.end.min(end) } else { we.ts };
            let handler_start = c.start.max(start);
            let mut handler = Explanation::new(CauseKind::IrqHandler, by, handler_end - handler_start, Some(we.cpu));
            let last = if we.cpu == cpu { c.exit_index } else { Some(r.waking_index) };
            if let Some(silent) = c.entry_index.zip(last).and_then(|(a, b)| self.silent_part(&handler, a, b)) {
                handler.within.push(silent);
            }
            components.push(handler);
            evidence.extend(c.entry_index);
            evidence.extend(c.exit_index);
            other_timers = self
                .expiries
                .iter()
                .filter(|x| {
                    x.cpu == we.cpu
                        && x.ts >= c.start
                        && x.ts <= c.end
                        && Some(x.index) != r.expiry.map(|i| self.expiries[i].index)
                })
                .map(|x| x.function.clone())
                .collect();
            if we.cpu == cpu {
                window_start = window_start.max(c.end);
            }
        } else if let Some(x) =
            r.expiry.map(|x| &self.expiries[x]).filter(|x| x.cpu == we.cpu && x.index <= r.waking_index)
        {
            // Woken in an hrtimer callback whose interrupt the trace does not show (no irq or irq_vectors events,
            // no flags column): the callback runs in the timer interrupt, so that interrupt had entered by the
            // callback's entry and lasted at least to its exit. Until the entry it is the timer IRQ delay (an
            // upper bound: it includes the interrupt's own way in), the callback is the interrupt's time.
            let by = interrupt_culprit(&Activity::HardIrq { handler: Some(Text::from("hrtimer_interrupt")) });
            if x.ts > start {
                let late = x.ts - start;
                let mut delay = Explanation::new(CauseKind::TimerIrqDelay, by.clone(), late, Some(we.cpu));
                let mut before = window_components(self.timeline, we.cpu, start, x.ts);
                before.retain(|b| b.magnitude > Nanos::ZERO);
                let arrival = Arrival::at(self.timeline, self.events, we.cpu, Some(x.index));
                delay.within = held_back::decide(before, late, we.cpu, arrival, &self.remedy);
                components.push(delay);
            }
            let exit = self.events[r.waking_index..r.switch_index.max(r.waking_index)]
                .iter()
                .position(|e| e.cpu == we.cpu && matches!(e.kind, EventKind::HrtimerExpireExit { .. }))
                .map(|i| r.waking_index + i);
            let callback_end = exit.map_or(we.ts, |i| self.events[i].ts).min(end);
            let callback_start = x.ts.max(start);
            if callback_end > callback_start {
                components.push(Explanation::new(
                    CauseKind::IrqHandler,
                    by,
                    callback_end - callback_start,
                    Some(we.cpu),
                ));
            }
            evidence.extend(exit);
            if we.cpu == cpu {
                window_start = window_start.max(callback_end);
            }
        }
        let switch_end = r.switch_at.min(end);
        let preempted = self.preempted(r);
        if let Some(tl) = self.timeline.cpu(cpu) {
            let mut segs = Vec::new();
            if switch_end > window_start {
                segs = tl.segments_in(window_start, switch_end);
                let mut throttled = Nanos::ZERO;
                if task.is_rt() {
                    for g in gaps.iter().filter(|g| g.cpu == cpu && g.start < switch_end && g.end > window_start) {
                        let (a, b) = (g.start.max(window_start), g.end.min(switch_end));
                        throttled = throttled + (b - a);
                        segs = segs
                            .into_iter()
                            .flat_map(|s| {
                                let left = (s.start < a).then(|| Segment { end: s.end.min(a), ..s.clone() });
                                let right = (s.end > b).then(|| Segment { start: s.start.max(b), ..s.clone() });
                                left.into_iter().chain(right)
                            })
                            .collect();
                    }
                }
                if throttled > Nanos::ZERO {
                    components.push(Explanation::new(
                        CauseKind::RtThrottling,
                        Culprit::named(crate::noise::RT_RUNTIME_SYSCTL),
                        throttled,
                        Some(cpu),
                    ));
                }
            }
            // Preempted on the way back to user space: what ran until the task ran again.
            if let Some((from, back)) = preempted {
                let (a, b) = (from.max(window_start), back.min(end));
                if b > a {
                    segs.extend(tl.segments_in(a, b));
                }
            }
            components.extend(activity_components(&segs, cpu, Some(task.pid)));
            // Woken on this CPU: the idle loop switches to it at once; a long silence there is no way out of idle.
            if we.cpu == cpu {
                let silent = self.silent_idle(&segs, cpu);
                if let Some(idle) = components.iter_mut().find(|c| c.cause == CauseKind::Idle) {
                    let part = Explanation { culprit: Culprit::named(IDLE_SWITCH_DUE), ..idle.clone() };
                    if let Some(s) = silent.and_then(|(a, b)| self.silent_part(&part, a, b)) {
                        idle.within.push(s);
                    }
                }
            }
        }
        evidence.push(r.switch_index);
        evidence.extend(r.preempt_index);
        if let Some(x) = r.exit_index {
            // The task's own time from its switch-in until it returned (or was preempted on the way).
            let own_end = preempted.map_or(end, |(from, _)| from.min(end));
            if own_end > r.switch_at {
                let own = Culprit { syscall: Some("sys_exit".into()), ..Culprit::task(task.clone()) };
                components.push(Explanation::new(CauseKind::ReturnToUser, own, own_end - r.switch_at, Some(cpu)));
            }
            evidence.push(x);
        }
        components.retain(|c| c.magnitude > Nanos::ZERO);
        evidence.extend(self.locate_blockers(irq, r, task.prio, &mut components));
        let sum = components.iter().fold(Nanos::ZERO, |a, c| a + c.magnitude);
        let latency = end - start;
        evidence.sort_unstable();
        evidence.dedup();
        let headline = headline(&components, &task, latency, &evidence, &self.remedy);
        Some(WakeupBreakdown {
            task,
            cpu,
            wake_cpu: we.cpu,
            start,
            start_point,
            waking: we.ts,
            switch_in: r.switch_at,
            end,
            latency,
            timer,
            other_timers,
            callback_delay,
            components,
            sum,
            remainder: latency.0 as i64 - sum.0 as i64,
            headline,
            evidence,
        })
    }
}

impl WakeupContext<'_> {
    /// Where the tasks that held the CPU were, from the kernel stacks the trace has: the one the waking
    /// interrupt found running (its stack at that interrupt's entry) and the one the woken task was
    /// switched in after (its stack at that switch: where it gave the CPU up). Returns the stacks' indices.
    ///
    /// A lower-priority task the waking interrupt found in user space did not hold the real-time `victim`
    /// off: the return to user space preempts it whatever the preemption model. The time the trace still
    /// shows it current went below the kernel (or to untraced exit work), and is said so.
    fn locate_blockers(
        &self,
        irq: Option<&ContextSpan>,
        r: &Record,
        victim: Option<i32>,
        parts: &mut [Explanation],
    ) -> Vec<usize> {
        fn part_of(parts: &mut [Explanation], pid: Pid) -> Option<&mut Explanation> {
            parts.iter_mut().find(|p| p.cause == CauseKind::BlockingTask && p.culprit.pid() == Some(pid))
        }
        let mut used = Vec::new();
        if let Some(entry) = irq.and_then(|c| c.entry_index) {
            let e = &self.events[entry];
            let stack = self.timeline.cpu(e.cpu).and_then(|t| t.stack_of(entry, self.events));
            if let (Some((at, frames)), Some(p)) = (stack, part_of(parts, e.pid)) {
                let lower = |t: &TaskRef| victim.zip(t.prio).is_some_and(|(v, b)| is_rt_prio(v) && b > v);
                match interrupted(frames) {
                    Interrupted::Kernel { chain, syscall, .. } => {
                        p.culprit.chain = chain;
                        p.culprit.syscall = syscall;
                        p.culprit.place = Some(Place::Kernel);
                        used.push(at);
                    }
                    Interrupted::User if p.culprit.task.as_ref().is_some_and(lower) => {
                        p.cause = CauseKind::NoKernelEvent;
                        p.culprit.place = Some(Place::UserSpace);
                        used.push(at);
                    }
                    Interrupted::User | Interrupted::Idle => {}
                }
            }
        }
        let sw = &self.events[r.switch_index];
        if let EventKind::SchedSwitch { prev_pid, .. } = &sw.kind {
            let stack = self.timeline.cpu(sw.cpu).and_then(|t| t.stack_of(r.switch_index, self.events));
            if let (Some((at, frames)), Some(p)) = (stack, part_of(parts, *prev_pid)) {
                p.culprit.yielded_at = yielded(frames);
                if p.culprit.syscall.is_none() {
                    p.culprit.syscall = crate::stacks::syscall_of(&p.culprit.yielded_at);
                }
                used.push(at);
            }
        }
        used
    }
}

/// The interrupt that ran a timer, as a culprit.
fn interrupt_culprit(a: &Activity) -> Culprit {
    match a {
        Activity::Irq { irq, name } => Culprit::irq(Some(*irq), name.to_string()),
        Activity::Vector { name } => Culprit::named(name.to_string()),
        Activity::Softirq { name, .. } => Culprit::named(name.to_string()),
        Activity::Nmi { handler } => Culprit::named(handler.to_string()),
        a @ Activity::HardIrq { .. } => Culprit::irq(None, a.label()),
        Activity::Task { comm, pid, prio } => Culprit::task(TaskRef::new(*comm, *pid, *prio)),
        Activity::Idle => Culprit::default(),
    }
}

/// The part that explains most of a latency of `whole` suffered by `victim`, classified: a task that ran is
/// a [`CauseKind::PreemptOff`] when the real-time victim should have preempted it (it had a lower priority),
/// and a timer IRQ delay holds what held the interrupt back (see [`held_back::decide`]). With its share, the
/// evidence and the remedy for this victim.
pub fn headline(
    parts: &[Explanation],
    victim: &TaskRef,
    whole: Nanos,
    evidence: &[usize],
    ctx: &RemedyContext,
) -> Option<Explanation> {
    let top = parts.iter().max_by_key(|c| c.magnitude)?;
    let mut h = classify_blocker(top.clone(), victim).share_of(whole);
    if h.cause == CauseKind::TimerIrqDelay {
        // What held the interrupt back, as decided when the delay was measured.
        h.within.truncate(1);
    }
    h.evidence = evidence.to_vec();
    let pattern = crate::patterns::recognise(&h);
    Some(remedy::with_hint(h, pattern, &ctx.for_victim(victim)))
}

/// A task that ran while `victim` waited: a [`CauseKind::BlockingTask`] when it had a higher or equal
/// real-time priority (or the victim is not real-time, or its priority is unknown), a
/// [`CauseKind::PreemptOff`] when the real-time victim outranked it and still waited.
pub fn classify_blocker(mut e: Explanation, victim: &TaskRef) -> Explanation {
    if e.cause != CauseKind::BlockingTask {
        return e;
    }
    let theirs = e.culprit.task.as_ref().and_then(|t| t.prio);
    if let (Some(p), Some(v)) = (theirs, victim.prio) {
        if is_rt_prio(v) && (!is_rt_prio(p) || p > v) {
            e.cause = CauseKind::PreemptOff;
        }
    }
    e
}

/// The `selection.top` worst wakeups of the selected tasks, decomposed, worst first.
pub fn decompose_wakeups(ctx: &WakeupContext<'_>, selection: &WakeupSelection) -> Vec<WakeupBreakdown> {
    decompose_wakeups_in(ctx, selection, &throttle_gaps(ctx.events, ctx.timeline))
}

/// [`decompose_wakeups`] with the trace's RT throttling gaps already found ([`throttle_gaps`] of the same
/// events and timeline), for a caller that needs them too.
pub fn decompose_wakeups_in(
    ctx: &WakeupContext<'_>,
    selection: &WakeupSelection,
    gaps: &[ThrottleGap],
) -> Vec<WakeupBreakdown> {
    let records = ctx.records();
    // A name matches truncated names only when no task has exactly that name.
    let exact = match &selection.task {
        Some(TaskFilter::Comm(c)) => records.iter().any(|r| ctx.task_of(r).is_some_and(|t| &*t.comm == c)),
        _ => false,
    };
    let mut cands: Vec<(Nanos, Record)> = records
        .into_iter()
        .filter(|r| match (ctx.task_of(r), &selection.task) {
            (Some(t), Some(TaskFilter::Comm(c))) if exact => &*t.comm == c,
            (Some(t), Some(f)) => f.matches(&t.comm, t.pid),
            (Some(t), None) => t.is_rt(),
            (None, _) => false,
        })
        .map(|r| (ctx.end_of(&r) - ctx.start_of(&r).0, r))
        .collect();
    cands.sort_by_key(|(l, _)| std::cmp::Reverse(*l));
    cands.into_iter().take(selection.top).filter_map(|(_, r)| ctx.decompose_with(&r, None, gaps)).collect()
}

/// The wakeup of task `pid` that a statement at `at` is about (a threshold mark the task wrote right after
/// it, a synthetic latency event written at its switch-in): the latest one switched in at or before `at`.
pub fn decompose_before(ctx: &WakeupContext<'_>, pid: Pid, at: Nanos) -> Option<WakeupBreakdown> {
    decompose_before_in(ctx, pid, at, &throttle_gaps(ctx.events, ctx.timeline))
}

/// [`decompose_before`] with the trace's RT throttling gaps already found.
pub fn decompose_before_in(
    ctx: &WakeupContext<'_>,
    pid: Pid,
    at: Nanos,
    gaps: &[ThrottleGap],
) -> Option<WakeupBreakdown> {
    ctx.records()
        .into_iter()
        .filter(|r| ctx.task_of(r).is_some_and(|t| t.pid == pid) && r.switch_at <= at)
        .max_by_key(|r| r.switch_at)
        .and_then(|r| ctx.decompose_with(&r, None, gaps))
}

/// Explains one latency measured outside the trace: the wakeup switched in on `sample.cpu` closest to the
/// expected time, decomposed over `[expected, expected + latency]`.
pub fn decompose_sample(ctx: &WakeupContext<'_>, sample: KnownSample) -> Option<WakeupBreakdown> {
    let tolerance = sample.latency.max(Nanos::from_ms(1));
    ctx.records()
        .into_iter()
        .filter(|r| ctx.events[r.switch_index].cpu == sample.cpu)
        .filter(|r| ctx.events[r.waking_index].ts.0.abs_diff(sample.expected.0) <= tolerance.0)
        .min_by_key(|r| ctx.start_of(r).0 .0.abs_diff(sample.expected.0))
        .and_then(|r| ctx.decompose(&r, Some((sample.expected, sample.expected + sample.latency))))
}

/// How far a wakeup's end in the trace may follow the measuring thread's own clock read and still be the wakeup
/// it measured. The thread reads CLOCK_MONOTONIC after its sleeping call returned, so the end comes first; the
/// `mono` trace clock and the thread's read of CLOCK_MONOTONIC agree to well under a µs.
pub const END_AFTER_READ: Nanos = Nanos::from_us(20);

/// Where a known thread's sample ends, to find its wakeup in the trace by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleEnd {
    /// The thread's own clock read, `expected + latency`: the wakeup whose end (the sleeping call's return,
    /// else the switch-in) is nearest it, at most `tolerance` before it and [`END_AFTER_READ`] after it. A later
    /// end is another wakeup (the next period's, when the measured one is missing from the trace).
    Read { tolerance: Nanos },
    /// The thread's own record of the sample in the trace at this time (timerlat's `context thread` record,
    /// written right after the thread read the clock): the last wakeup that ended at or after `expected` and not
    /// after the record. The record orders it, however late the read (under TCG it came 0.5 ms after the
    /// switch-in once, beyond any tolerance for the read).
    Recorded(Nanos),
}

/// Explains one sample a known thread measured: its wakeup (task `pid`, switched in on `sample.cpu`) found by
/// where the sample ended ([`SampleEnd`]). The breakdown runs from `sample.expected` to the trace's own end, so
/// its latency is the trace's view of the same wakeup and can be compared with the sample's.
pub fn decompose_task_sample(
    ctx: &WakeupContext<'_>,
    sample: KnownSample,
    pid: Pid,
    end: SampleEnd,
) -> Option<WakeupBreakdown> {
    let actual = (sample.expected + sample.latency).0;
    let wakeups = ctx.records().into_iter().filter(|r| {
        ctx.events[r.switch_index].cpu == sample.cpu
            && matches!(&ctx.events[r.waking_index].kind, EventKind::SchedWakeup { pid: p, .. } if *p == pid)
    });
    let found = match end {
        SampleEnd::Read { tolerance } => wakeups
            .filter(|r| {
                let end = ctx.end_of(r).0;
                end + tolerance.0 >= actual && end <= actual + END_AFTER_READ.0 && end >= sample.expected.0
            })
            .min_by_key(|r| ctx.end_of(r).0.abs_diff(actual)),
        SampleEnd::Recorded(at) => {
            wakeups.filter(|r| (sample.expected.0..=at.0).contains(&ctx.end_of(r).0)).max_by_key(|r| ctx.end_of(r).0)
        }
    };
    found.and_then(|r| ctx.decompose(&r, Some((sample.expected, ctx.end_of(&r)))))
}

/// [`decompose_sample`] from the events alone (builds the timeline and pairs the hrtimers first): what a live
/// capture calls for each latency its measuring thread reported.
pub fn explain_sample(events: &[Event], sample: KnownSample) -> Option<WakeupBreakdown> {
    let timeline = Timeline::build(events);
    let expiries = crate::hrtimer::expiries(events);
    decompose_sample(&WakeupContext::new(events, &timeline, &expiries), sample)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace;

    /// Every wakeup of a trace, broken down.
    fn breakdowns(events: &[Event]) -> Vec<WakeupBreakdown> {
        let tl = Timeline::build(events);
        let x = crate::hrtimer::expiries(events);
        decompose_wakeups(&WakeupContext::new(events, &tl, &x), &WakeupSelection::default())
    }

    /// The part of `kind` as (culprit name or task comm, magnitude).
    fn part(b: &WakeupBreakdown, kind: CauseKind) -> Option<(String, Nanos)> {
        b.components.iter().find(|c| c.cause == kind).map(|c| {
            let name = c.culprit.task.as_ref().map_or_else(|| c.culprit.name.clone(), |t| t.comm.to_string());
            (name, c.magnitude)
        })
    }

    #[test]
    fn a_normal_task_found_in_user_space_does_not_block_a_real_time_wakeup() {
        // Seen live: the timer interrupt finds a SCHED_OTHER loop in user space and wakes cyclictest, and the
        // switch comes 80 us later with no event in between. The return to user space preempts the loop:
        // that time is not the loop's.
        let events = trace(
            "\
 cyclictest-50      [001] d..1.   100.000010: hrtimer_start: hrtimer=0000000000000001 function=hrtimer_wakeup expires=100000100000 softexpires=100000100000 mode=ABS
 cyclictest-50      [001] d..2.   100.000010: sched_switch: prev_comm=cyclictest prev_pid=50 prev_prio=4 prev_state=S ==> next_comm=loop next_pid=60 next_prio=120
       loop-60      [001] d.h..   100.000101: local_timer_entry: vector=236
       loop-60      [001] d.h..   100.000102: <stack trace>
 => trace_event_raw_event_x86_irq_vector
 => asm_sysvec_apic_timer_interrupt
       loop-60      [001] d.h1.   100.000104: hrtimer_expire_entry: hrtimer=0000000000000001 function=hrtimer_wakeup now=100000104000
       loop-60      [001] d.h2.   100.000105: sched_waking: comm=cyclictest pid=50 prio=4 target_cpu=001
       loop-60      [001] d.h1.   100.000106: hrtimer_expire_exit: hrtimer=0000000000000001
       loop-60      [001] d.h..   100.000108: local_timer_exit: vector=236
       loop-60      [001] d..2.   100.000188: sched_switch: prev_comm=loop prev_pid=60 prev_prio=120 prev_state=R ==> next_comm=cyclictest next_pid=50 next_prio=4
 cyclictest-50      [001] .....   100.000190: sys_exit: NR 230 = 0
",
        );
        let b = &breakdowns(&events)[0];
        assert_eq!(part(b, CauseKind::BlockingTask), None, "{:?}", b.components);
        let c = b.components.iter().find(|c| c.cause == CauseKind::NoKernelEvent).expect("the time after the IRQ");
        assert_eq!((c.magnitude, c.culprit.place), (Nanos::from_us(80), Some(Place::UserSpace)));
        assert_eq!(c.culprit.pid(), Some(60));
    }

    #[test]
    fn a_lower_priority_task_in_a_system_call_is_named_with_where_it_was_and_where_it_yielded() {
        // As seen live during a printk storm on this preempt=none kernel: the timer interrupt that wakes
        // cyclictest finds bash storing a message in write(); bash goes on to flush the console with
        // preemption off and gives the CPU up only on its way back to user space.
        let events = trace(
            "\
 cyclictest-50      [001] d..1.   100.000010: hrtimer_start: hrtimer=0000000000000001 function=hrtimer_wakeup expires=100000100000 softexpires=100000100000 mode=ABS
 cyclictest-50      [001] d..2.   100.000010: sched_switch: prev_comm=cyclictest prev_pid=50 prev_prio=4 prev_state=S ==> next_comm=bash next_pid=60 next_prio=120
       bash-60      [001] d.h..   100.000101: local_timer_entry: vector=236
       bash-60      [001] d.h..   100.000102: <stack trace>
 => trace_event_raw_event_x86_irq_vector
 => asm_sysvec_apic_timer_interrupt
 => vprintk_store
 => vprintk_emit
 => devkmsg_emit.constprop.0
 => devkmsg_write.cold
 => vfs_write
 => ksys_write
 => do_syscall_64
       bash-60      [001] d.h1.   100.000104: hrtimer_expire_entry: hrtimer=0000000000000001 function=hrtimer_wakeup now=100000104000
       bash-60      [001] d.h2.   100.000105: sched_waking: comm=cyclictest pid=50 prio=4 target_cpu=001
       bash-60      [001] d.h1.   100.000106: hrtimer_expire_exit: hrtimer=0000000000000001
       bash-60      [001] d.h..   100.000108: local_timer_exit: vector=236
       bash-60      [001] d..2.   100.001108: sched_switch: prev_comm=bash prev_pid=60 prev_prio=120 prev_state=R ==> next_comm=cyclictest next_pid=50 next_prio=4
       bash-60      [001] d..2.   100.001109: <stack trace>
 => trace_event_raw_event_sched_switch
 => __schedule
 => schedule
 => exit_to_user_mode_loop
 => do_syscall_64
 => entry_SYSCALL_64_after_hwframe
 cyclictest-50      [001] .....   100.001112: sys_exit: NR 230 = 0
",
        );
        let b = &breakdowns(&events)[0];
        let p = b.components.iter().find(|c| c.cause == CauseKind::BlockingTask).expect("bash ran");
        assert_eq!((p.magnitude, p.culprit.pid()), (Nanos::from_us(1000), Some(60)));
        assert_eq!(p.culprit.chain[..2], ["vprintk_store", "vprintk_emit"]);
        assert_eq!(p.culprit.syscall.as_deref(), Some("write"));
        assert_eq!(p.culprit.yielded_at, ["exit_to_user_mode_loop"]);
        // Lower priority than the woken real-time task: it could not be preempted.
        let h = b.headline.as_ref().expect("headline");
        assert_eq!((h.cause, h.culprit.pid()), (CauseKind::PreemptOff, Some(60)));
        assert_eq!(h.hint.as_ref().and_then(|x| x.pattern), Some(latscope_model::Pattern::ConsolePrint));
    }

    #[test]
    fn blocked_by_a_higher_priority_spinner() {
        let us = |v: u64| v * 1000;
        let events = trace(
            "\
 cyclictest-50      [001] d..1.   100.000010: hrtimer_start: hrtimer=0000000000000001 function=hrtimer_wakeup expires=100000100000 softexpires=100000100000 mode=ABS
 cyclictest-50      [001] d..2.   100.000010: sched_switch: prev_comm=cyclictest prev_pid=50 prev_prio=4 prev_state=S ==> next_comm=spin next_pid=60 next_prio=2
       spin-60      [001] d.h..   100.000103: local_timer_entry: vector=236
       spin-60      [001] d.h1.   100.000104: hrtimer_expire_entry: hrtimer=0000000000000001 function=hrtimer_wakeup now=100000104000
       spin-60      [001] d.h2.   100.000105: sched_waking: comm=cyclictest pid=50 prio=4 target_cpu=001
       spin-60      [001] d.h1.   100.000106: hrtimer_expire_exit: hrtimer=0000000000000001
       spin-60      [001] d.h..   100.000108: local_timer_exit: vector=236
       spin-60      [001] d.h..   100.000400: irq_handler_entry: irq=30 name=virtio0
       spin-60      [001] d.h..   100.000420: irq_handler_exit: irq=30 ret=handled
       spin-60      [001] d..2.   100.000708: sched_switch: prev_comm=spin prev_pid=60 prev_prio=2 prev_state=S ==> next_comm=cyclictest next_pid=50 next_prio=4
 cyclictest-50      [001] .....   100.000712: sys_exit: NR 230 = 0
",
        );
        let t0 = 100_000_000_000u64;
        let tl = Timeline::build(&events);
        let x = crate::hrtimer::expiries(&events);
        let ctx = WakeupContext::new(&events, &tl, &x);
        let b = decompose_wakeups(&ctx, &WakeupSelection::default());
        assert_eq!(b.len(), 1);
        let b = &b[0];
        assert_eq!(b.start_point, StartPoint::TimerExpiry);
        assert_eq!(b.latency, Nanos(us(612)));
        assert_eq!(part(b, CauseKind::TimerIrqDelay), Some(("local_timer".into(), Nanos(us(3)))));
        assert_eq!(part(b, CauseKind::IrqHandler), Some(("local_timer".into(), Nanos(us(5)))));
        assert_eq!(part(b, CauseKind::BlockingTask), Some(("spin".into(), Nanos(us(580)))));
        assert_eq!(part(b, CauseKind::Irq), Some(("virtio0".into(), Nanos(us(20)))));
        assert_eq!(part(b, CauseKind::ReturnToUser), Some(("cyclictest".into(), Nanos(us(4)))));
        assert_eq!(b.components.iter().find(|c| c.cause == CauseKind::Irq).and_then(|c| c.culprit.irq), Some(30));
        assert_eq!(b.remainder, 0);
        // The spinner (SCHED_FIFO 97) outranks cyclictest (95): a blocking task, with the remedy for it.
        let h = b.headline.as_ref().expect("headline");
        assert_eq!((h.cause, h.magnitude, h.cpu), (CauseKind::BlockingTask, Nanos(us(580)), Some(CpuId(1))));
        assert_eq!(h.culprit.task, Some(TaskRef::new("spin", 60, Some(2))));
        assert!(h.share.is_some_and(|p| (p - 580.0 * 100.0 / 612.0).abs() < 1e-9));
        assert_eq!(h.evidence, b.evidence);
        assert!(h.hint.as_ref().is_some_and(|x| x.remedy.starts_with("move spin off CPU 1")), "{h:?}");
        // The same wakeup explained from a measured sample.
        let s = decompose_sample(
            &ctx,
            KnownSample { cpu: CpuId(1), expected: Nanos(t0 + us(100)), latency: Nanos(us(612)) },
        )
        .expect("sample");
        assert_eq!(s.start_point, StartPoint::Sample);
        assert_eq!(s.task.pid, 50);
        let again = explain_sample(
            &events,
            KnownSample { cpu: CpuId(1), expected: Nanos(t0 + us(100)), latency: Nanos(us(612)) },
        )
        .expect("sample from events");
        assert_eq!(again.latency, Nanos(us(612)));
        assert_eq!(again.components, s.components);
        // Filter by task name that does not exist: nothing.
        let none = decompose_wakeups(&ctx, &WakeupSelection { task: Some(TaskFilter::parse("other")), top: 5 });
        assert!(none.is_empty());
        assert_eq!(TaskFilter::parse("50"), TaskFilter::Pid(50));
    }

    #[test]
    fn a_wakeup_from_idle_without_a_traced_switch_in_is_found() {
        // As this VM's kernel records it while the CPU polls in idle: no `sched_switch` from swapper, so the
        // thread's switch-in is placed after the CPU's last event before its own first one.
        let us = |v: u64| v * 1000;
        let events = trace(
            "\
 cyclictest-50      [001] d..1.   100.000010: hrtimer_start: hrtimer=0000000000000001 function=hrtimer_wakeup expires=100000100000 softexpires=100000100000 mode=ABS
 cyclictest-50      [001] d..2.   100.000012: sched_switch: prev_comm=cyclictest prev_pid=50 prev_prio=4 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
     <idle>-0       [001] d.h..   100.000130: local_timer_entry: vector=236
     <idle>-0       [001] d.h1.   100.000131: hrtimer_expire_entry: hrtimer=0000000000000001 function=hrtimer_wakeup now=100000131000
     <idle>-0       [001] d.h2.   100.000132: sched_waking: comm=cyclictest pid=50 prio=4 target_cpu=001
     <idle>-0       [001] d.h1.   100.000133: hrtimer_expire_exit: hrtimer=0000000000000001
     <idle>-0       [001] d.h..   100.000136: local_timer_exit: vector=236
 cyclictest-50      [001] .....   100.000140: sys_exit: NR 230 = 0
 cyclictest-50      [001] d..2.   100.000150: sched_switch: prev_comm=cyclictest prev_pid=50 prev_prio=4 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
",
        );
        let tl = Timeline::build(&events);
        let x = crate::hrtimer::expiries(&events);
        let ctx = WakeupContext::new(&events, &tl, &x);
        let b = decompose_wakeups(&ctx, &WakeupSelection::default());
        assert_eq!(b.len(), 1, "the wakeup is not found");
        let b = &b[0];
        assert_eq!(b.switch_in, Nanos(100_000_000_000 + us(136)));
        assert_eq!(b.latency, Nanos(us(40)));
        let find = |k| part(b, k).map(|p| p.1);
        assert_eq!(find(CauseKind::TimerIrqDelay), Some(Nanos(us(30))));
        assert_eq!(find(CauseKind::IrqHandler), Some(Nanos(us(6))));
        assert_eq!(find(CauseKind::ReturnToUser), Some(Nanos(us(4))));
        // The CPU sat in idle until the interrupt: the delay's cause is idle.
        let h = b.headline.as_ref().expect("headline");
        assert_eq!(h.cause, CauseKind::TimerIrqDelay);
        assert_eq!(h.within.iter().map(|w| w.cause).collect::<Vec<_>>(), [CauseKind::Idle]);
        assert_eq!(b.remainder, 0);
        // The sample the thread measured finds it too.
        let s = decompose_task_sample(
            &ctx,
            KnownSample { cpu: CpuId(1), expected: Nanos(100_000_000_000 + us(100)), latency: Nanos(us(41)) },
            50,
            SampleEnd::Read { tolerance: Nanos::from_us(200) },
        );
        assert_eq!(s.map(|s| s.end), Some(Nanos(100_000_000_000 + us(140))));
    }

    #[test]
    fn a_task_preempted_on_its_way_back_to_user_space_waits_until_it_runs_again() {
        // Captured here (cyclictest -b 1000 broke at 2055 µs): cyclictest is woken from idle, the spinner's
        // timer fires in its context before it reaches user space, and it runs again only after the spin.
        let events = trace(
            "\
 cyclictest-29238   [001] d..2. 10914.686326: sched_switch: prev_comm=cyclictest prev_pid=29238 prev_prio=4 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
     <idle>-0       [001] d.h1. 10914.686404: local_timer_entry: vector=236
     <idle>-0       [001] d.h1. 10914.686404: hrtimer_expire_entry: hrtimer=00000000bc7aa51e function=hrtimer_wakeup now=10914686403884
     <idle>-0       [001] d.h3. 10914.686404: sched_waking: comm=cyclictest pid=29238 prio=4 target_cpu=001
     <idle>-0       [001] dNh1. 10914.686405: hrtimer_expire_exit: hrtimer=00000000bc7aa51e
     <idle>-0       [001] dNh1. 10914.686414: local_timer_exit: vector=236
 cyclictest-29238   [001] d.h3. 10914.686427: local_timer_entry: vector=236
 cyclictest-29238   [001] d.h5. 10914.686427: sched_waking: comm=latscope-inject pid=29236 prio=2 target_cpu=001
 cyclictest-29238   [001] dNh3. 10914.686437: local_timer_exit: vector=236
 cyclictest-29238   [001] ..... 10914.686437: sys_exit: NR 230 = 0
 cyclictest-29238   [001] d..2. 10914.686439: sched_switch: prev_comm=cyclictest prev_pid=29238 prev_prio=4 prev_state=R ==> next_comm=latscope-inject next_pid=29236 next_prio=2
 latscope-inject-29236 [001] ..... 10914.686440: sys_exit: NR 230 = 0
 latscope-inject-29236 [001] d..2. 10914.688448: sched_switch: prev_comm=latscope-inject prev_pid=29236 prev_prio=2 prev_state=S ==> next_comm=cyclictest next_pid=29238 next_prio=4
",
        );
        let b = breakdowns(&events);
        let b = b.iter().find(|b| b.task.pid == 29238).expect("cyclictest's wakeup");
        assert_eq!(b.end, Nanos(10_914_688_448_000));
        assert_eq!(part(b, CauseKind::BlockingTask), Some(("latscope-inject".into(), Nanos(2_009_000))));
        // Its own time: from its switch-in after the timer interrupt to the preemption.
        assert_eq!(part(b, CauseKind::ReturnToUser), Some(("cyclictest".into(), Nanos(25_000))));
        assert_eq!(b.remainder, 0, "{:?}", b.components);
        let h = b.headline.as_ref().expect("headline");
        assert_eq!(h.culprit.pid(), Some(29236));
    }

    #[test]
    fn a_wakeup_inside_a_throttling_gap_is_blamed_on_throttling() {
        let events = trace(
            "\
        loop-9      [000] d..2.    10.950000: sched_switch: prev_comm=loop prev_pid=9 prev_prio=49 prev_state=R ==> next_comm=hog next_pid=20 next_prio=139
         hog-20     [000] d..2.    10.960000: sched_waking: comm=tick pid=30 prio=4 target_cpu=000
         hog-20     [000] d..2.    11.000000: sched_switch: prev_comm=hog prev_pid=20 prev_prio=139 prev_state=R ==> next_comm=tick next_pid=30 next_prio=4
",
        );
        let tl = Timeline::build(&events);
        let x = crate::hrtimer::expiries(&events);
        let ctx = WakeupContext::new(&events, &tl, &x);
        let b = decompose_wakeups(&ctx, &WakeupSelection::default());
        let c = &b[0].components;
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].cause, c[0].magnitude), (CauseKind::RtThrottling, Nanos::from_ms(40)));
        assert_eq!(b[0].headline.as_ref().map(|h| h.cause), Some(CauseKind::RtThrottling));
        let g = crate::throttling::throttle_gaps(&events, &tl);
        assert_eq!((g.len(), &*g[0].task.comm, g[0].duration()), (1, "loop", Nanos::from_ms(50)));
    }

    #[test]
    fn rt_throttling_gap() {
        let ms = |v: u64| v * 1_000_000;
        let events = trace(
            "\
     kworker-3      [000] d..2.    10.001000: sched_switch: prev_comm=kworker prev_pid=3 prev_prio=120 prev_state=S ==> next_comm=loop next_pid=9 next_prio=49
        loop-9      [000] d..2.    10.950000: sched_switch: prev_comm=loop prev_pid=9 prev_prio=49 prev_state=R ==> next_comm=swapper/0 next_pid=0 next_prio=120
      <idle>-0      [000] d..2.    11.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=loop next_pid=9 next_prio=49
        loop-9      [000] d..2.    11.010000: sched_switch: prev_comm=loop prev_pid=9 prev_prio=49 prev_state=R+ ==> next_comm=fifo next_pid=11 next_prio=10
        fifo-11     [000] d..2.    11.020000: sched_switch: prev_comm=fifo prev_pid=11 prev_prio=10 prev_state=S ==> next_comm=loop next_pid=9 next_prio=49
",
        );
        let tl = Timeline::build(&events);
        let g = crate::throttling::throttle_gaps(&events, &tl);
        assert_eq!(g.len(), 1, "preemption by a higher RT task is not throttling");
        assert_eq!(g[0].duration(), Nanos(ms(50)));
        assert_eq!(g[0].ran_instead[0].cause, CauseKind::Idle);
    }
}
