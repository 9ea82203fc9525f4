//! Sections read from the flags column: runs of consecutive task-level events on one CPU that all show
//! interrupts, bottom halves or preemption disabled (`d`, `b`/`D`, a preempt depth above 0). Such a run is
//! sampled evidence, not a measured section: every event in it shows the state, but the trace says nothing
//! about the time between two events. Each section therefore carries its granularity ([`Sampled`]: how many
//! events, how far apart at most). Events the kernel always emits with interrupts and preemption off (the
//! scheduler's, hrtimer and timer queueing, softirq raising) say nothing about the code around them: they
//! neither extend nor end an irqs-off or preemption-off run. A run goes on across a `sched_switch` into the
//! next task when that task's first events still show the state (a context-switch path that keeps
//! interrupts off); the previous task's events after its `sched_switch` (the switch code itself) keep the
//! hand-off. An irqs-off run ends in the next task's `finish_task_switch`, which enables interrupts.

use latscope_model::event::{Text, TimerOp};
use latscope_model::{symbol, CpuId, Event, EventKind, Flags, Nanos, Pid, TaskName};
use serde::Serialize;

/// What a section had disabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Disabled {
    /// Interrupts (`d`, or `D` together with bottom halves).
    Irqs,
    /// Bottom halves (softirqs): `b`, or `D` together with interrupts.
    BottomHalves,
    /// Preemption: a preempt depth above 0.
    Preemption,
}

impl Disabled {
    /// The three, in the order sections are tracked.
    pub const ALL: [Disabled; 3] = [Disabled::Irqs, Disabled::BottomHalves, Disabled::Preemption];

    /// Whether `k` is an event the kernel emits with this state disabled whatever the code around it did
    /// (inside the scheduler's or a timer base's locked sections): no evidence about that code.
    pub fn always_shown_by(self, k: &EventKind) -> bool {
        let locked = matches!(
            k,
            EventKind::SchedSwitch { .. }
                | EventKind::SchedWakeup { .. }
                | EventKind::SchedMigrate { .. }
                | EventKind::HrtimerStart { .. }
                | EventKind::HrtimerCancel { .. }
                | EventKind::SoftirqRaise { .. }
                | EventKind::Preemptirq { .. }
                | EventKind::Timer { op: TimerOp::Start | TimerOp::Cancel, .. }
                // The hwlat tracer writes its sample inside its own interrupts-off sampling loop.
                | EventKind::Hwlat { .. }
        );
        locked && self != Disabled::BottomHalves
    }

    /// Whether an event's flags show this disabled.
    pub fn shown_by(self, f: Flags) -> bool {
        match self {
            Disabled::Irqs => f.irqs_off(),
            Disabled::BottomHalves => f.has(Flags::BH_OFF),
            Disabled::Preemption => f.preempt_depth.is_some_and(|d| d > 0),
        }
    }
}

/// How a section from the flags column is known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sampled {
    /// The events that show the state (every event of the run does, none in between shows otherwise).
    pub events: u32,
    /// The longest time between two consecutive ones: nothing is known about the state inside it.
    #[serde(rename = "max_gap_ns")]
    pub max_gap: Nanos,
    /// Task switches the run went across (the state showed on both sides of each `sched_switch`).
    pub switches: u32,
}

impl Sampled {
    /// Whether this evidence is dense enough over `duration` to state a section: at least three events, no
    /// gap longer than a tenth of it.
    pub fn dense_over(&self, duration: Nanos) -> bool {
        self.events >= 3 && self.max_gap.0 * 10 <= duration.0
    }
}

/// One section from the flags column.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlagSection {
    /// CPU.
    pub cpu: CpuId,
    /// What was disabled.
    pub disabled: Disabled,
    /// The first event showing it.
    pub start: Nanos,
    /// The last event showing it.
    pub end: Nanos,
    /// The task of the first event.
    pub comm: TaskName,
    /// Its pid.
    pub pid: Pid,
    /// The task of the last event, when the run went across a task switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_task: Option<(TaskName, Pid)>,
    /// Where it began and ended, as far as the trace shows: [`place`] of the first and the last event.
    pub from: Text,
    /// See `from`.
    pub to: Text,
    /// The evidence's granularity.
    pub sampled: Sampled,
    /// Index of the first event.
    pub start_index: usize,
    /// Index of the last event.
    pub end_index: usize,
}

impl FlagSection {
    /// From the first to the last event showing the state.
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }

    /// Whether the evidence is dense enough to state the section as a finding (two events far apart prove
    /// nothing about the time between): see [`Sampled::dense_over`].
    pub fn dense(&self) -> bool {
        self.sampled.dense_over(self.duration())
    }
}

struct Run {
    start: Nanos,
    last: Nanos,
    start_index: usize,
    last_index: usize,
    comm: TaskName,
    pid: Pid,
    first: (TaskName, Pid),
    /// The task a `sched_switch` in the run switched to: its events go on with the run.
    next: Option<Pid>,
    from: Text,
    to: Text,
    /// Interrupts only: the run reached the next task's `finish_task_switch`, which enables them again when
    /// it releases the runqueue lock. What it calls before that (the unlock itself) goes on with the run;
    /// anything after ends it, whatever its flags show.
    switched_in: bool,
    sampled: Sampled,
}

/// A function-trace line entering `finish_task_switch`.
fn ends_a_switch(e: &Event) -> bool {
    matches!(&e.kind, EventKind::Function { func, .. } if is_finish_task_switch(func))
}

/// `finish_task_switch` (compiled as `finish_task_switch.isra.0` on many kernels): where the context switch
/// ends in the next task and interrupts are enabled again (the few architectures that once switched with
/// them enabled, `__ARCH_WANT_INTERRUPTS_ON_CTXSW`, lost that in 2012).
fn is_finish_task_switch(name: &str) -> bool {
    symbol::bare(name).split('.').next() == Some("finish_task_switch")
}

/// A function-trace line of a function `finish_task_switch` called (`raw_spin_rq_unlock <-finish_task_switch`).
fn called_by_finish_task_switch(e: &Event) -> bool {
    matches!(&e.kind, EventKind::Function { parent: Some(p), .. } if is_finish_task_switch(p))
}

/// Where an event shows the CPU: the function a function-trace or function-graph line entered, without the
/// compiler's suffix (`finish_task_switch.isra.0` → `finish_task_switch`), or the event's name.
pub fn place(e: &Event) -> Text {
    match &e.kind {
        EventKind::Function { func, .. } | EventKind::GraphEntry { func, .. } => {
            let f = symbol::bare(func);
            f.split('.').next().filter(|f| !f.is_empty()).unwrap_or(f).into()
        }
        k => k.name().into(),
    }
}

/// The per-CPU state machine: one open run per [`Disabled`] kind.
#[derive(Default)]
pub struct FlagTracker {
    runs: [Option<Run>; 3],
    /// Finished sections of every kind, in the order they ended.
    pub done: Vec<FlagSection>,
}

impl FlagTracker {
    /// Feeds one event of `cpu`.
    pub fn step(&mut self, cpu: CpuId, idx: usize, e: &Event) {
        let f = e.flags;
        if !f.has(Flags::KNOWN) || matches!(e.kind, EventKind::Stack { .. } | EventKind::Lost { .. }) {
            return;
        }
        let task_level = !f.in_hardirq() && !f.in_softirq() && !f.in_nmi();
        let switch_to = match &e.kind {
            EventKind::SchedSwitch { next_pid, .. } => Some(*next_pid),
            _ => None,
        };
        for (k, kind) in Disabled::ALL.into_iter().enumerate() {
            if !task_level && kind != Disabled::Irqs && f.in_hardirq() && !f.in_softirq() {
                // An interrupt taken inside a section with bottom halves or preemption off: its flags show the
                // interrupted state, and it does not end the section.
                continue;
            }
            let continues = self.runs[k].as_ref().is_some_and(|r| {
                (r.pid == e.pid || r.next == Some(e.pid)) && (!r.switched_in || called_by_finish_task_switch(e))
            });
            if task_level && kind.always_shown_by(&e.kind) {
                // No evidence either way; a switch still hands an open run on to the next task.
                if let (Some(r), Some(next), true) = (self.runs[k].as_mut(), switch_to, continues) {
                    r.next = (r.pid == e.pid).then_some(next);
                }
                continue;
            }
            // The idle task halts with interrupts "off" and wakes on any interrupt: never a section.
            let on = task_level && e.pid > 0 && kind.shown_by(f);
            if on && continues {
                if let Some(r) = self.runs[k].as_mut() {
                    r.sampled.max_gap = r.sampled.max_gap.max(e.ts - r.last);
                    r.sampled.events += 1;
                    if r.pid != e.pid {
                        r.pid = e.pid;
                        r.comm = e.comm;
                        r.sampled.switches += 1;
                        r.next = switch_to;
                    } else {
                        // The previous task's events after its `sched_switch` (`switch_mm_irqs_off`, arm64's
                        // `cpu_switch_to`: the switch code runs before `current` changes) keep the hand-off.
                        r.next = switch_to.or(r.next);
                    }
                    r.last = e.ts;
                    r.last_index = idx;
                    r.to = place(e);
                    r.switched_in |= kind == Disabled::Irqs && ends_a_switch(e);
                }
                continue;
            }
            self.close(cpu, k, kind);
            if on {
                self.runs[k] = Some(Run {
                    start: e.ts,
                    last: e.ts,
                    start_index: idx,
                    last_index: idx,
                    comm: e.comm,
                    pid: e.pid,
                    first: (e.comm, e.pid),
                    next: switch_to,
                    from: place(e),
                    to: place(e),
                    switched_in: kind == Disabled::Irqs && ends_a_switch(e),
                    sampled: Sampled { events: 1, max_gap: Nanos::ZERO, switches: 0 },
                });
            }
        }
    }

    fn close(&mut self, cpu: CpuId, k: usize, kind: Disabled) {
        if let Some(r) = self.runs[k].take() {
            if r.last > r.start {
                let end_task = (r.sampled.switches > 0).then_some((r.comm, r.pid));
                self.done.push(FlagSection {
                    cpu,
                    disabled: kind,
                    start: r.start,
                    end: r.last,
                    comm: r.first.0,
                    pid: r.first.1,
                    end_task,
                    from: r.from,
                    to: r.to,
                    sampled: r.sampled,
                    start_index: r.start_index,
                    end_index: r.last_index,
                });
            }
        }
    }

    /// Closes the open runs (end of the trace) and returns every section, sorted by start.
    pub fn finish(mut self, cpu: CpuId) -> Vec<FlagSection> {
        for (k, kind) in Disabled::ALL.into_iter().enumerate() {
            self.close(cpu, k, kind);
        }
        let mut v = self.done;
        v.sort_by_key(|s| (s.start, s.disabled));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace;

    fn sections(text: &str) -> Vec<FlagSection> {
        let mut t = FlagTracker::default();
        for (i, e) in trace(text).iter().enumerate() {
            t.step(CpuId(0), i, e);
        }
        t.finish(CpuId(0))
    }

    #[test]
    fn bh_off_run_with_an_interrupt_inside_and_its_granularity() {
        let s = sections(
            "\
 python3-9   [000] b....   1.000000: net_dev_queue: dev=lo skbaddr=1 len=74
 python3-9   [000] b.h..   1.000010: irq_handler_entry: irq=5 name=eth0
 python3-9   [000] b....   1.000040: net_dev_xmit: dev=lo skbaddr=1 len=74 rc=0
 python3-9   [000] .....   1.000050: net_dev_queue: dev=lo skbaddr=2 len=74
",
        );
        let bh: Vec<_> = s.iter().filter(|s| s.disabled == Disabled::BottomHalves).collect();
        assert_eq!(bh.len(), 1);
        assert_eq!(bh[0].duration(), Nanos::from_us(40));
        assert_eq!(bh[0].sampled, Sampled { events: 2, max_gap: Nanos::from_us(40), switches: 0 });
        assert!(!bh[0].dense());
    }

    #[test]
    fn irqs_off_across_a_switch_go_on_in_the_next_task() {
        let s = sections(
            "\
 a-1   [000] d..2.   1.000000: __schedule <-schedule
 a-1   [000] d..2.   1.000010: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120
 b-2   [000] d..2.   1.000060: finish_task_switch <-__schedule
 b-2   [000] .....   1.000070: schedule_tail <-ret_from_fork
",
        );
        let irq: Vec<_> = s.iter().filter(|s| s.disabled == Disabled::Irqs).collect();
        assert_eq!(irq.len(), 1, "{s:?}");
        assert_eq!(irq[0].duration(), Nanos::from_us(60));
        assert_eq!(irq[0].sampled.switches, 1);
        assert_eq!(irq[0].end_task.map(|t| t.1), Some(2));
        assert_eq!((irq[0].comm.to_string(), irq[0].pid), ("a".to_string(), 1));
    }
}
