//! [`TracerRun`]: one of the kernel's latency tracers (timerlat, osnoise, hwlat) running in latscope's private
//! tracefs instance — the capture whose pages carry its records, the kernel-wide settings saved for it, and the
//! teardown the three backends share.
//!
//! Fields drop in order: the capture (tracer off, instance removed) before the kernel-wide settings are written
//! back, tracefs unmounted last when this run mounted it.

use super::clock::now;
use crate::tracefs::{Capture, CaptureConfig, CaptureData, Knobs, TraceFs};
use crate::SysError;
use latscope_model::Nanos;

/// A kernel tracer recording in a private instance.
#[derive(Debug)]
pub struct TracerRun {
    capture: Capture,
    global: Knobs,
    /// Held for its drop: unmounts tracefs when this run mounted it.
    _tracefs: TraceFs,
    start: Nanos,
    notes: Vec<String>,
}

impl TracerRun {
    /// Starts `cfg`'s tracer in a private instance once `global` holds the run's kernel-wide settings (dropped,
    /// it writes them back: on error nothing is left changed). `notes` come first in the run's notes; `records`
    /// names what the pages carry in the note on a clock that is not mono ("the samples'"); `hint` ends the
    /// error when the tracer cannot start ("" or what else to check).
    pub(crate) fn start(
        tracefs: TraceFs,
        global: Knobs,
        cfg: &CaptureConfig,
        mut notes: Vec<String>,
        records: &str,
        hint: &str,
    ) -> Result<TracerRun, SysError> {
        let tracer = cfg.tracer.as_deref().unwrap_or("nop");
        let capture = Capture::start(cfg).map_err(|e| {
            let missing: Vec<String> = e.report.missing.iter().map(ToString::to_string).collect();
            let also = if missing.is_empty() { String::new() } else { format!(" ({})", missing.join("; ")) };
            SysError::Invalid(format!("cannot start {tracer} in a tracefs instance: {}{also}{hint}", e.error))
        })?;
        // Recording began as the capture started (tracing_on is its last step): the run's time counts from here.
        let start = now();
        notes.extend(capture.report().notes.iter().cloned());
        if capture.report().clock.as_deref() != Some("mono") {
            notes.push(format!("the trace clock is not mono: {records} times are not CLOCK_MONOTONIC"));
        }
        Ok(TracerRun { capture, global, _tracefs: tracefs, start, notes })
    }

    /// The capture whose pages carry the records ([`Capture::take_pages`], [`Capture::formats`]).
    pub fn capture(&self) -> &Capture {
        &self.capture
    }

    /// When recording started, CLOCK_MONOTONIC.
    pub fn start_time(&self) -> Nanos {
        self.start
    }

    /// Whether the kernel stopped recording (a stop condition of the tracer met).
    pub fn stopped_by_kernel(&self) -> bool {
        !self.capture.is_recording()
    }

    /// Things the reader should know about the setup.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Adds a note on the setup.
    pub(crate) fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// Stops the tracer, reads what is left, removes the instance and writes the kernel-wide settings back;
    /// a setting that could not be written back is a note naming `setting` ("an osnoise setting").
    pub(crate) fn finish(self, setting: &str) -> Result<CaptureData, SysError> {
        let TracerRun { capture, mut global, _tracefs, .. } = self;
        let mut data = capture.finish()?;
        let errors = global.restore();
        data.report.notes.extend(errors.into_iter().map(|e| format!("restoring {setting} failed: {e}")));
        Ok(data)
    }
}
