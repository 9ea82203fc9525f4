//! The parts of the `latscope noise` text that only the osnoise backend has: the per-CPU table with the
//! tracer's own accounting (as `rtla osnoise top` shows it, beside latscope's count of the noises) and the
//! noise by source, each source named (`irq 4 ttyS0`, `thread kworker/1:1`).

use super::noise::t;
use latscope_model::noise_result::{NoiseResult, NoiseSource, NoiseSourceKind};
use latscope_model::CpuId;
use std::io::{self, Write};

/// Sources listed per CPU.
const SOURCES_SHOWN: usize = 15;

/// The per-CPU table of an osnoise run.
pub fn write_osnoise_table(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    writeln!(
        out,
        "{:<4}{:>8}{:>10}{:>10}{:>9}{:>10}{:>10}{:>8}{:>9}{:>7}{:>7}{:>7}{:>7}{:>7}",
        "CPU",
        "periods",
        "runtime",
        "noise",
        "avail%",
        "max noise",
        "max 1",
        "noises",
        "noises/s",
        "HW",
        "NMI",
        "IRQ",
        "SIRQ",
        "THREAD"
    )?;
    for c in &r.cpus {
        let p = c.periods.clone().unwrap_or_default();
        writeln!(
            out,
            "{:<4}{:>8}{:>10}{:>10}{:>8.3}%{:>10}{:>10}{:>8}{:>9.1}{:>7}{:>7}{:>7}{:>7}{:>7}",
            c.cpu.to_string(),
            p.periods,
            t(p.runtime_ns),
            t(p.noise_ns),
            p.available_pct,
            t(p.max_period_noise_ns),
            t(p.max_single_ns),
            c.gaps.count,
            c.gaps.per_second,
            p.counts.hw,
            p.counts.nmi,
            p.counts.irq,
            p.counts.softirq,
            p.counts.thread
        )?;
    }
    writeln!(
        out,
        "(the tracer's own accounting per period, as rtla osnoise top shows it: noise, the CPU share left, the \
         noisiest period, the longest single noise, interferences per source; noises: each single noise above \
         the threshold)"
    )?;
    for c in r.cpus.iter().filter(|c| c.gaps.count > 0) {
        writeln!(
            out,
            "CPU {}: {} of noise above the threshold in {} ({:.3}%), the longest {}",
            c.cpu,
            t(c.noise_ns),
            t(c.runtime_ns),
            c.noise_pct,
            t(c.max_gap_ns)
        )?;
    }
    if r.cpus.iter().any(|c| c.gaps.dropped > 0) {
        writeln!(out, "(dropped noises are counted in noise and noises but missing from the lists and windows)")?;
    }
    writeln!(out)
}

/// What a source is called: `irq 4 ttyS0`, `softirq TIMER`, `thread kworker/1:1 (pid 93)`, `NMI`, `hardware`.
pub fn source_label(s: &NoiseSource) -> String {
    label(s.kind, &s.name, s.number)
}

/// What a source of `kind` named `name` with `number` (IRQ, vector or pid) is called.
pub fn label(kind: NoiseSourceKind, name: &str, number: Option<u32>) -> String {
    let num = |prefix: &str| number.map_or_else(String::new, |n| format!("{prefix}{n}"));
    match kind {
        NoiseSourceKind::Irq => format!("irq{} {name}", num(" ")),
        NoiseSourceKind::Softirq => format!("softirq {name}"),
        NoiseSourceKind::Thread => match number {
            Some(pid) => format!("thread {name} (pid {pid})"),
            None => format!("thread {name}"),
        },
        NoiseSourceKind::Nmi => "NMI".to_string(),
        NoiseSourceKind::Hardware => "hardware (no IRQ, NMI or thread: firmware, SMI or the hypervisor)".to_string(),
    }
}

/// The noise by source per CPU, most time first (nothing when the run named no source).
pub fn write_noise_sources(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    if r.cpus.iter().all(|c| c.sources.is_empty()) {
        return Ok(());
    }
    writeln!(out, "Noise by source (the osnoise tracer's events; an IRQ's time excludes what nested in it):")?;
    for c in r.cpus.iter().filter(|c| !c.sources.is_empty()) {
        write_source_table(out, c.cpu, &c.sources, c.noise_ns)?;
    }
    writeln!(out)
}

/// One CPU's sources, most time first (count, total, longest, share), and beside their total the noises'
/// (`noise_ns`: the single noises above the threshold).
pub fn write_source_table(out: &mut dyn Write, cpu: CpuId, sources: &[NoiseSource], noise_ns: u64) -> io::Result<()> {
    let all: u64 = sources.iter().map(|s| s.total_ns).sum();
    writeln!(out, "  CPU {}:{:>8}{:>11}{:>11}{:>8}  source", cpu, "count", "total", "max", "share")?;
    for s in sources.iter().take(SOURCES_SHOWN) {
        let share = if all > 0 { 100.0 * s.total_ns as f64 / all as f64 } else { 0.0 };
        writeln!(
            out,
            "  {:<6}{:>8}{:>11}{:>11}{:>7.1}%  {}",
            "",
            s.count,
            t(s.total_ns),
            t(s.max_ns),
            share,
            source_label(s)
        )?;
    }
    if sources.len() > SOURCES_SHOWN {
        writeln!(out, "  {:<6}and {} more sources", "", sources.len() - SOURCES_SHOWN)?;
    }
    // The osnoise thread's noises hold the sources' time and whatever no event covered (the time between
    // an interrupt's arrival and its handler's first event, a hypervisor's or firmware's time).
    writeln!(out, "  {:<6}the sources took {} in all; the noises above the threshold {}", "", t(all), t(noise_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::noise_result::{
        CounterInfo, CpuNoise, GapStats, NoiseBackend, NoiseOptions, OsnoisePeriods, OsnoiseSettings,
    };
    use latscope_model::{Bucket, CpuId, CpuList, RunMetadata};

    fn source(kind: NoiseSourceKind, name: &str, number: Option<u32>, count: u64, total_ns: u64) -> NoiseSource {
        NoiseSource { kind, name: name.into(), number, count, total_ns, max_ns: total_ns / count.max(1) }
    }

    #[test]
    fn names_each_source_and_draws_the_osnoise_table() {
        let mut r = NoiseResult::new(
            RunMetadata { duration_ns: 2_000_000_000, ..RunMetadata::default() },
            NoiseOptions {
                cpus: CpuList(vec![CpuId(1)]),
                threshold_ns: 5_000,
                backend: NoiseBackend::Osnoise,
                osnoise: Some(OsnoiseSettings {
                    period_ns: 1_000_000_000,
                    runtime_ns: 1_000_000_000,
                    stop_above_ns: Some(200_000_000),
                    stop_total_above_ns: None,
                }),
                ..NoiseOptions::default()
            },
            CounterInfo::default(),
        );
        r.cpus.push(CpuNoise {
            cpu: CpuId(1),
            noise_ns: 101_000_000,
            runtime_ns: 2_000_000_000,
            gaps: GapStats { count: 3, ..GapStats::default() },
            periods: Some(OsnoisePeriods { periods: 2, available_pct: 94.9, ..OsnoisePeriods::default() }),
            histogram: vec![Bucket { low_ns: 100_000_000, high_ns: 100_000_000, count: 1 }],
            sources: vec![
                source(NoiseSourceKind::Thread, "latscope-inj", Some(321), 1, 100_000_000),
                source(NoiseSourceKind::Irq, "ttyS0", Some(4), 10, 900_000),
                source(NoiseSourceKind::Softirq, "TIMER", Some(1), 2, 50_000),
                source(NoiseSourceKind::Hardware, "", None, 1, 50_000),
            ],
            ..CpuNoise::default()
        });
        let mut buf = Vec::new();
        crate::text::noise::write_noise(&mut buf, &r).expect("render");
        let text = String::from_utf8(buf).expect("utf8");
        for needle in [
            "kernel osnoise tracer (osnoise/N threads SCHED_OTHER)",
            "osnoise period 1s, runtime 1s of each; stops at a single noise above 200ms",
            "94.900%",
            "thread latscope-inj (pid 321)",
            "irq 4 ttyS0",
            "softirq TIMER",
            "hardware (no IRQ",
            "99.0%  thread latscope-inj",
            "Noise histogram",
            "the sources took 101ms in all; the noises above the threshold 101ms",
        ] {
            assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
        }
        assert!(!text.contains("counter") && !text.contains("loop cyc"), "{text}");
    }
}
