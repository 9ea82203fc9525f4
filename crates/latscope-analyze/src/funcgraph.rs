//! Function-graph call trees with self and total time, and the diff of two trees aligned by call path that
//! lists the subtrees accounting for the extra time (seed 001's normal vs abnormal timer interrupt).

use crate::patterns;
use crate::symbol;
use latscope_model::Pattern;
use latscope_model::{CpuId, Event, EventKind, Nanos, Pid, Text};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::HashMap;

/// One call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallNode {
    /// Function name (annotations and `()` stripped); `?` for a call whose entry line was missing.
    pub func: Text,
    /// Total time (entry to return) when the trace shows it.
    #[serde(rename = "total_ns")]
    pub total: Option<Nanos>,
    /// Total minus the children's totals.
    #[serde(rename = "self_ns")]
    pub self_time: Option<Nanos>,
    /// Callees in call order.
    pub children: Vec<CallNode>,
    /// CPU.
    pub cpu: CpuId,
    /// Time of the entry.
    pub ts: Nanos,
}

impl CallNode {
    fn new(func: &str, cpu: CpuId, ts: Nanos) -> CallNode {
        CallNode {
            func: symbol::function_name(func).into(),
            total: None,
            self_time: None,
            children: Vec::new(),
            cpu,
            ts,
        }
    }

    /// A call of the function the event names: its name shared with the event when it needs no stripping.
    fn of(func: &Text, cpu: CpuId, ts: Nanos) -> CallNode {
        let name = symbol::function_name(func);
        let func = if name.len() == func.len() { func.clone() } else { name.into() };
        CallNode { func, total: None, self_time: None, children: Vec::new(), cpu, ts }
    }

    fn children_total(&self) -> Nanos {
        self.children.iter().fold(Nanos::ZERO, |a, c| a + c.total.unwrap_or_default())
    }

    fn close(&mut self, duration: Option<Nanos>) {
        self.total = duration;
        self.self_time = duration.map(|d| d - self.children_total());
    }

    /// Number of nodes in the subtree.
    pub fn size(&self) -> usize {
        1 + self.children.iter().map(CallNode::size).sum::<usize>()
    }
}

/// Builds the call trees of every CPU (roots in time order). Entries and returns are matched by nesting, per
/// task on each CPU: the kernel keeps a graph depth per task, so a task switched out inside `schedule()`
/// returns from it later while other tasks' calls (and the interrupts they take) come between. A return
/// whose entry line is missing (hand-edited or damaged traces) closes a `?` node around the latest callees
/// its duration can cover.
pub fn call_trees(events: &[Event]) -> Vec<CallNode> {
    let mut stacks = CallStacks::default();
    let mut roots: Vec<CallNode> =
        events.iter().enumerate().filter_map(|(i, e)| stacks.step(i, e)).map(|r| r.node).collect();
    roots.extend(stacks.finish().into_iter().map(|r| r.node));
    roots.sort_by_key(|r| (r.ts, r.cpu));
    roots
}

/// A root call [`CallStacks`] completed, and the index of its first event.
#[derive(Clone, Debug)]
pub struct Root {
    /// The call and its callees.
    pub node: CallNode,
    /// Index of its entry (of the leaf line, for a call without callees).
    pub index: usize,
}

/// The calls open on each task's stack per CPU, nested as [`call_trees`] nests them, one event at a time:
/// [`CallStacks::step`] gives each root call when it returns, [`CallStacks::finish`] those still open at the
/// end of the trace. An open call holds its callees' trees until it returns (about 90 bytes a call, and its
/// name), so memory follows the largest call in progress, not the trace's length, unless a call never
/// returns (a kernel thread's loop entered inside the trace holds all it calls); a stack is let go when it
/// empties.
#[derive(Default)]
pub struct CallStacks {
    stacks: FxHashMap<(CpuId, Pid), Stack>,
}

/// One task's open calls on one CPU, with their depths, and the index of the first event of the outermost.
#[derive(Default)]
struct Stack {
    open: Vec<(u32, CallNode)>,
    first: usize,
}

impl CallStacks {
    /// The trace's event `index`: the root call it completes, if any.
    pub fn step(&mut self, index: usize, e: &Event) -> Option<Root> {
        if !matches!(e.kind, EventKind::GraphEntry { .. } | EventKind::GraphLeaf { .. } | EventKind::GraphExit { .. }) {
            return None;
        }
        let key = (e.cpu, e.pid);
        if let Some(s) = self.stacks.get_mut(&key) {
            let root = s.step(index, e);
            if s.open.is_empty() {
                self.stacks.remove(&key);
            }
            return root;
        }
        let mut s = Stack::default();
        let root = s.step(index, e);
        if !s.open.is_empty() {
            self.stacks.insert(key, s);
        }
        root
    }

    /// The calls still open at the end of the trace, total unknown, as root calls in the order of their CPU
    /// and task.
    pub fn finish(self) -> Vec<Root> {
        let mut stacks: Vec<((CpuId, Pid), Stack)> = self.stacks.into_iter().collect();
        stacks.sort_by_key(|(k, _)| *k);
        let mut roots = Vec::new();
        for (_, mut s) in stacks {
            while let Some((_, node)) = s.open.pop() {
                roots.extend(s.attach(node));
            }
        }
        roots
    }
}

impl Stack {
    /// Puts a finished call under the innermost open one, or gives it as a root.
    fn attach(&mut self, node: CallNode) -> Option<Root> {
        match self.open.last_mut() {
            Some((_, parent)) => {
                parent.children.push(node);
                None
            }
            None => Some(Root { node, index: self.first }),
        }
    }

    fn step(&mut self, index: usize, e: &Event) -> Option<Root> {
        if self.open.is_empty() {
            self.first = index;
        }
        match &e.kind {
            EventKind::GraphEntry { depth, func } => {
                self.open.push((*depth, CallNode::of(func, e.cpu, e.ts)));
                None
            }
            EventKind::GraphLeaf { func, duration, .. } => {
                let mut n = CallNode::of(func, e.cpu, e.ts);
                n.close(*duration);
                self.attach(n)
            }
            EventKind::GraphExit { depth, duration, func } => {
                let (top_depth, top) = self.open.last_mut()?;
                let fits = duration.map_or(true, |d| top.children_total() <= d + Nanos(50));
                if *top_depth == *depth || fits {
                    let (_, mut node) = self.open.pop()?;
                    node.close(*duration);
                    return self.attach(node);
                }
                if let Some(d) = duration {
                    // The entry of this call was not decoded: wrap the latest callees its duration covers.
                    let mut covered = Nanos::ZERO;
                    let mut k = top.children.len();
                    while k > 0 && covered + top.children[k - 1].total.unwrap_or_default() <= *d {
                        covered = covered + top.children[k - 1].total.unwrap_or_default();
                        k -= 1;
                    }
                    let name = func.as_deref().filter(|f| !f.is_empty() && *f != "null").unwrap_or("?");
                    let ts = top.children.get(k).map(|c| c.ts).unwrap_or(e.ts);
                    let mut n = CallNode::new(name, e.cpu, ts);
                    n.children = top.children.split_off(k);
                    n.close(Some(*d));
                    top.children.push(n);
                }
                None
            }
            _ => None,
        }
    }
}

/// The path from `root` down its most expensive callee at each level, as long as that callee holds at least
/// half of its caller's time: where the call's time actually went before it spreads out.
pub fn hot_path(root: &CallNode) -> Vec<&CallNode> {
    let mut path = vec![root];
    let mut n = root;
    while let Some(c) = n.children.iter().filter(|c| c.total.is_some()).max_by_key(|c| c.total) {
        if c.total.unwrap_or_default().0 * 2 < n.total.unwrap_or_default().0 {
            break;
        }
        path.push(c);
        n = c;
    }
    path
}

/// Calls and time per function over all trees.
#[derive(Clone, Debug, Serialize)]
pub struct FuncStat {
    /// Function.
    pub func: Text,
    /// Number of calls.
    pub calls: u64,
    /// Sum of total times.
    #[serde(rename = "total_ns")]
    pub total: Nanos,
    /// Sum of self times.
    #[serde(rename = "self_ns")]
    pub self_total: Nanos,
}

/// The function-graph part of an analysis.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FuncGraphReport {
    /// Number of root calls.
    pub roots: usize,
    /// The slowest calls whose time the trace measures (function, CPU, total), slowest first: root calls, and
    /// inside a root call still open at the end of the trace (a paste cut before its return), its calls that
    /// returned ([`measured_tops`]).
    pub slowest: Vec<CallNode>,
    /// Functions by self time, largest first.
    pub by_self_time: Vec<FuncStat>,
    /// Within one trace: the slowest instance of the most repeated root function (at least twice, with callees)
    /// against its median instance, when slower.
    pub diff: Option<TreeDiff>,
    /// [`hot_path`] of the slowest of those calls (untrimmed), as (function, total, self) steps.
    pub hot_path: Vec<HotStep>,
}

/// One step of a hot path.
#[derive(Clone, Debug, Serialize)]
pub struct HotStep {
    /// Function.
    pub func: Text,
    /// Its total time.
    #[serde(rename = "total_ns")]
    pub total: Option<Nanos>,
    /// Its self time.
    #[serde(rename = "self_ns")]
    pub self_time: Option<Nanos>,
}

/// Summarises `trees` (root calls, in the order [`call_trees`] gives them): slowest calls (trimmed to 3
/// levels), top functions by self time, and an in-file diff. The same as [`crate::funcgraph_stream`] gives
/// of the trace's events, one at a time.
pub fn report(trees: &[CallNode], top: usize) -> FuncGraphReport {
    let mut r = crate::funcgraph_stream::RootsReport::new(top);
    for (i, t) in trees.iter().enumerate() {
        r.add(t, (Nanos::ZERO, CpuId(0), i as u64), i);
    }
    let Some(pending) = r.finish() else { return FuncGraphReport::default() };
    let diff = pending.diff.map(|d| [d.normal, d.abnormal].map(|i| Root { node: trees[i].clone(), index: i }));
    pending.complete(diff.as_ref().map_or(&[], |d| &d[..]))
}

/// Adds `n` and its callees to the calls and time per function.
pub(crate) fn add_stats(n: &CallNode, stats: &mut FxHashMap<Text, FuncStat>) {
    let s = stats.entry(n.func.clone()).or_insert_with(|| FuncStat {
        func: n.func.clone(),
        calls: 0,
        total: Nanos::ZERO,
        self_total: Nanos::ZERO,
    });
    s.calls += 1;
    s.total = s.total + n.total.unwrap_or_default();
    s.self_total = s.self_total + n.self_time.unwrap_or_default();
    for c in &n.children {
        add_stats(c, stats);
    }
}

/// The calls of `n`'s tree whose time the trace measures, nearest the root: `n` itself when it returned, or
/// else (its return after the end of the trace) the same of each of its callees.
pub fn measured_tops<'a>(n: &'a CallNode, out: &mut Vec<&'a CallNode>) {
    if n.total.is_some() {
        out.push(n);
    } else {
        for c in &n.children {
            measured_tops(c, out);
        }
    }
}

/// `n` with its callees down to `levels` levels below it.
pub(crate) fn trim(n: &CallNode, levels: usize) -> CallNode {
    let mut c = n.clone();
    c.children = if levels == 0 { Vec::new() } else { n.children.iter().map(|x| trim(x, levels - 1)).collect() };
    c
}

/// How a subtree differs between the two trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffKind {
    /// Called only in the abnormal tree.
    Added,
    /// Called in both; its own (self) time grew.
    SelfGrew,
    /// Called only in the normal tree.
    Removed,
}

/// One subtree that accounts for part of the difference.
#[derive(Clone, Debug, Serialize)]
pub struct DiffEntry {
    /// Call path from the root to this function.
    pub path: Vec<Text>,
    /// How it differs.
    pub kind: DiffKind,
    /// Its time in the normal tree.
    #[serde(rename = "normal_ns")]
    pub normal: Option<Nanos>,
    /// Its time in the abnormal tree.
    #[serde(rename = "abnormal_ns")]
    pub abnormal: Option<Nanos>,
    /// Time it adds (negative when removed).
    #[serde(rename = "extra_ns")]
    pub extra: i64,
}

impl DiffEntry {
    /// The function this entry is about.
    pub fn func(&self) -> &str {
        self.path.last().map(|t| &**t).unwrap_or("")
    }
}

/// Two trees aligned.
#[derive(Clone, Debug, Serialize)]
pub struct TreeDiff {
    /// Root function.
    pub root: Text,
    /// Normal total.
    #[serde(rename = "normal_ns")]
    pub normal: Option<Nanos>,
    /// Abnormal total.
    #[serde(rename = "abnormal_ns")]
    pub abnormal: Option<Nanos>,
    /// `abnormal - normal`.
    #[serde(rename = "extra_ns")]
    pub extra: i64,
    /// The subtrees that account for the extra time, largest first.
    pub entries: Vec<DiffEntry>,
    /// Known culprit patterns recognised in the added subtrees.
    pub patterns: Vec<Pattern>,
}

fn total_ns(n: &CallNode) -> i64 {
    n.total.unwrap_or_default().0 as i64
}

/// Aligns `abnormal` against `normal` by call path (children matched by name and occurrence) and lists the
/// subtrees that account for the extra time: added calls, and calls whose own time grew.
pub fn diff(normal: &CallNode, abnormal: &CallNode) -> TreeDiff {
    let mut entries = Vec::new();
    let mut path = vec![abnormal.func.clone()];
    align(normal, abnormal, &mut path, &mut entries);
    let extra = total_ns(abnormal) - total_ns(normal);
    let floor = (extra.abs() / 50).max(100);
    entries.retain(|e| e.extra.abs() >= floor);
    entries.sort_by_key(|e| std::cmp::Reverse(e.extra));
    let rt_timer = entries.iter().any(|e| {
        let path: Vec<&str> = e.path.iter().map(|p| &**p).collect();
        e.extra > 0 && patterns::starts_rt_bandwidth_timer(e.func(), &path)
    });
    let patterns = if rt_timer { vec![Pattern::RtBandwidthTimer] } else { Vec::new() };
    TreeDiff { root: abnormal.func.clone(), normal: normal.total, abnormal: abnormal.total, extra, entries, patterns }
}

fn align(normal: &CallNode, abnormal: &CallNode, path: &mut Vec<Text>, out: &mut Vec<DiffEntry>) {
    let mut used = vec![false; normal.children.len()];
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for a in &abnormal.children {
        let k = seen.entry(&a.func).or_insert(0);
        let occurrence = *k;
        *k += 1;
        let m = normal.children.iter().enumerate().filter(|(_, n)| n.func == a.func).nth(occurrence).map(|(i, _)| i);
        path.push(a.func.clone());
        match m {
            Some(i) => {
                used[i] = true;
                align(&normal.children[i], a, path, out);
            }
            None => out.push(DiffEntry {
                path: path.clone(),
                kind: DiffKind::Added,
                normal: None,
                abnormal: a.total,
                extra: total_ns(a),
            }),
        }
        path.pop();
    }
    for (i, n) in normal.children.iter().enumerate().filter(|(i, _)| !used[*i]) {
        let _ = i;
        let mut p = path.clone();
        p.push(n.func.clone());
        out.push(DiffEntry { path: p, kind: DiffKind::Removed, normal: n.total, abnormal: None, extra: -total_ns(n) });
    }
    if let (Some(ns), Some(as_)) = (normal.self_time, abnormal.self_time) {
        let grew = as_.0 as i64 - ns.0 as i64;
        if grew > 0 {
            out.push(DiffEntry {
                path: path.clone(),
                kind: DiffKind::SelfGrew,
                normal: normal.total,
                abnormal: abnormal.total,
                extra: grew,
            });
        }
    }
}

/// The name of the root [`window_tree`] puts over the calls of a time window.
pub const WINDOW_ROOT: &str = "[window]";

/// What `cpu` ran between `from` and `to`, as one tree under a [`WINDOW_ROOT`] node: the calls of `trees`
/// that overlap the window, those that reach past its edges cut to the part inside it (their callees kept
/// the same way), so two windows compare with [`diff`] by what the CPU did in them. A call still open at the
/// end of the trace counts as running to its end; one open across the whole window with no call inside it is
/// left out (its task was switched out there).
pub fn window_tree(trees: &[CallNode], cpu: CpuId, from: Nanos, to: Nanos) -> CallNode {
    fn clip(n: &CallNode, from: Nanos, to: Nanos) -> Option<CallNode> {
        let end = n.total.map_or(Nanos(u64::MAX), |t| n.ts + t);
        if end <= from || n.ts >= to {
            return None;
        }
        if n.ts >= from && end <= to {
            return Some(n.clone());
        }
        let children: Vec<CallNode> = n.children.iter().filter_map(|k| clip(k, from, to)).collect();
        // Open across the whole window with nothing called in it: the task was not running there (switched out
        // inside `schedule()`; a running task takes at least the timer interrupt that ends the window).
        if n.ts < from && end > to && children.is_empty() {
            return None;
        }
        let mut c = CallNode::new(&n.func, n.cpu, n.ts.max(from));
        c.children = children;
        c.close(Some(end.min(to) - n.ts.max(from)));
        Some(c)
    }
    let mut root = CallNode::new(WINDOW_ROOT, cpu, from);
    root.children = trees.iter().filter(|t| t.cpu == cpu).filter_map(|t| clip(t, from, to)).collect();
    root.children.sort_by_key(|c| c.ts);
    root.close(Some(to.saturating_sub(from)));
    root
}

/// Picks the tree to compare from a trace given with `--diff`: the slowest root whose function also appears
/// in `other` (so both sides are the same kind of call), else the slowest root.
pub fn pick_root<'a>(trees: &'a [CallNode], other: &[CallNode]) -> Option<&'a CallNode> {
    let same = trees.iter().filter(|t| other.iter().any(|o| o.func == t.func)).max_by_key(|t| t.total);
    same.or_else(|| trees.iter().max_by_key(|t| t.total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ev, graph_entry as entry, graph_exit as exit, graph_leaf as leaf};

    #[test]
    fn trees_diff_and_missing_entry() {
        let normal: Vec<_> =
            [entry(0, "irq"), entry(1, "enqueue_task_rt"), leaf(2, "cpupri_set", 400), exit(1, 1000), exit(0, 2000)]
                .into_iter()
                .map(|k| ev(0, 1, "-", 0, k))
                .collect();
        // The abnormal tree has a call whose entry line was lost (the 1129 ns exit at a wrong depth).
        let abnormal: Vec<_> = [
            entry(0, "irq"),
            entry(1, "enqueue_task_rt"),
            leaf(2, "cpupri_set", 400),
            entry(2, "hrtimer_start_range_ns"),
            leaf(3, "lock", 2000),
            leaf(4, "preempt_count_add", 383),
            exit(3, 1129),
            exit(7, 7505),
            exit(1, 9000),
            exit(0, 10000),
        ]
        .into_iter()
        .map(|k| ev(0, 1, "-", 0, k))
        .collect();
        let n = call_trees(&normal);
        let a = call_trees(&abnormal);
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].self_time, Some(Nanos(1000)));
        let hs = &a[0].children[0].children[1];
        assert_eq!((&*hs.func, hs.total), ("hrtimer_start_range_ns", Some(Nanos(7505))));
        assert_eq!(hs.children.len(), 2, "lock and the `?` call wrapping preempt_count_add");
        assert_eq!(&*hs.children[1].func, "?");
        let d = diff(&n[0], &a[0]);
        assert_eq!(d.extra, 8000);
        let top = &d.entries[0];
        assert_eq!(top.func(), "hrtimer_start_range_ns");
        assert_eq!(top.kind, DiffKind::Added);
        assert_eq!(top.extra, 7505);
        assert_eq!(
            top.path.iter().map(|p| &**p).collect::<Vec<_>>(),
            ["irq", "enqueue_task_rt", "hrtimer_start_range_ns"]
        );
        assert_eq!(d.patterns, [Pattern::RtBandwidthTimer]);
        let hot: Vec<&str> = hot_path(&a[0]).iter().map(|n| &*n.func).collect();
        assert_eq!(hot, ["irq", "enqueue_task_rt", "hrtimer_start_range_ns"]);
        // Both in one trace: the slowest instance against the median.
        let mut both = normal.clone();
        both.extend(abnormal);
        let r = report(&call_trees(&both), 5);
        assert_eq!(r.roots, 2);
        assert_eq!(r.diff.as_ref().map(|d| d.extra), Some(8000));
    }
}
