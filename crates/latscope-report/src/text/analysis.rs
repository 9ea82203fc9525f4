//! Text report of `latscope analyze`: the verdicts first, each with its remedy and the trace lines that prove
//! it, then the details (latency trace, wakeup breakdowns, irqs-off sections, hrtimers, function graph, IRQs).

use super::analysis_verdicts::{section_where, sentence};
use super::explain;
use super::trace_stats::{write_irq_stats, write_locks, write_pi, write_throttling};
use crate::events::{format_ts, write_text};
use crate::human::human;
use latscope_analyze::analysis::Analysis;
use latscope_analyze::flag_sections::Disabled;
use latscope_analyze::funcgraph::CallNode;
use latscope_analyze::timeline::IrqsOffSource;
use latscope_model::{CauseKind, Explanation};
use std::io::{self, Write};

/// The author's notes shown under the header; the JSON keeps them all.
const MAX_NOTES: usize = 8;

fn comp_line(out: &mut dyn Write, c: &Explanation) -> io::Result<()> {
    let who = match c.cause {
        CauseKind::ReturnToUser => "sys_exit".to_string(),
        CauseKind::Idle => "idle".to_string(),
        _ => explain::who(&c.culprit),
    };
    let cpu = c.cpu.map_or_else(String::new, |c| format!(" [CPU {c}]"));
    writeln!(out, "      {:<16} {:>12}  {who}{}{cpu}", c.cause.as_str(), human(c.magnitude), explain::times(c))
}

/// The verdicts, each with why, its remedy and its evidence lines, and the threshold's outcome.
pub fn write_verdicts(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    if a.verdicts.is_empty() {
        writeln!(out, "Verdict: nothing in this trace stands out (no latency-tracer maximum, no irqs-off section,")?;
        writeln!(out, "late timer, RT wakeup, throttling or function-graph difference to explain).")?;
    }
    for (i, v) in a.verdicts.iter().enumerate() {
        writeln!(out, "Verdict {}: {}", i + 1, sentence(a, v))?;
        if let Some(w) = explain::why(&v.explanation) {
            writeln!(out, "  Why: {w}.")?;
        }
        if let Some(r) = explain::remedy(&v.explanation) {
            writeln!(out, "  Remedy: {r}.")?;
        }
        if !v.evidence.is_empty() {
            writeln!(out, "  Evidence:")?;
            for e in &v.evidence {
                write!(out, "    ")?;
                write_text(&mut *out, &e.event)?;
            }
        }
        writeln!(out)?;
    }
    if let Some(t) = a.threshold {
        writeln!(
            out,
            "Threshold {}: {}",
            human(t),
            if a.exceeded { format!("exceeded (worst finding {})", human(a.worst())) } else { "not exceeded".into() }
        )?;
        writeln!(out)?;
    }
    Ok(())
}

/// Writes the analysis as text.
pub fn write_analysis(out: &mut dyn Write, a: &Analysis, details: bool) -> io::Result<()> {
    let s = &a.source;
    if let Some(r) = &a.rtla {
        writeln!(
            out,
            "latscope analyze: {} ({}), {}",
            s.name,
            s.format.as_deref().unwrap_or("rtla"),
            crate::human::counted(r.cpus.len() as u64, "CPU", "CPUs")
        )?;
        super::rtla::write_table(out, r)?;
    } else {
        writeln!(
            out,
            "latscope analyze: {} ({}{}), {}{} on {} over {}",
            s.name,
            s.format.as_deref().unwrap_or("unknown format"),
            s.tracer.as_deref().map(|t| format!(", tracer {t}")).unwrap_or_default(),
            crate::human::counted(s.events, "event", "events"),
            match s.stacks {
                0 => String::new(),
                1 => " and 1 kernel stack".into(),
                n => format!(" and {n} kernel stacks"),
            },
            crate::human::counted(s.cpus.len() as u64, "CPU", "CPUs"),
            human(s.span)
        )?;
    }
    if let Some(w) = &a.windowed {
        super::windowed::write_intro(out, a, w)?;
    }
    if s.cycles {
        writeln!(
            out,
            "  TIMES ARE CLOCK CYCLES, NOT NANOSECONDS: the trace clock counts cycles and the file does not say how \
             many per second; every ns, us and ms below is a number of cycles ({} cycles from first to last event).",
            s.span.0
        )?;
    }
    if !s.warnings.is_empty() {
        writeln!(
            out,
            "  {} (skipped lines or approximations); first: {}",
            crate::human::counted(s.warnings.len() as u64, "decoder warning", "decoder warnings"),
            s.warnings[0]
        )?;
    }
    if !s.notes.is_empty() {
        writeln!(out, "  The trace's author wrote after its lines (read, not decoded):")?;
        for n in s.notes.iter().take(MAX_NOTES) {
            writeln!(out, "    {n}")?;
        }
        if s.notes.len() > MAX_NOTES {
            writeln!(out, "    … and {} more", s.notes.len() - MAX_NOTES)?;
        }
    }
    writeln!(out)?;
    write_verdicts(out, a)?;
    if details {
        write_details(out, a)?;
    }
    match &a.windowed {
        Some(w) => super::windowed::write_windows(out, w, details),
        None => Ok(()),
    }
}

/// The details after the verdicts: latency trace, wakeup breakdowns, priority inheritance, locks, throttling,
/// sections, hrtimers, function graph, interrupt time.
pub fn write_details(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    if let Some(h) = &a.hwlat {
        super::hwlat::write_report(out, h)?;
        writeln!(out)?;
    }
    if let Some(r) = &a.osnoise {
        super::osnoise::write_report(out, r)?;
        writeln!(out)?;
    }
    if let Some(r) = &a.timerlat {
        super::timerlat::write_report(out, r)?;
        writeln!(out)?;
    }
    if let Some(r) = &a.latency_trace {
        writeln!(out, "Latency trace ({}): {}", r.tracer, human(r.latency))?;
        if let (Some(s), Some(e)) = (&r.started_at, &r.ended_at) {
            writeln!(out, "  started at {s}, ended at {e}")?;
        }
        if let Some(o) = &r.overflow {
            let which = if o.first_kept { "the first " } else { "" };
            writeln!(
                out,
                "  the tracer kept {which}{} of the section's {} entries (its buffer was full)",
                o.kept, o.recorded
            )?;
        }
        writeln!(out, "  where the time went (repeats collapsed):")?;
        for e in r.entries.iter().take(40) {
            let rep = if e.repeat > 1 { format!(" (x{})", e.repeat) } else { String::new() };
            writeln!(
                out,
                "    {:>12}{} {:>12}  {}{rep}",
                format!("+{}", human(e.ts)),
                e.printed_marker.unwrap_or(e.marker),
                human(e.delay),
                e.what
            )?;
            if let Some(x) = &e.elided {
                writeln!(out, "    {:>12}  {:>12}  [left out of the pasted trace: \"{x}\"]", "", "")?;
            }
        }
        if r.entries.len() > 40 {
            writeln!(out, "    … {} more", r.entries.len() - 40)?;
        }
        if !r.stack.is_empty() {
            writeln!(out, "  stack: {}", r.stack.iter().map(|f| &**f).collect::<Vec<_>>().join(" ← "))?;
        }
        writeln!(out)?;
    }
    for (i, w) in a.wakeups.iter().enumerate() {
        writeln!(
            out,
            "Wakeup #{}: {}:{} {} on CPU {}: {} (from {} at {} to {})",
            i + 1,
            w.task.comm,
            w.task.pid,
            match w.task.prio {
                Some(p) if latscope_model::is_rt_prio(p) => format!("SCHED_FIFO/RR {}", 99 - p),
                Some(p) => format!("kernel prio {p}"),
                None => "priority unknown".into(),
            },
            w.cpu.0,
            human(w.latency),
            start_point_name(w.start_point),
            format_ts(w.start),
            format_ts(w.end)
        )?;
        for c in &w.components {
            comp_line(out, c)?;
        }
        writeln!(out, "      {:<16} {:>12}", "sum", human(w.sum))?;
        writeln!(out, "      {:<16} {:>12}", "remainder", format!("{} ns", w.remainder))?;
        let held = w.components.iter().filter(|c| c.cause == CauseKind::TimerIrqDelay).flat_map(|c| &c.within);
        let held: Vec<&Explanation> = held.collect();
        if !held.is_empty() {
            writeln!(out, "    before the timer IRQ entered:")?;
            for c in held {
                comp_line(out, c)?;
            }
        }
        for part in w.components.iter().filter(|c| c.cause != CauseKind::TimerIrqDelay && !c.within.is_empty()) {
            writeln!(out, "    within {}:", explain::label(part))?;
            for c in &part.within {
                comp_line(out, c)?;
            }
        }
        writeln!(out)?;
    }
    write_pi(out, &a.pi)?;
    write_locks(out, &a.locks)?;
    write_throttling(out, a.throttling.as_ref())?;
    if !a.irqs_off.cpus.is_empty() {
        let kind = if a.irqs_off.from_preemptirq { "preemptirq events" } else { "flags column, sampled" };
        writeln!(out, "Irqs-off sections ({kind}):")?;
        for c in &a.irqs_off.cpus {
            writeln!(
                out,
                "  CPU {}: {} sections, p50 {}, p99 {}, max {}",
                c.cpu.0,
                c.summary.count,
                human(latscope_model::Nanos(c.summary.percentile("50").unwrap_or(0))),
                human(latscope_model::Nanos(c.summary.percentile("99").unwrap_or(0))),
                human(latscope_model::Nanos(c.summary.max_ns))
            )?;
            for f in c.longest.iter().take(3) {
                let s = &f.section;
                match (&s.source, section_where(&s.source)) {
                    (IrqsOffSource::Flags { sampled, end_task, from, to }, _) => writeln!(
                        out,
                        "    {:>12}  {}: {}",
                        human(s.duration()),
                        super::flag_sections::where_clause((s.comm, s.pid), *end_task, sampled.switches, from, to),
                        super::flag_sections::sampled_clause(Disabled::Irqs, s.duration(), sampled)
                    )?,
                    (_, Some((a, b, p))) => writeln!(
                        out,
                        "    {:>12}  {a} → {b} (parent {p}) in {}:{}",
                        human(s.duration()),
                        s.comm,
                        s.pid
                    )?,
                    (_, None) => writeln!(out, "    {:>12}  in {}:{}", human(s.duration()), s.comm, s.pid)?,
                }
            }
        }
        writeln!(out)?;
    }
    for c in &a.disabled.cpus {
        writeln!(
            out,
            "Sections with {} (flags column, sampled) on CPU {}: {}",
            match c.disabled {
                Disabled::BottomHalves => "bottom halves off",
                Disabled::Preemption => "preemption off",
                Disabled::Irqs => "irqs off",
            },
            c.cpu.0,
            c.count
        )?;
        for s in c.longest.iter().take(3) {
            writeln!(out, "    {:>12}  {}", human(s.duration()), super::flag_sections::section_line(s))?;
        }
        writeln!(out)?;
    }
    if a.hrtimers.with_lateness > 0 {
        let mut rearmed = match a.hrtimers.rearmed {
            0 => String::new(),
            1 => "; 1 more was passed by an earlier expiry run on its CPU, so re-armed or cancelled without an event: \
                  lateness not known"
                .to_string(),
            n => format!(
                "; {n} more were passed by an earlier expiry run on their CPU, so re-armed or cancelled without an \
                 event: lateness not known"
            ),
        };
        match a.hrtimers.idle_ticks {
            0 => {}
            1 => rearmed.push_str(
                "; 1 tick of an idle CPU ran a tick period or more after its traced expiry (NOHZ idle moves the tick \
                 without an event): lateness not known",
            ),
            n => rearmed.push_str(&format!(
                "; {n} ticks of idle CPUs ran a tick period or more after their traced expiry (NOHZ idle moves the \
                 tick without an event): lateness not known"
            )),
        }
        writeln!(out, "hrtimer lateness ({} expiries with a traced start{rearmed}):", a.hrtimers.with_lateness)?;
        for st in a.hrtimers.stats.iter().take(8) {
            writeln!(
                out,
                "  {:<28} CPU {:<3} n={:<6} p50 {:>10}  p99 {:>10}  max {:>10}",
                st.function,
                st.cpu.0,
                st.summary.count,
                human(latscope_model::Nanos(st.summary.percentile("50").unwrap_or(0))),
                human(latscope_model::Nanos(st.summary.percentile("99").unwrap_or(0))),
                human(latscope_model::Nanos(st.summary.max_ns))
            )?;
        }
        writeln!(out)?;
    }
    if let Some(d) = a.diff.as_ref().or(a.funcgraph.as_ref().and_then(|f| f.diff.as_ref())) {
        writeln!(
            out,
            "Function-graph diff of {}: normal {}, abnormal {}, extra {} ns",
            d.root,
            human(d.normal.unwrap_or_default()),
            human(d.abnormal.unwrap_or_default()),
            d.extra
        )?;
        for e in d.entries.iter().take(10) {
            let path: Vec<&str> = e.path.iter().map(|p| &**p).collect();
            writeln!(out, "  {:>+9} ns  {:<9?}  {}", e.extra, e.kind, path.join(" → "))?;
        }
        writeln!(out)?;
    }
    if let Some(f) = &a.funcgraph {
        writeln!(
            out,
            "Function graph: {}; slowest:",
            crate::human::counted(f.roots as u64, "root call", "root calls")
        )?;
        for r in f.slowest.iter().take(3) {
            write_tree(out, r, 1, 3)?;
        }
        writeln!(out)?;
    }
    write_irq_stats(out, &a.irq_stats)?;
    Ok(())
}

fn start_point_name(p: latscope_analyze::wakeup::StartPoint) -> &'static str {
    use latscope_analyze::wakeup::StartPoint;
    match p {
        StartPoint::TimerExpiry => "the timer's expiry",
        StartPoint::IrqEntry => "the waking IRQ's entry",
        StartPoint::Waking => "sched_waking",
        StartPoint::Sample => "the measured sample",
    }
}

fn write_tree(out: &mut dyn Write, n: &CallNode, depth: usize, max: usize) -> io::Result<()> {
    let total = n.total.map(human).unwrap_or_else(|| "?".into());
    let own = n.self_time.map(human).unwrap_or_else(|| "?".into());
    writeln!(out, "  {:>12} {:>12}  {}{}", total, own, "  ".repeat(depth), n.func)?;
    if depth < max {
        for c in &n.children {
            write_tree(out, c, depth + 1, max)?;
        }
    }
    Ok(())
}
