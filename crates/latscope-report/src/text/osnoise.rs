//! Text of the osnoise tracer's records in `analyze`: the verdict's sentence (the longest single noise, the
//! source that made most of it, the worst period) and, under the details, each CPU's noise by source as
//! `noise --backend osnoise` shows it.

use super::noise_sources::{label, write_source_table};
use crate::human::{counted, human};
use latscope_analyze::osnoise_report::{Interference, OsnoiseReport};
use latscope_model::noise_result::NoiseSourceKind;
use latscope_model::Explanation;
use std::io::{self, Write};

fn name(i: &Interference) -> String {
    label(i.kind, &i.name, i.number)
}

/// The sentence of `analyze`'s verdict on a trace with osnoise records.
pub fn verdict_sentence(r: Option<&OsnoiseReport>, e: &Explanation) -> String {
    let Some(r) = r else { return super::explain::label(e) };
    let mut s = match &r.longest {
        Some(n) => {
            let mut s = format!(
                "The osnoise tracer's longest single noise was {} on CPU {} (the time {}:{} did not run, {} \
                 counted in it)",
                human(n.duration),
                n.cpu.0,
                n.thread.comm,
                n.thread.pid,
                counted(u64::from(n.interference.unwrap_or(n.within.len() as u32)), "interference", "interferences")
            );
            match n.within.first() {
                Some(main) if main.duration < n.unaccounted => {
                    s.push_str(&format!(
                        ": no interference event accounts for {} of it (hardware, firmware or a hypervisor, or the \
                         entry of an interruption before its first event); the longest interference in it, {}, ran \
                         for {}.",
                        human(n.unaccounted),
                        name(main),
                        human(main.duration)
                    ));
                }
                Some(main) => {
                    s.push_str(&format!(": {} ran for {} of it", name(main), human(main.duration)));
                    let others = n.within[1..].iter().fold(latscope_model::Nanos::ZERO, |t, i| t + i.duration);
                    if n.within.len() > 1 {
                        s.push_str(&format!(
                            ", {} other {} for {}",
                            n.within.len() - 1,
                            if n.within.len() == 2 { "interference" } else { "interferences" },
                            human(others)
                        ));
                    }
                    if n.unaccounted.0 > 0 {
                        s.push_str(&format!(
                            ", and no interference event accounts for {} (hardware, firmware or a hypervisor, or \
                             the entry of an interruption before its first event)",
                            human(n.unaccounted)
                        ));
                    }
                    s.push('.');
                }
                None => s.push_str(
                    ": no IRQ, softirq, NMI or thread ran in it, so it is hardware noise (firmware/SMI, an SMT \
                     sibling or a hypervisor; the trace alone does not say which).",
                ),
            }
            s
        }
        None => match &r.longest_interference {
            Some(i) => format!(
                "The osnoise tracer's events (no single-noise records) show {} as the longest interference, {} on \
                 CPU {}.",
                name(i),
                human(i.duration),
                e.cpu.map_or(0, |c| c.0)
            ),
            None => "The osnoise tracer's period records do not say which source made the noise: enable the \
                     osnoise events (`osnoise:*`, or `rtla osnoise top -e osnoise`) to name it."
                .to_string(),
        },
    };
    if let Some(w) = &r.worst_period {
        s.push_str(&format!(
            " The worst period on CPU {} had {} of noise in {} of runtime ({:.5} % of the CPU available), its \
             longest single noise {}.",
            w.cpu.0,
            human(w.noise),
            human(w.runtime),
            w.available_pct,
            human(w.max_single)
        ));
    }
    if let Some(l) = &r.longest_interference {
        let same = r.longest.as_ref().and_then(|n| n.within.first()).is_some_and(|m| m.index == l.index);
        if !same && r.longest.is_some() {
            s.push_str(&format!(" The longest interference of any source: {}, {}.", name(l), human(l.duration)));
        }
    }
    s
}

/// Each CPU's periods and noise by source, under `analyze`'s details.
pub fn write_report(out: &mut dyn Write, r: &OsnoiseReport) -> io::Result<()> {
    writeln!(out, "osnoise: noise by source (the tracer's events; an IRQ's time excludes what nested in it):")?;
    for c in &r.cpus {
        let p = &c.periods;
        if p.periods > 0 {
            writeln!(
                out,
                "  CPU {}: {}, {} of noise in {} of runtime ({:.5} % available), the noisiest period {}, \
                 the longest single noise {}; interferences: {} HW, {} NMI, {} IRQ, {} softirq, {} thread",
                c.cpu.0,
                counted(p.periods, "period", "periods"),
                human(latscope_model::Nanos(p.noise_ns)),
                human(latscope_model::Nanos(p.runtime_ns)),
                p.available_pct,
                human(latscope_model::Nanos(p.max_period_noise_ns)),
                human(latscope_model::Nanos(p.max_single_ns)),
                p.counts.hw,
                p.counts.nmi,
                p.counts.irq,
                p.counts.softirq,
                p.counts.thread
            )?;
        }
        if !c.sources.is_empty() {
            write_source_table(out, c.cpu, &c.sources, c.noise_ns)?;
        }
        if c.sources.iter().all(|s| s.kind == NoiseSourceKind::Hardware) && c.noises == 0 && p.periods > 0 {
            writeln!(out, "  (no osnoise events: the periods do not say which source made the noise)")?;
        }
    }
    Ok(())
}
