//! The kernel's timerlat tracer as a timer backend ([`TimerlatRun`]): it runs in latscope's private
//! tracefs instance (kernels since 5.17 run osnoise/timerlat per instance; Debian's 6.1 does), its
//! kernel-wide `osnoise/*` settings (CPUs, period, stop condition) are saved and written back, the
//! `timerlat/N` kernel threads get the run's policy, and the instance's pages carry the tracer's samples
//! (`ftrace:timerlat`: IRQ and thread latency per activation) for the binary to decode as they come.
//!
//! Teardown (on [`TimerlatRun::finish`], on error and on drop, so also after SIGINT/SIGTERM end the run):
//! the instance's tracer back to `nop` (its threads end), the instance removed, then the `osnoise/*`
//! files written back, newest first.

use super::clock::now;
use super::rt::Policy;
use super::tracer_run::TracerRun;
use crate::tracefs::{CaptureConfig, CaptureData, EventSelection, Retention};
use crate::tracefs::{Knobs, TraceFs};
use crate::SysError;
use latscope_model::{CpuId, CpuList, Nanos};
use std::path::Path;

/// The shortest and longest period `osnoise/timerlat_period_us` accepts.
pub const TIMERLAT_PERIOD_RANGE: (Nanos, Nanos) = (Nanos::from_us(100), Nanos::from_secs(1));

/// Ring-buffer size per measured CPU: at 2 records of 32 bytes per period, 1 MiB holds seconds of samples
/// at the shortest period, far more than one poll of the binary's loop.
const BUFFER_KB: u32 = 1024;

/// What to run.
#[derive(Clone, Debug)]
pub struct TimerlatConfig {
    /// CPUs to measure (`osnoise/cpus`); one `timerlat/N` thread each.
    pub cpus: CpuList,
    /// The period (`osnoise/timerlat_period_us`), whole microseconds within [`TIMERLAT_PERIOD_RANGE`].
    pub interval: Nanos,
    /// Policy given to the `timerlat/N` threads (the kernel starts them at SCHED_FIFO 95).
    pub policy: Policy,
    /// The kernel stops recording at the first thread latency above it (`osnoise/stop_tracing_us`).
    pub stop_above: Option<Nanos>,
    /// With `--trace`: the latency events, their rolling window and stack triggers, recorded in the same
    /// instance beside the samples (its CPUs, tracer and tracefs root are the run's). `None`: the samples only.
    pub trace: Option<CaptureConfig>,
}

/// A running timerlat measurement: the tracer's run ([`TracerRun`]: capture, saved settings, teardown) and its
/// threads.
#[derive(Debug)]
pub struct TimerlatRun {
    run: TracerRun,
    threads: Vec<(CpuId, i32)>,
}

/// Why the kernel cannot run timerlat here, in one line with what would enable it; `None` when it can.
pub fn timerlat_missing(root: &Path) -> Option<String> {
    crate::tracefs::lacking(root, "timerlat").map(|tracers| {
        format!(
            "this kernel has no timerlat tracer (available_tracers: {tracers}); it needs CONFIG_TIMERLAT_TRACER=y \
             (Linux 5.14 or later, e.g. Debian's linux-image-rt-amd64)"
        )
    })
}

/// The tracefs directories (the top level or an instance) whose `current_tracer` is timerlat or osnoise:
/// they share the kernel-wide `osnoise/*` settings and threads with a new run (timerlat's or osnoise's).
pub(super) fn tracers_in_use(root: &Path) -> Vec<String> {
    crate::tracefs::current_tracers(root)
        .into_iter()
        .filter(|(_, t)| matches!(t.as_str(), "timerlat" | "osnoise"))
        .map(|(name, t)| format!("{name} runs {t}"))
        .collect()
}

/// Whether this machine's kernel has the timerlat tracer (tracefs found or mountable); the reason when not.
pub fn timerlat_available() -> Result<(), String> {
    let fs = TraceFs::open().map_err(|m| format!("tracefs is not usable: {m}"))?;
    timerlat_missing(fs.root()).map_or(Ok(()), Err)
}

impl TimerlatRun {
    /// Checks the kernel, saves and sets the `osnoise/*` settings, starts timerlat in a private instance and
    /// gives its threads the policy. On error nothing is left changed.
    pub fn start(cfg: &TimerlatConfig) -> Result<TimerlatRun, SysError> {
        let (lo, hi) = TIMERLAT_PERIOD_RANGE;
        if cfg.interval < lo || cfg.interval > hi || cfg.interval.0 % 1_000 != 0 {
            return Err(SysError::Invalid(format!(
                "timerlat's period is whole microseconds from {lo} to {hi} (osnoise/timerlat_period_us), not {}; \
                 give e.g. -i 1ms",
                cfg.interval
            )));
        }
        if cfg.cpus.is_empty() {
            return Err(SysError::Invalid("no CPU to measure; give at least one, e.g. -c 1".into()));
        }
        crate::host::cpus::check_online(&cfg.cpus)?;
        let tracefs = TraceFs::open().map_err(|m| SysError::Invalid(format!("tracefs is not usable: {m}")))?;
        let root = tracefs.root().to_path_buf();
        if let Some(why) = timerlat_missing(&root) {
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
        global.set("osnoise/timerlat_period_us", &(cfg.interval.0 / 1_000).to_string())?;
        let stop_us = cfg.stop_above.map_or(0, |t| t.0.div_ceil(1_000).max(1));
        global.set("osnoise/stop_tracing_us", &stop_us.to_string())?;
        global.set("osnoise/stop_tracing_total_us", "0")?;
        if root.join("osnoise/print_stack").exists() {
            global.set("osnoise/print_stack", "0")?;
        }
        let samples_only = CaptureConfig {
            events: EventSelection::List { default: false, entries: Vec::new() },
            buffer_kb: BUFFER_KB,
            retention: Retention::All,
            stacks: Vec::new(),
            ..CaptureConfig::default()
        };
        let capture_cfg = CaptureConfig {
            cpus: Some(cfg.cpus.clone()),
            tracefs_root: Some(root.clone()),
            tracer: Some("timerlat".into()),
            ..cfg.trace.clone().unwrap_or(samples_only)
        };
        let mut run = TracerRun::start(tracefs, global, &capture_cfg, Vec::new(), "the samples'", "")?;
        let threads = set_threads_policy("timerlat", &cfg.cpus, cfg.policy, &mut run)?;
        Ok(TimerlatRun { run, threads })
    }

    /// The tracer's run: its capture, start time, notes and whether the kernel stopped it.
    pub fn tracer(&self) -> &TracerRun {
        &self.run
    }

    /// The `timerlat/N` threads' ids per CPU.
    pub fn thread_ids(&self) -> &[(CpuId, i32)] {
        &self.threads
    }

    /// Stops the tracer, reads what is left, removes the instance and writes the `osnoise/*` settings back.
    pub fn finish(self) -> Result<CaptureData, SysError> {
        self.run.finish("an osnoise setting")
    }
}

/// The `NAME/N` kernel threads of `cpus` (`timerlat`, `osnoise`) given `policy`; a CPU whose thread did not
/// appear is a note of `run`. The threads end with the tracer: nothing to restore.
pub(super) fn set_threads_policy(
    name: &str,
    cpus: &CpuList,
    policy: Policy,
    run: &mut TracerRun,
) -> Result<Vec<(CpuId, i32)>, SysError> {
    let threads = find_threads(&format!("{name}/"), cpus);
    for cpu in cpus.iter() {
        match threads.iter().find(|t| t.0 == cpu) {
            Some(&(_, tid)) => {
                if let Err(e) = set_thread_policy(tid, policy) {
                    return Err(SysError::Invalid(format!("CPU {cpu}: {name}/{cpu} (pid {tid}): {e}")));
                }
            }
            None => run.note(format!("CPU {cpu}: no {name}/{cpu} thread appeared; it runs at its default")),
        }
    }
    Ok(threads)
}

/// The kernel threads named `PREFIX` + N (`timerlat/`, `osnoise/`) of `cpus`, waiting up to a second for
/// them to start.
fn find_threads(prefix: &str, cpus: &CpuList) -> Vec<(CpuId, i32)> {
    let deadline = now() + Nanos::from_secs(1);
    loop {
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            let Ok(comm) = std::fs::read_to_string(e.path().join("comm")) else { continue };
            let Some(cpu) = comm.trim().strip_prefix(prefix).and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if cpus.contains(CpuId(cpu)) {
                found.push((CpuId(cpu), pid));
            }
        }
        if found.len() >= cpus.len() || now() > deadline {
            found.sort_unstable();
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Gives thread `tid` the policy (the kernel thread ends with the tracer: nothing to restore).
fn set_thread_policy(tid: i32, policy: Policy) -> Result<(), SysError> {
    let (pol, prio) = match policy {
        Policy::Other => (libc::SCHED_OTHER, 0),
        Policy::Fifo(p) => (libc::SCHED_FIFO, i32::from(p)),
    };
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: `param` is a valid sched_param; a wrong tid only makes the call fail.
    let rc = unsafe { libc::sched_setscheduler(tid, pol, &param) };
    if rc != 0 {
        return Err(SysError::call(format!("sched_setscheduler({})", policy.describe()), "run as root (sudo)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_is_missing_and_what_is_in_use() {
        let root = std::env::temp_dir().join(format!("latscope-timerlat-test-{}", std::process::id()));
        std::fs::create_dir_all(root.join("instances/rtla")).expect("mkdir");
        std::fs::write(root.join("available_tracers"), "blk function nop\n").expect("write");
        let why = timerlat_missing(&root).expect("no timerlat");
        assert!(why.contains("CONFIG_TIMERLAT_TRACER=y") && why.contains("blk function nop"), "{why}");
        std::fs::write(root.join("available_tracers"), "timerlat osnoise nop\n").expect("write");
        assert_eq!(timerlat_missing(&root), None);
        std::fs::write(root.join("current_tracer"), "nop\n").expect("write");
        std::fs::write(root.join("instances/rtla/current_tracer"), "timerlat\n").expect("write");
        assert_eq!(tracers_in_use(&root), ["instances/rtla runs timerlat"]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
