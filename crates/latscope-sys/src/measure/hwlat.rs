//! The kernel's hwlat tracer ([`HwlatRun`], hwlatdetect's method): a kernel thread spins on one CPU at a
//! time with interrupts off for `width` of every `window`, reading its clock back to back, and records a
//! sample (`ftrace:hwlat`) when a gap crosses `tracing_thresh`. It runs in latscope's private tracefs
//! instance (the tracer allows instances, one at a time: a second user gets EBUSY), on the CPUs of the
//! instance's `tracing_cpumask`; the kernel-wide `tracing_thresh` and `hwlat_detector/{width,window,mode}`
//! are saved first and written back.
//!
//! Teardown (on [`HwlatRun::finish`], on error and on drop, so also after SIGINT/SIGTERM end the run): the
//! instance's tracer back to `nop` (its thread ends; the kernel puts back the `tracing_thresh` it found),
//! the instance removed, then the kernel-wide files written back, newest first.

use super::tracer_run::TracerRun;
use crate::tracefs::{CaptureConfig, CaptureData, EventSelection, Retention};
use crate::tracefs::{Knobs, TraceFs};
use crate::SysError;
use latscope_model::{CpuList, Nanos};
use std::path::Path;

/// Ring-buffer size per CPU: a sample is one record per window, a few pages are plenty.
const BUFFER_KB: u32 = 64;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwlatConfig {
    /// CPUs to sample (the instance's `tracing_cpumask`), one at a time in round-robin.
    pub cpus: CpuList,
    /// A gap above this is a sample (`tracing_thresh`, whole microseconds).
    pub threshold: Nanos,
    /// Time spent spinning with interrupts off in each window (`hwlat_detector/width`).
    pub width: Nanos,
    /// The period of the sampling (`hwlat_detector/window`), longer than the width.
    pub window: Nanos,
}

/// A running hwlat measurement: the tracer's run ([`TracerRun`]: capture, saved settings, teardown) and the
/// thread mode it set.
#[derive(Debug)]
pub struct HwlatRun {
    run: TracerRun,
    mode: Option<String>,
}

/// Why the kernel cannot run hwlat here, in one line with what would enable it; `None` when it can.
pub fn hwlat_missing(root: &Path) -> Option<String> {
    crate::tracefs::lacking(root, "hwlat").map(|tracers| {
        format!(
            "this kernel has no hwlat tracer (available_tracers: {tracers}); it needs CONFIG_HWLAT_TRACER=y (Linux \
             4.9 or later; e.g. Debian's linux-image-rt-amd64 has it, its standard amd64 kernel does not): boot such \
             a kernel to measure here"
        )
    })
}

/// The tracefs directories (the top level or an instance) whose `current_tracer` is hwlat: the kernel runs
/// one at a time.
fn hwlat_in_use(root: &Path) -> Vec<String> {
    crate::tracefs::current_tracers(root).into_iter().filter(|(_, t)| t == "hwlat").map(|(name, _)| name).collect()
}

/// Whole microseconds of `d` for a tracefs file, or an error naming `option`.
fn whole_us(d: Nanos, option: &str) -> Result<u64, SysError> {
    if d.0 == 0 || d.0 % 1_000 != 0 {
        return Err(SysError::Invalid(format!("{option} is whole microseconds above 0, not {d}")));
    }
    Ok(d.0 / 1_000)
}

impl HwlatRun {
    /// Checks the kernel, saves and sets the kernel-wide settings, starts hwlat in a private instance. On
    /// error nothing is left changed.
    pub fn start(cfg: &HwlatConfig) -> Result<HwlatRun, SysError> {
        let threshold = whole_us(cfg.threshold, "--threshold")?;
        let width = whole_us(cfg.width, "--width")?;
        let window = whole_us(cfg.window, "--window")?;
        if width >= window {
            return Err(SysError::Invalid(format!(
                "--width ({}) must be shorter than --window ({}): the CPU spins with interrupts off for the width \
                 of every window",
                cfg.width, cfg.window
            )));
        }
        if cfg.cpus.is_empty() {
            return Err(SysError::Invalid("no CPU to sample; give at least one, e.g. --cpus 1".into()));
        }
        crate::host::cpus::check_online(&cfg.cpus)?;
        let tracefs = TraceFs::open().map_err(|m| SysError::Invalid(format!("tracefs is not usable: {m}")))?;
        let root = tracefs.root().to_path_buf();
        if let Some(why) = hwlat_missing(&root) {
            return Err(SysError::Invalid(why));
        }
        let busy = hwlat_in_use(&root);
        if !busy.is_empty() {
            return Err(SysError::Invalid(format!(
                "the kernel's hwlat tracer is in use ({} runs it; hwlatdetect or another tool?) and runs one at a \
                 time; stop it first (echo nop > current_tracer there)",
                busy.join(", ")
            )));
        }
        // Written back on drop, also when a later step fails.
        let mut global = Knobs::new(&root);
        global.set("tracing_thresh", &threshold.to_string())?;
        // The kernel keeps width < window at every write: grow the window first when the new width needs it.
        let old_window: u64 = crate::tracefs::read_text(&root.join("hwlat_detector/window"))?
            .trim()
            .parse()
            .map_err(|_| SysError::Invalid("hwlat_detector/window does not hold a number".into()))?;
        if width < old_window {
            global.set("hwlat_detector/width", &width.to_string())?;
            global.set("hwlat_detector/window", &window.to_string())?;
        } else {
            global.set("hwlat_detector/window", &window.to_string())?;
            global.set("hwlat_detector/width", &width.to_string())?;
        }
        // Since 5.14 a mode file chooses one thread moving over the CPUs (the default) or one per CPU.
        let mode = if root.join("hwlat_detector/mode").exists() {
            global.set("hwlat_detector/mode", "round-robin")?;
            Some("round-robin".to_string())
        } else {
            None
        };
        let capture_cfg = CaptureConfig {
            cpus: Some(cfg.cpus.clone()),
            events: EventSelection::List { default: false, entries: Vec::new() },
            buffer_kb: BUFFER_KB,
            retention: Retention::All,
            tracefs_root: Some(root.clone()),
            stacks: Vec::new(),
            tracer: Some("hwlat".into()),
            ..CaptureConfig::default()
        };
        let hint = "; kernels before 4.9 lack instance support for it";
        let run = TracerRun::start(tracefs, global, &capture_cfg, Vec::new(), "the samples'", hint)?;
        Ok(HwlatRun { run, mode })
    }

    /// The tracer's run: its capture, start time and notes.
    pub fn tracer(&self) -> &TracerRun {
        &self.run
    }

    /// The kernel's thread mode this run set, where the kernel has one.
    pub fn mode(&self) -> Option<&str> {
        self.mode.as_deref()
    }

    /// Stops the tracer, reads what is left, removes the instance and writes the kernel-wide settings back.
    pub fn finish(self) -> Result<CaptureData, SysError> {
        self.run.finish("a hwlat setting")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_is_missing_and_who_runs_it() {
        let root = std::env::temp_dir().join(format!("latscope-hwlat-test-{}", std::process::id()));
        std::fs::create_dir_all(root.join("instances/other")).expect("mkdir");
        std::fs::write(root.join("available_tracers"), "blk function nop\n").expect("write");
        let why = hwlat_missing(&root).expect("no hwlat");
        assert!(why.contains("CONFIG_HWLAT_TRACER=y") && why.contains("blk function nop"), "{why}");
        std::fs::write(root.join("available_tracers"), "hwlat timerlat nop\n").expect("write");
        assert_eq!(hwlat_missing(&root), None);
        std::fs::write(root.join("current_tracer"), "nop\n").expect("write");
        std::fs::write(root.join("instances/other/current_tracer"), "hwlat\n").expect("write");
        assert_eq!(hwlat_in_use(&root), ["instances/other"]);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn refuses_a_width_not_shorter_than_the_window_before_touching_anything() {
        let cfg = HwlatConfig {
            cpus: CpuList(vec![latscope_model::CpuId(0)]),
            threshold: Nanos::from_us(10),
            width: Nanos::from_secs(1),
            window: Nanos::from_secs(1),
        };
        let e = HwlatRun::start(&cfg).expect_err("width = window").to_string();
        assert!(e.contains("--width") && e.contains("shorter than --window"), "{e}");
        let e = HwlatRun::start(&HwlatConfig { threshold: Nanos(1_500), ..cfg }).expect_err("1.5 us").to_string();
        assert!(e.contains("--threshold is whole microseconds"), "{e}");
    }
}
