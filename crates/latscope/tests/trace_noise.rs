//! Ground truth for `latscope noise --trace` on this kind of machine: a SCHED_FIFO spinner on CPU 1 is
//! RT-throttled ~50 ms every second (sched_rt_runtime_us=950000), ticks interrupt it, and most short gaps
//! carry no kernel event in a VM. The run must attribute the long gaps to RT throttling, the gaps with a
//! tick to the local timer, report the share with no kernel event, and its causes must add up to the
//! measured noise within 5%. Needs root, tracefs and CPU 1; skips with the reason otherwise (fails under
//! LATSCOPE_REQUIRE_LIVE=1).

use serde_json::Value;
use std::process::Command;

mod live;

use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// How long RT throttling stops a spinner that used its whole budget, ns (`None` when it does not throttle).
fn full_throttle_ns() -> Option<u64> {
    let runtime = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or_default();
    let period = std::fs::read_to_string("/proc/sys/kernel/sched_rt_period_us").unwrap_or_default();
    match (runtime.trim().parse::<i64>(), period.trim().parse::<i64>()) {
        (Ok(r), Ok(p)) if r >= 0 && r < p => Some((p - r) as u64 * 1000),
        _ => None,
    }
}

#[test]
fn noise_trace_attributes_throttling_ticks_and_silent_gaps() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)]) {
        return;
    }
    let _turn = live::turn::take();
    // A normal task always wants CPU 1, so the fair server stops the spinner every period.
    let _normal = live::normal_load::start(latscope_model::CpuId(1));
    let dir = std::env::temp_dir().join(format!("latscope-trace-noise-{}", std::process::id()));
    let out = Command::new(BIN)
        .args(["noise", "-c", "1", "-p", "95", "-D", "3s", "--trace", "-q", "--json", "-", "--report"])
        .arg(dir.join("report"))
        .arg("--perfetto")
        .arg(dir.join("noise.perfetto.json"))
        .output()
        .expect("run latscope noise");
    let report_written = dir.join("report/index.html").is_file() && dir.join("report/result.json").is_file();
    let perfetto = std::fs::read_to_string(dir.join("noise.perfetto.json")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "noise failed: {stderr}");
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(report_written, "no report directory");
    let p: Value = serde_json::from_str(&perfetto).expect("perfetto json");
    assert!(p["traceEvents"].as_array().is_some_and(|e| e.len() > 100), "the Perfetto trace lacks the events");
    let causes = &r["causes"];
    assert!(causes["events"].as_u64().unwrap_or(0) > 100, "too few events: {causes}");
    assert!(stderr.contains("What ran in the gaps"), "{stderr}");
    let cpu = &causes["cpus"][0];
    assert_eq!(cpu["cpu"], 1);
    let list = cpu["causes"].as_array().expect("causes");
    let find = |kind: &str| list.iter().find(|c| c["cause"] == kind);

    // The causes add up to the measured noise.
    let attributed = cpu["attributed_ns"].as_u64().expect("attributed") as f64;
    let measured = cpu["measured_noise_ns"].as_u64().expect("measured") as f64;
    let sum: u64 = list.iter().filter_map(|c| c["magnitude_ns"].as_u64()).sum();
    assert_eq!(sum as f64, attributed);
    assert!((attributed - measured).abs() <= 0.05 * measured, "attributed {attributed} vs measured {measured}");

    // The share with no kernel event is reported, in the JSON and in plain words.
    let silent = cpu["no_kernel_event_pct"].as_f64().expect("no_kernel_event_pct");
    assert!((0.0..=100.0).contains(&silent));
    assert!(stderr.contains("of the gaps had no kernel event"), "{stderr}");
    assert!(stderr.contains("steal time"), "{stderr}");

    // Gaps holding a tick go to the local timer, and those are short (tens of µs, not throttling-long).
    let tick = find("timer_tick").unwrap_or_else(|| panic!("no gap attributed to the timer tick: {cpu}"));
    let (count, total) = (tick["count"].as_u64().expect("count"), tick["magnitude_ns"].as_u64().expect("total"));
    assert!(count >= 10, "only {count} tick gaps in 3 s: {cpu}");
    assert!(total / count < 1_000_000, "tick gaps average {} ns: {cpu}", total / count);

    // Every gap as long as a full throttle (period − runtime, ~50 ms here; ≥ 80% of it) is RT throttling,
    // and the throttling total is at least those gaps. Shorter long gaps are not judged: a throttle of a
    // budget partly used, or a stall of the vCPU (one run here had a 25.9 ms gap holding nothing but a
    // tick, the spinner never switched out: this VM stalls 10-30 ms now and then, see the compare test).
    let Some(full) = full_throttle_ns() else {
        live::skip("the RT throttling part: sched_rt_runtime_us does not throttle on this machine");
        return;
    };
    let top = r["cpus"][0]["gaps"]["top"].as_array().expect("top gaps");
    let long: Vec<u64> = top.iter().filter_map(|g| g["duration_ns"].as_u64()).filter(|d| *d >= full * 4 / 5).collect();
    assert!(long.len() >= 2, "expected ~3 throttling gaps of ~{} ms in 3 s, got {long:?}", full / 1_000_000);
    let rt = find("rt_throttling").unwrap_or_else(|| panic!("no gap attributed to RT throttling: {cpu}"));
    // Shorter throttling (a budget already partly used by other RT work) may add to it, never less.
    assert!(rt["count"].as_u64().unwrap_or(0) >= long.len() as u64, "{cpu}");
    let rt_total = rt["magnitude_ns"].as_u64().expect("total");
    assert!(rt_total >= long.iter().sum::<u64>(), "not every long gap is throttling: {long:?} {cpu}");
    assert_eq!(rt["max_ns"].as_u64(), long.iter().max().copied(), "{cpu}");
    assert_eq!(list[0]["cause"], "rt_throttling", "throttling is the largest cause: {cpu}");
}
