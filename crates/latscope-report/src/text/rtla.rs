//! rtla output in `latscope analyze` text: what the table says per CPU (timerlat latencies, osnoise and
//! hwnoise noise with its sources' counts), and the sentence of a verdict (an auto-analysis: the latency,
//! its largest part with the culprit, the other parts; a table: its worst and what it does not say).

use super::explain;
use crate::human::human;
use latscope_model::{CauseKind, CpuId, Explanation, Nanos, RtlaNoise, RtlaOutput, RtlaStats, RtlaTool};
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
        if let Some(n) = &c.noise {
            writeln!(out, "  CPU {:>3}: {}", c.cpu.0, noise_row(n))?;
            continue;
        }
        if c.noise_hist.is_some() {
            writeln!(out, "  CPU {:>3}: single noise {}", c.cpu.0, stats(&c.noise_hist))?;
            continue;
        }
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

/// An osnoise/hwnoise row: the noise, the share left, the worst period and single noise, the counts.
fn noise_row(n: &RtlaNoise) -> String {
    format!(
        "noise {} in {} ({:.5} % available), at most {} in a period, longest single {}; {}",
        human(n.noise),
        human(n.runtime),
        n.available_pct,
        human(n.max_period_noise),
        human(n.max_single),
        sources(n)
    )
}

/// The counts of each noise source rtla printed.
fn sources(n: &RtlaNoise) -> String {
    let mut s = vec![format!("{} hardware-related", n.hw), format!("{} NMI", n.nmi)];
    for (v, name) in [(n.irq, "IRQ"), (n.softirq, "softirq"), (n.thread, "thread")] {
        if let Some(v) = v {
            s.push(format!("{v} {name}"));
        }
    }
    s.join(", ")
}

/// The sentence on the longest single noise of an osnoise or hwnoise output, on `cpu`.
fn noise_sentence(r: &RtlaOutput, cpu: Option<CpuId>, total: Nanos) -> String {
    let on = cpu.map_or_else(|| "a CPU".to_string(), |c| format!("CPU {}", c.0));
    let row = r.cpus.iter().find(|c| Some(c.cpu) == cpu);
    let tool = if r.tool == RtlaTool::Hwnoise { "rtla hwnoise" } else { "rtla osnoise" };
    let mut s = format!("{tool} measured a longest single noise of {} on {on}", human(total));
    match row.and_then(|c| c.noise.as_ref()) {
        Some(n) => {
            s.push_str(&format!(
                " ({:.5} % of the CPU left to the workload in {} periods, at most {} of noise in one); its \
                 occurrences over the run: {}",
                n.available_pct,
                n.periods,
                human(n.max_period_noise),
                sources(n)
            ));
            if n.hw > 0 {
                s.push_str(
                    ". Hardware-related noise is noise that no operating system activity accounts for (firmware: \
                     an SMI; an SMT sibling; a hypervisor running something else)",
                );
            }
        }
        None => {
            if let Some(h) = row.and_then(|c| c.noise_hist) {
                s.push_str(&format!(" among {} single noises (a histogram holds no count by source)", h.count));
            }
        }
    }
    if r.tool == RtlaTool::Hwnoise {
        s.push_str(". hwnoise runs with interrupts off, so only hardware-related noise and NMIs remain.");
    } else {
        s.push_str(&format!(
            ". The output does not say which source made the longest noise: `rtla osnoise top -s {} -t` stops \
             and saves the trace when a single noise reaches that many microseconds, or `latscope noise --trace` \
             names what ran in each gap.",
            total.0.div_ceil(1000).max(1)
        ));
    }
    s
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
        CauseKind::NotTraced if r.is_some_and(|r| r.tool != RtlaTool::Timerlat) => {
            noise_sentence(r.expect("checked"), e.cpu, total)
        }
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
