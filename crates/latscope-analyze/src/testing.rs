//! Test helper: builds small hand-written event timelines without a decoder.

use latscope_model::{CpuId, Event, EventKind, Flags, Nanos, Pid};

/// One event at `ts` ns on `cpu`, current task `comm`/`pid`, no flags column.
pub fn ev(ts: u64, cpu: u32, comm: &str, pid: Pid, kind: EventKind) -> Event {
    Event { ts: Nanos(ts), cpu: CpuId(cpu), pid, tgid: None, comm: comm.into(), flags: Flags::default(), kind }
}
