//! `timer --wakeup-tracer`: the kernel's wakeup latency tracer (`wakeup_rt`, `wakeup_dl`) run beside the
//! measurement in latscope's own instance, and the worst wakeup it kept read into the result. Wiring only: the
//! tracer is sys's [`WakeupTracer`], the reading analyze's [`kernel_wakeup`].

use crate::error::CliError;
use latscope_analyze::kernel_wakeup::kernel_wakeup;
use latscope_model::{KernelWakeup, Nanos};
use latscope_sys::tracefs::{wakeup_tracer_available, WakeupTracer};

/// `--wakeup-tracer`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tracer {
    /// wakeup_rt: real-time and deadline tasks
    Rt,
    /// wakeup_dl: deadline tasks only
    Dl,
}

impl Tracer {
    /// The kernel's name of the tracer.
    pub fn name(self) -> &'static str {
        match self {
            Tracer::Rt => "wakeup_rt",
            Tracer::Dl => "wakeup_dl",
        }
    }
}

/// Starts the tracer before the measurement (`function_trace`: with `options/function-trace` on); a kernel
/// without it is refused in one line.
pub fn start(t: Tracer, function_trace: bool) -> Result<WakeupTracer, CliError> {
    let flag = format!(
        "--wakeup-tracer {}",
        match t {
            Tracer::Rt => "rt",
            Tracer::Dl => "dl",
        }
    );
    wakeup_tracer_available(t.name()).map_err(|why| CliError(format!("{flag}: {why}")))?;
    WakeupTracer::start(t.name(), function_trace).map_err(|e| CliError(format!("{flag}: {e}")))
}

/// Stops the tracer and reads the worst wakeup it kept; `ours` tells whether a woken task (pid, name) is one of
/// the run's measuring threads. A trace that cannot be read is a note, not the end of the run.
pub fn finish(tracer: WakeupTracer, ours: impl Fn(i32, &str) -> bool) -> KernelWakeup {
    let ran_in = tracer.ran_in().to_string();
    let trace = match tracer.finish() {
        Ok(t) => t,
        Err(e) => {
            return KernelWakeup {
                ran_in,
                notes: vec![format!("the tracer's trace could not be read: {e}")],
                ..KernelWakeup::default()
            };
        }
    };
    let mut k = match latscope_decode::decode_bytes("trace", trace.text.as_bytes()) {
        Ok(d) => kernel_wakeup(d.info.latency.as_ref(), &d.events),
        Err(e) => KernelWakeup {
            notes: vec![format!("the tracer's trace could not be decoded: {e}")],
            ..KernelWakeup::default()
        },
    };
    if k.tracer.is_empty() {
        k.tracer = trace.tracer.clone();
    }
    // The header's latency is rounded to microseconds, as is tracing_max_latency: a header without a
    // latency (an empty trace) takes the file's.
    if k.latency == Nanos::ZERO {
        k.latency = Nanos::from_us(trace.max_latency_us.unwrap_or(0));
    }
    k.ran_in = trace.ran_in;
    k.function_trace = trace.function_trace;
    k.ours = k.task.as_ref().is_some_and(|t| ours(t.pid, &t.comm));
    k.notes.extend(trace.notes);
    k
}
