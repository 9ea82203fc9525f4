//! CPU activity slices built from trace events (what ran on each CPU and when: tasks, hard IRQs, IRQ
//! vectors, softirqs, NMIs), properly nested per CPU — the shared input of the Perfetto export and the CPU
//! timeline plot.

use latscope_analyze::timeline::{Activity, CpuTimeline, Timeline};
use latscope_model::{CpuId, Event, Nanos, Pid};
use std::collections::BTreeMap;

/// What a slice is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SliceKind {
    /// A task ran (between two `sched_switch` events).
    Task,
    /// A hard IRQ handler (`irq_handler_entry`/`exit`).
    Irq,
    /// An IRQ vector (`irq_vectors:*_entry`/`exit`: local_timer, reschedule, call_function…).
    Vector,
    /// A softirq (`softirq_entry`/`exit`).
    Softirq,
    /// An NMI handler (`nmi_handler`, which reports its duration).
    Nmi,
}

impl SliceKind {
    /// Lower-case name used as a category (`task`, `irq`, `vector`, `softirq`, `nmi`).
    pub fn as_str(self) -> &'static str {
        match self {
            SliceKind::Task => "task",
            SliceKind::Irq => "irq",
            SliceKind::Vector => "vector",
            SliceKind::Softirq => "softirq",
            SliceKind::Nmi => "nmi",
        }
    }
}

/// One span of activity on one CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    /// The CPU.
    pub cpu: CpuId,
    /// Start, trace clock.
    pub start: Nanos,
    /// End, trace clock (≥ start).
    pub end: Nanos,
    /// What it is.
    pub kind: SliceKind,
    /// Display name: `comm` for tasks, `irq 24 virtio0`, `local_timer`, `softirq TIMER`, NMI handler name.
    pub name: String,
    /// Task pid (tasks only).
    pub pid: Option<Pid>,
    /// Task priority as the kernel prints it (tasks only, when a `sched_switch` showed it).
    pub prio: Option<i32>,
    /// Nesting depth on its CPU after [`nest`]: 0 for tasks, 1+ for interrupts inside them.
    pub depth: u32,
}

impl Slice {
    /// Duration.
    pub fn duration(&self) -> Nanos {
        self.end.saturating_sub(self.start)
    }
}

/// The slices of a trace, per CPU, nested, with a count of entry/exit events that had no partner.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuSlices {
    /// Per CPU, slices sorted by start (parents before children).
    pub cpus: BTreeMap<CpuId, Vec<Slice>>,
    /// Exit events whose entry is not in the trace (the trace started inside the handler); ignored.
    pub unmatched_exits: u64,
    /// Entries still open at the end of the trace; closed at the CPU's last event.
    pub unclosed: u64,
}

/// Builds the per-CPU slices of `events` (any order) from the analysis' [`Timeline`], so that the export
/// and the plots show what the explanations used: a task runs from its switch-in, or, when the trace lacks
/// that switch (lost events, or a kernel that does not trace the switch away from a polling idle task),
/// from the CPU's last event before its first one.
pub fn build(events: &[Event]) -> CpuSlices {
    let sorted: Vec<Event>;
    let events = if events.windows(2).all(|w| w[0].ts <= w[1].ts) {
        events
    } else {
        sorted = {
            let mut v = events.to_vec();
            v.sort_by_key(|e| e.ts);
            v
        };
        &sorted
    };
    let timeline = Timeline::build(events);
    let mut result = CpuSlices { unmatched_exits: timeline.unmatched_exits.values().sum(), ..CpuSlices::default() };
    for (cpu, t) in &timeline.cpus {
        let mut slices = task_slices(*cpu, t);
        for c in &t.contexts {
            // A hard interrupt inferred from the flags column has no exit event by nature.
            if c.exit_index.is_none() && !matches!(c.activity, Activity::HardIrq { .. }) {
                result.unclosed += 1;
            }
            let (kind, name) = match &c.activity {
                Activity::Irq { irq, name } => (SliceKind::Irq, format!("irq {irq} {name}")),
                Activity::Vector { name } => (SliceKind::Vector, name.to_string()),
                Activity::Softirq { name, .. } => (SliceKind::Softirq, format!("softirq {name}")),
                Activity::Nmi { handler } => (SliceKind::Nmi, format!("nmi {handler}")),
                a @ Activity::HardIrq { .. } => (SliceKind::Irq, a.label()),
                Activity::Task { .. } | Activity::Idle => continue,
            };
            slices.push(Slice { cpu: *cpu, start: c.start, end: c.end, kind, name, pid: None, prio: None, depth: 0 });
        }
        nest(&mut slices);
        result.cpus.insert(*cpu, slices);
    }
    result
}

/// One slice per run of a task (idle included) on `cpu`: consecutive segments of the same task, with the
/// interrupts that ran inside it.
fn task_slices(cpu: CpuId, t: &CpuTimeline) -> Vec<Slice> {
    let mut out: Vec<Slice> = Vec::new();
    let mut leading_interrupts: Option<Nanos> = None;
    for seg in t.segments.iter() {
        let (name, pid, prio) = match &seg.activity {
            Activity::Task { comm, pid, prio } => (comm.to_string(), *pid, *prio),
            Activity::Idle => ("idle".to_string(), 0, None),
            _ => {
                match out.last_mut() {
                    Some(run) if run.end == seg.start => run.end = seg.end,
                    _ => leading_interrupts = leading_interrupts.or(Some(seg.start)),
                }
                continue;
            }
        };
        match out.last_mut() {
            Some(run) if run.pid == Some(pid) && run.end == seg.start => {
                run.end = seg.end;
                run.prio = run.prio.or(prio);
            }
            _ => {
                let start = leading_interrupts.take().unwrap_or(seg.start);
                out.push(Slice {
                    cpu,
                    start,
                    end: seg.end,
                    kind: SliceKind::Task,
                    name,
                    pid: Some(pid),
                    prio,
                    depth: 0,
                });
            }
        }
    }
    out
}

/// Sorts the slices of one CPU and makes them nest strictly: tasks at depth 0, a slice that overruns
/// its enclosing slice is clipped to it, depths are assigned. Perfetto and the timeline rely on this.
pub fn nest(slices: &mut [Slice]) {
    // Tasks first at equal start (they enclose), then longer before shorter.
    slices.sort_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then((a.kind != SliceKind::Task).cmp(&(b.kind != SliceKind::Task)))
            .then(b.end.cmp(&a.end))
    });
    let mut stack: Vec<Nanos> = Vec::new();
    for s in slices.iter_mut() {
        while stack.last().is_some_and(|end| *end <= s.start) {
            stack.pop();
        }
        if s.kind == SliceKind::Task {
            stack.clear();
        }
        if let Some(end) = stack.last() {
            if s.end > *end {
                s.end = *end;
            }
        }
        s.depth = stack.len() as u32;
        stack.push(s.end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{EventKind, Flags, TaskName};

    fn ev(ts: u64, cpu: u32, comm: &str, pid: Pid, kind: EventKind) -> Event {
        Event {
            ts: Nanos(ts),
            cpu: CpuId(cpu),
            pid,
            tgid: None,
            comm: TaskName::from(comm),
            flags: Flags::default(),
            kind,
        }
    }

    fn switch(ts: u64, cpu: u32, prev: (&str, Pid, i32), next: (&str, Pid, i32)) -> Event {
        ev(
            ts,
            cpu,
            prev.0,
            prev.1,
            EventKind::SchedSwitch {
                prev_comm: prev.0.into(),
                prev_pid: prev.1,
                prev_prio: prev.2,
                prev_state: "S".into(),
                next_comm: next.0.into(),
                next_pid: next.1,
                next_prio: next.2,
            },
        )
    }

    #[test]
    fn tasks_irqs_and_softirqs_nest() {
        let events = vec![
            switch(1_000, 1, ("swapper/1", 0, 120), ("spinner", 77, 2)),
            ev(2_000, 1, "spinner", 77, EventKind::IrqHandlerEntry { irq: 24, name: "virtio0".into() }),
            ev(3_500, 1, "spinner", 77, EventKind::IrqHandlerExit { irq: 24, handled: true }),
            ev(4_000, 1, "spinner", 77, EventKind::SoftirqEntry { vec: 1, name: "TIMER".into() }),
            ev(6_000, 1, "spinner", 77, EventKind::SoftirqExit { vec: 1, name: "TIMER".into() }),
            switch(9_000, 1, ("spinner", 77, 2), ("cyclictest", 99, 19)),
            ev(9_500, 1, "cyclictest", 99, EventKind::VectorEntry { name: "local_timer".into(), vector: Some(236) }),
            ev(12_000, 1, "cyclictest", 99, EventKind::VectorExit { name: "local_timer".into(), vector: Some(236) }),
        ];
        let s = build(&events);
        let cpu1 = &s.cpus[&CpuId(1)];
        let names: Vec<(&str, u64, u64, u32)> =
            cpu1.iter().map(|x| (x.name.as_str(), x.start.0, x.end.0, x.depth)).collect();
        assert_eq!(
            names,
            vec![
                ("spinner", 1_000, 9_000, 0),
                ("irq 24 virtio0", 2_000, 3_500, 1),
                ("softirq TIMER", 4_000, 6_000, 1),
                ("cyclictest", 9_000, 12_000, 0),
                ("local_timer", 9_500, 12_000, 1),
            ]
        );
        assert_eq!(cpu1[0].pid, Some(77));
        assert_eq!(cpu1[0].prio, Some(2));
        assert_eq!((s.unmatched_exits, s.unclosed), (0, 0));
    }

    #[test]
    fn a_task_whose_switch_in_is_not_traced_runs_from_the_last_event_before_it() {
        // This VM's kernel does not trace the switch away from a polling idle task: the idle time before
        // the thread's run must stay idle, not become the thread's.
        let wakeup = EventKind::SchedWakeup {
            comm: "timer".into(),
            pid: 42,
            prio: 4,
            target_cpu: Some(CpuId(1)),
            kind: latscope_model::event::WakeupKind::Wakeup,
        };
        let events = vec![
            switch(1_000, 1, ("timer", 42, 4), ("swapper/1", 0, 120)),
            ev(5_000, 1, "<idle>", 0, EventKind::VectorEntry { name: "local_timer".into(), vector: Some(236) }),
            ev(5_500, 1, "<idle>", 0, wakeup),
            ev(6_000, 1, "<idle>", 0, EventKind::VectorExit { name: "local_timer".into(), vector: Some(236) }),
            ev(6_400, 1, "timer", 42, EventKind::Print { ip: None, text: "awake".into() }),
            switch(7_000, 1, ("timer", 42, 4), ("swapper/1", 0, 120)),
        ];
        let s = build(&events);
        let tasks: Vec<(&str, u64, u64)> = s.cpus[&CpuId(1)]
            .iter()
            .filter(|x| x.kind == SliceKind::Task)
            .map(|x| (x.name.as_str(), x.start.0, x.end.0))
            .collect();
        assert_eq!(tasks, vec![("idle", 1_000, 6_000), ("timer", 6_000, 7_000)]);
    }

    #[test]
    fn truncated_trace_closes_open_entries_and_counts_orphans() {
        let events = vec![
            ev(100, 0, "kworker/0:1", 12, EventKind::IrqHandlerExit { irq: 5, handled: true }),
            ev(200, 0, "kworker/0:1", 12, EventKind::SoftirqEntry { vec: 9, name: "RCU".into() }),
            ev(900, 0, "kworker/0:1", 12, EventKind::Print { ip: None, text: "x".into() }),
        ];
        let s = build(&events);
        assert_eq!((s.unmatched_exits, s.unclosed), (1, 1));
        let rcu = s.cpus[&CpuId(0)].iter().find(|x| x.kind == SliceKind::Softirq).expect("softirq slice");
        assert_eq!((rcu.start.0, rcu.end.0, rcu.depth), (200, 900, 1));
    }

    #[test]
    fn overrunning_child_is_clipped_to_its_parent() {
        let mut v = vec![
            Slice {
                cpu: CpuId(0),
                start: Nanos(0),
                end: Nanos(100),
                kind: SliceKind::Task,
                name: "a".into(),
                pid: Some(1),
                prio: None,
                depth: 0,
            },
            Slice {
                cpu: CpuId(0),
                start: Nanos(10),
                end: Nanos(50),
                kind: SliceKind::Irq,
                name: "i".into(),
                pid: None,
                prio: None,
                depth: 0,
            },
            Slice {
                cpu: CpuId(0),
                start: Nanos(40),
                end: Nanos(70),
                kind: SliceKind::Softirq,
                name: "s".into(),
                pid: None,
                prio: None,
                depth: 0,
            },
        ];
        nest(&mut v);
        assert_eq!((v[2].start.0, v[2].end.0, v[2].depth), (40, 50, 2));
    }
}
