//! The kernel's wakeup latency tracers (`wakeup_rt`, `wakeup_dl`) beside a measurement
//! (`timer --wakeup-tracer`): whether the kernel has them, a run in latscope's own instance (the top level when
//! the kernel's instances cannot run it) with every setting written back, and the max-latency trace it kept.
//!
//! The tracer is set with `options/function-trace` off unless asked (`function_trace`): `../shared/vm-recipe.md`
//! saw a 1 ms SCHED_FIFO task freeze Debian's 6.1 guest with it on under qemu TCG (not reproduced in 3 runs of
//! `scripts/guest/wakeup-rt-function-trace.sh`: README), and it slows every kernel function. `tracing_max_latency`
//! starts at 0, so the trace read
//! at the end is the worst wakeup of the run. Every file written is saved first and written back (the tracer
//! to `nop` before `function-trace`), then the instance is removed: on [`WakeupTracer::finish`], on error, on
//! drop, and so after SIGINT/SIGTERM (the binary's signals end the run normally). A SIGKILL leaves the instance
//! to the next latscope run's clean-up (removing an instance stops its tracer); at the top level it leaves the
//! tracer running: `echo nop > /sys/kernel/tracing/current_tracer`.
//!
//! What the kernel measures: from the wakeup of the highest-priority real-time (`wakeup_rt`: RT and deadline;
//! `wakeup_dl`: deadline only) task woken so far to its switch-in, counting a wakeup only when the woken task
//! outranks the task running where it was woken (a deadline task always). A wakeup delayed by a task of equal
//! or higher priority on its CPU is therefore not measured: that is the scheduler doing its job, not latency.

use super::capture::read_text;
use super::instance::{remove_stale, restore_and_remove, Instance};
use super::knobs::Knobs;
use super::mount::TraceFs;
use crate::SysError;
use std::path::{Path, PathBuf};

/// Why this kernel cannot run `tracer` (`wakeup_rt`, `wakeup_dl`), or `None` when it can.
pub fn wakeup_tracer_missing(root: &Path, tracer: &str) -> Option<String> {
    super::lacking(root, tracer).map(|tracers| {
        format!(
            "this kernel has no {tracer} tracer (available_tracers: {tracers}): it needs CONFIG_SCHED_TRACER=y (e.g. \
             Debian's linux-image-amd64 or linux-image-rt-amd64); measure without --wakeup-tracer"
        )
    })
}

/// Whether `tracer` can run here: `Err` says why not.
pub fn wakeup_tracer_available(tracer: &str) -> Result<(), String> {
    let fs = TraceFs::open().map_err(|m| format!("tracefs is not usable: {m}"))?;
    wakeup_tracer_missing(fs.root(), tracer).map_or(Ok(()), Err)
}

/// What a finished wakeup tracer run left.
#[derive(Debug)]
pub struct WakeupTrace {
    /// The tracer.
    pub tracer: String,
    /// Where it ran (`instances/latscope-…`, or `the top-level tracing directory`).
    pub ran_in: String,
    /// Whether `options/function-trace` was on.
    pub function_trace: bool,
    /// The `trace` file: the latency header and the records of the worst wakeup.
    pub text: String,
    /// `tracing_max_latency` at the end, in µs as the kernel shows it.
    pub max_latency_us: Option<u64>,
    /// What the reader should know (a tracing_thresh in force, a teardown error).
    pub notes: Vec<String>,
}

/// A wakeup latency tracer running; dropping it writes every setting back and removes its instance.
#[derive(Debug)]
pub struct WakeupTracer {
    tracer: String,
    ran_in: String,
    function_trace: bool,
    dir: PathBuf,
    knobs: Option<Knobs>,
    instance: Option<Instance>,
    notes: Vec<String>,
    /// The tracefs root.
    root: PathBuf,
    /// Held for the run: a tracefs latscope mounted is unmounted when dropped.
    tracefs: Option<TraceFs>,
}

impl WakeupTracer {
    /// Starts `tracer` (`wakeup_rt`, `wakeup_dl`) with `tracing_max_latency` 0 and `options/function-trace` as
    /// `function_trace` says. Nothing is left behind when it fails.
    pub fn start(tracer: &str, function_trace: bool) -> Result<WakeupTracer, SysError> {
        let fs = TraceFs::open().map_err(|m| SysError::Invalid(format!("tracefs is not usable: {m}")))?;
        let root = fs.root().to_path_buf();
        if let Some(why) = wakeup_tracer_missing(&root, tracer) {
            return Err(SysError::Invalid(why));
        }
        let mut notes = Vec::new();
        for s in remove_stale(&root) {
            if s.removed.is_ok() {
                notes.push(format!("removed instance {} left by dead process {}", s.name, s.pid));
            }
        }
        let thresh = read_text(&root.join("tracing_thresh")).unwrap_or_default();
        if thresh.trim().parse::<u64>().is_ok_and(|t| t > 0) {
            notes.push(format!(
                "tracing_thresh is {} us: the kernel kept the last wakeup above it, not necessarily the worst",
                thresh.trim()
            ));
        }
        let instance = Instance::create(&root)?;
        let in_instance = super::lacking(instance.path(), tracer).is_none();
        let (dir, ran_in, instance) = if in_instance {
            (instance.path().to_path_buf(), format!("instances/{}", instance.name()), Some(instance))
        } else {
            // This kernel's instances cannot run it (their available_tracers leave it out): the top level, if free.
            drop(instance);
            let current = read_text(&root.join("current_tracer"))?;
            if current.trim() != "nop" {
                return Err(SysError::Invalid(format!(
                    "{tracer} runs only in the top-level tracing directory here and its tracer is in use \
                     (current_tracer is {}); latscope leaves it alone: stop it (echo nop > {}/current_tracer) and \
                     run again",
                    current.trim(),
                    root.display()
                )));
            }
            (root.clone(), "the top-level tracing directory".to_string(), None)
        };
        let mut w = WakeupTracer {
            tracer: tracer.to_string(),
            ran_in,
            function_trace,
            knobs: Some(Knobs::new(&dir)),
            dir,
            instance,
            notes,
            root: root.clone(),
            tracefs: Some(fs),
        };
        w.setup().map_err(|e| w.explain_busy(e))?;
        Ok(w)
    }

    fn setup(&mut self) -> Result<(), SysError> {
        let Some(k) = self.knobs.as_mut() else { return Ok(()) };
        // The tracer takes the wakeup's time from the top-level buffer's clock (the kernel's ftrace_now), and
        // the trace file leaves out the records older than it: the instance's records must carry the same
        // clock (a `mono` instance under Debian's `global` top level printed no record, or only the switch).
        // (At the top level it is that clock already, and writing it would clear the top-level buffer.)
        let top = read_text(&self.root.join("trace_clock")).unwrap_or_default();
        if let Some(clock) = super::knobs::restore_value("trace_clock", &top).filter(|_| self.instance.is_some()) {
            k.set("trace_clock", &clock)?;
        }
        k.set("options/function-trace", if self.function_trace { "1" } else { "0" })?;
        k.set("tracing_max_latency", "0")?;
        k.set("current_tracer", &self.tracer)?;
        k.set("tracing_on", "1")
    }

    /// The kernel runs one wakeup tracer at a time (EBUSY): says who runs one.
    fn explain_busy(&self, e: SysError) -> SysError {
        let SysError::File { source, .. } = &e else { return e };
        if source.raw_os_error() != Some(libc::EBUSY) {
            return e;
        }
        let root = self.tracefs.as_ref().map(|t| t.root().to_path_buf()).unwrap_or_default();
        let busy: Vec<String> = super::current_tracers(&root)
            .into_iter()
            .filter(|(_, t)| t.starts_with("wakeup"))
            .map(|(dir, t)| format!("{t} in {dir}"))
            .collect();
        let who = if busy.is_empty() { "another tracing directory".to_string() } else { busy.join(", ") };
        SysError::Invalid(format!(
            "the kernel runs one wakeup tracer at a time and {who} has it: stop it (echo nop > …/current_tracer) and \
             run again"
        ))
    }

    /// Where the tracer runs.
    pub fn ran_in(&self) -> &str {
        &self.ran_in
    }

    /// Stops the tracer, reads the worst wakeup it kept, writes every setting back and removes the instance.
    pub fn finish(mut self) -> Result<WakeupTrace, SysError> {
        let max = read_text(&self.dir.join("tracing_max_latency")).ok().and_then(|t| t.trim().parse().ok());
        let text = read_text(&self.dir.join("trace"));
        let errors = self.teardown();
        let mut notes = std::mem::take(&mut self.notes);
        notes.extend(errors);
        Ok(WakeupTrace {
            tracer: self.tracer.clone(),
            ran_in: self.ran_in.clone(),
            function_trace: self.function_trace,
            text: text?,
            max_latency_us: max,
            notes,
        })
    }

    /// Writes every saved setting back (the tracer first) and removes the instance; returns what failed.
    fn teardown(&mut self) -> Vec<String> {
        let errors = restore_and_remove(self.knobs.take(), self.instance.take());
        self.tracefs = None;
        errors
    }
}

impl Drop for WakeupTracer {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_the_tracer_is_refused_with_what_it_needs() {
        let root = std::env::temp_dir().join(format!("latscope-wakeup-tracer-test-{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::write(root.join("available_tracers"), "blk function nop\n").expect("write");
        let why = wakeup_tracer_missing(&root, "wakeup_rt").expect("refused");
        assert!(why.contains("no wakeup_rt tracer") && why.contains("blk function nop"), "{why}");
        assert!(why.contains("CONFIG_SCHED_TRACER"), "{why}");
        std::fs::write(root.join("available_tracers"), "wakeup_dl wakeup_rt wakeup function nop\n").expect("write");
        assert_eq!(wakeup_tracer_missing(&root, "wakeup_rt"), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}
