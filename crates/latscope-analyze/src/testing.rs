//! Test helper: builds small hand-written event timelines without a decoder.

use latscope_model::{CpuId, Event, EventKind, Flags, Nanos, Pid};

/// One event at `ts` ns on `cpu`, current task `comm`/`pid`, no flags column.
pub fn ev(ts: u64, cpu: u32, comm: &str, pid: Pid, kind: EventKind) -> Event {
    Event { ts: Nanos(ts), cpu: CpuId(cpu), pid, tgid: None, comm: comm.into(), flags: Flags::default(), kind }
}

/// A function-graph entry at `depth`.
pub fn graph_entry(depth: u32, func: &str) -> EventKind {
    EventKind::GraphEntry { depth, func: func.into() }
}

/// A function-graph call without callees, of `ns` ns.
pub fn graph_leaf(depth: u32, func: &str, ns: u64) -> EventKind {
    EventKind::GraphLeaf { depth, func: func.into(), duration: Some(Nanos(ns)) }
}

/// A function-graph return after `ns` ns.
pub fn graph_exit(depth: u32, ns: u64) -> EventKind {
    EventKind::GraphExit { depth, func: None, duration: Some(Nanos(ns)) }
}

/// Decodes a small hand-written ftrace text timeline with the real decoder (header lines optional).
pub fn trace(text: &str) -> Vec<Event> {
    let t = latscope_decode::decode_bytes("test-timeline", text.as_bytes()).expect("the timeline decodes");
    assert!(t.warnings.is_empty(), "timeline lines not understood: {:?}", t.warnings);
    t.events
}
