//! Text of the timerlat tracer's samples in `analyze`: the verdict's sentence (the worst thread latency, how
//! late its timer IRQ came, what ran before the thread) and, under the details, each CPU's samples per
//! context as `rtla timerlat top` shows them.

use super::noise_sources::label;
use crate::human::{counted, human};
use latscope_analyze::timerlat_report::{ContextStats, TimerlatReport};
use latscope_model::event::TimerlatContext;
use latscope_model::{Explanation, Nanos};
use std::io::{self, Write};

fn context(c: TimerlatContext) -> &'static str {
    match c {
        TimerlatContext::Irq => "timer IRQ",
        TimerlatContext::Thread => "thread",
        TimerlatContext::User => "user-space thread",
    }
}

/// The sentence of `analyze`'s verdict on a trace with timerlat samples.
pub fn verdict_sentence(r: Option<&TimerlatReport>, e: &Explanation) -> String {
    let Some(w) = r.and_then(|r| r.worst.as_ref()) else { return super::explain::label(e) };
    let mut s = format!(
        "The timerlat tracer's worst {} latency was {} on CPU {} (activation #{}, {}:{})",
        context(w.context),
        human(w.latency),
        w.cpu.0,
        w.seqnum,
        w.thread.comm,
        w.thread.pid
    );
    if let Some(irq) = w.irq_latency {
        s.push_str(&format!("; its timer IRQ came {} late", human(irq)));
    }
    if !w.noise_events {
        s.push_str(
            ". The trace has no osnoise events to say what ran in the meantime (record them with the samples: \
             `rtla timerlat top -a US` or `-e osnoise`, or `echo osnoise > set_event`); what its other events \
             show is in the verdicts that follow, when there are any.",
        );
        return s;
    }
    match w.within.first() {
        Some(main) if main.duration >= w.unaccounted => {
            s.push_str(&format!(
                ", and before the {} ran, {} ran for {}",
                context(w.context),
                label(main.kind, &main.name, main.number),
                human(main.duration)
            ));
            if w.within.len() > 1 {
                let others = w.within[1..].iter().fold(Nanos::ZERO, |t, i| t + i.duration);
                s.push_str(&format!(
                    " ({} more for {})",
                    counted((w.within.len() - 1) as u64, "interference", "interferences"),
                    human(others)
                ));
            }
            if w.unaccounted.0 > 0 {
                s.push_str(&format!("; no osnoise event accounts for {}", human(w.unaccounted)));
            }
            s.push('.');
        }
        Some(main) => s.push_str(&format!(
            "; no osnoise event accounts for {} of it (kernel code with interrupts off, or time below the kernel: \
             the trace does not say which); the longest interference, {}, ran for {}.",
            human(w.unaccounted),
            label(main.kind, &main.name, main.number),
            human(main.duration)
        )),
        None => s.push_str(&format!(
            "; no osnoise event ran on CPU {} between the timer's expiry and the sample (kernel code with \
             interrupts off, or time below the kernel: the trace does not say which).",
            w.cpu.0
        )),
    }
    s
}

fn stats(name: &str, s: Option<ContextStats>) -> String {
    s.map_or_else(String::new, |s| format!("; {name} n={} max {} avg {}", s.count, human(s.max), human(s.avg)))
}

/// Each CPU's samples per context, under `analyze`'s details.
pub fn write_report(out: &mut dyn Write, r: &TimerlatReport) -> io::Result<()> {
    writeln!(out, "timerlat samples:")?;
    for c in &r.cpus {
        let line = format!("{}{}{}", stats("IRQ", c.irq), stats("thread", c.thread), stats("user", c.user));
        writeln!(out, "  CPU {}: {}", c.cpu.0, line.trim_start_matches("; "))?;
    }
    Ok(())
}
