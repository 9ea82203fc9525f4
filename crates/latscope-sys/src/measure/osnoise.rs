//! The kernel's osnoise tracer as a noise backend ([`OsnoiseRun`]): it runs in latscope's private tracefs
//! instance with the `osnoise:*` events (kernels since 5.17 run osnoise per instance; Debian's 6.1 does),
//! its kernel-wide settings (`osnoise/*`, `tracing_thresh`) are saved and written back, the `osnoise/N`
//! kernel threads get the run's policy, and the instance's pages carry the tracer's per-period records and
//! each noise with its source, for the binary to decode as they come.
//!
//! Teardown (on [`OsnoiseRun::finish`], on error and on drop, so also after SIGINT/SIGTERM end the run):
//! the instance's tracer back to `nop` (its threads end), the instance removed, then the kernel-wide
//! settings written back, newest first — the same order as the timerlat backend's.

use super::rt::Policy;
use super::timerlat::{set_threads_policy, tracers_in_use};
use super::tracer_run::TracerRun;
use crate::tracefs::{CaptureConfig, CaptureData, EventSelection, Retention};
use crate::tracefs::{Knobs, TraceFs};
use crate::SysError;
use latscope_model::{CpuId, CpuList, Nanos};
use std::path::Path;

/// The shortest and longest period `osnoise/period_us` takes here (the kernel takes up to 10 s; latscope
/// reads at least one record per period, and a period under 1 ms is mostly the tracer's own overhead).
pub const OSNOISE_PERIOD_RANGE: (Nanos, Nanos) = (Nanos::from_ms(1), Nanos::from_secs(10));

/// Ring-buffer size per measured CPU: a noisy CPU makes a few thousand records of 32-56 bytes a second,
/// far more than one poll of the binary's loop.
const BUFFER_KB: u32 = 2048;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsnoiseConfig {
    /// CPUs to measure (`osnoise/cpus`); one `osnoise/N` thread each.
    pub cpus: CpuList,
    /// The period (`osnoise/period_us`), whole microseconds within [`OSNOISE_PERIOD_RANGE`].
    pub period: Nanos,
    /// How much of each period the thread measures (`osnoise/runtime_us`), whole microseconds, at most the
    /// period.
    pub runtime: Nanos,
    /// Policy given to the `osnoise/N` threads (the kernel starts them as SCHED_OTHER).
    pub policy: Policy,
    /// The shortest noise counted (`tracing_thresh`), whole microseconds, at least 1 µs.
    pub threshold: Nanos,
    /// The kernel stops recording at the first single noise above it (`osnoise/stop_tracing_us`).
    pub stop_above: Option<Nanos>,
    /// The kernel stops recording at the first period whose noise passes it (`osnoise/stop_tracing_total_us`).
    pub stop_total_above: Option<Nanos>,
}

/// A running osnoise measurement: the tracer's run ([`TracerRun`]: capture, saved settings, teardown) and its
/// threads.
#[derive(Debug)]
pub struct OsnoiseRun {
    run: TracerRun,
    threads: Vec<(CpuId, i32)>,
}

/// Why the kernel cannot run osnoise here, in one line with what would enable it; `None` when it can.
pub fn osnoise_missing(root: &Path) -> Option<String> {
    crate::tracefs::lacking(root, "osnoise").map(|tracers| {
        format!(
            "this kernel has no osnoise tracer (available_tracers: {tracers}); it needs CONFIG_OSNOISE_TRACER=y \
             (Linux 5.14 or later, e.g. Debian's linux-image-rt-amd64 or RHEL's kernel-rt)"
        )
    })
}

/// Whether this machine's kernel has the osnoise tracer (tracefs found or mountable); the reason when not.
pub fn osnoise_available() -> Result<(), String> {
    let fs = TraceFs::open().map_err(|m| format!("tracefs is not usable: {m}"))?;
    osnoise_missing(fs.root()).map_or(Ok(()), Err)
}

/// Whole microseconds of `v`, or an error naming the option.
fn whole_us(v: Nanos, what: &str, example: &str) -> Result<u64, SysError> {
    if v.0 == 0 || v.0 % 1_000 != 0 {
        return Err(SysError::Invalid(format!(
            "{what} is whole microseconds for the osnoise tracer, at least 1us, not {v}; give e.g. {example}"
        )));
    }
    Ok(v.0 / 1_000)
}

/// The writes that set `osnoise/runtime_us` and `osnoise/period_us` from the current period: the kernel
/// refuses a runtime above the period in force and a period below the runtime in force, so the runtime
/// goes first when it fits the current period, else the period. Written back in reverse order, each step
/// again fits (see the test).
fn runtime_period_order(current_period_us: u64, runtime_us: u64, period_us: u64) -> [(&'static str, u64); 2] {
    if runtime_us <= current_period_us {
        [("osnoise/runtime_us", runtime_us), ("osnoise/period_us", period_us)]
    } else {
        [("osnoise/period_us", period_us), ("osnoise/runtime_us", runtime_us)]
    }
}

/// The `osnoise/options` writes the run needs and their undo, from what the file shows: the workload on
/// (without it the threads measure nothing) and, when the run stops the trace, no panic on that stop.
fn option_writes(shown: &str, stops: bool) -> Vec<(&'static str, &'static str)> {
    let on = |name: &str| shown.split_whitespace().any(|t| t == name);
    let mut v = Vec::new();
    if on("NO_OSNOISE_WORKLOAD") {
        v.push(("OSNOISE_WORKLOAD", "NO_OSNOISE_WORKLOAD"));
    }
    if stops && on("PANIC_ON_STOP") {
        v.push(("NO_PANIC_ON_STOP", "PANIC_ON_STOP"));
    }
    v
}

impl OsnoiseRun {
    /// Checks the kernel, saves and sets the kernel-wide settings, starts osnoise with its events in a
    /// private instance and gives its threads the policy. On error nothing is left changed.
    pub fn start(cfg: &OsnoiseConfig) -> Result<OsnoiseRun, SysError> {
        let (lo, hi) = OSNOISE_PERIOD_RANGE;
        if cfg.period < lo || cfg.period > hi {
            return Err(SysError::Invalid(format!(
                "the osnoise period is from {lo} to {hi} (osnoise/period_us), not {}; give e.g. --period 1s",
                cfg.period
            )));
        }
        let period_us = whole_us(cfg.period, "--period", "--period 1s")?;
        let runtime_us = whole_us(cfg.runtime, "--runtime", "--runtime 900ms")?;
        if runtime_us > period_us {
            return Err(SysError::Invalid(format!(
                "--runtime {} is longer than --period {}: the osnoise thread measures part of each period at most",
                cfg.runtime, cfg.period
            )));
        }
        let thresh_us = whole_us(cfg.threshold, "--threshold", "--threshold 5us")?;
        let stop_us = cfg.stop_above.map(|v| whole_us(v, "--stop-above", "--stop-above 100us")).transpose()?;
        let total_us =
            cfg.stop_total_above.map(|v| whole_us(v, "--stop-total-above", "--stop-total-above 1ms")).transpose()?;
        if cfg.cpus.is_empty() {
            return Err(SysError::Invalid("no CPU to measure; give at least one, e.g. -c 1".into()));
        }
        crate::host::cpus::check_online(&cfg.cpus)?;
        let tracefs = TraceFs::open().map_err(|m| SysError::Invalid(format!("tracefs is not usable: {m}")))?;
        let root = tracefs.root().to_path_buf();
        if let Some(why) = osnoise_missing(&root) {
            return Err(SysError::Invalid(why));
        }
        let busy = tracers_in_use(&root);
        if !busy.is_empty() {
            return Err(SysError::Invalid(format!(
                "the kernel's osnoise/timerlat tracer is in use ({}; rtla or another tool?): a second run would \
                 share its threads and settings; stop it first",
                busy.join(", ")
            )));
        }
        // Written back on drop, also when a later step fails.
        let mut global = Knobs::new(&root);
        // The threads start on the CPUs of osnoise/cpus when the tracer starts: set everything first.
        global.set_nul_terminated("osnoise/cpus", &cfg.cpus.to_string())?;
        let current_period = crate::tracefs::read_text(&root.join("osnoise/period_us"))?;
        let current_period: u64 = current_period.trim().parse().map_err(|_| {
            SysError::Invalid(format!("osnoise/period_us shows '{}', not a number", current_period.trim()))
        })?;
        for (file, us) in runtime_period_order(current_period, runtime_us, period_us) {
            global.set(file, &us.to_string())?;
        }
        global.set("osnoise/stop_tracing_us", &stop_us.unwrap_or(0).to_string())?;
        global.set("osnoise/stop_tracing_total_us", &total_us.unwrap_or(0).to_string())?;
        global.set("tracing_thresh", &thresh_us.to_string())?;
        let mut notes = Vec::new();
        if root.join("osnoise/options").exists() {
            let shown = crate::tracefs::read_text(&root.join("osnoise/options"))?;
            for (set, undo) in option_writes(&shown, stop_us.is_some() || total_us.is_some()) {
                global.set_undo("osnoise/options", set, undo)?;
                notes.push(format!("osnoise/options: {set} for the run (was {undo}; written back after it)"));
            }
        }
        let capture_cfg = CaptureConfig {
            cpus: Some(cfg.cpus.clone()),
            events: EventSelection::List { default: false, entries: vec![("osnoise".into(), None)] },
            buffer_kb: BUFFER_KB,
            retention: Retention::All,
            tracefs_root: Some(root.clone()),
            stacks: Vec::new(),
            tracer: Some("osnoise".into()),
            ..CaptureConfig::default()
        };
        let mut run = TracerRun::start(tracefs, global, &capture_cfg, notes, "the noise", "")?;
        if !run.capture().report().events.iter().any(|e| e.starts_with("osnoise/")) {
            run.note(
                "the osnoise:* events are missing: the noise is measured but not attributed to its sources (IRQ, \
                 softirq, thread, NMI)"
                    .into(),
            );
        }
        let threads = set_threads_policy("osnoise", &cfg.cpus, cfg.policy, &mut run)?;
        Ok(OsnoiseRun { run, threads })
    }

    /// The tracer's run: its capture, start time, notes and whether the kernel stopped it.
    pub fn tracer(&self) -> &TracerRun {
        &self.run
    }

    /// The `osnoise/N` threads' ids per CPU.
    pub fn thread_ids(&self) -> &[(CpuId, i32)] {
        &self.threads
    }

    /// Stops the tracer, reads what is left, removes the instance and writes the settings back.
    pub fn finish(self) -> Result<CaptureData, SysError> {
        self.run.finish("an osnoise setting")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_is_missing() {
        let root = std::env::temp_dir().join(format!("latscope-osnoise-test-{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::write(root.join("available_tracers"), "timerlat function nop\n").expect("write");
        let why = osnoise_missing(&root).expect("no osnoise");
        assert!(why.contains("CONFIG_OSNOISE_TRACER=y") && why.contains("timerlat function nop"), "{why}");
        std::fs::write(root.join("available_tracers"), "timerlat osnoise nop\n").expect("write");
        assert_eq!(osnoise_missing(&root), None);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// The kernel's rule (runtime ≤ period at every step) holds for the writes and for their undo in
    /// reverse order, from any valid setting to any other.
    #[test]
    fn runtime_and_period_are_written_in_an_order_the_kernel_takes() {
        let values = [100u64, 1_000, 100_000, 1_000_000];
        for (&old_p, &old_r) in values.iter().flat_map(|p| values.iter().map(move |r| (p, r))) {
            for (&new_p, &new_r) in values.iter().flat_map(|p| values.iter().map(move |r| (p, r))) {
                if old_r > old_p || new_r > new_p {
                    continue;
                }
                let (mut p, mut r) = (old_p, old_r);
                let writes = runtime_period_order(old_p, new_r, new_p);
                let mut saved = Vec::new();
                for (file, v) in writes {
                    let (old, cur) = if file.ends_with("period_us") { (p, &mut p) } else { (r, &mut r) };
                    saved.push((file, old));
                    *cur = v;
                    assert!(r <= p, "{old_p}/{old_r} -> {new_p}/{new_r}: {file}={v} gives runtime {r} > period {p}");
                }
                assert_eq!((p, r), (new_p, new_r));
                for (file, v) in saved.into_iter().rev() {
                    if file.ends_with("period_us") {
                        p = v;
                    } else {
                        r = v;
                    }
                    assert!(r <= p, "undo to {old_p}/{old_r}: {file}={v} gives runtime {r} > period {p}");
                }
            }
        }
    }

    #[test]
    fn options_are_set_only_where_the_run_needs_them() {
        let defaults = "DEFAULTS OSNOISE_WORKLOAD NO_PANIC_ON_STOP NO_OSNOISE_PREEMPT_DISABLE NO_OSNOISE_IRQ_DISABLE";
        assert!(option_writes(defaults, true).is_empty());
        let changed = "NO_OSNOISE_WORKLOAD PANIC_ON_STOP NO_OSNOISE_PREEMPT_DISABLE";
        assert_eq!(option_writes(changed, false), [("OSNOISE_WORKLOAD", "NO_OSNOISE_WORKLOAD")]);
        assert_eq!(
            option_writes(changed, true),
            [("OSNOISE_WORKLOAD", "NO_OSNOISE_WORKLOAD"), ("NO_PANIC_ON_STOP", "PANIC_ON_STOP")]
        );
    }
}
