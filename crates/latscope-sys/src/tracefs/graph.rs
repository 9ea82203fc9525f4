//! The function_graph tracer beside a measurement (`timer --trace --graph`): whether the kernel has it, and
//! the capture that runs it on the measured CPUs only.
//!
//! function_graph runs only in the top-level tracing directory on the kernels latscope is tested on (Debian's
//! 6.1: an instance's `available_tracers` lists `function nop`, and writing `function_graph` to its
//! `current_tracer` is EINVAL), so the capture records there ([`CaptureConfig::top_level`]): every top-level
//! file it writes is saved first and written back on finish, error, drop and SIGINT/SIGTERM (the binary's
//! signals end the run normally), and a top-level tracer already in use is refused. A SIGKILL leaves the
//! tracer running: `echo nop > /sys/kernel/tracing/current_tracer` stops it.

use super::capture::CaptureConfig;
use super::events::EventSelection;
use super::mount::TraceFs;
use super::reader::Retention;
use latscope_model::{CpuList, Nanos};
use std::path::Path;

/// The graph depth recorded (`max_graph_depth`): see [`graph_config`].
pub const GRAPH_DEPTH: u32 = 0;

/// Why this kernel cannot trace function graphs, or `None` when it can.
pub fn graph_missing(root: &Path) -> Option<String> {
    super::lacking(root, "function_graph").map(|tracers| {
        format!(
            "this kernel has no function_graph tracer (available_tracers: {tracers}): it needs \
             CONFIG_FUNCTION_GRAPH_TRACER=y; run --trace without --graph (the event trace still explains the worst \
             wakeups), or on a kernel that has it (e.g. Debian's linux-image-amd64 or linux-image-rt-amd64)"
        )
    })
}

/// Whether function_graph can run here: `Err` says why not and what to use instead.
pub fn graph_available() -> Result<(), String> {
    let fs = TraceFs::open().map_err(|m| format!("tracefs is not usable: {m}"))?;
    graph_missing(fs.root()).map_or(Ok(()), Err)
}

/// The capture of `--trace --graph`: the default latency events and function_graph in the top-level buffer,
/// on `cpus` only (`tracing_cpumask`: under emulation, function_graph on every CPU slows the machine tens of
/// times; one CPU is what the diff needs), interrupts included (`funcgraph-irqs`: the timer interrupt is
/// what a wakeup waits for), every depth (`max_graph_depth` 0: an interrupt taken deep inside a system call
/// nests below it, and a depth limit cuts it off).
pub fn graph_config(cpus: &CpuList, span: Nanos, max_bytes: usize) -> CaptureConfig {
    CaptureConfig {
        cpus: Some(cpus.clone()),
        events: EventSelection::Default,
        retention: Retention::Window { span, max_bytes },
        tracer: Some("function_graph".into()),
        tracer_knobs: vec![
            ("max_graph_depth".into(), GRAPH_DEPTH.to_string()),
            ("options/funcgraph-irqs".into(), "1".into()),
        ],
        top_level: true,
        ..CaptureConfig::default()
    }
}
