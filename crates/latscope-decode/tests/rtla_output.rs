//! rtla's own outputs (#19 item 14): `rtla timerlat top` and `hist` tables and the timerlat
//! auto-analysis, as printed and as pasted (tabs lost on a web page, no-break spaces and a `> ` quote in
//! a mail, a share wrapped before its `%)`).

use latscope_decode::import::rtla::{is_rtla, parse};
use latscope_model::{CpuId, Nanos, RtlaMode, RtlaOutput, RtlaTool};
use std::path::PathBuf;

fn read(rel: &str) -> RtlaOutput {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rtla-output").join(rel);
    let text = std::fs::read_to_string(&p).expect("fixture");
    assert!(is_rtla(&text), "{rel} not recognised as rtla output");
    parse(rel, &text).expect("parses")
}

fn ns(us: f64) -> Nanos {
    Nanos((us * 1000.0).round() as u64)
}

#[test]
fn top_with_auto_analysis_reads_every_cpu_and_the_blocking_thread() {
    let o = read("timerlat-top-aa-doc-6.x.txt");
    assert_eq!(o.mode, RtlaMode::Top);
    assert_eq!(o.duration.as_deref(), Some("0 00:00:12"));
    assert_eq!(o.cpus.len(), 23);
    let c23 = o.cpus.iter().find(|c| c.cpu == CpuId(23)).expect("cpu 23");
    let (irq, thr) = (c23.irq.expect("irq"), c23.thread.expect("thread"));
    assert_eq!(
        (irq.count, irq.max, thr.max, thr.avg),
        (12320, Some(Nanos::from_us(28)), Some(Nanos::from_us(41)), Some(Nanos::from_us(11)))
    );
    assert!(o.stopped);
    assert_eq!(o.analyses.len(), 1, "{:?}", o.analyses);
    let a = &o.analyses[0];
    assert_eq!(a.cpu, Some(CpuId(23)));
    assert!(!a.irq_stop);
    let d = a.irq_handler_delay.as_ref().expect("delay");
    assert_eq!((d.duration, d.share), (ns(27.49), Some(65.52)));
    assert_eq!(a.irq_latency, Some(ns(28.13)));
    assert_eq!(a.timerlat_irq.as_ref().map(|p| p.duration), Some(ns(9.59)));
    let b = a.blocking.as_ref().expect("blocking");
    assert_eq!((b.comm.as_str(), b.pid), ("objtool", 49256));
    assert_eq!(b.part.as_ref().map(|p| (p.duration, p.share)), Some((ns(3.79), Some(9.03))));
    assert_eq!(b.stack.len(), 19);
    assert_eq!((b.stack[0].as_str(), b.stack[6].as_str()), ("timerlat_irq", "_raw_spin_unlock_irqrestore"));
    assert_eq!(a.total, Some(ns(41.96)));
    assert_eq!(o.idle_irq_max, Some((ns(17.48), CpuId(4))));
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

#[test]
fn hist_reads_columns_and_summary_per_cpu() {
    let o = read("timerlat-hist-doc-6.x.txt");
    assert_eq!(o.mode, RtlaMode::Hist);
    assert_eq!(o.duration.as_deref(), Some("0 00:10:00"));
    assert_eq!(o.columns.len(), 10);
    assert_eq!(o.buckets.len(), 47);
    assert_eq!(o.buckets[1], (1, vec![318327, 35487, 388149, 30024, 94531, 48382, 83082, 71078, 388026, 55730]));
    assert_eq!(o.cpus.len(), 5);
    let c1 = &o.cpus[1];
    assert_eq!(c1.cpu, CpuId(1));
    let t = c1.thread.expect("thread");
    assert_eq!(
        (t.count, t.min, t.avg, t.max, t.over),
        (600002, Some(Nanos::from_us(1)), Some(Nanos::from_us(5)), Some(Nanos::from_us(58)), 0)
    );
    assert_eq!(c1.irq.and_then(|s| s.max), Some(Nanos::from_us(15)));
    assert!(o.analyses.is_empty() && !o.stopped);
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

#[test]
fn hist_with_user_columns_an_empty_cpu_and_tabbed_auto_analysis() {
    let o = read("timerlat-hist-user-aa-idle-tabs-2024.txt");
    assert_eq!(o.cpus.len(), 2);
    let c2 = &o.cpus[1];
    assert_eq!(c2.cpu, CpuId(2));
    let u = c2.user.expect("user column");
    // rtla printed ~0 (18446744073709551615) as the minimum of a column without samples.
    assert_eq!((u.count, u.min, u.max), (0, None, None));
    assert_eq!(o.cpus[0].user.and_then(|s| s.max), Some(Nanos::from_us(36)));
    assert_eq!(o.analyses.len(), 1);
    let a = &o.analyses[0];
    assert_eq!(a.cpu, None, "this rtla printed no `## CPU` line");
    assert!(a.exit_from_idle);
    assert_eq!(a.irq_handler_delay.as_ref().map(|p| (p.duration, p.share)), Some((ns(48.21), Some(91.09))));
    let b = a.blocking.as_ref().expect("blocking");
    assert_eq!((b.comm.as_str(), b.pid), ("swapper/2", 0));
    assert_eq!(a.total, Some(ns(52.93)));
    // The idle line was glued to the total line in the mail.
    assert_eq!(o.idle_irq_max, Some((ns(49.11), CpuId(2))));
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

#[test]
fn auto_analysis_with_tabs_lost_reads_irq_interference() {
    let o = read("timerlat-aa-tabs-lost-webpaste-2024.txt");
    assert_eq!(o.mode, RtlaMode::AutoAnalysis);
    let a = &o.analyses[0];
    assert_eq!(a.cpu, Some(CpuId(3)));
    let b = a.blocking.as_ref().expect("blocking");
    assert_eq!((b.comm.as_str(), b.pid, b.part.as_ref().map(|p| p.duration)), ("insync", 4048, Some(ns(1223.16))));
    let irqs = a.irqs.as_ref().expect("irq interference");
    assert_eq!((irqs.duration, irqs.share), (ns(4.93), Some(0.40)));
    assert_eq!(irqs.entries.len(), 1);
    assert_eq!(
        (irqs.entries[0].name.as_str(), irqs.entries[0].id, irqs.entries[0].duration),
        ("local_timer", 236, ns(4.93))
    );
    assert_eq!(a.total, Some(ns(1235.47)));
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

#[test]
fn quoted_auto_analysis_with_no_break_spaces_and_a_wrapped_share() {
    let o = read("timerlat-aa-irq-nbsp-quoted-wrapped-2025.txt");
    assert!(o.stopped);
    let a = &o.analyses[0];
    assert_eq!(a.cpu, Some(CpuId(1)));
    assert!(a.irq_stop, "stopped on the IRQ latency");
    assert_eq!(a.irq_handler_delay.as_ref().map(|p| (p.duration, p.share)), Some((Nanos::ZERO, Some(0.0))));
    assert_eq!(a.irq_latency, Some(ns(709.25)));
    let b = a.blocking.as_ref().expect("blocking");
    assert_eq!((b.comm.as_str(), b.pid, b.part.is_none()), ("ip", 3567, true));
    assert_eq!(b.stack.len(), 21);
    assert_eq!(b.stack[6], "igb_update_mc_addr_list");
    assert_eq!(a.total, Some(ns(709.25)));
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

#[test]
fn an_ftrace_trace_is_not_rtla_output_and_garbage_is_refused() {
    let trace = "# tracer: nop\n          <idle>-0     [000] d.h1.  1.000000: irq_handler_entry: irq=1 name=x\n";
    assert!(!is_rtla(trace));
    let e = parse("x.txt", "IRQ handler delay: nonsense\n").expect_err("nothing read");
    assert!(e.to_string().contains("rtla timerlat"), "{e}");
}

/// Found by the `import` fuzz target: a timerlat histogram whose rows hold fewer values than its header
/// has columns indexed past the row (a panic); now the missing values are unknown.
#[test]
fn short_histogram_rows_do_not_panic() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/regressions/rtla-crash-b4855305.txt");
    let bytes = std::fs::read(&p).expect("regression input");
    let text = String::from_utf8_lossy(&bytes);
    let _ = is_rtla(&text);
    // An answer, either way: read with what is there, or a clear error naming the file.
    match parse("crash.txt", &text) {
        Ok(_) => {}
        Err(e) => assert!(e.to_string().starts_with("crash.txt"), "{e}"),
    }
}

/// `rtla osnoise top` (kernel docs): one row per CPU with the noise and each source's count.
#[test]
fn osnoise_top_reads_noise_and_its_sources_per_cpu() {
    let o = read("osnoise-top-doc-6.x.txt");
    assert_eq!((o.tool, o.mode), (RtlaTool::Osnoise, RtlaMode::Top));
    assert_eq!(o.duration.as_deref(), Some("0 00:01:00"));
    assert_eq!(o.cpus.iter().map(|c| c.cpu.0).collect::<Vec<_>>(), [0, 1, 2, 3]);
    let n = o.cpus[1].noise.expect("noise row");
    assert_eq!(
        (n.periods, n.runtime, n.noise, n.max_period_noise, n.max_single),
        (59, Nanos::from_us(53_100_000), Nanos::from_us(338_339), Nanos::from_us(8092), Nanos::from_us(24))
    );
    assert!((n.available_pct - 99.36282).abs() < 1e-9);
    assert_eq!((n.hw, n.nmi, n.irq, n.softirq, n.thread), (399, 0, Some(53130), Some(1448), Some(31)));
    assert!(o.cpus.iter().all(|c| c.irq.is_none() && c.thread.is_none()));
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

/// `rtla hwnoise` (kernel docs): the same table without the IRQ, softirq and thread columns.
#[test]
fn hwnoise_reads_hardware_and_nmi_counts() {
    let o = read("hwnoise-doc-6.x.txt");
    assert_eq!((o.tool, o.mode), (RtlaTool::Hwnoise, RtlaMode::Top));
    assert_eq!(o.duration.as_deref(), Some("0 00:10:00"));
    assert_eq!(o.cpus.len(), 7);
    let n = o.cpus[2].noise.expect("cpu 3");
    assert_eq!(
        (o.cpus[2].cpu, n.noise, n.max_single, n.hw, n.nmi),
        (CpuId(3), Nanos::from_us(86), Nanos::from_us(3), 6, 75)
    );
    assert_eq!((n.irq, n.softirq, n.thread), (None, None, None));
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

/// `rtla osnoise hist` (kernel docs): `CPU-N` columns of single noise durations.
#[test]
fn osnoise_hist_reads_single_noise_durations_per_cpu() {
    let o = read("osnoise-hist-doc-6.x.txt");
    assert_eq!((o.tool, o.mode), (RtlaTool::Osnoise, RtlaMode::Hist));
    assert_eq!(o.cpus.len(), 12);
    assert_eq!(o.buckets.len(), 6);
    let h = o.cpus[11].noise_hist.expect("CPU-011");
    assert_eq!((h.count, h.max, h.over), (54880, Some(Nanos::from_us(50)), 0));
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

/// A row cut short or a value that is not a number is skipped with its line, not misread.
#[test]
fn a_damaged_noise_row_is_skipped_with_its_line() {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rtla-output/osnoise-top-doc-6.x.txt"),
    )
    .expect("fixture");
    let damaged = text.replace("99.36282        8092", "99.36282").replace("290842", "29O842");
    let o = parse("damaged.txt", &damaged).expect("still parses");
    assert_eq!(o.cpus.iter().map(|c| c.cpu.0).collect::<Vec<_>>(), [0, 3]);
    assert_eq!(o.skipped.iter().map(|s| s.0).collect::<Vec<_>>(), [5, 6]);
}

/// The injector's spins beside a recorded rtla output, ns each (`fixtures/rtla-output/*-spins.txt`).
fn spin_lengths(rel: &str) -> Vec<u64> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rtla-output").join(rel);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let v: Vec<u64> = l.split_whitespace().filter_map(|t| t.parse().ok()).collect();
            (v.len() == 2).then(|| v[1] - v[0])
        })
        .collect()
}

/// Real `rtla osnoise top -q` output (rtla 6.1 in the RT guest, a SCHED_FIFO 97 thread spinning 30 ms three
/// times on the measured CPU): its headers wrapped in terminal colour sequences, which rtla writes also with
/// `-q` into a file, are read; the longest single noise is the spin.
#[test]
fn real_osnoise_top_with_colour_sequences_reads_the_spin() {
    let o = read("osnoise-top-6.1-rt-qemu-spin.txt");
    assert_eq!((o.tool, o.mode, o.duration.as_deref()), (RtlaTool::Osnoise, RtlaMode::Top, Some("0 00:00:03")));
    assert_eq!(o.cpus.len(), 1);
    let n = o.cpus[0].noise.expect("CPU 1");
    assert_eq!((o.cpus[0].cpu, n.periods, n.thread), (CpuId(1), 3, Some(242)));
    let spin = *spin_lengths("osnoise-top-6.1-rt-qemu-spin-spins.txt").iter().max().expect("spins");
    assert_eq!(n.max_single, Nanos::from_us(30_605));
    assert!(n.max_single.0.abs_diff(spin) <= spin / 20, "{} vs spin {spin}", n.max_single);
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

/// Real `rtla osnoise hist` (1 ms buckets) of three 30 ms spins: three noises in the 30 ms bucket.
#[test]
fn real_osnoise_hist_counts_each_spin_in_its_bucket() {
    let o = read("osnoise-hist-6.1-rt-qemu-spin.txt");
    assert_eq!((o.tool, o.mode), (RtlaTool::Osnoise, RtlaMode::Hist));
    let spins = spin_lengths("osnoise-hist-6.1-rt-qemu-spin-spins.txt");
    let in_30ms = o.buckets.iter().find(|(b, _)| *b == 30_000).map(|(_, c)| c[0]);
    assert_eq!(in_30ms, Some(spins.len() as u64));
    assert_eq!(o.cpus[0].noise_hist.and_then(|h| h.max), Some(Nanos::from_ms(30)));
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
}

/// Real `rtla timerlat top -q` and `hist` of the same spins: the timerlat thread (FIFO 95) waits behind the
/// FIFO 97 spinner, so the worst thread latency is a spin (TCG adds its own delays).
#[test]
fn real_timerlat_top_and_hist_read_the_thread_waiting_for_the_spin() {
    let o = read("timerlat-top-6.1-rt-qemu-spin.txt");
    assert_eq!((o.tool, o.mode), (RtlaTool::Timerlat, RtlaMode::Top));
    let thread = o.cpus[0].thread.expect("thread");
    let spin = *spin_lengths("timerlat-top-6.1-rt-qemu-spin-spins.txt").iter().max().expect("spins");
    assert_eq!((thread.count, thread.max), (2544, Some(Nanos::from_us(32_029))));
    assert!(thread.max.expect("max").0.abs_diff(spin) <= spin / 20, "vs spin {spin}");
    assert!(o.skipped.is_empty(), "{:?}", o.skipped);
    let h = read("timerlat-hist-6.1-rt-qemu-spin.txt");
    assert_eq!((h.tool, h.mode, h.columns.len()), (RtlaTool::Timerlat, RtlaMode::Hist, 2));
    assert_eq!(h.cpus[0].thread.and_then(|t| t.max), Some(Nanos::from_us(39_257)));
    assert!(h.skipped.is_empty(), "{:?}", h.skipped);
}
