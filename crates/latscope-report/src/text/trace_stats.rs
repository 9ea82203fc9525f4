//! The whole trace's statistics in the text reports (priority inheritance, lock contention, RT throttling,
//! interrupt time): the same sections in the whole-trace and the windowed analysis.

use crate::events::format_ts;
use crate::human::human;
use latscope_analyze::irq_stats::IrqStat;
use latscope_analyze::lock_contention::LockReport;
use latscope_analyze::pi_boost::PiReport;
use latscope_analyze::throttling::ThrottleSummary;
use std::io::{self, Write};

/// The priority-inheritance section: the tasks boosted, the longest boosted first.
pub fn write_pi(out: &mut dyn Write, pi: &PiReport) -> io::Result<()> {
    if pi.boosts.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "Priority inheritance: {}; each boost means a higher-priority task waited on a lock (an rt_mutex; on \
         PREEMPT_RT also every spinlock) that this task held",
        crate::human::counted(pi.events, "sched_pi_setprio event", "sched_pi_setprio events")
    )?;
    for b in pi.boosts.iter().take(10) {
        writeln!(
            out,
            "  {}:{} on CPU {} boosted {} from {} to {}, {} boosted in all (longest {})",
            b.task.comm,
            b.task.pid,
            b.cpu.0,
            crate::human::counted(b.count, "time", "times"),
            prio_words(b.task.prio.unwrap_or(120)),
            prio_words(b.top_prio),
            human(b.boosted),
            human(b.longest)
        )?;
    }
    writeln!(out)
}

/// The RT throttling section: the gaps' count, median and longest, then the longest gaps.
pub fn write_throttling(out: &mut dyn Write, t: Option<&ThrottleSummary>) -> io::Result<()> {
    let Some(t) = t else { return Ok(()) };
    writeln!(
        out,
        "RT throttling: {}, median {}, longest {}",
        crate::human::counted(t.count as u64, "gap", "gaps"),
        human(t.median),
        human(t.max)
    )?;
    for g in &t.gaps {
        writeln!(
            out,
            "  {}:{} off CPU {} for {} at {}",
            g.task.comm,
            g.task.pid,
            g.cpu.0,
            human(g.duration()),
            format_ts(g.start)
        )?;
    }
    writeln!(out)
}

/// The interrupt-time section: the sources with the most time, per CPU.
pub fn write_irq_stats(out: &mut dyn Write, stats: &[IrqStat]) -> io::Result<()> {
    if stats.is_empty() {
        return Ok(());
    }
    writeln!(out, "Interrupt time per source and CPU:")?;
    for s in stats.iter().take(12) {
        writeln!(
            out,
            "  {:<8} {:<24} CPU {:<3} n={:<7} total {:>10}  max {:>10}",
            s.kind,
            s.name,
            s.cpu.0,
            s.summary.count,
            human(s.total),
            human(latscope_model::Nanos(s.summary.max_ns))
        )?;
    }
    Ok(())
}

/// A kernel priority as users set it: `SCHED_FIFO 50` for prio 49, `normal (prio 120)` from 100 on.
fn prio_words(prio: i32) -> String {
    if (0..100).contains(&prio) {
        format!("SCHED_FIFO/RR {}", 99 - prio)
    } else {
        format!("normal (prio {prio})")
    }
}

/// The lock-contention section: the longest single waits, then the most waited-for locks.
pub fn write_locks(out: &mut dyn Write, r: &LockReport) -> io::Result<()> {
    use latscope_analyze::lock_contention::WaitContext;
    if r.longest.is_empty() {
        return Ok(());
    }
    let context = |c: WaitContext| match c {
        WaitContext::Task => "",
        WaitContext::Softirq => " in a softirq",
        WaitContext::Hardirq => " in a hard interrupt (its CPU ran nothing else meanwhile)",
        WaitContext::Nmi => " in an NMI",
    };
    writeln!(
        out,
        "Lock contention: {} on {}{}; the longest waits:",
        crate::human::counted(r.events, "contention event", "contention events"),
        crate::human::counted(r.locks.len() as u64, "lock", "locks"),
        if r.unmatched > 0 {
            format!(" ({} without their begin or end in the trace)", r.unmatched)
        } else {
            String::new()
        }
    )?;
    for w in r.longest.iter().take(5) {
        writeln!(
            out,
            "  {}:{} on CPU {} waited {} for {} {:#x}{}{} at {:.6} s",
            w.task.comm,
            w.task.pid,
            w.cpu.0,
            human(w.duration),
            lock_words(&w.kind),
            w.lock,
            context(w.context),
            if w.acquired { "" } else { ", and gave up" },
            w.start.0 as f64 / 1e9
        )?;
    }
    for l in r.locks.iter().take(5) {
        writeln!(
            out,
            "  {} {:#x}: {} waited, {} in all{}",
            lock_words(&l.kind),
            l.lock,
            crate::human::counted(l.waits, "time", "times"),
            human(l.total),
            if l.in_interrupt > 0 { format!(", {} of them in interrupts", l.in_interrupt) } else { String::new() }
        )?;
    }
    writeln!(out)
}

/// The kind of lock in words from the kernel's flags (`SPIN|WRITE` → "rwlock (write)").
fn lock_words(kind: &str) -> String {
    let has = |f: &str| kind.split('|').any(|k| k == f);
    let mode = if has("READ") {
        " (read)"
    } else if has("WRITE") {
        " (write)"
    } else {
        ""
    };
    let what = if has("RT") {
        "rt_mutex"
    } else if has("MUTEX") {
        "mutex"
    } else if has("PERCPU") {
        "per-CPU rw-semaphore"
    } else if has("SPIN") {
        if mode.is_empty() {
            "spinlock"
        } else {
            "rwlock"
        }
    } else if !mode.is_empty() {
        "rw-semaphore"
    } else {
        "lock"
    };
    format!("{what}{mode}")
}
