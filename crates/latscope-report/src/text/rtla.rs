//! rtla timerlat output in `latscope analyze` text: what the table says per CPU, and the sentence of an
//! auto-analysis verdict (the latency, its largest part with the culprit, the other parts).

use super::explain;
use crate::human::human;
use latscope_model::{CauseKind, Explanation, Nanos, RtlaOutput, RtlaStats};
use std::io::{self, Write};

fn stats(s: &Option<RtlaStats>) -> String {
    match s {
        Some(RtlaStats { count, max: Some(max), avg, .. }) => {
            format!("max {} avg {} ({count} samples)", human(*max), avg.map_or_else(|| "?".to_string(), human))
        }
        Some(RtlaStats { count, .. }) => format!("no samples ({count})"),
        None => "-".into(),
    }
}

/// The per-CPU lines of the table.
pub fn write_table(out: &mut dyn Write, r: &RtlaOutput) -> io::Result<()> {
    if r.cpus.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "rtla's table{} (whole microseconds, as rtla prints them):",
        r.duration.as_deref().map(|d| format!(", run {d}")).unwrap_or_default()
    )?;
    for c in &r.cpus {
        write!(out, "  CPU {:>3}: IRQ {}; thread {}", c.cpu.0, stats(&c.irq), stats(&c.thread))?;
        if c.user.is_some() {
            write!(out, "; user {}", stats(&c.user))?;
        }
        writeln!(out)?;
    }
    if let Some((ns, cpu)) = r.idle_irq_max {
        writeln!(out, "  Max timer IRQ latency from idle: {} on CPU {}", human(ns), cpu.0)?;
    }
    writeln!(out)
}

fn share(e: &Explanation) -> String {
    e.share.map_or_else(String::new, |s| format!(" ({s:.2} %)"))
}

fn part(e: &Explanation) -> String {
    let what = match e.cause {
        CauseKind::TimerIrqDelay => "the timer IRQ started late".to_string(),
        CauseKind::IrqHandler => "the timerlat IRQ handler ran".to_string(),
        CauseKind::BlockingTask => match &e.culprit.task {
            Some(t) => format!("{}:{} kept the CPU", t.comm, t.pid),
            None => "other threads ran".to_string(),
        },
        _ => explain::label(e),
    };
    let mut s = format!("{what} {}{}", human(e.magnitude), share(e));
    let inner: Vec<String> = e
        .within
        .iter()
        .filter(|w| !matches!(w.cause, CauseKind::Idle | CauseKind::KernelCode))
        .map(|w| format!("{} {}", explain::who(&w.culprit), human(w.magnitude)))
        .collect();
    let named_once = inner.len() == 1 && (e.culprit.task.is_some() || !e.culprit.name.is_empty());
    if !inner.is_empty() && !named_once && e.cause != CauseKind::TimerIrqDelay {
        s.push_str(&format!(": {}", inner.join(", ")));
    }
    s
}

/// The sentence of an rtla verdict on a latency of `total` explained by `e`.
pub fn sentence(r: Option<&RtlaOutput>, total: Nanos, e: &Explanation) -> String {
    let cpu = e.cpu.map_or_else(|| "a CPU".to_string(), |c| format!("CPU {}", c.0));
    // What held the timer interrupt back, when rtla's stack shows it.
    let held = e.within.iter().find(|w| matches!(w.cause, CauseKind::KernelCode | CauseKind::Idle));
    let code = match held {
        Some(h) if h.cause == CauseKind::KernelCode => format!(
            " while {} ran kernel code (interrupted in {})",
            h.culprit.task.as_ref().map_or_else(|| "a task".to_string(), |t| format!("{}:{}", t.comm, t.pid)),
            h.culprit.chain.iter().take(4).cloned().collect::<Vec<_>>().join(" ← ")
        ),
        Some(_) => ", on exit from idle".to_string(),
        None => String::new(),
    };
    match e.cause {
        CauseKind::NotTraced => format!(
            "rtla measured {} on {cpu}{}; without its auto-analysis (`rtla timerlat -a US`, or -T with -t) the \
             output does not say why.",
            human(total),
            r.filter(|r| r.analyses.is_empty()).map_or("", |_| " (its worst thread latency)")
        ),
        CauseKind::TimerIrqDelay if e.share.is_none() => format!(
            "rtla stopped on the timer IRQ latency of {cpu}: {}; the timer interrupt came late{code}.",
            human(total),
        ),
        _ => {
            let own: Vec<Explanation> = e.within.iter().filter(|w| is_entry_of(e, w)).cloned().collect();
            let mut s = format!(
                "rtla's auto-analysis of {cpu}: thread latency {}; mostly {}",
                human(total),
                part(&Explanation { within: own, ..e.clone() })
            );
            if e.cause == CauseKind::TimerIrqDelay {
                s.push_str(&code);
            }
            let others: Vec<String> = e.within.iter().filter(|w| !is_entry_of(e, w)).map(part).collect();
            if !others.is_empty() {
                s.push_str(&format!("; then {}", others.join("; ")));
            }
            s.push('.');
            s
        }
    }
}

/// Whether `w` belongs to the headline's own part (what held the timer IRQ back; the IRQs listed under IRQ
/// interference) rather than being another part.
fn is_entry_of(head: &Explanation, w: &Explanation) -> bool {
    matches!(w.cause, CauseKind::Idle | CauseKind::KernelCode) || (w.cause == head.cause && w.share.is_none())
}
