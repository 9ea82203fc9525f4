//! Latency-tracer traces (irqsoff, preemptoff, preemptirqsoff, wakeup, wakeup_rt): the latency, CPU, task,
//! start and end points, stack, where the time went between entries (repeats collapsed), the entry with the
//! big delay marker, and the known culprit pattern it shows.

use crate::patterns;
use crate::symbol;
use latscope_model::{CauseKind, CpuId, Event, EventKind, Nanos, Pattern, Text};
use latscope_model::{Elision, LatencyHeader};
use serde::Serialize;

/// One line of the trace (or a run of identical lines collapsed) and the time to the next one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyEntry {
    /// Offset from the start of the section.
    pub ts: Nanos,
    /// `func <-parent` for function entries, the event name and its main fields otherwise.
    pub what: String,
    /// The function, for function entries.
    pub func: Option<Text>,
    /// Its caller.
    pub parent: Option<Text>,
    /// Time until the next entry (summed over a collapsed run).
    #[serde(rename = "delay_ns")]
    pub delay: Nanos,
    /// The kernel's delay marker for that delay by today's thresholds (`$ @ * # ! +`, or space).
    pub marker: char,
    /// The marker the trace itself printed for this entry, when it printed one (it can differ from
    /// `marker`: older kernels had fewer markers).
    pub printed_marker: Option<char>,
    /// The elision mark (`8182 x the above two line`) when the pasted trace left out lines before the
    /// next entry: the delay is then time the excerpt does not show, not time without a trace entry.
    pub elided: Option<String>,
    /// How many consecutive identical entries (or entry pairs) this row stands for.
    pub repeat: u32,
    /// Index of the first event.
    pub index: usize,
}

/// The report of one latency-tracer trace.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyReport {
    /// Tracer name.
    pub tracer: String,
    /// The latency the header states (exactly).
    #[serde(rename = "latency_ns")]
    pub latency: Nanos,
    /// CPU.
    pub cpu: Option<CpuId>,
    /// Task name and pid.
    pub task: Option<(String, i32)>,
    /// `started at`.
    pub started_at: Option<Text>,
    /// `ended at`.
    pub ended_at: Option<Text>,
    /// Stack frames, innermost first.
    pub stack: Vec<Text>,
    /// The stack reduced to the frames worth naming (printk internals and thread entry frames dropped).
    pub chain: Vec<String>,
    /// Where the time went.
    pub entries: Vec<LatencyEntry>,
    /// The entry followed by the largest delay.
    pub big: Option<LatencyEntry>,
    /// The known culprit pattern the trace shows (console printing), when it shows one.
    pub pattern: Option<Pattern>,
    /// What the tracer timed: a wakeup (to the woken task's switch-in), or a section with preemption (or
    /// irqs) off. See [`timed`].
    pub cause: CauseKind,
    /// When the section had more entries than the tracer kept (its buffer was full): the entries kept and the
    /// entries recorded. The trace then does not show all of the section.
    pub overflow: Option<Overflow>,
    /// When the text holds only part of the entries the header counts (a pasted excerpt): what it covers
    /// and the work repeated in it. The largest gap between the entries shown then says little.
    pub excerpt: Option<Excerpt>,
}

/// A section with more entries than the tracer's buffer held.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Overflow {
    /// Entries kept.
    pub kept: u64,
    /// Entries the section had.
    pub recorded: u64,
    /// The tracer kept the first entries, so the section's end is missing (the 2004 tracer, v1.0.x: "only the
    /// first 4000 were recorded"); `false` when the trace does not say which ones it kept.
    pub first_kept: bool,
}

/// What a latency trace timed. The wakeup tracers, and the 2.6.8–2.6.12 `preemption` tracer when its
/// entries show it timing a wakeup (`trace_start_sched_wakeup`, or a section started in `try_to_wake_up`),
/// time a wakeup; otherwise the `preemption` tracer timed a section with preemption off (its preempt count
/// column shows the depth) and the irqs/preempt tracers what their name says.
pub fn timed(header: &LatencyHeader, events: &[Event]) -> CauseKind {
    let wakeup_start = |f: &str| symbol::bare(f).trim_start_matches('_') == "trace_start_sched_wakeup";
    match header.tracer.as_str() {
        "irqsoff" => CauseKind::IrqsOff,
        "preemptoff" => CauseKind::PreemptOff,
        "preemptirqsoff" => CauseKind::PreemptOrIrqsOff,
        "preemption"
            if !header.started_at.as_deref().is_some_and(|s| symbol::bare(s) == "try_to_wake_up")
                && !events
                    .iter()
                    .any(|e| matches!(&e.kind, EventKind::Function { func, .. } if wakeup_start(func))) =>
        {
            CauseKind::PreemptOff
        }
        _ => CauseKind::WakeupLatency,
    }
}

/// A latency-tracer report of which only a part was kept.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Excerpt {
    /// Entries in the text.
    pub shown: u64,
    /// Entries the header says the report had.
    pub recorded: u64,
    /// Offset of the first entry shown from the start of the section.
    pub from: Nanos,
    /// Offset of the last one.
    pub to: Nanos,
    /// Whether the section's first entry is among them.
    pub has_start: bool,
    /// Calls repeated in it, most first.
    pub repeated: Vec<RepeatedCall>,
}

/// A function called again and again by a caller the excerpt does not show entering (the loop it is in).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RepeatedCall {
    /// The function.
    pub func: Text,
    /// Its caller.
    pub parent: Text,
    /// How many times.
    pub count: u32,
    /// The median time between two calls (one turn of the loop).
    #[serde(rename = "every_ns")]
    pub every: Nanos,
    /// Calls made in softirq context (`s` in the flags).
    pub in_softirq: u32,
    /// Calls made in hard interrupt context.
    pub in_hardirq: u32,
    /// Index of the first call.
    pub index: usize,
}

/// The text holds less than half the entries the header counts.
fn is_excerpt(header: &LatencyHeader, rows: usize) -> Option<u64> {
    let (shown, _) = header.entries?;
    ((rows as u64) * 2 < shown).then_some(shown)
}

/// Lock, preemption-count and RCU primitives: called everywhere, never the work itself.
fn primitive(func: &str) -> bool {
    ["_raw_spin", "_raw_read", "_raw_write", "preempt_count", "__rcu_read", "rcu_read", "arch_counter", "ktime_get"]
        .iter()
        .any(|p| func.starts_with(p))
}

/// The calls an excerpt repeats: (function, caller) pairs whose caller is never entered in it, called at
/// least three times, primitives left out; most calls first.
fn repeated_calls(rows: &[(usize, &Event)]) -> Vec<RepeatedCall> {
    let entered: std::collections::HashSet<&str> = rows
        .iter()
        .filter_map(|(_, e)| match &e.kind {
            EventKind::Function { func, .. } => Some(symbol::bare(func)),
            _ => None,
        })
        .collect();
    // (function, caller, its calls)
    type Group<'e> = (Text, Text, Vec<(usize, &'e Event)>);
    let mut groups: Vec<Group<'_>> = Vec::new();
    for (i, e) in rows {
        let EventKind::Function { func, parent: Some(p) } = &e.kind else { continue };
        let (f, pb) = (symbol::bare(func), symbol::bare(p));
        if primitive(f) || entered.contains(pb) {
            continue;
        }
        match groups.iter_mut().find(|g| symbol::bare(&g.0) == f && symbol::bare(&g.1) == pb) {
            Some(g) => g.2.push((*i, e)),
            None => groups.push((Text::from(f), Text::from(pb), vec![(*i, e)])),
        }
    }
    let mut out: Vec<RepeatedCall> = groups
        .into_iter()
        .filter(|g| g.2.len() >= 3)
        .map(|(func, parent, calls)| {
            let mut gaps: Vec<u64> = calls.windows(2).map(|w| (w[1].1.ts - w[0].1.ts).0).collect();
            gaps.sort_unstable();
            RepeatedCall {
                func,
                parent,
                count: calls.len() as u32,
                every: Nanos(gaps.get(gaps.len() / 2).copied().unwrap_or(0)),
                in_softirq: calls.iter().filter(|(_, e)| e.flags.in_softirq()).count() as u32,
                in_hardirq: calls.iter().filter(|(_, e)| e.flags.in_hardirq()).count() as u32,
                index: calls[0].0,
            }
        })
        .collect();
    out.sort_by_key(|r| (std::cmp::Reverse(r.count), r.index));
    out
}

impl LatencyReport {
    /// Whether the tracer measures irqs-off time.
    pub fn irqs_off(&self) -> bool {
        self.tracer.contains("irqsoff")
    }
}

/// The kernel's delay marker for a delay (kernel/trace/trace_output.c thresholds, in µs).
pub fn delay_marker(d: Nanos) -> char {
    let us = d.0 / 1000;
    match us {
        u if u > 1_000_000 => '$',
        u if u > 100_000 => '@',
        u if u > 10_000 => '*',
        u if u > 1_000 => '#',
        u if u > 100 => '!',
        u if u > 10 => '+',
        _ => ' ',
    }
}

fn describe(e: &Event) -> (String, Option<Text>, Option<Text>) {
    match &e.kind {
        EventKind::Function { func, parent } => {
            let what = match parent {
                Some(p) => format!("{func} <-{p}"),
                None => func.to_string(),
            };
            (what, Some(func.clone()), parent.clone())
        }
        EventKind::SchedSwitch { prev_comm, prev_pid, next_comm, next_pid, .. } => {
            (format!("sched_switch {prev_comm}:{prev_pid} ==> {next_comm}:{next_pid}"), None, None)
        }
        EventKind::SchedWakeup { comm, pid, .. } => (format!("{} {comm}:{pid}", e.kind.name()), None, None),
        EventKind::GraphEntry { func, .. } => (format!("{func}() {{"), Some(func.clone()), None),
        EventKind::GraphLeaf { func, .. } => (format!("{func}();"), Some(func.clone()), None),
        EventKind::GraphExit { func, .. } => (format!("}} {}", func.as_deref().unwrap_or("")), None, None),
        k => (k.name(), None, None),
    }
}

/// Builds the report from the header, the trace's events and the places where a pasted trace left lines out.
pub fn latency_report(header: &LatencyHeader, events: &[Event], elisions: &[Elision]) -> LatencyReport {
    let rows: Vec<(usize, &Event)> =
        events.iter().enumerate().filter(|(_, e)| !matches!(e.kind, EventKind::Stack { .. })).collect();
    let mut raw: Vec<LatencyEntry> = Vec::with_capacity(rows.len());
    for (k, (i, e)) in rows.iter().enumerate() {
        let next = rows.get(k + 1).map(|(_, n)| n.ts).unwrap_or(e.ts);
        let (what, func, parent) = describe(e);
        let printed_marker = header.markers.iter().rev().find(|(t, _)| *t == e.ts).map(|(_, m)| *m);
        // The mark came right after this event (the events are in input order).
        let elided = elisions.iter().find(|x| x.after_events as usize == i + 1).map(|x| x.text.clone());
        raw.push(LatencyEntry {
            ts: e.ts,
            what,
            func,
            parent,
            delay: next - e.ts,
            marker: ' ',
            printed_marker,
            elided,
            repeat: 1,
            index: *i,
        });
    }
    let big = raw.iter().filter(|r| r.delay > Nanos::ZERO).max_by_key(|r| r.delay).cloned().map(|mut b| {
        b.marker = delay_marker(b.delay);
        b
    });
    let mut entries = collapse(raw);
    for e in &mut entries {
        e.marker = delay_marker(e.delay);
    }
    let mut stack: Vec<Text> = header.stack.clone();
    if stack.is_empty() {
        if let Some(EventKind::Stack { frames }) =
            events.iter().rev().map(|e| &e.kind).find(|k| matches!(k, EventKind::Stack { .. }))
        {
            stack = frames.to_vec();
        }
    }
    let frames: Vec<&str> = stack.iter().map(|f| &**f).collect();
    let chain = patterns::meaningful_chain(&frames);
    let mut names: Vec<&str> = Vec::new();
    names.extend(header.started_at.as_deref().map(symbol::bare));
    names.extend(header.ended_at.as_deref().map(symbol::bare));
    if let Some(b) = &big {
        names.extend(b.func.as_deref().map(symbol::bare));
        names.extend(b.parent.as_deref().map(symbol::bare));
    }
    let console = patterns::any_console(names.iter().copied())
        || (patterns::through_printk(&frames) && header.tracer.contains("irqsoff"));
    LatencyReport {
        tracer: header.tracer.clone(),
        latency: header.latency,
        cpu: header.cpu,
        task: header.task.as_ref().map(|t| (t.comm.clone(), t.pid)),
        started_at: header.started_at.clone(),
        ended_at: header.ended_at.clone(),
        stack,
        chain,
        entries,
        big,
        pattern: console.then_some(Pattern::ConsolePrint),
        cause: timed(header, events),
        overflow: header.entries.filter(|(kept, recorded)| recorded > kept).map(|(kept, recorded)| Overflow {
            kept,
            recorded,
            first_kept: header.version.as_deref().is_some_and(|v| v.starts_with("1.0")),
        }),
        excerpt: is_excerpt(header, rows.len()).map(|recorded| {
            let from = rows.first().map(|r| r.1.ts).unwrap_or_default();
            Excerpt {
                shown: rows.len() as u64,
                recorded,
                from,
                to: rows.last().map(|r| r.1.ts).unwrap_or_default(),
                has_start: from <= Nanos::from_us(2),
                repeated: repeated_calls(&rows),
            }
        }),
    }
}

/// Collapses runs of identical entries, then runs of identical entry pairs (A B A B …).
fn collapse(raw: Vec<LatencyEntry>) -> Vec<LatencyEntry> {
    let mut once: Vec<LatencyEntry> = Vec::with_capacity(raw.len());
    for r in raw {
        match once.last_mut() {
            Some(last) if last.what == r.what && last.elided.is_none() && r.elided.is_none() => {
                last.delay = last.delay + r.delay;
                last.repeat += 1;
            }
            _ => once.push(r),
        }
    }
    let mut out: Vec<LatencyEntry> = Vec::with_capacity(once.len());
    let mut i = 0;
    while i < once.len() {
        let pair = |k: usize| once.get(k).zip(once.get(k + 1)).map(|(a, b)| (&a.what, &b.what));
        let mut j = i + 2;
        while pair(i).is_some() && pair(j) == pair(i) {
            j += 2;
        }
        if j - i >= 4 {
            let reps = ((j - i) / 2) as u32;
            let mut a = once[i].clone();
            let mut b = once[i + 1].clone();
            a.delay = once[i..j].iter().step_by(2).fold(Nanos::ZERO, |s, e| s + e.delay);
            b.delay = once[i + 1..j].iter().step_by(2).fold(Nanos::ZERO, |s, e| s + e.delay);
            a.repeat = reps;
            b.repeat = reps;
            out.push(a);
            out.push(b);
            i = j;
        } else {
            out.push(once[i].clone());
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ev;

    fn f(ts: u64, func: &str, parent: &str) -> Event {
        ev(ts, 0, "a", 1, EventKind::Function { func: func.into(), parent: Some(parent.into()) })
    }

    #[test]
    fn big_delay_collapse_and_markers() {
        let events = vec![
            f(0, "a", "x"),
            f(1_000, "b", "x"),
            f(2_000, "a", "x"),
            f(3_000, "b", "x"),
            f(4_000, "a", "x"),
            f(5_000, "b", "x"),
            f(6_000, "console_unlock", "vprintk_emit"),
            f(2_006_000, "c", "x"),
            f(2_006_000, "c", "x"),
        ];
        let h = LatencyHeader { tracer: "irqsoff".into(), latency: Nanos(2_006_000), ..Default::default() };
        let r = latency_report(&h, &events, &[]);
        assert_eq!(r.latency, Nanos(2_006_000));
        let big = r.big.as_ref().expect("big");
        assert_eq!(big.what, "console_unlock <-vprintk_emit");
        assert_eq!(big.marker, '#');
        assert_eq!(r.entries.len(), 4, "{:?}", r.entries);
        assert_eq!((r.entries[0].repeat, r.entries[0].delay), (3, Nanos(3_000)));
        assert_eq!(r.entries[3].repeat, 2);
        assert_eq!(r.pattern, Some(Pattern::ConsolePrint));
        assert_eq!(delay_marker(Nanos::from_us(12_116)), '*');
        assert_eq!(delay_marker(Nanos::from_us(5)), ' ');
    }
}
