//! The final text summary of `latscope timer`: run header, per-CPU statistics table with the all-CPUs row,
//! window rows (seed 003 style), a histogram with log-scaled bars so single outliers stay visible (seed 004),
//! the worst wakeups with their absolute times, and the threshold verdict.

use latscope_model::{Bucket, CpuTimer, Nanos, StopReason, TimerBackend, TimerResult, TimerStats};
use std::io::{self, Write};

/// Width of the longest histogram bar, characters.
const BAR_WIDTH: f64 = 40.0;
/// Worst wakeups listed per CPU.
const WORST_SHOWN: usize = 5;

/// Writes the whole summary.
pub fn write_timer(out: &mut dyn Write, r: &TimerResult) -> io::Result<()> {
    write_header(out, r)?;
    write_table(out, r)?;
    write_windows(out, r)?;
    write_histogram(out, r)?;
    write_worst(out, r)?;
    write_verdict(out, r)?;
    if let Some(t) = &r.trace {
        super::traced_wakeups::write_traced_wakeups(out, t)?;
    }
    super::kernel_wakeup::write_kernel_wakeup(out, r)?;
    Ok(())
}

fn ns(v: u64) -> String {
    Nanos(v).to_string()
}

fn nsf(v: f64) -> String {
    Nanos(v.max(0.0).round() as u64).to_string()
}

fn write_header(out: &mut dyn Write, r: &TimerResult) -> io::Result<()> {
    let o = &r.options;
    let policy_of = |p: u32| if p == 0 { "SCHED_OTHER".to_string() } else { format!("SCHED_FIFO {p}") };
    // An imported file may not say how its run was set up: unknown, not latscope's defaults.
    let (interval, policy, ran) = match &r.imported {
        Some(i) => (
            i.interval_ns.map_or_else(|| "unknown interval".to_string(), |v| format!("every {}", ns(v))),
            i.priority.map_or_else(|| "policy unknown".to_string(), policy_of),
            i.duration_ns.map_or_else(|| "duration unknown".to_string(), |v| format!("ran {}", ns(v))),
        ),
        None => (
            format!("every {}", ns(o.interval_ns)),
            policy_of(o.priority),
            format!("ran {}", ns(r.metadata.duration_ns)),
        ),
    };
    let ended = match r.stopped_by {
        StopReason::Duration => "duration elapsed",
        StopReason::Signal => "interrupted",
        StopReason::Threshold => "stopped at the first latency above the threshold",
    };
    match &r.imported {
        Some(i) => write!(out, "{} (imported): CPU {} {interval}, {policy}, {ran}", i.tool, o.cpus)?,
        None if o.backend == TimerBackend::Timerlat => write!(
            out,
            "latscope timer (the kernel's timerlat tracer): CPU {} {interval}, timerlat threads at {policy}, {ran} \
             ({ended})",
            o.cpus
        )?,
        None => write!(out, "latscope timer: CPU {} {interval}, {policy}, {ran} ({ended})", o.cpus)?,
    }
    if let Some(t) = o.threshold_ns {
        write!(out, ", threshold {}", ns(t))?;
    }
    writeln!(out)?;
    let m = &r.metadata;
    if !m.kernel_release.is_empty() {
        let hv = m.hypervisor.as_deref().map(|h| format!(", under {h}")).unwrap_or_default();
        writeln!(
            out,
            "kernel {} (preemption: {}){hv}, clocksource {}",
            m.kernel_release, m.preemption_model, m.clocksource
        )?;
    }
    for w in &r.warnings {
        writeln!(out, "note: {w}")?;
    }
    crate::text::audit::write_context(out, &r.findings)?;
    writeln!(out)
}

fn write_table(out: &mut dyn Write, r: &TimerResult) -> io::Result<()> {
    let Some(irq) = &r.irq else { return write_stats(out, r, &r.cpus, &r.all) };
    writeln!(out, "Thread latency (timerlat's thread context, as latscope's own threads measure it):")?;
    write_stats(out, r, &r.cpus, &r.all)?;
    writeln!(out, "Timer IRQ latency (timerlat's IRQ context: how late the timer interrupt ran):")?;
    write_stats(out, r, &irq.cpus, &irq.all)
}

fn write_stats(out: &mut dyn Write, r: &TimerResult, cpus: &[CpuTimer], all: &TimerStats) -> io::Result<()> {
    let thr = r.options.threshold_ns.map(|t| format!(">{}", ns(t)));
    let mut head = format!(
        "{:<4}{:>10}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>10}",
        "CPU", "count", "min", "avg", "stddev", "p50", "p90", "p99", "p99.9", "p99.99", "max", "overruns"
    );
    if let Some(t) = &thr {
        head.push_str(&format!("  {t}"));
    }
    writeln!(out, "{head}")?;
    for c in cpus {
        writeln!(out, "{}", stats_row(&c.cpu.to_string(), &c.stats))?;
    }
    if cpus.len() > 1 {
        writeln!(out, "{}", stats_row("all", all))?;
    }
    writeln!(out)
}

fn stats_row(label: &str, s: &TimerStats) -> String {
    if s.count == 0 {
        return format!("{label:<4}{:>10}  (no wakeup measured)", 0);
    }
    let p = |l: &str| s.percentile(l).map_or_else(|| "-".into(), ns);
    let mut row = format!(
        "{label:<4}{:>10}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>10}",
        s.count,
        ns(s.min_ns),
        nsf(s.avg_ns),
        nsf(s.stddev_ns),
        p("50"),
        p("90"),
        p("99"),
        p("99.9"),
        p("99.99"),
        ns(s.max_ns),
        s.overruns
    );
    if let (Some(a), Some(pct)) = (s.above_threshold, s.above_threshold_pct) {
        row.push_str(&format!("  {a} ({pct:.2}%)"));
    }
    row
}

fn write_windows(out: &mut dyn Write, r: &TimerResult) -> io::Result<()> {
    let Some(len) = r.options.window_ns else { return Ok(()) };
    for c in r.cpus.iter().filter(|c| !c.windows.is_empty()) {
        writeln!(out, "CPU {} windows of {}:", c.cpu, ns(len))?;
        writeln!(
            out,
            "  {:>9}{:>9}{:>10}{:>10}{:>11}{:>23}{:>23}",
            "offset", "count", "mean", "stddev", "above thr", "window [min - max]", "global [min - max]"
        )?;
        for w in &c.windows {
            let above = w.above_threshold_pct.map_or_else(|| "-".into(), |p| format!("{p:.2}%"));
            let window =
                if w.count == 0 { "(stalled)".to_string() } else { format!("[{} - {}]", ns(w.min_ns), ns(w.max_ns)) };
            writeln!(
                out,
                "  {:>9}{:>9}{:>10}{:>10}{:>11}{:>23}{:>23}",
                format!("+{}", ns(w.offset_ns)),
                w.count,
                nsf(w.mean_ns),
                nsf(w.stddev_ns),
                above,
                window,
                format!("[{} - {}]", ns(w.global_min_ns), ns(w.global_max_ns))
            )?;
        }
        if c.windows_dropped > 0 {
            writeln!(out, "  ({} later windows were not kept)", c.windows_dropped)?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Bin edges in the 1-2-5 sequence from 100 ns to 100 s.
fn edges() -> Vec<u64> {
    let mut e = Vec::new();
    let mut decade = 100u64;
    while decade <= 100_000_000_000 {
        e.extend([decade, 2 * decade, 5 * decade]);
        decade *= 10;
    }
    e
}

/// Counts of `buckets` per 1-2-5 bin: index `i` holds values in `[edges[i], edges[i+1])`, with values
/// below the first edge in bin 0.
fn bin_counts(buckets: &[Bucket], edges: &[u64]) -> Vec<u64> {
    let mut counts = vec![0u64; edges.len()];
    for b in buckets {
        let i = edges.partition_point(|&e| e <= b.low_ns).saturating_sub(1);
        counts[i] += b.count;
    }
    counts
}

/// A bar whose length grows with log(1 + count), at least one character for a non-zero count.
fn bar(count: u64, max: u64) -> String {
    if count == 0 || max == 0 {
        return String::new();
    }
    let len = (BAR_WIDTH * (1.0 + count as f64).ln() / (1.0 + max as f64).ln()).round().max(1.0) as usize;
    "#".repeat(len)
}

fn write_histogram(out: &mut dyn Write, r: &TimerResult) -> io::Result<()> {
    let edges = edges();
    let total = bin_counts(&r.all.histogram, &edges);
    let (Some(first), Some(last)) = (total.iter().position(|&c| c > 0), total.iter().rposition(|&c| c > 0)) else {
        return Ok(());
    };
    let per_cpu: Vec<Vec<u64>> = r.cpus.iter().map(|c| bin_counts(&c.stats.histogram, &edges)).collect();
    let max = total.iter().copied().max().unwrap_or(0);
    writeln!(out, "Latency histogram (bar length is log-scaled: one '#' can be a single wakeup)")?;
    let mut head = format!("  {:<19}", "latency");
    for c in &r.cpus {
        head.push_str(&format!("{:>10}", format!("CPU {}", c.cpu)));
    }
    if r.cpus.len() > 1 {
        head.push_str(&format!("{:>10}", "all"));
    }
    writeln!(out, "{head}")?;
    for i in first..=last {
        let upper = edges.get(i + 1).map_or_else(|| "+inf".to_string(), |&e| ns(e));
        let mut row = format!("  {:<19}", format!("[{}, {})", ns(edges[i]), upper));
        for counts in &per_cpu {
            row.push_str(&format!("{:>10}", counts[i]));
        }
        if r.cpus.len() > 1 {
            row.push_str(&format!("{:>10}", total[i]));
        }
        row.push_str(&format!("  {}", bar(total[i], max)));
        writeln!(out, "{}", row.trim_end())?;
    }
    writeln!(out)
}

fn write_worst(out: &mut dyn Write, r: &TimerResult) -> io::Result<()> {
    if r.cpus.iter().all(|c| c.worst.is_empty()) {
        return Ok(());
    }
    writeln!(out, "Worst wakeups (times are CLOCK_MONOTONIC, as in a trace with the mono clock):")?;
    for c in &r.cpus {
        for w in c.worst.iter().take(WORST_SHOWN) {
            let missed = if w.missed_periods > 0 {
                format!(", missed {} period{}", w.missed_periods, if w.missed_periods == 1 { "" } else { "s" })
            } else {
                String::new()
            };
            writeln!(
                out,
                "  CPU {:<3} {:>9} late, due {}.{:09} (+{} into the run){missed}",
                c.cpu,
                ns(w.latency_ns),
                w.expected_ns / 1_000_000_000,
                w.expected_ns % 1_000_000_000,
                ns(w.expected_ns.saturating_sub(r.start_monotonic_ns)),
            )?;
        }
    }
    writeln!(out)
}

fn write_verdict(out: &mut dyn Write, r: &TimerResult) -> io::Result<()> {
    let Some(t) = r.options.threshold_ns else { return Ok(()) };
    let over: Vec<String> = r
        .cpus
        .iter()
        .filter(|c| c.stats.above_threshold.is_some_and(|a| a > 0))
        .map(|c| {
            let n = c.stats.above_threshold.unwrap_or(0);
            format!("CPU {} {} (max {})", c.cpu, crate::human::counted(n, "time", "times"), ns(c.stats.max_ns))
        })
        .collect();
    if over.is_empty() {
        writeln!(out, "No wakeup was later than the threshold of {}.", ns(t))
    } else {
        writeln!(out, "Threshold {} exceeded: {}.", ns(t), over.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{
        CpuId, CpuList, CpuTimer, LatencyHistogram, RunMetadata, TimerOptions, WakeupSample, WindowRow,
    };

    fn result() -> TimerResult {
        let mut r = TimerResult::new(
            RunMetadata { duration_ns: 3_000_000_000, kernel_release: "6.18.0".into(), ..RunMetadata::default() },
            TimerOptions {
                cpus: CpuList(vec![CpuId(0), CpuId(1)]),
                interval_ns: 1_000_000,
                priority: 95,
                threshold_ns: Some(1_000_000),
                window_ns: Some(1_000_000_000),
                ..TimerOptions::default()
            },
        );
        r.start_monotonic_ns = 100_000_000_000;
        let mut all = LatencyHistogram::new();
        for cpu in 0..2u32 {
            let mut h = LatencyHistogram::new();
            h.record_n(Nanos(4_000), 2_990);
            if cpu == 1 {
                h.record(Nanos(2_050_000));
            }
            all.merge(&h);
            r.cpus.push(CpuTimer {
                cpu: CpuId(cpu),
                stats: TimerStats::from_histogram(&h, u64::from(cpu) * 2, Some(Nanos::from_ms(1))),
                windows: vec![WindowRow {
                    count: 1000,
                    mean_ns: 4_000.0,
                    min_ns: 4_000,
                    max_ns: 4_000,
                    above_threshold: Some(0),
                    above_threshold_pct: Some(0.0),
                    global_min_ns: 4_000,
                    global_max_ns: 4_000,
                    ..WindowRow::default()
                }],
                windows_dropped: 0,
                worst: vec![WakeupSample {
                    seq: 7,
                    expected_ns: 101_500_000_000,
                    actual_ns: 101_502_050_000,
                    latency_ns: 2_050_000,
                    missed_periods: 2,
                }],
            });
        }
        r.all = TimerStats::from_histogram(&all, 2, Some(Nanos::from_ms(1)));
        r.warnings.push("mlockall failed".into());
        r
    }

    fn render(r: &TimerResult) -> String {
        let mut buf = Vec::new();
        write_timer(&mut buf, r).expect("render");
        String::from_utf8(buf).expect("utf8")
    }

    #[test]
    fn renders_table_windows_histogram_worst_and_verdict() {
        let text = render(&result());
        assert!(text.starts_with("latscope timer: CPU 0-1 every 1ms, SCHED_FIFO 95, ran 3s"), "{text}");
        assert!(text.contains("note: mlockall failed"));
        let all = text.lines().find(|l| l.starts_with("all ")).expect("all row");
        assert!(all.contains("5981") && all.contains("1 (0.02%)"), "{all}");
        assert!(text.contains("CPU 1 windows of 1s:"));
        // The single outlier keeps a visible bar next to the 5980 fast wakeups.
        let outlier = text.lines().find(|l| l.trim_start().starts_with("[2ms, 5ms)")).expect("outlier bin");
        assert!(outlier.ends_with(" #####") || outlier.contains('#'), "{outlier}");
        let fast = text.lines().find(|l| l.trim_start().starts_with("[2us, 5us)")).expect("fast bin");
        assert!(fast.matches('#').count() == 40, "{fast}");
        assert!(text.contains("due 101.500000000 (+1.5s into the run), missed 2 periods"), "{text}");
        assert!(text.contains("Threshold 1ms exceeded: CPU 1 1 time (max 2.05ms)."), "{text}");
    }

    #[test]
    fn a_timerlat_run_shows_the_thread_latency_first_and_the_irq_latency_beside_it() {
        let mut r = result();
        r.options.backend = TimerBackend::Timerlat;
        let mut h = LatencyHistogram::new();
        h.record_n(Nanos(3_000), 10);
        let irq_cpu = CpuTimer { cpu: CpuId(1), stats: TimerStats::from_histogram(&h, 0, None), ..CpuTimer::default() };
        r.irq = Some(latscope_model::IrqLatency { cpus: vec![irq_cpu], all: TimerStats::from_histogram(&h, 0, None) });
        let text = render(&r);
        assert!(text.starts_with("latscope timer (the kernel's timerlat tracer): CPU 0-1 every 1ms, timerlat threads"));
        let thread = text.find("Thread latency (timerlat's thread context").expect("thread table");
        let irq = text.find("Timer IRQ latency (timerlat's IRQ context").expect("IRQ table");
        assert!(thread < irq, "{text}");
        let irq_row = text[irq..].lines().find(|l| l.starts_with("1 ")).expect("CPU 1 IRQ row");
        assert!(irq_row.contains("10") && irq_row.contains("3us"), "{irq_row}");
        // The user-space backend's text has neither heading.
        assert!(!render(&result()).contains("Timer IRQ latency"));
    }

    #[test]
    fn empty_bins_between_clusters_are_shown() {
        let text = render(&result());
        let lines: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with('[')).collect();
        // From [2us, 5us) to [2ms, 5ms): 10 bins, the empty ones included to show the gap.
        assert_eq!(lines.iter().filter(|l| l.contains(", ")).count(), 10, "{lines:#?}");
    }

    #[test]
    fn bars_are_log_scaled() {
        assert_eq!(bar(0, 100), "");
        assert_eq!(bar(1, 1_000_000).len(), 2);
        assert_eq!(bar(1_000_000, 1_000_000).len(), 40);
        assert_eq!(bin_counts(&[Bucket { low_ns: 50, high_ns: 50, count: 3 }], &edges())[0], 3);
    }
}
