//! Imported cyclictest results say what their file says (#19 item 17): the interval, policy and duration
//! a histogram file does not record are unknown, not "every 0ns, SCHED_OTHER, ran 0ns"; a JSON file's
//! start and end times give its duration; per-thread averages keep the precision of "all".

use latscope_decode::import::{load, Loaded};
use latscope_model::{ImportedSetup, TimerResult};
use latscope_report::text::timer::write_timer;
use std::path::Path;

fn timer(rel: &str) -> TimerResult {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let text = std::fs::read_to_string(&p).expect("fixture");
    match load(rel, &text) {
        Ok(Loaded::Timer(t)) => *t,
        _ => panic!("{rel}: not a timer import"),
    }
}

fn text(r: &TimerResult) -> String {
    let mut out = Vec::new();
    write_timer(&mut out, r).expect("render");
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn a_histogram_file_does_not_say_interval_policy_or_duration() {
    let r = timer("cyclictest/vm-6.18-cyclictest-2.40-histfile.txt");
    assert_eq!(r.imported, Some(ImportedSetup { tool: "cyclictest".into(), ..ImportedSetup::default() }));
    let t = text(&r);
    let head = t.lines().next().expect("header");
    assert_eq!(head, "cyclictest (imported): CPU 0-1 unknown interval, policy unknown, duration unknown");
    // The JSON result says the same and reads back.
    let json = serde_json::to_string(&r).expect("json");
    let back: TimerResult = serde_json::from_str(&json).expect("read back");
    assert_eq!(back.imported, r.imported);
}

#[test]
fn a_json_file_gives_its_setup_and_its_real_duration() {
    let r = timer("cyclictest/vm-6.18-cyclictest-2.40.json");
    let i = r.imported.as_ref().expect("imported");
    // `-i 1000 -p 80`, start 21:40:10, end 21:40:12.
    assert_eq!((i.interval_ns, i.priority, i.duration_ns), (Some(1_000_000), Some(80), Some(2_000_000_000)));
    assert_eq!(r.metadata.duration_ns, 2_000_000_000);
    let head = text(&r).lines().next().expect("header").to_string();
    assert_eq!(head, "cyclictest (imported): CPU 0-1 every 1ms, SCHED_FIFO 80, ran 2s");
    // "all" is the threads' mean weighted by their counts (41.19 us x 1996, 38.64 us x 1999), not the
    // histogram's, which counts the overflows at the maximum.
    let want = (41_190.0 * 1996.0 + 38_640.0 * 1999.0) / 3995.0;
    assert!((r.all.avg_ns - want).abs() < 1.0, "{} vs {want}", r.all.avg_ns);
}

#[test]
fn per_thread_averages_keep_the_precision_of_all() {
    // No overflows: each thread's histogram holds every sample, so its mean is cyclictest's before the
    // file rounded it to whole us (`# Avg Latencies: 00013 00010 00011 00010`).
    let r = timer("cyclictest/rpi4-nonrt-stress-histofall-4000buckets.log");
    for c in &r.cpus {
        assert!(c.stats.avg_ns.fract() != 0.0 || c.stats.avg_ns % 1000.0 != 0.0, "cpu {}: {}", c.cpu, c.stats.avg_ns);
    }
    let t = text(&r);
    let row = t.lines().find(|l| l.starts_with("0 ")).expect("cpu 0 row");
    let avg = row.split_whitespace().nth(3).expect("avg column");
    assert!(avg.contains('.'), "{row}");
    let cpu0 = r.cpus[0].stats.avg_ns;
    assert!((12_000.0..14_000.0).contains(&cpu0), "{cpu0}");
}
