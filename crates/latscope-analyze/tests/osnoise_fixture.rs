//! The osnoise tracer's real records (`fixtures/dat/debian-6.1.0-56-rt-amd64-qemu-osnoise*`: Debian's 6.1
//! PREEMPT_RT kernel in a qemu guest, CPU 1, a SCHED_FIFO 97 thread spinning three times and serial console
//! writes): the raw pages (`.dat`) and the kernel's own text of the same buffer decode to the same records,
//! and their accounting names the injected thread with its spin time and the serial port's IRQ.

use latscope_analyze::noise::LoopRun;
use latscope_analyze::osnoise_samples::{OsnoiseSamples, OsnoiseSetup};
use latscope_decode::decode_file;
use latscope_model::event::OsnoiseKind;
use latscope_model::noise_result::{CounterDeltas, NoiseEnvironment, NoiseOptions, NoiseSourceKind};
use latscope_model::{CpuId, Event, EventKind};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dat").join(name)
}

/// The osnoise records of a decoded file, without their timestamps (the text shows microseconds).
fn records(events: &[Event]) -> Vec<(u32, EventKind)> {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Osnoise { .. } | EventKind::OsnoiseSample { .. }))
        .map(|e| (e.cpu.0, e.kind.clone()))
        .collect()
}

fn text() -> String {
    std::fs::read_to_string(fixture("debian-6.1.0-56-rt-amd64-qemu-osnoise.txt")).expect("text fixture")
}

#[test]
fn raw_pages_and_kernel_text_decode_to_the_same_records() {
    let dat = decode_file(&fixture("debian-6.1.0-56-rt-amd64-qemu-osnoise-v7.dat")).expect("dat");
    let txt = decode_file(&fixture("debian-6.1.0-56-rt-amd64-qemu-osnoise.txt")).expect("txt");
    let (a, b) = (records(&dat.events), records(&txt.events));
    // Every record line of the text: 13 periods, 535 IRQ, 309 thread and 376 sample_threshold records.
    assert_eq!(b.len(), 13 + 535 + 309 + 376);
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "record {i}");
    }
    let samples = a.iter().filter(|r| matches!(r.1, EventKind::OsnoiseSample { .. })).count();
    assert_eq!(samples, 13);
    let threshold_counts = a
        .iter()
        .filter(|r| matches!(r.1, EventKind::Osnoise { kind: OsnoiseKind::SampleThreshold, number: Some(_), .. }));
    assert_eq!(threshold_counts.count(), 376, "every sample_threshold has its interference count");
}

#[test]
fn names_the_injected_thread_with_its_spin_and_the_serial_irq() {
    let dat = decode_file(&fixture("debian-6.1.0-56-rt-amd64-qemu-osnoise-v7.dat")).expect("dat");
    let mut s =
        OsnoiseSamples::new(OsnoiseSetup { cpus: vec![CpuId(1)], end: None, gap_capacity: 10_000, stop_above: None });
    for e in &dat.events {
        s.add(e);
    }
    let run = LoopRun { start: dat.events[0].ts, end: dat.events[dat.events.len() - 1].ts, counter_hz: 0.0 };
    let options = NoiseOptions { threshold_ns: 5_000, ..NoiseOptions::default() };
    let rows = s.summarize(run, run.end.saturating_sub(run.start), &options, &NoiseEnvironment::default(), &|_| {
        CounterDeltas::default()
    });
    let cpu = &rows[0];
    let find = |kind, name: &str| {
        cpu.sources
            .iter()
            .find(|x| x.kind == kind && x.name == name)
            .unwrap_or_else(|| panic!("no {kind:?} {name} in {:#?}", cpu.sources))
    };
    // The injector's three spins (CLOCK_MONOTONIC start and end), the longest 30.29 ms: the longest thread
    // noise of latscope-inject is that spin (the IRQs nested in it are not the thread's).
    let longest = spins().iter().map(|&(start, end)| end - start).max().expect("spins");
    let spinner = find(NoiseSourceKind::Thread, "latscope-inject");
    assert_eq!(spinner.number, Some(556));
    assert!(spinner.max_ns.abs_diff(longest) <= longest / 20, "longest noise {} vs spin {longest}", spinner.max_ns);
    assert!(spinner.count >= 3);
    // The serial port's hard IRQ (4) and its IRQ thread, each as often as the kernel printed them.
    let irq = find(NoiseSourceKind::Irq, "ttyS0");
    assert_eq!(irq.number, Some(4));
    assert_eq!(irq.count as usize, text().matches("irq_noise: ttyS0:4 ").count());
    let irq_thread = find(NoiseSourceKind::Thread, "irq/4-ttyS0");
    assert_eq!(irq_thread.count as usize, text().matches("thread_noise: irq/4-ttyS0:100 ").count());
    // Hardware: each noise the osnoise thread saw with no interference behind it.
    let hw = find(NoiseSourceKind::Hardware, "");
    assert_eq!(hw.count as usize, text().matches(" interference 0").count());
    // The tracer's own accounting: 13 periods, the worst single noise 44,447 us (period ending 46.973215).
    let p = cpu.periods.as_ref().expect("periods");
    assert_eq!((p.periods, p.max_single_ns), (13, 44_447_000));
    assert_eq!(p.counts.irq, [40, 48, 31, 35, 39, 25, 33, 48, 28, 27, 61, 64, 70].iter().sum::<u32>());
    // The gaps are the sample_threshold records; the longest is the worst single noise.
    assert_eq!(cpu.gaps.count, 376);
    assert_eq!(cpu.max_gap_ns / 1_000, p.max_single_ns / 1_000);
    assert!(cpu.sources.windows(2).all(|w| w[0].total_ns >= w[1].total_ns), "most time first");
}

/// The spins the injector wrote beside the trace: (start, end) on CLOCK_MONOTONIC, ns.
fn spins() -> Vec<(u64, u64)> {
    let inject = std::fs::read_to_string(fixture("debian-6.1.0-56-rt-amd64-qemu-osnoise-spins.txt")).expect("spins");
    inject
        .lines()
        .skip(1)
        .filter_map(|l| {
            let v: Vec<u64> = l.split_whitespace().filter_map(|t| t.parse().ok()).collect();
            (v.len() == 2).then(|| (v[0], v[1]))
        })
        .collect()
}

fn analysed(name: &str) -> latscope_analyze::analysis::Analysis {
    let t = decode_file(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    latscope_analyze::analysis::analyze(name, &t, &latscope_analyze::analysis::AnalyzeOptions::default())
}

/// `analyze` (#17 item 4) leads with the osnoise verdict: the longest single noise (44.447 ms, the tracer's
/// MAX SINGLE NOISE) and the injected thread that made most of it (its third spin, 26.34 ms by the
/// injector's clock, 25.87 ms of thread noise), the worst period, and the noise by source with the spinner's
/// longest noise its longest spin; the raw pages and the kernel's text of the same buffer say the same.
#[test]
fn analyze_leads_with_the_injected_thread_in_text_and_dat_alike() {
    use latscope_analyze::verdict::VerdictKind;
    use latscope_model::{CauseKind, Nanos};
    let txt = analysed("debian-6.1.0-56-rt-amd64-qemu-osnoise.txt");
    let dat = analysed("debian-6.1.0-56-rt-amd64-qemu-osnoise-v7.dat");
    let spins = spins();
    for a in [&txt, &dat] {
        let v = &a.verdicts[0];
        assert_eq!(v.kind, VerdictKind::Osnoise, "{}", a.source.name);
        let e = &v.explanation;
        assert_eq!((e.cause, e.culprit.pid(), e.cpu), (CauseKind::BlockingTask, Some(556), Some(CpuId(1))));
        assert_eq!(e.culprit.task.as_ref().map(|t| t.comm.to_string()).as_deref(), Some("latscope-inject"));
        assert_eq!((v.magnitude, e.max, e.count), (Nanos(44_447_106), Some(Nanos(25_870_603)), 8));
        // The third spin is the one inside the longest single noise.
        let third = spins[2].1 - spins[2].0;
        assert!(third.abs_diff(25_870_603) <= third / 20, "spin {third} vs thread noise 25870603");
        // Every interference the kernel counted in it (8), and the rest no event accounts for.
        let o = a.osnoise.as_ref().expect("osnoise report");
        let n = o.longest.as_ref().expect("longest");
        assert_eq!(n.within.len(), 8);
        let sum: u64 = n.within.iter().map(|i| i.duration.0).sum();
        assert_eq!(n.unaccounted, Nanos(44_447_106 - sum));
        assert!(e.hint.as_ref().is_some_and(|h| h.remedy.contains("latscope-inject off CPU 1")), "{:?}", e.hint);
        let w = o.worst_period.as_ref().expect("worst period");
        assert_eq!((w.noise, w.runtime), (Nanos::from_us(100_555), Nanos::from_us(130_487)));
        assert!((w.available_pct - 22.93868).abs() < 1e-3, "{}", w.available_pct);
        // The longest interference of any source: the longest spin (30.29 ms) as 30.0 ms of thread noise.
        let l = o.longest_interference.as_ref().expect("longest interference");
        let longest = spins.iter().map(|(a, b)| b - a).max().expect("spins");
        assert_eq!((l.name.as_str(), l.duration), ("latscope-inject", Nanos(30_000_369)));
        assert!(longest.abs_diff(l.duration.0) <= longest / 20, "spin {longest} vs {}", l.duration);
        // The noise by source: as many of each as the kernel printed.
        let cpu = &o.cpus[0];
        let src = |kind, name: &str| cpu.sources.iter().find(|s| s.kind == kind && s.name == name).expect(name);
        let spinner = src(NoiseSourceKind::Thread, "latscope-inject");
        assert_eq!(spinner.max_ns, 30_000_369);
        assert_eq!(spinner.count as usize, text().matches("thread_noise: latscope-inject:556 ").count());
        assert_eq!(src(NoiseSourceKind::Irq, "ttyS0").count as usize, text().matches("irq_noise: ttyS0:4 ").count());
        let hw = src(NoiseSourceKind::Hardware, "");
        assert_eq!(hw.count as usize, text().matches(" interference 0").count());
        assert_eq!((cpu.periods.periods, cpu.noises), (13, 376));
        // The trace lines that prove it: the spin's noise, the single noise, the period.
        let lines: Vec<usize> = v.evidence.iter().map(|l| l.index).collect();
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(v.evidence.iter().any(|l| l.index == n.index));
    }
    // The same verdict from both files (the .dat's lost-events note aside).
    let (a, b) = (&txt.verdicts[0], &dat.verdicts[0]);
    assert_eq!(
        (a.magnitude, a.explanation.cause, &a.explanation.culprit),
        (b.magnitude, b.explanation.cause, &b.explanation.culprit)
    );
    assert_eq!(txt.osnoise.as_ref().map(|o| &o.cpus), dat.osnoise.as_ref().map(|o| &o.cpus));
}

/// A record cut short (the last lines of a truncated file) is a warning naming its line, and no figure.
#[test]
fn a_truncated_osnoise_line_is_a_warning_not_a_figure() {
    let full = text();
    let lines: Vec<&str> = full.lines().collect();
    // Header, one whole noise, then a noise line and a period line cut short.
    let noise = lines.iter().position(|l| l.contains("irq_noise: local_timer")).expect("irq_noise");
    let period = lines.iter().position(|l| l.trim_end().ends_with("0     16")).expect("period");
    let mut cut = lines[..=noise].join("\n");
    cut.push('\n');
    cut.push_str(&lines[noise + 1][..lines[noise + 1].find(" duration").expect("duration") + 13]);
    cut.push('\n');
    cut.push_str(&lines[period][..lines[period].len() - 20]);
    cut.push('\n');
    let t = latscope_decode::decode_bytes("cut.txt", cut.as_bytes()).expect("decode");
    assert!(t.warnings.iter().any(|w| w.location == format!("cut.txt:{}", noise + 2)), "{:?}", t.warnings);
    assert!(t.warnings.iter().any(|w| w.message.contains("osnoise_sample")), "{:?}", t.warnings);
    let a = latscope_analyze::analysis::analyze("cut.txt", &t, &latscope_analyze::analysis::AnalyzeOptions::default());
    let o = a.osnoise.as_ref().expect("osnoise report");
    assert_eq!(o.cpus[0].sources.iter().map(|s| s.count).sum::<u64>(), 1, "only the whole line counts");
    assert_eq!(o.cpus[0].periods.periods, 0);
}
