//! [`FuncGraphStream`]: the function-graph report of a trace ([`FuncGraphReport`]) taken one event at a time,
//! as [`funcgraph::report`] gives it of the whole trace's [`funcgraph::call_trees`]: each root call is summed
//! up when it returns and let go. Its diff compares two root calls known only at the end: their trees are
//! taken again in a second pass ([`RootCapture`]).

use crate::funcgraph::{self, CallNode, CallStacks, FuncGraphReport, FuncStat, HotStep, Root};
use crate::keep::keep_largest;
use latscope_model::{CpuId, Event, Nanos, Text};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Where a root call comes in [`funcgraph::call_trees`]'s order: its entry's time and CPU, then the order the
/// calls completed in (the trees are sorted by time and CPU from that order).
pub type Order = (Nanos, CpuId, u64);

/// Where a measured call comes in [`funcgraph::report`]'s list of them: its root's place, then its own in
/// the root's tree ([`funcgraph::measured_tops`]' order).
type Place = (Order, usize);

/// A root call of a function that may be the one most repeated: its total, entry's time and CPU, and the index
/// of its entry; its function's list holds them in the order they completed. 32 bytes each.
#[derive(Clone, Copy, Debug)]
struct Instance {
    total: Nanos,
    ts: Nanos,
    index: usize,
    cpu: CpuId,
}

/// The report of root calls given one at a time ([`RootsReport::add`]), each with its place in the trees'
/// order. Its state is bounded by the functions and the `top` calls kept, but for the list of root calls
/// that returned with callees (the diff compares the median of the most repeated function's): 32 bytes each,
/// and growing with the trace.
pub struct RootsReport {
    top: usize,
    roots: usize,
    stats: FxHashMap<Text, FuncStat>,
    /// The slowest measured calls trimmed to 3 levels, with their totals and places: at most twice `top`.
    slowest: Vec<(Nanos, Place, CallNode)>,
    /// The rank of the last of them after they were last cut to `top`: a call ranked lower is not kept (nor
    /// trimmed).
    floor: Option<(Nanos, std::cmp::Reverse<Place>)>,
    /// The slowest measured call (the last of as slow ones, as `report` takes it), its place and hot path.
    hot: Option<(Nanos, Place, Vec<HotStep>)>,
    /// Per root function, its calls that returned with callees.
    repeated: BTreeMap<Text, Vec<Instance>>,
}

/// The two root calls a report's diff compares, by the index of their entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiffCalls {
    /// The median call of the most repeated root function.
    pub normal: usize,
    /// Its slowest call.
    pub abnormal: usize,
}

/// A report without its diff, and the two root calls the diff compares, when it has one.
#[derive(Clone, Debug, Default)]
pub struct PendingReport {
    /// The report (its `diff` empty).
    pub report: FuncGraphReport,
    /// The calls to compare.
    pub diff: Option<DiffCalls>,
}

impl PendingReport {
    /// The report with its diff, from the two calls `found` holds ([`RootCapture::finish`]).
    pub fn complete(self, found: &[Root]) -> FuncGraphReport {
        let call = |index: usize| found.iter().find(|r| r.index == index).map(|r| &r.node);
        let diff = self.diff.and_then(|d| Some(funcgraph::diff(call(d.normal)?, call(d.abnormal)?)));
        FuncGraphReport { diff, ..self.report }
    }
}

impl RootsReport {
    /// A report listing the `top` slowest calls.
    pub fn new(top: usize) -> RootsReport {
        RootsReport {
            top,
            roots: 0,
            stats: FxHashMap::default(),
            slowest: Vec::new(),
            floor: None,
            hot: None,
            repeated: BTreeMap::new(),
        }
    }

    /// Adds the root call `root`, at `order` among the trees, whose entry is event `index`.
    pub fn add(&mut self, root: &CallNode, order: Order, index: usize) {
        self.roots += 1;
        funcgraph::add_stats(root, &mut self.stats);
        let mut tops = Vec::new();
        funcgraph::measured_tops(root, &mut tops);
        for (k, t) in tops.into_iter().enumerate() {
            let (total, place) = (t.total.unwrap_or_default(), (order, k));
            if self.hot.as_ref().map_or(true, |(x, p, _)| (total, place) > (*x, *p)) {
                let path = funcgraph::hot_path(t).into_iter();
                let steps = path.map(|n| HotStep { func: n.func.clone(), total: n.total, self_time: n.self_time });
                self.hot = Some((total, place, steps.collect()));
            }
            if self.floor.is_some_and(|f| (total, std::cmp::Reverse(place)) < f) {
                continue;
            }
            self.slowest.push((total, place, funcgraph::trim(t, 3)));
            let cut = self.slowest.len() >= 2 * self.top;
            keep_largest(&mut self.slowest, self.top, false, rank);
            if cut {
                self.floor = self.slowest.last().map(rank);
            }
        }
        if let (Some(total), false) = (root.total, root.children.is_empty()) {
            let (ts, cpu, _) = order;
            self.repeated.entry(root.func.clone()).or_default().push(Instance { total, ts, index, cpu });
        }
    }

    /// The report, when a root call was added; its diff waits for the two calls it compares.
    pub fn finish(mut self) -> Option<PendingReport> {
        if self.roots == 0 {
            return None;
        }
        let mut by_self_time: Vec<FuncStat> = self.stats.into_values().collect();
        by_self_time.sort_by(|a, b| b.self_total.cmp(&a.self_total).then_with(|| a.func.cmp(&b.func)));
        by_self_time.truncate(self.top.max(10));
        keep_largest(&mut self.slowest, self.top, true, rank);
        // The root function called most often (at least twice; of as often, the last by name): its slowest call
        // against its median (of as slow ones, the first in the trees' order comes first).
        let group = self.repeated.into_values().filter(|g| g.len() >= 2).max_by_key(Vec::len);
        let diff = group.and_then(|mut g| {
            // Stable: of as slow calls entered at once on one CPU, the first completed first, as in the trees.
            g.sort_by_key(|i| (i.total, i.ts, i.cpu));
            let (slowest, median) = (g.last()?, g[(g.len() - 1) / 2]);
            (slowest.total > median.total).then_some(DiffCalls { normal: median.index, abnormal: slowest.index })
        });
        let report = FuncGraphReport {
            roots: self.roots,
            slowest: self.slowest.into_iter().map(|(_, _, n)| n).collect(),
            by_self_time,
            diff: None,
            hot_path: self.hot.map(|(_, _, h)| h).unwrap_or_default(),
        };
        Some(PendingReport { report, diff })
    }
}

/// Slowest first; of as slow, the first in the trees' order.
fn rank(c: &(Nanos, Place, CallNode)) -> (Nanos, std::cmp::Reverse<Place>) {
    (c.0, std::cmp::Reverse(c.1))
}

/// The streamed report: feed it every event in order with [`FuncGraphStream::step`], then
/// [`FuncGraphStream::finish`]. Its state is the open calls ([`CallStacks`]) and a [`RootsReport`].
pub struct FuncGraphStream {
    stacks: CallStacks,
    report: RootsReport,
    /// Root calls completed.
    seq: u64,
}

impl FuncGraphStream {
    /// A stream listing the `top` slowest calls.
    pub fn new(top: usize) -> FuncGraphStream {
        FuncGraphStream { stacks: CallStacks::default(), report: RootsReport::new(top), seq: 0 }
    }

    /// The trace's event `index`.
    pub fn step(&mut self, index: usize, e: &Event) {
        if let Some(r) = self.stacks.step(index, e) {
            self.add(r);
        }
    }

    fn add(&mut self, r: Root) {
        self.report.add(&r.node, (r.node.ts, r.node.cpu, self.seq), r.index);
        self.seq += 1;
    }

    /// The report, when the trace has function-graph calls (its diff waits for a second pass).
    pub fn finish(mut self) -> Option<PendingReport> {
        for r in std::mem::take(&mut self.stacks).finish() {
            self.add(r);
        }
        self.report.finish()
    }
}

/// The second pass for a report's diff: takes the trees of the root calls whose entries are the events given,
/// following only their tasks' stacks while they are open.
pub struct RootCapture {
    /// The entries' indices, in order, and how many have been reached.
    wanted: Vec<usize>,
    next: usize,
    /// The CPUs and tasks of the calls open.
    following: Vec<(CpuId, latscope_model::Pid)>,
    stacks: CallStacks,
    found: Vec<Root>,
}

impl RootCapture {
    /// A capture of the calls `d` names.
    pub fn new(d: DiffCalls) -> RootCapture {
        let mut wanted = vec![d.normal, d.abnormal];
        wanted.sort_unstable();
        wanted.dedup();
        RootCapture { wanted, next: 0, following: Vec::new(), stacks: CallStacks::default(), found: Vec::new() }
    }

    /// The index of the first event it needs.
    pub fn first(&self) -> usize {
        self.wanted.first().copied().unwrap_or_default()
    }

    /// Whether it holds every call it was asked for.
    pub fn done(&self) -> bool {
        self.found.len() == self.wanted.len()
    }

    /// The trace's event `index`.
    pub fn step(&mut self, index: usize, e: &Event) {
        let key = (e.cpu, e.pid);
        if self.wanted.get(self.next) == Some(&index) {
            self.next += 1;
            self.following.push(key);
        } else if !self.following.contains(&key) {
            return;
        }
        if let Some(r) = self.stacks.step(index, e) {
            self.following.retain(|k| *k != key);
            if self.wanted.contains(&r.index) {
                self.found.push(r);
            }
        }
    }

    /// The calls found.
    pub fn finish(self) -> Vec<Root> {
        self.found
    }
}

/// The report of `events` (None without function-graph calls), read once and, for its diff, again from the
/// first of the two calls it compares until both returned.
pub fn report_of(events: &[Event], top: usize) -> Option<FuncGraphReport> {
    let mut s = FuncGraphStream::new(top);
    for (i, e) in events.iter().enumerate() {
        s.step(i, e);
    }
    let pending = s.finish()?;
    let mut found = Vec::new();
    if let Some(d) = pending.diff {
        let mut c = RootCapture::new(d);
        for (i, e) in events.iter().enumerate().skip(c.first()) {
            c.step(i, e);
            if c.done() {
                break;
            }
        }
        found = c.finish();
    }
    Some(pending.complete(&found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ev, graph_entry as entry, graph_exit as exit, graph_leaf as leaf};

    /// Three interrupts on CPU 0 while on CPU 1 a task's call stays open to the end of the trace (its returned
    /// callees are its measured calls) and another task's leaf comes between.
    #[test]
    fn interleaved_cpus_and_a_call_open_at_the_end() {
        let events: Vec<Event> = [
            (100, 0, 1, entry(0, "irq")),
            (110, 1, 2, entry(0, "foo")),
            (120, 0, 1, leaf(1, "a", 50)),
            (130, 1, 2, leaf(1, "b", 30)),
            (140, 1, 2, entry(1, "bar")),
            (150, 1, 2, leaf(2, "c", 20)),
            (160, 1, 2, exit(1, 40)),
            (170, 1, 3, leaf(0, "x", 10)),
            (300, 0, 1, exit(0, 200)),
            (400, 0, 1, entry(0, "irq")),
            (410, 0, 1, leaf(1, "a", 500)),
            (1000, 0, 1, exit(0, 600)),
            (1100, 0, 1, entry(0, "irq")),
            (1110, 0, 1, leaf(1, "a", 60)),
            (1200, 0, 1, exit(0, 100)),
        ]
        .into_iter()
        .map(|(ts, cpu, pid, k)| ev(ts, cpu, "t", pid, k))
        .collect();
        let mut s = FuncGraphStream::new(2);
        for (i, e) in events.iter().enumerate() {
            s.step(i, e);
        }
        let pending = s.finish().expect("a report");
        // The median interrupt (200 ns, the entry at index 0) against the slowest (600 ns, index 9).
        assert_eq!(pending.diff, Some(DiffCalls { normal: 0, abnormal: 9 }));
        let r = report_of(&events, 2).expect("a report");
        assert_eq!(r.roots, 5, "three interrupts, x, and foo still open");
        let slowest: Vec<_> = r.slowest.iter().map(|n| (&*n.func, n.ts, n.total)).collect();
        assert_eq!(slowest, [("irq", Nanos(400), Some(Nanos(600))), ("irq", Nanos(100), Some(Nanos(200)))]);
        let hot: Vec<_> = r.hot_path.iter().map(|h| (&*h.func, h.total)).collect();
        assert_eq!(hot, [("irq", Some(Nanos(600))), ("a", Some(Nanos(500)))]);
        let by_self: Vec<_> = r.by_self_time.iter().map(|f| (&*f.func, f.calls, f.self_total.0)).collect();
        assert_eq!(
            by_self,
            [("a", 3, 610), ("irq", 3, 290), ("b", 1, 30), ("bar", 1, 20), ("c", 1, 20), ("x", 1, 10), ("foo", 1, 0)]
        );
        let d = r.diff.as_ref().expect("a diff");
        assert_eq!((d.normal, d.abnormal, d.extra), (Some(Nanos(200)), Some(Nanos(600)), 400));
        // Whole, with every tree held: the same.
        let whole = funcgraph::report(&funcgraph::call_trees(&events), 2);
        let json = |r: &FuncGraphReport| serde_json::to_value(r).expect("serialises");
        assert_eq!(json(&r), json(&whole));
        // With only the open call's measured callees as the slowest: b and bar, the slowest first.
        let open: Vec<Event> = events.iter().filter(|e| e.cpu.0 == 1).cloned().collect();
        let r = report_of(&open, 5).expect("a report");
        let slowest: Vec<_> = r.slowest.iter().map(|n| (&*n.func, n.total)).collect();
        assert_eq!(slowest, [("bar", Some(Nanos(40))), ("b", Some(Nanos(30))), ("x", Some(Nanos(10)))]);
        assert!(r.diff.is_none());
    }

    /// What the report keeps per root call with callees (the bound its docs state).
    #[test]
    fn a_root_call_costs_32_bytes() {
        assert_eq!(std::mem::size_of::<Instance>(), 32);
    }
}
