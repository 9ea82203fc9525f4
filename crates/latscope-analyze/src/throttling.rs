//! RT throttling seen in a trace: stretches in which a runnable real-time task was kept off its CPU while
//! only non-RT work (or idle) ran, and their summary over the whole trace (count, median, longest, period).

use crate::hrtimer::activity_components;
use crate::timeline::Timeline;
use latscope_model::{is_rt_prio, CpuId, Event, EventKind, Explanation, Nanos, TaskRef};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// A stretch in which a runnable RT task was kept off the CPU while only non-RT work (or idle) ran.
#[derive(Clone, Debug, Serialize)]
pub struct ThrottleGap {
    /// The RT task.
    pub task: TaskRef,
    /// CPU.
    pub cpu: CpuId,
    /// Switched out (runnable).
    pub start: Nanos,
    /// Switched back in.
    pub end: Nanos,
    /// What ran instead, longest first.
    pub ran_instead: Vec<Explanation>,
    /// Index of the switch-out and switch-in events.
    pub evidence: Vec<usize>,
}

impl ThrottleGap {
    /// `end - start`.
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }
}

/// Gaps shorter than this are ordinary preemption, not throttling.
pub const MIN_THROTTLE_GAP: Nanos = Nanos::from_ms(1);

/// RT throttling over the whole trace.
#[derive(Clone, Debug, Serialize)]
pub struct ThrottleSummary {
    /// Number of gaps.
    pub count: usize,
    /// Median gap.
    #[serde(rename = "median_ns")]
    pub median: Nanos,
    /// Longest gap.
    #[serde(rename = "max_ns")]
    pub max: Nanos,
    /// Sum of the gaps.
    #[serde(rename = "total_ns")]
    pub total: Nanos,
    /// Time from the first gap's start to the last gap's end (over which `total` was taken away).
    #[serde(rename = "over_ns")]
    pub over: Nanos,
    /// Median time from one gap's start to the next (the RT period when throttling every period).
    #[serde(rename = "interval_ns")]
    pub interval: Option<Nanos>,
    /// The longest gaps.
    pub gaps: Vec<ThrottleGap>,
}

/// RT throttling gaps: on a CPU where a real-time task was preempted while runnable (`R`), a normal task or
/// idle is switched in and no real-time task runs again for at least [`MIN_THROTTLE_GAP`]. The gap is
/// attributed to the task that waited longest.
pub fn throttle_gaps(events: &[Event], timeline: &Timeline) -> Vec<ThrottleGap> {
    let mut finder = ThrottleGaps::default();
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        out.extend(finder.step(i, e));
    }
    for g in &mut out {
        let segs = timeline.cpu(g.cpu).map(|t| t.segments_in(g.start, g.end)).unwrap_or_default();
        g.ran_instead = activity_components(&segs, g.cpu, Some(g.task.pid));
        g.ran_instead.sort_by_key(|c| std::cmp::Reverse(c.magnitude));
    }
    out
}

/// [`throttle_gaps`] one event at a time, without what ran instead (that needs the CPU's timeline): the
/// state is the RT tasks waiting per CPU.
#[derive(Default)]
pub struct ThrottleGaps {
    /// Per CPU: RT tasks preempted while runnable, in order, with the index of their switch-out.
    waiting: FxHashMap<CpuId, Vec<(usize, TaskRef)>>,
    /// Per CPU: the open gap's first event (index and time).
    open: FxHashMap<CpuId, (usize, Nanos)>,
}

impl ThrottleGaps {
    /// The trace's event `i`: the gap it ends, if any.
    pub fn step(&mut self, i: usize, e: &Event) -> Option<ThrottleGap> {
        // Only a switch changes anything while no RT task waits (most events of most traces).
        if self.open.is_empty()
            && self.waiting.values().all(Vec::is_empty)
            && !matches!(e.kind, EventKind::SchedSwitch { .. })
        {
            return None;
        }
        let (waiting, open) = (&mut self.waiting, &mut self.open);
        // A waiting RT task that is current again resumed even if its switch-in is not in the trace.
        let resumed = waiting.get(&e.cpu).is_some_and(|w| w.iter().any(|(_, t)| t.pid == e.pid));
        let switch = match &e.kind {
            EventKind::SchedSwitch { prev_comm, prev_pid, prev_prio, prev_state, next_pid, next_prio, .. } => {
                Some((prev_comm, prev_pid, prev_prio, prev_state, *next_pid, *next_prio))
            }
            _ => None,
        };
        if switch.is_none() && !resumed {
            return None;
        }
        let (next_pid, next_prio) = match switch {
            Some((.., np, npr)) => (np, npr),
            None => (e.pid, 0),
        };
        let mut gap = None;
        if resumed || is_rt_prio(next_prio) {
            let next_pid = if resumed { e.pid } else { next_pid };
            if let Some((s, start)) = open.remove(&e.cpu) {
                let first = waiting.get(&e.cpu).and_then(|w| w.first()).cloned();
                if let (Some((from, task)), true) = (first, e.ts - start >= MIN_THROTTLE_GAP) {
                    let mut evidence = vec![from, s, i];
                    evidence.dedup();
                    gap = Some(ThrottleGap { task, cpu: e.cpu, start, end: e.ts, ran_instead: Vec::new(), evidence });
                }
            }
            for w in waiting.values_mut() {
                w.retain(|(_, t)| t.pid != next_pid);
            }
        }
        let Some((prev_comm, prev_pid, prev_prio, prev_state, _, next_prio)) = switch else { return gap };
        let w = waiting.entry(e.cpu).or_default();
        if is_rt_prio(*prev_prio) && prev_state.starts_with('R') && *prev_pid != 0 {
            w.push((i, TaskRef::new(*prev_comm, *prev_pid, Some(*prev_prio))));
        }
        if !is_rt_prio(next_prio) && !w.is_empty() {
            open.entry(e.cpu).or_insert((i, e.ts));
        }
        gap
    }
}

/// The summary of `gaps` with the `top` longest kept, when there are any.
pub fn summary(gaps: Vec<ThrottleGap>, top: usize) -> Option<ThrottleSummary> {
    let spans: Vec<(Nanos, Nanos)> = gaps.iter().map(|g| (g.start, g.end)).collect();
    summary_of(&spans, gaps, top)
}

/// The summary of the gaps whose start and end are `spans` (every gap of the trace), with the `top` longest of
/// `longest` (which holds at least those, in the order they ended) kept; when there are any.
pub fn summary_of(spans: &[(Nanos, Nanos)], mut longest: Vec<ThrottleGap>, top: usize) -> Option<ThrottleSummary> {
    if spans.is_empty() {
        return None;
    }
    let mut starts: Vec<Nanos> = spans.iter().map(|s| s.0).collect();
    starts.sort_unstable();
    let mut intervals: Vec<Nanos> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    intervals.sort_unstable();
    let mut durations: Vec<Nanos> = spans.iter().map(|(s, e)| *e - *s).collect();
    durations.sort_unstable();
    let count = spans.len();
    let total = durations.iter().fold(Nanos::ZERO, |a, d| a + *d);
    let first = starts[0];
    let last = spans.iter().map(|s| s.1).max().unwrap_or_default();
    longest.sort_by_key(|g| std::cmp::Reverse(g.duration()));
    longest.truncate(top);
    Some(ThrottleSummary {
        count,
        median: durations[(count - 1) / 2],
        max: durations[count - 1],
        total,
        over: last - first,
        interval: (!intervals.is_empty()).then(|| intervals[(intervals.len() - 1) / 2]),
        gaps: longest,
    })
}
