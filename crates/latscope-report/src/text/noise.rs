//! The text summary of `latscope noise`: run header, environment facts, per-CPU noise table, per-window
//! rows, a log-scaled histogram of iteration times, the longest gaps with their times, counter deltas,
//! and the RT-throttling sentence with the sysctl to change.

use latscope_model::noise_result::{CpuNoise, NoiseEnvironment, NoiseResult, RtThrottling};
use latscope_model::{Bucket, Nanos, StopReason};
use std::io::{self, Write};

/// Longest histogram bar, characters.
const BAR_CHARS: f64 = 40.0;
/// Gaps listed per CPU.
const GAPS_SHOWN: usize = 10;
/// Counter lines listed per CPU and table.
const COUNTERS_SHOWN: usize = 12;

/// Writes the whole summary.
pub fn write_noise(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    write_header(out, r)?;
    write_environment(out, &r.environment, r)?;
    write_table(out, r)?;
    write_windows(out, r)?;
    write_histogram(out, r)?;
    write_gaps(out, r)?;
    write_counters(out, r)?;
    write_throttling(out, r)?;
    super::noise_sources::write_noise_sources(out, r)?;
    if let Some(c) = &r.causes {
        super::noise_causes::write_noise_causes(out, c)?;
    }
    Ok(())
}

pub(super) fn t(v: u64) -> String {
    Nanos(v).to_string()
}

fn tf(v: f64) -> String {
    Nanos(v.max(0.0).round() as u64).to_string()
}

/// CLOCK_MONOTONIC ns as `seconds.nanoseconds`, the way trace timestamps print.
fn mono(v: u64) -> String {
    format!("{}.{:09}", v / 1_000_000_000, v % 1_000_000_000)
}

fn write_header(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    let o = &r.options;
    let policy = if o.priority == 0 { "SCHED_OTHER".to_string() } else { format!("SCHED_FIFO {}", o.priority) };
    let ended = match r.stopped_by {
        StopReason::Duration => "duration elapsed",
        StopReason::Signal => "interrupted",
        StopReason::Threshold => "stopped at the first gap above the threshold",
    };
    let ended = match (r.stopped_by, &o.osnoise) {
        (StopReason::Threshold, Some(_)) => "the kernel stopped at its stop condition",
        _ => ended,
    };
    if let Some(os) = &o.osnoise {
        writeln!(
            out,
            "latscope noise: CPU {}, kernel osnoise tracer (osnoise/N threads {policy}), ran {} ({ended}), noise \
             above {} counted",
            o.cpus,
            t(r.metadata.duration_ns),
            t(o.threshold_ns)
        )?;
        let mut stops = Vec::new();
        if let Some(v) = os.stop_above_ns {
            stops.push(format!("stops at a single noise above {}", t(v)));
        }
        if let Some(v) = os.stop_total_above_ns {
            stops.push(format!("stops at a period's noise above {}", t(v)));
        }
        let stops = if stops.is_empty() { String::new() } else { format!("; {}", stops.join(", ")) };
        writeln!(out, "osnoise period {}, runtime {} of each{stops}", t(os.period_ns), t(os.runtime_ns))?;
    } else {
        writeln!(
            out,
            "latscope noise: CPU {}, {policy}, ran {} ({ended}), gaps above {} count as noise",
            o.cpus,
            t(r.metadata.duration_ns),
            t(o.threshold_ns)
        )?;
        writeln!(
            out,
            "counter {} at {:.3} MHz (calibrated against {})",
            r.counter.name,
            r.counter.freq_hz / 1e6,
            r.counter.calibrated_against
        )?;
    }
    let m = &r.metadata;
    if !m.kernel_release.is_empty() {
        writeln!(
            out,
            "kernel {} (preemption: {}), clocksource {}",
            m.kernel_release, m.preemption_model, m.clocksource
        )?;
    }
    for w in &r.warnings {
        writeln!(out, "note: {w}")?;
    }
    crate::text::audit::write_context(out, &r.findings)?;
    writeln!(out)
}

fn write_environment(out: &mut dyn Write, env: &NoiseEnvironment, r: &NoiseResult) -> io::Result<()> {
    writeln!(out, "Environment:")?;
    for s in &env.smt {
        if s.online.is_empty() {
            let none = if s.siblings.is_empty() { "has no SMT sibling" } else { "has its SMT siblings offline" };
            writeln!(out, "  CPU {} {none}", s.cpu)?;
        } else {
            writeln!(
                out,
                "  CPU {} shares its core with CPU {} (online): whatever runs there slows this loop; take it \
                 offline or keep it idle",
                s.cpu, s.online
            )?;
        }
    }
    let measured = &r.options.cpus;
    let state = |l: &latscope_model::CpuList| if l.is_empty() { "none".to_string() } else { format!("CPU {l}") };
    writeln!(
        out,
        "  isolated (isolcpus): {} of CPU {measured}; nohz_full: {}",
        state(&env.isolated),
        state(&env.nohz_full)
    )?;
    match (env.rt_period_us, env.rt_runtime_us) {
        (Some(p), Some(rt)) if rt >= 0 && (rt as u64) < p => writeln!(
            out,
            "  RT throttling: SCHED_FIFO/RR tasks may run {} of every {}, then are stopped for {}",
            t(rt as u64 * 1000),
            t(p * 1000),
            t((p - rt as u64) * 1000)
        )?,
        (Some(_), Some(_)) => writeln!(out, "  RT throttling: off (sched_rt_runtime_us = -1 or the whole period)")?,
        _ => writeln!(out, "  RT throttling: settings not readable")?,
    }
    match &env.hypervisor {
        Some(h) => writeln!(
            out,
            "  hypervisor: {h}; gaps with no interrupt or task behind them are likely the host (see steal time)"
        )?,
        None => writeln!(out, "  hypervisor: none detected")?,
    }
    writeln!(out)
}

fn write_table(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    if r.options.osnoise.is_some() {
        return super::noise_sources::write_osnoise_table(out, r);
    }
    writeln!(
        out,
        "{:<4}{:>12}{:>10}{:>9}{:>9}{:>10}{:>9}{:>10}{:>8}{:>9}{:>9}",
        "CPU", "loops", "loop cyc", "floor", "runtime", "noise", "noise%", "max gap", "gaps", "gaps/s", "dropped"
    )?;
    for c in &r.cpus {
        writeln!(
            out,
            "{:<4}{:>12}{:>10.1}{:>9}{:>9}{:>10}{:>8.3}%{:>10}{:>8}{:>9.1}{:>9}",
            c.cpu.to_string(),
            c.loops,
            c.loop_cycles,
            tf(c.loop_ns),
            t(c.runtime_ns),
            t(c.noise_ns),
            c.noise_pct,
            t(c.max_gap_ns),
            c.gaps.count,
            c.gaps.per_second,
            c.gaps.dropped
        )?;
    }
    writeln!(
        out,
        "(loop cyc: mean counter ticks of an undisturbed iteration; floor: the same in time, the shortest gap \
         the loop can see)"
    )?;
    if r.cpus.iter().any(|c| c.gaps.dropped > 0) {
        writeln!(out, "(dropped gaps are counted in noise and gaps but missing from the lists and windows)")?;
    }
    writeln!(out)
}

fn write_windows(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    let Some(len) = r.options.window_ns else { return Ok(()) };
    for c in r.cpus.iter().filter(|c| !c.windows.is_empty()) {
        writeln!(out, "CPU {} windows of {}:", c.cpu, t(len))?;
        writeln!(out, "  {:>10}{:>8}{:>10}{:>9}{:>10}", "offset", "gaps", "noise", "noise%", "max gap")?;
        for w in &c.windows {
            writeln!(
                out,
                "  {:>10}{:>8}{:>10}{:>8.3}%{:>10}",
                format!("+{}", t(w.offset_ns)),
                w.gaps,
                t(w.noise_ns),
                w.noise_pct,
                t(w.max_gap_ns)
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Histogram bin edges, 1-2-5 per decade from 10 ns to 100 s.
fn bin_edges() -> Vec<u64> {
    let mut edges = Vec::new();
    let mut d = 10u64;
    while d <= 100_000_000_000 {
        edges.extend([d, 2 * d, 5 * d]);
        d *= 10;
    }
    edges
}

fn binned(buckets: &[Bucket], edges: &[u64]) -> Vec<u64> {
    let mut bins = vec![0u64; edges.len()];
    for b in buckets {
        let i = edges.partition_point(|&e| e <= b.low_ns).saturating_sub(1);
        bins[i] += b.count;
    }
    bins
}

/// Bar length proportional to log(1 + count): a single 50 ms gap among 100 million 20 ns iterations stays
/// visible (seed 004's outliers).
fn log_bar(count: u64, max: u64) -> String {
    if count == 0 || max == 0 {
        return String::new();
    }
    let n = (BAR_CHARS * (count as f64).ln_1p() / (max as f64).ln_1p()).round().max(1.0) as usize;
    "#".repeat(n)
}

fn write_histogram(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    let edges = bin_edges();
    let per_cpu: Vec<Vec<u64>> = r.cpus.iter().map(|c| binned(&c.histogram, &edges)).collect();
    let total: Vec<u64> = (0..edges.len()).map(|i| per_cpu.iter().map(|b| b[i]).sum()).collect();
    let (Some(first), Some(last)) = (total.iter().position(|&c| c > 0), total.iter().rposition(|&c| c > 0)) else {
        return Ok(());
    };
    let max = total.iter().copied().max().unwrap_or(0);
    let osnoise = r.options.osnoise.is_some();
    if osnoise {
        writeln!(out, "Noise histogram: each single noise above the threshold (log-scaled bars)")?;
    } else {
        writeln!(out, "Iteration time histogram (log-scaled bars: one '#' can be a single gap)")?;
    }
    let mut head = format!("  {:<20}", if osnoise { "noise took" } else { "iteration took" });
    for c in &r.cpus {
        head.push_str(&format!("{:>13}", format!("CPU {}", c.cpu)));
    }
    writeln!(out, "{head}")?;
    for i in first..=last {
        let hi = edges.get(i + 1).map_or_else(|| "+inf".to_string(), |&e| t(e));
        let mut row = format!("  {:<20}", format!("[{}, {})", t(edges[i]), hi));
        for bins in &per_cpu {
            row.push_str(&format!("{:>13}", bins[i]));
        }
        row.push_str(&format!("  {}", log_bar(total[i], max)));
        writeln!(out, "{}", row.trim_end())?;
    }
    writeln!(out)
}

fn write_gaps(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    if r.cpus.iter().all(|c| c.gaps.top.is_empty()) {
        return Ok(());
    }
    let what = if r.options.osnoise.is_some() { "noises" } else { "gaps" };
    writeln!(out, "Longest {what} (start is CLOCK_MONOTONIC, as in a trace taken with the mono clock):")?;
    for c in &r.cpus {
        for g in c.gaps.top.iter().take(GAPS_SHOWN) {
            writeln!(
                out,
                "  CPU {:<3} {:>9} at {} (+{} into the run)",
                c.cpu,
                t(g.duration_ns.0),
                mono(g.start_ns.0),
                t(g.start_ns.0.saturating_sub(r.start_monotonic_ns))
            )?;
        }
    }
    writeln!(out)
}

fn write_counters(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    writeln!(out, "Counters over the run:")?;
    for c in &r.cpus {
        write_cpu_counters(out, c)?;
    }
    writeln!(out)
}

fn write_cpu_counters(out: &mut dyn Write, c: &CpuNoise) -> io::Result<()> {
    let k = &c.counters;
    let list = |v: &[latscope_model::noise_result::CountDelta]| {
        if v.is_empty() {
            return "none".to_string();
        }
        let mut s: Vec<String> = v
            .iter()
            .take(COUNTERS_SHOWN)
            .map(|d| {
                let id = if d.id.bytes().all(|b| b.is_ascii_digit()) { format!("IRQ {}", d.id) } else { d.id.clone() };
                if d.description.is_empty() {
                    format!("{}x {id}", d.delta)
                } else {
                    format!("{}x {id} ({})", d.delta, d.description)
                }
            })
            .collect();
        if v.len() > COUNTERS_SHOWN {
            s.push(format!("{} more", v.len() - COUNTERS_SHOWN));
        }
        s.join(", ")
    };
    writeln!(out, "  CPU {} interrupts: {}", c.cpu, list(&k.interrupts))?;
    writeln!(out, "  CPU {} softirqs: {}", c.cpu, list(&k.softirqs))?;
    let steal = k.steal_ns.map_or_else(|| "not readable".to_string(), t);
    let smi = match (&k.smi.delta, &k.smi.unavailable) {
        (Some(d), _) => d.to_string(),
        (None, Some(why)) => format!("not readable: {why}"),
        (None, None) => "not readable".to_string(),
    };
    writeln!(out, "  CPU {} steal time: {steal}; SMIs: {smi}", c.cpu)
}

fn write_throttling(out: &mut dyn Write, r: &NoiseResult) -> io::Result<()> {
    for c in &r.cpus {
        if let Some(s) = throttling_sentence(c.cpu.0, &c.rt_throttling) {
            writeln!(out, "{s}")?;
        }
    }
    let stopped: Vec<String> =
        r.cpus.iter().filter(|c| c.stopped_on_threshold).map(|c| format!("CPU {}", c.cpu)).collect();
    match (&r.options.osnoise, stopped.is_empty()) {
        (_, true) => {}
        (Some(os), false) => {
            let limit = match (os.stop_above_ns, os.stop_total_above_ns) {
                (Some(v), None) => format!("a single noise above {}", t(v)),
                (None, Some(v)) => format!("a period's noise above {}", t(v)),
                (Some(v), Some(w)) => format!("a single noise above {} or a period's noise above {}", t(v), t(w)),
                (None, None) => "its stop condition".to_string(),
            };
            writeln!(out, "The kernel stopped the run at {limit} on {}.", stopped.join(", "))?;
        }
        (None, false) => {
            writeln!(out, "Stopped at a gap above {} on {}.", t(r.options.threshold_ns), stopped.join(", "))?
        }
    }
    Ok(())
}

/// The RT-throttling sentence for one CPU, if there is something to say.
pub fn throttling_sentence(cpu: u32, v: &RtThrottling) -> Option<String> {
    if v.detected {
        let settings = match (v.runtime_us, v.period_us) {
            (Some(rt), Some(p)) => format!("sched_rt_runtime_us={rt} of sched_rt_period_us={p}"),
            _ => "the RT bandwidth settings".to_string(),
        };
        let longer = match v.in_longer_gaps {
            0 => String::new(),
            1 => ", and 1 more at the end of a longer gap,".to_string(),
            n => format!(", and {n} more at the end of longer gaps,"),
        };
        return Some(format!(
            "CPU {cpu}: RT throttling: {} of about {} every {} ({} in all){longer} match {settings}: the \
             kernel stops SCHED_FIFO/RR tasks for {} each period so that other tasks can run. This is not \
             hardware or interrupt noise. To let a real-time task run uninterrupted, set 'sysctl -w {}={}' \
             (only with trusted RT tasks: a runaway one then hangs its CPU), or measure with -p 0.",
            crate::human::counted(v.matched_gaps, "gap", "gaps"),
            t(v.median_gap_ns),
            if v.median_interval_ns > 0 { t(v.median_interval_ns) } else { "period".to_string() },
            t(v.throttled_ns),
            v.expected_gap_ns.map_or_else(|| "part".to_string(), t),
            v.sysctl,
            v.suggested_value
        ));
    }
    if v.rt_policy {
        if let Some(e) = v.expected_gap_ns {
            return Some(format!(
                "CPU {cpu}: RT throttling is configured ({} every {}) but its gap pattern was not seen in this run.",
                t(e),
                v.period_us.map_or_else(|| "period".to_string(), |p| t(p * 1000))
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::noise_result::{
        CountDelta, CounterDeltas, CounterInfo, Gap, GapStats, NoiseOptions, SmiDelta, SmtSiblings,
    };
    use latscope_model::{CpuId, CpuList, RunMetadata};

    fn result() -> NoiseResult {
        let mut r = NoiseResult::new(
            RunMetadata { duration_ns: 3_000_000_000, kernel_release: "6.18.0".into(), ..RunMetadata::default() },
            NoiseOptions {
                cpus: CpuList(vec![CpuId(1)]),
                priority: 50,
                threshold_ns: 5_000,
                window_ns: Some(1_000_000_000),
                ..NoiseOptions::default()
            },
            CounterInfo { name: "tsc".into(), freq_hz: 2.596e9, calibrated_against: "CLOCK_MONOTONIC_RAW".into() },
        );
        r.start_monotonic_ns = 100_000_000_000;
        r.environment = NoiseEnvironment {
            smt: vec![SmtSiblings {
                cpu: CpuId(1),
                siblings: CpuList(vec![CpuId(5)]),
                online: CpuList(vec![CpuId(5)]),
            }],
            rt_period_us: Some(1_000_000),
            rt_runtime_us: Some(950_000),
            hypervisor: Some("KVM".into()),
            ..NoiseEnvironment::default()
        };
        r.cpus.push(CpuNoise {
            cpu: CpuId(1),
            loops: 150_000_000,
            loop_cycles: 47.5,
            loop_ns: 18.3,
            runtime_ns: 3_000_000_000,
            noise_ns: 150_000_000,
            noise_pct: 5.0,
            max_gap_ns: 53_000_000,
            gaps: GapStats {
                count: 3,
                per_second: 1.0,
                dropped: 0,
                top: vec![Gap { start_ns: Nanos(100_133_700_000), duration_ns: Nanos(53_000_000) }],
            },
            histogram: vec![
                Bucket { low_ns: 18, high_ns: 18, count: 149_999_997 },
                Bucket { low_ns: 52_953_000, high_ns: 53_000_000, count: 1 },
            ],
            counters: CounterDeltas {
                interrupts: vec![CountDelta {
                    id: "LOC".into(),
                    description: "Local timer interrupts".into(),
                    delta: 3000,
                }],
                softirqs: vec![CountDelta { id: "TIMER".into(), description: String::new(), delta: 12 }],
                steal_ns: Some(0),
                smi: SmiDelta { delta: None, unavailable: Some("/dev/cpu/1/msr is missing".into()) },
            },
            rt_throttling: RtThrottling {
                detected: true,
                rt_policy: true,
                period_us: Some(1_000_000),
                runtime_us: Some(950_000),
                expected_gap_ns: Some(50_000_000),
                matched_gaps: 3,
                median_gap_ns: 48_800_000,
                median_interval_ns: 1_000_000_000,
                throttled_ns: 150_000_000,
                in_longer_gaps: 0,
                sysctl: "kernel.sched_rt_runtime_us".into(),
                suggested_value: "-1".into(),
            },
            ..CpuNoise::default()
        });
        r
    }

    fn render(r: &NoiseResult) -> String {
        let mut buf = Vec::new();
        write_noise(&mut buf, r).expect("render");
        String::from_utf8(buf).expect("utf8")
    }

    #[test]
    fn renders_every_section() {
        let text = render(&result());
        for needle in [
            "latscope noise: CPU 1, SCHED_FIFO 50, ran 3s",
            "counter tsc at 2596.000 MHz",
            "CPU 1 shares its core with CPU 5 (online)",
            "then are stopped for 50ms",
            "hypervisor: KVM",
            "53ms",
            "at 100.133700000 (+134ms into the run)",
            "3000x LOC (Local timer interrupts)",
            "softirqs: 12x TIMER",
            "SMIs: not readable: /dev/cpu/1/msr is missing",
            "RT throttling: 3 gaps of about 48.8ms every 1s",
            "sysctl -w kernel.sched_rt_runtime_us=-1",
        ] {
            assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
        }
    }

    #[test]
    fn single_outlier_keeps_a_visible_bar() {
        let text = render(&result());
        let row = text.lines().find(|l| l.starts_with("  [50ms, 100ms)")).expect("outlier row");
        assert!(row.ends_with(" #"), "{row}");
        let main = text.lines().find(|l| l.starts_with("  [10ns, 20ns)")).expect("main row");
        assert!(main.ends_with(&"#".repeat(40)), "{main}");
    }

    #[test]
    fn says_when_throttling_was_expected_but_absent() {
        let v = RtThrottling {
            rt_policy: true,
            expected_gap_ns: Some(50_000_000),
            period_us: Some(1_000_000),
            ..Default::default()
        };
        let s = throttling_sentence(2, &v).expect("sentence");
        assert!(s.contains("not seen"), "{s}");
        let v = RtThrottling { detected: true, matched_gaps: 1, in_longer_gaps: 1, ..v };
        let s = throttling_sentence(2, &v).expect("sentence");
        assert!(
            s.contains("RT throttling: 1 gap of about ") && s.contains(", and 1 more at the end of a longer gap,"),
            "{s}"
        );
        assert!(throttling_sentence(2, &RtThrottling::default()).is_none());
    }
}
