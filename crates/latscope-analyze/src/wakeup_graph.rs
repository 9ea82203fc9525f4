//! `timer --trace --graph`: the measuring thread's wakeups as the trace shows them (its timer's expiry to its
//! switch-in), and the function graph of its CPU during the worst one against a typical (median) one,
//! compared with `analyze --diff`'s tree diff ([`funcgraph::diff`]).

use crate::funcgraph::{self, CallNode, DiffKind};
use latscope_model::{CpuId, Event, EventKind, GraphDiffEntry, GraphWindow, Nanos, Pid, WakeupGraph};

/// The wakeups of `tid` on `cpu` in `events` (time-ordered): each `hrtimer_start` the thread made of its
/// sleep timer, paired with the thread's next switch-in on `cpu` after the expiry.
pub fn wakeups(events: &[Event], cpu: CpuId, tid: Pid) -> Vec<GraphWindow> {
    let mut out = Vec::new();
    let mut due: Option<Nanos> = None;
    for e in events.iter().filter(|e| e.cpu == cpu) {
        match &e.kind {
            EventKind::HrtimerStart { function, expires, .. } if e.pid == tid && &**function == "hrtimer_wakeup" => {
                due = Some(*expires);
            }
            EventKind::SchedSwitch { next_pid, .. } if *next_pid == tid => {
                if let Some(d) = due.take().filter(|d| e.ts >= *d) {
                    out.push(GraphWindow { expected_ns: d.0, woke_ns: e.ts.0 });
                }
            }
            _ => {}
        }
    }
    out
}

/// Compares the function graph of `cpu` during the worst wakeup of `tid` the trace holds with the median one.
/// `measured` are the thread's worst samples, (expected time, measured latency), worst first: the first the
/// trace holds is the worst wakeup (a sample the trace does not hold, e.g. one before tracing reached the thread,
/// is passed over); when it holds none of them, the trace's own worst. `Err` says why the trace cannot compare.
pub fn compare(events: &[Event], cpu: CpuId, tid: Pid, measured: &[(Nanos, Nanos)]) -> Result<WakeupGraph, String> {
    let mut all = wakeups(events, cpu, tid);
    if all.is_empty() {
        return Err(format!(
            "the trace holds no wakeup of the measuring thread {tid} on CPU {cpu} (its hrtimer_start and switch-in)"
        ));
    }
    let count = all.len() as u64;
    let held = measured.iter().find_map(|m| all.iter().find(|w| w.expected_ns == m.0 .0).map(|w| (w, m.1)));
    let measured_ns = held.map(|(_, latency)| latency.0);
    let Some(worst) = held
        .map(|(w, _)| w)
        .or_else(|| all.iter().max_by_key(|w| (w.latency_ns(), std::cmp::Reverse(w.expected_ns))))
        .copied()
    else {
        return Err("no wakeup to compare".into());
    };
    all.retain(|w| w.expected_ns != worst.expected_ns);
    if all.is_empty() {
        return Err("the trace holds only the worst wakeup: no normal one to compare it with".into());
    }
    all.sort_by_key(|w| (w.latency_ns(), w.expected_ns));
    let normal = all[(all.len() - 1) / 2];
    // The trees of the whole trace: a slice would start inside calls, whose returns then lack their entries.
    let trees = funcgraph::call_trees(events);
    let tree = |w: GraphWindow| funcgraph::window_tree(&trees, cpu, Nanos(w.expected_ns), Nanos(w.woke_ns));
    let (n, a) = (tree(normal), tree(worst));
    if a.children.is_empty() {
        return Err(format!("the trace holds no function-graph calls on CPU {cpu} during the worst wakeup"));
    }
    let d = funcgraph::diff(&n, &a);
    let entries = d.entries.iter().map(|e| entry(e, &a)).collect();
    let calls = |t: &CallNode| t.children.iter().map(|c| c.total.unwrap_or_default().0).sum();
    Ok(WakeupGraph {
        cpu,
        worst,
        normal,
        wakeups: count,
        measured_ns,
        worst_calls_ns: calls(&a),
        normal_calls_ns: calls(&n),
        entries,
    })
}

/// The diff entry as data, without the window's root in its path, with the hot path of an added call.
fn entry(e: &funcgraph::DiffEntry, worst: &CallNode) -> GraphDiffEntry {
    let kind = match e.kind {
        DiffKind::Added => "added",
        DiffKind::SelfGrew => "self_grew",
        DiffKind::Removed => "removed",
    };
    let hot_path = match e.kind {
        DiffKind::Added => find(worst, &e.path[1..])
            .map(|n| {
                funcgraph::hot_path(n).iter().skip(1).map(|s| (s.func.clone(), s.total.unwrap_or_default().0)).collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    GraphDiffEntry {
        path: e.path.iter().skip(1).cloned().collect(),
        kind: kind.into(),
        normal_ns: e.normal.map(|n| n.0),
        worst_ns: e.abnormal.map(|n| n.0),
        extra_ns: e.extra,
        hot_path,
    }
}

/// The node at `path` under `root` (children matched by name, first occurrence that leads there).
fn find<'a>(root: &'a CallNode, path: &[latscope_model::Text]) -> Option<&'a CallNode> {
    let Some((first, rest)) = path.split_first() else { return Some(root) };
    root.children.iter().filter(|c| c.func == *first).find_map(|c| find(c, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ev;
    use latscope_model::{Flags, TaskName};

    fn start(ts: u64, expires: u64) -> Event {
        let kind = EventKind::HrtimerStart {
            hrtimer: 1,
            function: "hrtimer_wakeup".into(),
            expires: Nanos(expires),
            softexpires: Nanos(expires),
            mode: "ABS".into(),
        };
        ev(ts, 1, "timer", 50, kind)
    }
    fn switch_in(ts: u64, prev: i32) -> Event {
        let kind = EventKind::SchedSwitch {
            prev_comm: TaskName::from("x"),
            prev_pid: prev,
            prev_prio: 120,
            prev_state: "R".into(),
            next_comm: TaskName::from("timer"),
            next_pid: 50,
            next_prio: 4,
        };
        ev(ts, 1, "x", prev, kind)
    }
    fn entry(ts: u64, pid: i32, d: u32, f: &str) -> Event {
        ev(ts, 1, "x", pid, EventKind::GraphEntry { depth: d, func: f.into() })
    }
    fn exit(ts: u64, pid: i32, d: u32, ns: u64) -> Event {
        ev(ts, 1, "x", pid, EventKind::GraphExit { depth: d, func: None, duration: Some(Nanos(ns)) })
    }

    /// Two normal wakeups (the timer interrupt in idle, then the switch) and a worst one that waited for a
    /// console write begun before its timer was due: the diff names the write with its time inside the window,
    /// and where that time went.
    #[test]
    fn the_worst_wakeup_against_the_median_names_the_extra_calls_with_their_time_in_the_window() {
        let mut events = vec![
            start(500, 1000),
            entry(1000, 0, 3, "sysvec_apic_timer_interrupt"),
            exit(1010, 0, 3, 10),
            switch_in(1020, 0),
            start(1500, 2000),
            entry(2000, 0, 3, "sysvec_apic_timer_interrupt"),
            exit(2010, 0, 3, 10),
            switch_in(2030, 0),
            start(2500, 3000),
            entry(2900, 77, 0, "devkmsg_write"),
            entry(2910, 77, 1, "serial8250_console_write"),
            exit(3400, 77, 1, 490),
            entry(3401, 77, 1, "sysvec_apic_timer_interrupt"),
            exit(3411, 77, 1, 10),
            exit(3450, 77, 0, 550),
            switch_in(3460, 77),
        ];
        for e in &mut events {
            e.flags = Flags::default();
        }
        let w = wakeups(&events, CpuId(1), 50);
        assert_eq!(w.iter().map(|w| w.latency_ns()).collect::<Vec<_>>(), [20, 30, 460]);
        let g = compare(&events, CpuId(1), 50, &[(Nanos(3000), Nanos(460))]).expect("compared");
        assert_eq!((g.worst.expected_ns, g.worst.woke_ns, g.measured_ns), (3000, 3460, Some(460)));
        assert_eq!(g.normal.expected_ns, 1000, "the median of the two others (20 and 30 ns) is the lower");
        assert_eq!(g.wakeups, 3);
        let top = &g.entries[0];
        assert_eq!(
            (top.kind.as_str(), top.path.iter().map(|p| &**p).collect::<Vec<_>>()),
            ("added", vec!["devkmsg_write"])
        );
        // devkmsg_write ran 2900-3450: 450 ns of it inside the window 3000-3460; its console write 3000-3400.
        assert_eq!((top.worst_ns, top.normal_ns, top.extra_ns), (Some(450), None, 450));
        assert_eq!(top.hot_path, [("serial8250_console_write".into(), 400)]);
        // The interrupt of the normal wakeup is not in the worst window at the same place: it is listed, negative.
        assert!(g.entries.iter().all(|e| e.extra_ns <= 450));
        // A sample the trace does not hold is passed over for the next the trace holds.
        let g = compare(&events, CpuId(1), 50, &[(Nanos(99), Nanos(1)), (Nanos(2000), Nanos(5))]).expect("compared");
        assert_eq!(g.worst.expected_ns, 2000);
        // No wakeup of that thread: said, not guessed.
        assert!(compare(&events, CpuId(1), 51, &[])
            .expect_err("no wakeup")
            .contains("no wakeup of the measuring thread 51"));
    }

    /// Calls of another task on the CPU do not close the calls of a task switched out inside them (the kernel
    /// keeps a graph depth per task).
    #[test]
    fn call_trees_keep_a_stack_per_task() {
        let events =
            vec![entry(10, 5, 0, "schedule"), entry(20, 6, 0, "do_idle"), exit(30, 6, 0, 10), exit(40, 5, 0, 30)];
        let t = funcgraph::call_trees(&events);
        let names: Vec<(&str, Option<Nanos>)> = t.iter().map(|n| (&*n.func, n.total)).collect();
        assert_eq!(names, [("schedule", Some(Nanos(30))), ("do_idle", Some(Nanos(10)))]);
    }
}
