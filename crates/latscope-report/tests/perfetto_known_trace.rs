//! Converts a trace recorded on this VM (trace-cmd v7, sched + irq + timer events) to Perfetto JSON and
//! checks the schema, the nesting, and the slices of a known IRQ and a known task against the times
//! `trace-cmd report -t` prints for the same file.

use latscope_report::perfetto::{check, PerfettoTrace, PID_CPUS};
use serde_json::Value;
use std::path::Path;

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dat/local-6.18-x86_64-sched_irq_timer-v7.dat")
}

fn find<'a>(events: &'a [Value], name: &str, tid: u64, ts_us: f64) -> &'a Value {
    events
        .iter()
        .find(|e| {
            e["ph"] == "X"
                && e["name"] == name
                && e["tid"] == tid
                && (e["ts"].as_f64().unwrap_or(0.0) - ts_us).abs() < 1e-3
        })
        .unwrap_or_else(|| panic!("no slice {name:?} on CPU {tid} at {ts_us} us"))
}

#[test]
fn known_trace_converts_with_irq_and_task_slices() {
    let trace = latscope_decode::decode_file(&fixture()).expect("decode fixture");
    let mut t = PerfettoTrace::new();
    t.add_events(&trace.events);
    let mut out = Vec::new();
    t.write(&mut out).expect("write");
    let doc: Value = serde_json::from_slice(&out).expect("valid JSON");
    let problems = check(&doc);
    assert!(problems.is_empty(), "{} problems, first: {:?}", problems.len(), problems.first());
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    assert!(events.iter().all(|e| e["pid"] == PID_CPUS));

    // trace-cmd report -t: [001] 3174.438956497 irq_handler_entry irq=36 name=virtio1-req.0,
    //                      [001] 3174.438961484 irq_handler_exit irq=36.
    let irq = find(events, "irq 36 virtio1-req.0", 1, 3_174_438_956.497);
    assert!((irq["dur"].as_f64().unwrap_or(0.0) - 4.987).abs() < 1e-3, "{irq}");
    assert_eq!(irq["cat"], "irq");

    // [000] 3173.723293924 sched_switch stress-ng-cpu:8258 ==> memfd:sealed-91:5261 [120],
    // [000] 3173.723328716 sched_switch memfd:sealed-91:5261 S ==> stress-ng-cpu:8258.
    let task = find(events, "memfd:sealed-91 (5261)", 0, 3_173_723_293.924);
    assert!((task["dur"].as_f64().unwrap_or(0.0) - 34.792).abs() < 1e-3, "{task}");
    assert_eq!(task["args"]["prio"], 120);

    // Both CPUs have a named track.
    for cpu in [0, 1] {
        assert!(events.iter().any(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == cpu));
    }
}
