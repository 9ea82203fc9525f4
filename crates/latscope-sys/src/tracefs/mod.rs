//! tracefs: finding/mounting it, private instances, saved-and-restored knobs, the latency event set,
//! per-CPU raw page readers, lost-event counters, markers, the capture session (its `.dat` writer is
//! `latscope_decode::dat::write_dat_v6`, next to the reader) and the trigger that marks, holds and freezes
//! it from a measurement's progress.

mod capture;
mod events;
mod graph;
pub(crate) mod instance;
mod knobs;
mod marker;
pub(crate) mod mount;
mod reader;
mod stacks;
mod stats;
mod tracers;
mod trigger;
mod wakeup_tracer;

pub(crate) use capture::read_text;
pub use capture::{
    kallsyms_text, Capture, CaptureConfig, CaptureData, CaptureReport, CpuCapture, FormatText, StartError, TraceFormats,
};
pub use events::{EventSelection, EventSpec};
pub use graph::{graph_available, graph_config, graph_missing, GRAPH_DEPTH};
pub use instance::StaleInstance;
pub(crate) use knobs::Knobs;
pub use marker::{Marker, MAX_MARK};
pub(crate) use mount::TraceFs;
pub use reader::{RawPage, Retention};
pub use stacks::{StackSpec, STACKS_NEED};
pub use stats::CpuStats;
pub(crate) use tracers::{current_tracers, lacking};
pub use trigger::{CpuProgress, Trigger, HOLD_AFTER, HOLD_BEFORE};
pub use wakeup_tracer::{wakeup_tracer_available, wakeup_tracer_missing, WakeupTrace, WakeupTracer};

/// Removes the instances of latscope runs whose process is gone (a run killed with SIGKILL leaves its
/// instance tracing), from the tracefs already mounted; nothing is mounted. What every measuring command does
/// before it measures, traced or not.
pub fn remove_stale_instances() -> Vec<StaleInstance> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    match mount::tracefs_mounts(&mounts).into_iter().find(|p| p.join("instances").is_dir()) {
        Some(root) => instance::remove_stale(&root),
        None => Vec::new(),
    }
}

/// The instances of latscope runs whose process still runs (`latscope-<pid>`), with that pid; this
/// process's own included.
pub fn live_latscope_instances() -> Vec<(String, u32)> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let Some(root) = mount::tracefs_mounts(&mounts).into_iter().find(|p| p.join("instances").is_dir()) else {
        return Vec::new();
    };
    let mut out: Vec<(String, u32)> = std::fs::read_dir(root.join("instances"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = instance::owner_pid(&name)?;
            std::path::Path::new(&format!("/proc/{pid}")).exists().then_some((name, pid))
        })
        .collect();
    out.sort();
    out
}
