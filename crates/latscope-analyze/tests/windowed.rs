//! The windowed analysis (two streamed passes, one window held at a time) against the whole-trace analysis on
//! every real event trace in fixtures/: the same worst wakeups, decomposed the same way, with the same indices.

use latscope_analyze::analysis::{analyze, AnalyzeOptions};
use latscope_analyze::wakeup::{TaskFilter, WakeupBreakdown, WakeupSelection};
use latscope_analyze::windowed::{analyze_windowed, WindowedAnalysis};
use latscope_model::{Event, TraceInfo, Warning};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn windowed(path: &Path, opts: &AnalyzeOptions) -> WindowedAnalysis {
    let mut stream = |visit: &mut dyn FnMut(&Event)| -> Result<(TraceInfo, Vec<Warning>), String> {
        let s = latscope_decode::visit_file(path, visit).map_err(|e| e.to_string())?;
        Ok((s.info, s.warnings))
    };
    analyze_windowed(&path.display().to_string(), &mut stream, opts, "test".into())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What a breakdown says, as JSON (its sentences are filled later, by the report crate).
fn said(b: &WakeupBreakdown) -> serde_json::Value {
    serde_json::to_value(b).unwrap_or_default()
}

/// The traces with SCHED_FIFO/RR wakeups, sorted time stamps, and no latency-tracer header.
fn event_traces() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["dat", "events", "explain", "tracecmd-report", "live", "systrace"] {
        let Ok(rd) = std::fs::read_dir(fixtures().join(dir)) else { continue };
        for f in rd.flatten() {
            let p = f.path();
            if p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("dat" | "txt")) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn windows_find_and_explain_the_worst_wakeups_as_the_whole_trace_does() {
    compare(&WakeupSelection { task: None, top: 5 });
}

#[test]
fn windows_find_the_worst_ten_and_those_of_one_task_as_the_whole_trace_does() {
    compare(&WakeupSelection { task: None, top: 10 });
    compare(&WakeupSelection { task: Some(TaskFilter::Comm("cyclictest".into())), top: 3 });
}

fn compare(selection: &WakeupSelection) {
    let opts = AnalyzeOptions { selection: selection.clone(), ..Default::default() };
    let mut compared = 0;
    let mut wakeups = 0;
    let mut wrong = Vec::new();
    for path in event_traces() {
        let Ok(trace) = latscope_decode::decode_file(&path) else { continue };
        if trace.info.latency.is_some() || !trace.events.windows(2).all(|w| w[0].ts <= w[1].ts) {
            continue;
        }
        let whole = analyze("t", &trace, &opts);
        let w = windowed(&path, &opts);
        assert_eq!(w.source.events, whole.source.events, "{}", path.display());
        assert_eq!(w.source.span, whole.source.span, "{}", path.display());
        if whole.wakeups.is_empty() && w.worst.is_empty() {
            continue;
        }
        compared += 1;
        wakeups += whole.wakeups.len();
        let a: Vec<_> = whole.wakeups.iter().map(said).collect();
        let b: Vec<_> = w.worst.iter().map(said).collect();
        if a != b {
            let brief = |v: &[WakeupBreakdown]| {
                v.iter().map(|b| format!("{}@{}={}", b.task.pid, b.switch_in, b.latency)).collect::<Vec<_>>().join(" ")
            };
            wrong.push(format!("{}: whole [{}] windows [{}]", path.display(), brief(&whole.wakeups), brief(&w.worst)));
        }
    }
    assert!(wrong.is_empty(), "{selection:?}: {} of {compared} traces differ:\n{}", wrong.len(), wrong.join("\n"));
    assert!(compared >= 5 && wakeups >= 10, "{selection:?}: only {compared} traces with {wakeups} wakeups compared");
}
