//! The verdicts of `latscope analyze` in words: one sentence per verdict, built from its explanation and
//! the part of the analysis it is about (the latency tracer's report, the irqs-off section, the late timer,
//! the wakeup, the throttling summary, the function-graph trees, the lost events).

use super::explain::{self, WakeupView};
use crate::human::human;
use latscope_analyze::analysis::Analysis;
use latscope_analyze::funcgraph::DiffKind;
use latscope_analyze::reported::ReportedBy;
use latscope_analyze::symbol;
use latscope_analyze::timeline::IrqsOffSource;
use latscope_analyze::verdict::{Compared, Verdict, VerdictKind};
use latscope_analyze::wakeup::WakeupBreakdown;
use latscope_model::{CauseKind, Explanation, Nanos};

/// `console_unlock+0xc0` → `console_unlock+0x39c` (parent `vprintk_emit`) of an irqs-off section from
/// preemptirq events: where it began, where it ended, and the parent.
pub fn section_where(source: &IrqsOffSource) -> Option<(String, String, String)> {
    match source {
        IrqsOffSource::Preemptirq { caller, parent, end_caller, .. } => Some((
            symbol::short(caller).to_string(),
            symbol::short(end_caller).to_string(),
            symbol::bare(parent).to_string(),
        )),
        IrqsOffSource::Flags { .. } => None,
    }
}

/// A decomposed wakeup as its sentence needs it.
pub fn wakeup_view(w: &WakeupBreakdown) -> WakeupView<'_> {
    WakeupView {
        task: Some(&w.task),
        tid: w.task.pid,
        latency: w.latency,
        cpu: w.cpu,
        timer: w.timer.as_deref(),
        callback_delay: w.callback_delay,
        other_timers: w.other_timers.iter().map(|t| &**t).collect(),
        not_asleep: false,
    }
}

/// The sentence of a decomposed wakeup (without its remedy).
pub fn wakeup_sentence(w: &WakeupBreakdown) -> String {
    explain::wakeup_sentence(&wakeup_view(w), w.headline.as_ref())
}

/// The name of a task, idle, or anything else that ran instead of a throttled task.
fn ran(e: &Explanation) -> String {
    match (&e.culprit.task, e.cause) {
        (Some(t), _) => t.comm.to_string(),
        (None, CauseKind::Idle) => "idle".into(),
        (None, _) => e.culprit.name.clone(),
    }
}

/// The sentence of one verdict of `a`.
pub fn sentence(a: &Analysis, v: &Verdict) -> String {
    let e = &v.explanation;
    match v.kind {
        VerdictKind::LatencyTrace => latency_trace(a, e),
        VerdictKind::IrqsOff => match &v.section {
            Some(s) => flag_section(s),
            None => irqs_off(a, e),
        },
        VerdictKind::Disabled => match &v.section {
            Some(s) => flag_section(s),
            None => explain::label(e),
        },
        VerdictKind::HrtimerLate => late_timer(a, e),
        VerdictKind::Wakeup => match a.wakeups.first() {
            Some(w) => wakeup_sentence(w),
            None => explain::label(e),
        },
        VerdictKind::RtThrottling => throttling(a, e),
        VerdictKind::FuncGraphDiff => diff(v),
        VerdictKind::FuncGraphSlowest => slowest(a, e),
        VerdictKind::Reported => reported(a, e),
        VerdictKind::Rtla => super::rtla::sentence(a.rtla.as_ref(), v.magnitude, e),
        VerdictKind::Hwlat => super::hwlat::verdict_sentence(a.hwlat.as_ref(), e),
        VerdictKind::Osnoise => super::osnoise::verdict_sentence(a.osnoise.as_ref(), e),
        VerdictKind::Timerlat => super::timerlat::verdict_sentence(a.timerlat.as_ref(), e),
        VerdictKind::TickStorm => match a.tick_storms.first() {
            Some(s) => format!(
                "Tick storm on CPU {}: {} expired {} in {}, every {} (about {} per second; a regular tick is at \
                 least 1 ms apart).",
                s.cpu.0,
                s.function,
                crate::human::counted(s.expiries as u64, "time", "times"),
                human(s.end - s.start),
                human(s.median_interval),
                s.rate_hz()
            ),
            None => explain::label(e),
        },
        VerdictKind::LostEvents => {
            let per: Vec<String> = a.source.lost.iter().map(|(c, n)| format!("CPU {}: {n}", c.0)).collect();
            let unknown = match (per.is_empty(), a.source.lost_unknown.is_empty()) {
                (_, true) => "",
                (true, false) => "an unknown number",
                (false, false) => ", and an unknown number elsewhere",
            };
            format!(
                "The ring buffer lost events ({}{unknown}): a cause may be missing from the conclusions above.",
                per.join(", ")
            )
        }
    }
}

/// The latency the trace states, and the wakeup that explains it when the trace has it.
fn reported(a: &Analysis, e: &Explanation) -> String {
    let Some(r) = a.anchor.and_then(|i| a.reported.get(i)) else { return explain::label(e) };
    let mut text = match &r.by {
        ReportedBy::TraceMark { threshold } => format!(
            "{}:{} marked the trace: latency {} over its threshold of {} (\"hit latency threshold\").",
            r.comm,
            r.pid,
            human(r.latency),
            human(*threshold)
        ),
        ReportedBy::SyntheticEvent { event, field, unit_assumed } => format!(
            "The trace's own {event} event reports {field}={}{} for pid {}.",
            human(r.latency),
            if *unit_assumed { " (in microseconds, as histogram triggers' common_timestamp.usecs count)" } else { "" },
            r.pid
        ),
    };
    match a.wakeups.first().filter(|_| a.anchored_wakeup) {
        Some(w) => {
            text.push_str(&format!(" Its wakeup in the trace: {}", wakeup_sentence(w)));
            if w.latency != r.latency {
                text.push_str(&format!(
                    " (The trace measures {} for it, the statement says {}.)",
                    human(w.latency),
                    human(r.latency)
                ));
            }
        }
        None => text.push_str(" The trace has no wakeup of that task before it to explain it."),
    }
    text
}

fn latency_trace(a: &Analysis, e: &Explanation) -> String {
    let Some(r) = &a.latency_trace else { return explain::label(e) };
    let what = match e.cause {
        CauseKind::IrqsOff => "with irqs off",
        CauseKind::PreemptOff => "with preemption off",
        CauseKind::PreemptOrIrqsOff => "with preemption or irqs off",
        _ => "of wakeup latency",
    };
    let us = r.latency.0 / 1000;
    let amount = if r.latency.0 % 1000 == 0 { format!("{us} us") } else { human(r.latency) };
    let mut s = format!("{amount} {what}");
    if let Some(c) = r.cpu {
        s.push_str(&format!(" on CPU {}", c.0));
    }
    if let Some(x) = &r.excerpt {
        let mut s = excerpt_sentence(s, r, x);
        s.push_str(&overflow_sentence(r));
        return s;
    }
    if let Some(b) = &r.big {
        if let Some(f) = &b.func {
            s.push_str(&format!(" in {}", symbol::bare(f)));
            if let Some(p) = &b.parent {
                s.push_str(&format!(" called from {}", symbol::bare(p)));
            }
        }
    } else if let Some(st) = &r.started_at {
        s.push_str(&format!(" from {st} to {}", r.ended_at.as_deref().unwrap_or("?")));
    }
    if !r.chain.is_empty() {
        let chain: Vec<&str> = r.chain.iter().take(5).map(String::as_str).collect();
        s.push_str(&format!(", reached from {}", chain.join(" ← ")));
    }
    if let Some((comm, pid)) = &r.task {
        s.push_str(&format!(" (task {comm}:{pid})"));
    }
    if let (Some(_), Some(st), Some(en)) = (&r.big, &r.started_at, &r.ended_at) {
        s.push_str(&format!("; the section started at {st} and ended at {en}"));
    }
    s.push('.');
    if let Some(b) = &r.big {
        let marker = match b.printed_marker {
            Some(p) if p != b.marker => format!("'{p}' in the trace ('{}' by today's kernel thresholds)", b.marker),
            Some(p) => format!("'{p}'"),
            None => format!("'{}'", b.marker),
        };
        let after = match &b.elided {
            Some(x) => format!("followed by {} that the pasted trace left out (\"{x}\")", human(b.delay)),
            None => format!("followed by {} without a trace entry", human(b.delay)),
        };
        s.push_str(&format!(" The entry with the big delay marker {marker} is `{}`, {after}.", b.what));
    }
    s.push_str(&overflow_sentence(r));
    s
}

/// ` The tracer kept only …` when the section had more entries than the tracer kept; empty otherwise.
fn overflow_sentence(r: &latscope_analyze::latency_report::LatencyReport) -> String {
    let Some(o) = &r.overflow else { return String::new() };
    let which = if o.first_kept { "the first " } else { "" };
    let missing = if o.first_kept {
        "the section's end is not in the trace"
    } else {
        "the trace does not show all of the section"
    };
    format!(
        " The tracer kept only {which}{} of the section's {} entries (its buffer was full): {missing}.",
        o.kept, o.recorded
    )
}

/// A latency report of which only a part was pasted: what the part covers and the work it repeats, not
/// its largest gap.
fn excerpt_sentence(
    mut s: String,
    r: &latscope_analyze::latency_report::LatencyReport,
    x: &latscope_analyze::latency_report::Excerpt,
) -> String {
    if let Some((comm, pid)) = &r.task {
        s.push_str(&format!(" (task {comm}:{pid})"));
    }
    s.push_str(&format!(
        ". The trace is an excerpt: {} of the {} entries the header counts, {} from +{} us to +{} us of the {}{}",
        x.shown,
        x.recorded,
        human(x.to - x.from),
        x.from.0 / 1000,
        x.to.0 / 1000,
        human(r.latency),
        if x.has_start { "" } else { ", without the section's start" }
    ));
    match x.repeated.first() {
        Some(c) => {
            let ctx = if c.in_softirq * 2 > c.count {
                " in softirq"
            } else if c.in_hardirq * 2 > c.count {
                " in a hard interrupt"
            } else {
                ""
            };
            s.push_str(&format!(
                "; the work it repeats: {} called {} {}{ctx}, every {}",
                c.parent,
                c.func,
                crate::human::counted(c.count as u64, "time", "times"),
                human(c.every)
            ));
            let more: Vec<String> =
                x.repeated.iter().skip(1).take(2).map(|o| format!("{} ×{}", o.func, o.count)).collect();
            if !more.is_empty() {
                s.push_str(&format!(" (also {})", more.join(", ")));
            }
            s.push('.');
        }
        None => {
            s.push_str("; no call repeats in it, and the gaps between the entries shown may hide the ones left out.")
        }
    }
    s
}

fn irqs_off(a: &Analysis, e: &Explanation) -> String {
    let Some(f) = a.irqs_off.longest() else { return explain::label(e) };
    let s = &f.section;
    let mut text = format!("irqs off {} on CPU {}", human(s.duration()), s.cpu.0);
    match section_where(&s.source) {
        Some((from, to, parent)) => text.push_str(&format!(" from {from} to {to} (parent {parent})")),
        None => text.push_str(" (from the flags column: a lower bound)"),
    }
    text.push_str(&format!(" in {}:{}", s.comm, s.pid));
    if let Some(d) = &f.delayed {
        let late = d.timers.iter().filter_map(|t| t.lateness).max();
        let printed = d.printed.iter().filter_map(|p| p.lateness).max();
        text.push_str(&format!("; the {} interrupt that ran right after it", d.name));
        match late.or(printed) {
            Some(l) => text.push_str(&format!(" delivered the hrtimer {} late", human(l))),
            None => text.push_str(&format!(" entered {} after the section ended", human(d.entry - s.end))),
        }
        if let Some(o) = d.printed.iter().filter_map(|p| p.overruns).max() {
            text.push_str(&format!(" (the traced code itself reported \"{o} overruns\")"));
        }
    }
    text.push('.');
    text
}

/// A section read from the flags column: what its events show, as finely as they show it.
fn flag_section(s: &latscope_analyze::flag_sections::FlagSection) -> String {
    let mut text = super::flag_sections::section_line(s);
    if let Some(first) = text.get(..1) {
        text = first.to_uppercase() + &text[1..];
    }
    text.push('.');
    if !s.dense() {
        text.push_str(&format!(
            " These events are too far apart to show that the state held between them (a gap of {} in {}): \
             not a measured section. To measure it, trace with the preemptirq events or run the irqsoff or \
             preemptoff tracer.",
            human(s.sampled.max_gap),
            human(s.duration())
        ));
    }
    text
}

fn late_timer(a: &Analysis, e: &Explanation) -> String {
    let Some(l) = a.hrtimers.late.first() else { return explain::label(e) };
    let mut text = format!(
        "hrtimer {} on CPU {} expired {} late",
        l.expiry.function,
        l.expiry.cpu.0,
        human(l.expiry.lateness.unwrap_or_default())
    );
    if let Some(t) = &l.thread {
        // PREEMPT_RT's ktimers/N (or ksoftirqd/N): the timer waited for its thread, not for an interrupt.
        let expires = l.expiry.expires_at.unwrap_or(t.woken);
        let woken = if t.woken >= expires {
            let (late, wait) = (human(t.woken - expires), human(t.switched_in - t.woken));
            format!("which was woken {late} after the expiry and then waited {wait}")
        } else {
            // Already runnable (woken for other work) when the timer expired: its wait from the expiry on.
            format!(
                "which was already waiting to run (woken {} before the expiry) and waited {} more",
                human(expires - t.woken),
                human(t.switched_in.saturating_sub(expires))
            )
        };
        text.push_str(&format!(
            "; it expires in the kernel thread {}, {woken} for CPU {} behind higher-priority work",
            explain::task(&t.task),
            l.expiry.cpu.0
        ));
        text.push_str(&explain::held_back(&l.before));
        return text;
    }
    if l.before.is_empty() {
        text.push('.');
    } else {
        text.push_str(&format!("; before the {} entered", l.irq_name.as_deref().unwrap_or("interrupt")));
        text.push_str(&explain::held_back(&l.before));
    }
    text
}

fn throttling(a: &Analysis, e: &Explanation) -> String {
    let Some(t) = &a.throttling else { return explain::label(e) };
    let Some(g) = t.gaps.first() else { return explain::label(e) };
    let every = t.interval.map(|i| format!(" about every {}", human(i))).unwrap_or_default();
    let instead = g.ran_instead.first().map(|c| format!("; {} ran instead", ran(c))).unwrap_or_default();
    let share = if t.over.0 > 0 { t.total.0 as f64 * 100.0 / t.over.0 as f64 } else { 0.0 };
    // Say "no other real-time task ran" only when the gaps show none.
    let mut rt: Vec<String> = Vec::new();
    for c in t.gaps.iter().flat_map(|g| &g.ran_instead) {
        if let Some(task) = c.culprit.task.as_ref().filter(|t| t.is_rt()) {
            let name = format!("{}:{}", task.comm, task.pid);
            if !rt.contains(&name) {
                rt.push(name);
            }
        }
    }
    let others = if rt.is_empty() {
        "and no other real-time task ran there".to_string()
    } else {
        format!(
            "but real-time {} {} ran in the gaps too, so part of them may be its preemption rather than throttling",
            if rt.len() == 1 { "task" } else { "tasks" },
            rt.join(", ")
        )
    };
    format!(
        "RT throttling: {}:{} (SCHED_FIFO/RR prio {}) was kept off CPU {} {}{every}, {} in total ({share:.1}% \
         of the {} they spread over; median gap {}, longest {}), although it was runnable {others}{instead}: the \
         kernel's RT bandwidth limit (kernel.sched_rt_runtime_us of kernel.sched_rt_period_us, 5% for normal tasks \
         by default) throttled it.",
        g.task.comm,
        g.task.pid,
        g.task.prio.map_or_else(|| "?".to_string(), |p| (99 - p).to_string()),
        g.cpu.0,
        crate::human::counted(t.count as u64, "time", "times"),
        human(t.total),
        human(t.over),
        human(t.median),
        human(t.max)
    )
}

fn diff(v: &Verdict) -> String {
    let Some(dv) = &v.diff else { return explain::label(&v.explanation) };
    let d = &dv.diff;
    let label = match &dv.compared {
        Compared::Traces { normal, abnormal } => format!("{normal} vs {abnormal}"),
        Compared::SlowestAndMedian => "slowest vs median call in this trace".into(),
    };
    let Some(top) = d.entries.iter().find(|e| e.extra > 0) else { return explain::label(&v.explanation) };
    let mut text = format!(
        "{} took {} more in the abnormal call ({} vs {}, {label}); {} of it in {}",
        d.root,
        human(Nanos(d.extra.max(0) as u64)),
        human(d.abnormal.unwrap_or_default()),
        human(d.normal.unwrap_or_default()),
        human(Nanos(top.extra as u64)),
        top.func()
    );
    if top.kind == DiffKind::SelfGrew {
        text.push_str(" itself");
    } else {
        text.push_str(" (called only in the abnormal case)");
    }
    let ancestors: Vec<&str> = top.path.iter().rev().skip(1).take(4).map(|p| &**p).collect();
    if !ancestors.is_empty() {
        text.push_str(&format!(" under {}", ancestors.join(" ← ")));
    }
    text.push('.');
    text
}

fn slowest(a: &Analysis, e: &Explanation) -> String {
    let Some(f) = &a.funcgraph else { return explain::label(e) };
    let Some(root) = f.slowest.first() else { return explain::label(e) };
    let names: Vec<&str> = f.hot_path.iter().map(|n| &*n.func).collect();
    let (last_self, last_func) =
        f.hot_path.last().map(|n| (n.self_time, n.func.clone())).unwrap_or((root.self_time, root.func.clone()));
    format!(
        "The slowest call, {} on CPU {}, took {}; its time went down {} ({} in {} itself).",
        root.func,
        root.cpu.0,
        human(root.total.unwrap_or_default()),
        names.join(" → "),
        human(last_self.unwrap_or_default()),
        last_func
    )
}
