//! What `latscope decode` prints reads back as the same events: every text fixture decoded, written as
//! ftrace text (`report::ftrace_text`) and decoded again gives the events it started from.

use latscope_decode::{decode_bytes, decode_file};
use latscope_model::{CpuId, Event, EventKind, Flags, Nanos, TaskName};
use latscope_report::ftrace_text::write_ftrace;
use std::path::PathBuf;

fn render(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        write_ftrace(&mut out, e).expect("write to memory");
    }
    out
}

fn reread(events: &[Event]) -> Vec<Event> {
    let text = render(events);
    let t = decode_bytes("rendered", &text).unwrap_or_else(|e| panic!("re-read: {e}"));
    assert!(t.warnings.is_empty(), "{:?}\n{}", t.warnings, String::from_utf8_lossy(&text));
    t.events
}

#[test]
fn every_text_fixture_survives_a_re_render() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut checked = 0;
    for dir in ["events", "latency", "explain", "pasted", "systrace", "tracecmd-report", "hwlat", "seeds"] {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(root.join(dir)).expect("fixture dir").map(|e| e.expect("entry").path()).collect();
        files.sort();
        for path in files {
            let Ok(t) = decode_file(&path) else { continue };
            // function_graph text keeps its own layout when re-rendered; its events carry no task.
            if t.events.is_empty() || t.events.iter().any(|e| e.pid < 0 && !matches!(e.kind, EventKind::Lost { .. })) {
                continue;
            }
            let again = reread(&t.events);
            assert_eq!(again.len(), t.events.len(), "{}: event count", path.display());
            for (i, (a, b)) in t.events.iter().zip(&again).enumerate() {
                assert_eq!(a, b, "{} event {i}", path.display());
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} fixtures checked");
}

/// An event that names no task (pid -1, as function_graph lines and lost-event markers carry) prints as
/// `<...>--1` and reads back as pid -1 without a name, not as a task `<...>-` with pid 1.
#[test]
fn an_event_without_a_task_keeps_pid_minus_one() {
    let e = Event {
        ts: Nanos(1_000_000_123),
        cpu: CpuId(1),
        pid: -1,
        tgid: None,
        comm: TaskName::EMPTY,
        flags: Flags::default(),
        kind: EventKind::Print { ip: None, text: "x".into() },
    };
    let again = reread(std::slice::from_ref(&e));
    assert_eq!(again, [e]);
}
