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
    let inject = std::fs::read_to_string(fixture("debian-6.1.0-56-rt-amd64-qemu-osnoise-spins.txt")).expect("inject");
    let longest = inject
        .lines()
        .skip(1)
        .filter_map(|l| {
            let v: Vec<u64> = l.split_whitespace().filter_map(|t| t.parse().ok()).collect();
            (v.len() == 2).then(|| v[1] - v[0])
        })
        .max()
        .expect("spins");
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
