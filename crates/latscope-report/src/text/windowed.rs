//! Text report of `latscope analyze` on a trace analysed in windows: why, what the streamed pass found in the
//! whole trace, the worst wakeups with what explains each, then each window's own analysis.

use super::analysis::{write_analysis, write_verdicts};
use super::trace_stats::{write_irq_stats, write_locks, write_pi, write_throttling};
use crate::events::format_ts;
use crate::human::{counted, human};
use latscope_analyze::windowed::{WindowReason, WindowedAnalysis};
use std::io::{self, Write};

/// Writes the windowed analysis as text; `details` as for the whole-trace analysis, per window.
pub fn write_windowed(out: &mut dyn Write, w: &WindowedAnalysis, details: bool) -> io::Result<()> {
    let s = &w.source;
    writeln!(
        out,
        "latscope analyze: {} ({}), {}{} on {} over {}, analysed in {}",
        s.name,
        s.format.as_deref().unwrap_or("unknown format"),
        counted(s.events, "event", "events"),
        match s.stacks {
            0 => String::new(),
            n => format!(" and {}", counted(n, "kernel stack", "kernel stacks")),
        },
        counted(s.cpus.len() as u64, "CPU", "CPUs"),
        human(s.span),
        counted(w.windows.len() as u64, "window", "windows"),
    )?;
    writeln!(out, "  Not analysed whole: {}.", w.reason)?;
    writeln!(
        out,
        "  A first streamed pass measured every wakeup of the selected tasks, section with interrupts, bottom halves or \
         preemption disabled and hrtimer expiry, and kept the worst; the second held the events around them, one \
         window at a time ({} before, {} after). The whole trace's interrupt time, RT throttling, tick storms, \
         priority inheritance and lock contention are the first pass's; the counts and histograms of sections and \
         timers are not computed.",
        human(latscope_analyze::windowed::LEAD),
        human(latscope_analyze::windowed::TAIL),
    )?;
    let lost: u64 = s.lost.values().sum();
    if lost > 0 || !s.lost_unknown.is_empty() {
        writeln!(out, "  The trace lost {}: conclusions may be incomplete.", counted(lost, "event", "events"))?;
    }
    let ws = &w.wakeups;
    if ws.count > 0 {
        writeln!(
            out,
            "  Wakeups in the whole trace (waking to switch-in): {}, median {}, 99% {}, max {}",
            ws.count,
            human(latscope_model::Nanos(ws.percentile("50").unwrap_or_default())),
            human(latscope_model::Nanos(ws.percentile("99").unwrap_or_default())),
            human(latscope_model::Nanos(ws.max_ns)),
        )?;
    } else {
        writeln!(out, "  No wakeup of the selected tasks in the whole trace.")?;
    }
    for r in &w.reported {
        writeln!(
            out,
            "  The trace states a latency of {} at {} ({}:{}, event #{})",
            human(r.latency),
            format_ts(r.ts),
            r.comm,
            r.pid,
            r.index
        )?;
    }
    writeln!(out)?;
    write_verdicts(out, &w.as_analysis())?;
    if !w.worst.is_empty() {
        writeln!(out, "Worst wakeups")?;
        for b in &w.worst {
            writeln!(
                out,
                "  {:>10}  {}:{} on CPU {}, switched in at {}",
                human(b.latency),
                b.task.comm,
                b.task.pid,
                b.cpu,
                format_ts(b.switch_in)
            )?;
            if let Some(h) = b.headline.as_ref().filter(|h| !h.sentence.is_empty()) {
                writeln!(out, "              {}", h.sentence)?;
            }
        }
    }
    if !w.irqs_off.is_empty() {
        writeln!(out, "\nLongest irqs-off sections")?;
        for f in &w.irqs_off {
            let s = &f.section;
            writeln!(
                out,
                "  {:>10}  CPU {} in {}:{} at {}{}",
                human(s.duration()),
                s.cpu,
                s.comm,
                s.pid,
                format_ts(s.start),
                f.delayed.as_ref().map(|d| format!(", delayed {}", d.name)).unwrap_or_default()
            )?;
        }
    }
    if !w.disabled.is_empty() {
        writeln!(out, "\nLongest sections with bottom halves or preemption disabled (flags column)")?;
        for s in &w.disabled {
            let what = match s.disabled {
                latscope_analyze::flag_sections::Disabled::Irqs => "irqs off",
                latscope_analyze::flag_sections::Disabled::BottomHalves => "bottom halves off",
                latscope_analyze::flag_sections::Disabled::Preemption => "preemption off",
            };
            // Dense sections come first, as in the whole-trace report: the sparse ones are said as what they are.
            let sampled = match s.dense() {
                true => String::new(),
                false => format!(
                    " (sparse: {} showing it, up to {} apart)",
                    counted(u64::from(s.sampled.events), "event", "events"),
                    human(s.sampled.max_gap)
                ),
            };
            writeln!(
                out,
                "  {:>10}  {what}, CPU {} in {}:{} at {}{sampled}",
                human(s.end - s.start),
                s.cpu,
                s.comm,
                s.pid,
                format_ts(s.start)
            )?;
        }
    }
    if !w.late_timers.is_empty() {
        writeln!(out, "\nLatest hrtimer expiries")?;
        for l in &w.late_timers {
            let x = &l.expiry;
            writeln!(
                out,
                "  {:>10}  {} on CPU {} at {}",
                human(x.lateness.unwrap_or_default()),
                x.function,
                x.cpu,
                format_ts(x.ts)
            )?;
        }
    }
    writeln!(out)?;
    for s in &w.tick_storms {
        writeln!(
            out,
            "Tick storm on CPU {}: {} expired {} in {}, every {} (about {} per second), at {}",
            s.cpu.0,
            s.function,
            counted(u64::from(s.expiries), "time", "times"),
            human(s.end - s.start),
            human(s.median_interval),
            s.rate_hz(),
            format_ts(s.start)
        )?;
    }
    write_pi(out, &w.pi)?;
    write_locks(out, &w.locks)?;
    write_throttling(out, w.throttling.as_ref())?;
    write_irq_stats(out, &w.irq_stats)?;
    for (n, win) in w.windows.iter().enumerate() {
        let wakeups: Vec<&latscope_analyze::scan::WakeupCandidate> = win
            .plan
            .reasons
            .iter()
            .filter_map(|r| match r {
                WindowReason::Wakeup(c) => Some(c),
                _ => None,
            })
            .collect();
        let mut around = Vec::new();
        if let Some(c) = wakeups.iter().max_by_key(|c| c.latency()) {
            let more = match wakeups.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            };
            around.push(format!("the wakeup of {}:{} ({}){more}", c.comm, c.pid, human(c.latency())));
        }
        let sections = win.plan.reasons.iter().filter(|r| matches!(r, WindowReason::Section(_))).count();
        if sections > 0 {
            around.push(counted(sections as u64, "long section", "long sections"));
        }
        let timers = win.plan.reasons.iter().filter(|r| matches!(r, WindowReason::LateTimer(_))).count();
        if timers > 0 {
            around.push(counted(timers as u64, "late timer", "late timers"));
        }
        for r in &win.plan.reasons {
            if let WindowReason::Throttled { comm, pid, start, end, .. } = r {
                around.push(format!("{comm}:{pid} throttled for {}", human(*end - *start)));
            }
        }
        for r in &win.plan.reasons {
            if let WindowReason::Reported(r) = r {
                around.push(format!("the {} the trace states ({}:{})", human(r.latency), r.comm, r.pid));
            }
        }
        writeln!(
            out,
            "\n=== Window {} of {}: {} to {}, {} from event #{}{}{}; around {}",
            n + 1,
            w.windows.len(),
            format_ts(win.plan.from),
            format_ts(win.plan.to),
            counted(win.records, "record", "records"),
            win.first_index,
            match win.carried.len() {
                0 => String::new(),
                n => format!(" (and {} from before it)", counted(n as u64, "timer start", "timer starts")),
            },
            if win.cut { " (cut: only its last records were kept)" } else { "" },
            around.join(" and ")
        )?;
        write_analysis(out, &win.analysis, details)?;
    }
    Ok(())
}
