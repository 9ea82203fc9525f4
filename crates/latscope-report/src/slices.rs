//! CPU activity slices built from trace events (what ran on each CPU and when: tasks, hard IRQs, IRQ
//! vectors, softirqs, NMIs), properly nested per CPU — the shared input of the Perfetto export and the CPU
//! timeline plot.

use latscope_model::event::softirq_name;
use latscope_model::{CpuId, Event, EventKind, Nanos, Pid};
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

#[derive(Clone, Debug)]
struct Open {
    kind: SliceKind,
    key: u64,
    start: Nanos,
    name: String,
}

#[derive(Default)]
struct CpuState {
    first: Option<Nanos>,
    last: Nanos,
    task: Option<(Nanos, String, Pid, Option<i32>)>,
    open: Vec<Open>,
    out: Vec<Slice>,
}

/// Builds the per-CPU slices of `events` (any order; they are processed in timestamp order per CPU).
pub fn build(events: &[Event]) -> CpuSlices {
    let mut order: Vec<&Event> = events.iter().collect();
    order.sort_by_key(|e| (e.cpu, e.ts));
    let mut state: BTreeMap<CpuId, CpuState> = BTreeMap::new();
    let mut result = CpuSlices::default();
    for e in order {
        let st = state.entry(e.cpu).or_default();
        if st.first.is_none() {
            st.first = Some(e.ts);
            st.task = Some((e.ts, e.comm.to_string(), e.pid, None));
        }
        st.last = e.ts;
        let cpu = e.cpu;
        let push_open =
            |st: &mut CpuState, kind, key, name: String| st.open.push(Open { kind, key, start: e.ts, name });
        match &e.kind {
            EventKind::SchedSwitch { prev_comm, prev_pid, prev_prio, next_comm, next_pid, next_prio, .. } => {
                let (start, _, _, _) =
                    st.task.take().unwrap_or((st.first.unwrap_or(e.ts), String::new(), *prev_pid, None));
                if e.ts > start {
                    st.out.push(task_slice(cpu, start, e.ts, prev_comm, *prev_pid, Some(*prev_prio)));
                }
                st.task = Some((e.ts, next_comm.to_string(), *next_pid, Some(*next_prio)));
            }
            EventKind::IrqHandlerEntry { irq, name } => {
                push_open(st, SliceKind::Irq, u64::from(*irq), format!("irq {irq} {name}"))
            }
            EventKind::IrqHandlerExit { irq, .. } => close(st, SliceKind::Irq, u64::from(*irq), e, &mut result),
            EventKind::SoftirqEntry { vec, .. } => {
                push_open(st, SliceKind::Softirq, u64::from(*vec), format!("softirq {}", softirq_name(*vec)))
            }
            EventKind::SoftirqExit { vec, .. } => close(st, SliceKind::Softirq, u64::from(*vec), e, &mut result),
            EventKind::VectorEntry { name, .. } => push_open(st, SliceKind::Vector, hash(name), name.to_string()),
            EventKind::VectorExit { name, .. } => close(st, SliceKind::Vector, hash(name), e, &mut result),
            EventKind::NmiHandler { handler, delta, .. } => st.out.push(Slice {
                cpu,
                start: e.ts.saturating_sub(*delta),
                end: e.ts,
                kind: SliceKind::Nmi,
                name: format!("nmi {handler}"),
                pid: None,
                prio: None,
                depth: 0,
            }),
            _ => {}
        }
    }
    for (cpu, mut st) in state {
        let last = st.last;
        if let Some((start, comm, pid, prio)) = st.task.take() {
            if last > start {
                st.out.push(task_slice(cpu, start, last, &comm, pid, prio));
            }
        }
        for o in st.open.drain(..) {
            result.unclosed += 1;
            st.out.push(Slice {
                cpu,
                start: o.start,
                end: last,
                kind: o.kind,
                name: o.name,
                pid: None,
                prio: None,
                depth: 0,
            });
        }
        let mut slices = st.out;
        nest(&mut slices);
        result.cpus.insert(cpu, slices);
    }
    result
}

fn task_slice(cpu: CpuId, start: Nanos, end: Nanos, comm: &str, pid: Pid, prio: Option<i32>) -> Slice {
    let name = if pid == 0 { "idle".to_string() } else { comm.to_string() };
    Slice { cpu, start, end, kind: SliceKind::Task, name, pid: Some(pid), prio, depth: 0 }
}

fn close(st: &mut CpuState, kind: SliceKind, key: u64, e: &Event, result: &mut CpuSlices) {
    match st.open.iter().rposition(|o| o.kind == kind && o.key == key) {
        Some(i) => {
            let o = st.open.remove(i);
            st.out.push(Slice {
                cpu: e.cpu,
                start: o.start,
                end: e.ts,
                kind,
                name: o.name,
                pid: None,
                prio: None,
                depth: 0,
            });
        }
        None => result.unmatched_exits += 1,
    }
}

fn hash(s: &str) -> u64 {
    // FNV-1a: a stable key for vector names.
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
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
    use latscope_model::{Flags, TaskName};

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

    fn switch(ts: u64, cpu: u32, prev: (&str, Pid), next: (&str, Pid, i32)) -> Event {
        ev(
            ts,
            cpu,
            prev.0,
            prev.1,
            EventKind::SchedSwitch {
                prev_comm: prev.0.into(),
                prev_pid: prev.1,
                prev_prio: 120,
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
            switch(1_000, 1, ("swapper/1", 0), ("spinner", 77, 2)),
            ev(2_000, 1, "spinner", 77, EventKind::IrqHandlerEntry { irq: 24, name: "virtio0".into() }),
            ev(3_500, 1, "spinner", 77, EventKind::IrqHandlerExit { irq: 24, handled: true }),
            ev(4_000, 1, "spinner", 77, EventKind::SoftirqEntry { vec: 1, name: "TIMER".into() }),
            ev(6_000, 1, "spinner", 77, EventKind::SoftirqExit { vec: 1, name: "TIMER".into() }),
            switch(9_000, 1, ("spinner", 77), ("cyclictest", 99, 19)),
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
        assert_eq!(cpu1[0].prio, Some(120));
        assert_eq!((s.unmatched_exits, s.unclosed), (0, 0));
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
