//! The parts of `latscope analyze`'s text that only a trace analysed in windows has: why and how, after the
//! header, and each window's own analysis, after the whole trace's verdicts and details.

use super::analysis::write_analysis;
use crate::events::format_ts;
use crate::human::{counted, human};
use latscope_analyze::analysis::Analysis;
use latscope_analyze::windowed::{WindowReason, Windowed};
use std::io::{self, Write};

/// Writes what a whole-trace text has not for a trace analysed in windows, after its header: why, how, and
/// the whole trace's wakeup statistics.
pub fn write_intro(out: &mut dyn Write, a: &Analysis, w: &Windowed) -> io::Result<()> {
    writeln!(out, "  Analysed in {}: not whole, {}.", counted(w.windows.len() as u64, "window", "windows"), w.reason)?;
    writeln!(
        out,
        "  A first streamed pass measured every wakeup of the selected tasks, section with interrupts, bottom halves or \
         preemption disabled and hrtimer expiry, kept the worst and took the whole trace's statistics; the second \
         paired every hrtimer expiry and held the events around the worst, one window at a time ({} before, {} \
         after). The verdicts and details below are the whole trace's, drawn from the windows as from a whole \
         trace, the function-graph report's from every call as it returned.",
        human(latscope_analyze::windowed::LEAD),
        human(latscope_analyze::windowed::TAIL),
    )?;
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
    for r in &a.reported {
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
    Ok(())
}

/// Writes each window's own analysis; `details` as for the whole-trace analysis.
pub fn write_windows(out: &mut dyn Write, w: &Windowed, details: bool) -> io::Result<()> {
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
