//! `latscope decode` end to end on fixtures: JSON lines round-trip into events, `--cpu`/`--events` filter,
//! `--stats` counts match the event stream, a non-trace file is exit 1 with a message naming it.

use latscope_model::{Event, EventKind};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn latscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_latscope")).args(args).current_dir(root()).output().expect("run latscope")
}

fn events(args: &[&str]) -> Vec<Event> {
    let out = latscope(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

const SCHED: &str = "fixtures/events/trace_pipe-sched-3.x-doc.txt";

#[test]
fn json_lines_and_filters() {
    let all = events(&["decode", "--format", "json", SCHED]);
    assert_eq!(all.len(), 10);
    assert!(all.iter().all(|e| e.ts.0 > 136_000_000_000));
    let cpu3 = events(&["decode", "--format", "json", "--cpu", "3", SCHED]);
    assert_eq!(cpu3.len(), all.iter().filter(|e| e.cpu.0 == 3).count());
    assert!(!cpu3.is_empty() && cpu3.iter().all(|e| e.cpu.0 == 3));
    let switches = events(&["decode", "--format", "json", "--events", "sched_switch", SCHED]);
    assert_eq!(switches.len(), all.iter().filter(|e| matches!(e.kind, EventKind::SchedSwitch { .. })).count());
    assert!(switches.len() >= 4);
}

#[test]
fn text_lines() {
    let out = latscope(&["decode", "fixtures/seeds/002-preemptirq-irq-events-5.4.161-arm64.txt"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 7);
    assert!(
        text.lines()
            .next()
            .is_some_and(|l| l.starts_with("           <...>-6462    [006] d..1 14372.732649000: irq_disable:")),
        "{text}"
    );
}

#[test]
fn stats_match_the_stream() {
    let rel = "fixtures/systrace/catapult-atrace-tgid-decompressed.txt";
    let all = events(&["decode", "--format", "json", rel]);
    let out = latscope(&["decode", "--stats", "--format", "json", rel]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("stats json");
    assert_eq!(v["schema"], "latscope/1");
    assert_eq!(v["events"].as_u64(), Some(all.len() as u64));
    let cpu1 = all.iter().filter(|e| e.cpu.0 == 1).count() as u64;
    assert_eq!(v["per_cpu"]["1"].as_u64(), Some(cpu1));
    let marks = all.iter().filter(|e| matches!(e.kind, EventKind::Print { .. })).count() as u64;
    assert_eq!(v["per_event"]["print"].as_u64(), Some(marks));
    assert_eq!(v["first_ts"].as_u64(), all.iter().map(|e| e.ts.0).min());
    let text = latscope(&["decode", "--stats", rel]);
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(t.contains(&format!("events:  {}", all.len())) && t.contains("lost events: none reported"), "{t}");
}

#[test]
fn not_a_trace_is_exit_1_naming_the_file() {
    let out = latscope(&["decode", "fixtures/README.md"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fixtures/README.md") && err.contains("not a trace"), "{err}");
    let out = latscope(&["decode", "--cpu", "x-y", SCHED]);
    assert_eq!(out.status.code(), Some(1));
}
