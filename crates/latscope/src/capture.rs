//! The capture → decode wiring shared by every command that traces (`run`, `timer`, `noise`, `record`):
//! start a private-instance capture on the measured CPUs (saying what is missing instead of failing),
//! build the page decoder from the capture's formats, and decode the finished capture into events.

use crate::error::CliError;
use latscope_decode::{DecodeError, Missed, RawDecoder};
use latscope_model::{CpuId, CpuList, Event, MissingFeature, Nanos, Pid};
use latscope_sys::tracefs::{kallsyms_text, Capture, CaptureConfig, CaptureData, Retention, StackSpec, TraceFormats};

/// The memory a rolling-window capture may keep per traced CPU.
pub const WINDOW_BYTES: usize = 96 << 20;

/// Builds the decoder for a capture's pages: page layout, event formats, task names.
pub fn decoder_for(formats: &TraceFormats, cmdlines: &str) -> Result<RawDecoder, CliError> {
    let mut dec = RawDecoder::new(&formats.header_page, formats.big_endian)
        .map_err(|e| CliError(format!("events/header_page: {e}")))?;
    dec.set_header_event(&formats.header_event);
    for f in &formats.formats {
        dec.add_format(&f.system, &f.text).map_err(|e| {
            let what = match e {
                DecodeError::Format { what, .. } => what,
                other => other.to_string(),
            };
            CliError(format!("events/{}/{}/format: {what}", f.system, f.name))
        })?;
    }
    dec.set_cmdlines(cmdlines);
    Ok(dec)
}

/// The default latency event set on `cpus` with a rolling window of `span` (plus what is held), with the
/// timer interrupt's stacks unless `no_stacks`: what every measuring command's `--trace` records.
pub fn window_config(cpus: &CpuList, span: Nanos, no_stacks: bool) -> CaptureConfig {
    CaptureConfig {
        cpus: Some(cpus.clone()),
        retention: Retention::Window { span, max_bytes: WINDOW_BYTES },
        stacks: if no_stacks { Vec::new() } else { StackSpec::timer_interrupt() },
        ..CaptureConfig::default()
    }
}

/// Starts the default latency event set on `cpus` with a rolling window of `span` (plus what is held),
/// with the timer interrupt's stacks unless `no_stacks`. When tracing is unavailable, returns `None` and
/// adds what is missing (and how to enable it) to `skipped`, labelled `what`; features the capture runs
/// without are added too.
pub fn start(
    cpus: &CpuList,
    span: Nanos,
    what: &str,
    no_stacks: bool,
    skipped: &mut Vec<MissingFeature>,
) -> Option<Capture> {
    match Capture::start(&window_config(cpus, span, no_stacks)) {
        Ok(c) => {
            skipped.extend(c.report().missing.iter().cloned());
            Some(c)
        }
        Err(e) => {
            // What is missing says why and how to enable it; the error adds a line only when nothing is.
            if e.report.missing.is_empty() {
                skipped.push(MissingFeature::new(
                    what,
                    e.to_string(),
                    "run as root with tracefs (mount -t tracefs nodev /sys/kernel/tracing)",
                ));
            }
            skipped.extend(e.report.missing.iter().cloned());
            None
        }
    }
}

/// Removes the tracefs instances of latscope runs whose process is gone, saying so on stderr (every
/// measuring command does, traced or not: a killed run's instance keeps tracing its CPUs).
pub fn remove_stale_instances() {
    for s in latscope_sys::tracefs::remove_stale_instances() {
        match s.removed {
            Ok(()) => {
                eprintln!("latscope: removed instance {} left by dead process {} (it was still tracing)", s.name, s.pid)
            }
            Err(e) => eprintln!(
                "latscope: tracefs instance {} of latscope process {} (gone) is still tracing and could not be \
                 removed ({e}); remove it as root: rmdir /sys/kernel/tracing/instances/{}",
                s.name, s.pid, s.name
            ),
        }
    }
}

/// Adds the stacks at the switch to the measuring threads `tids` (unless `no_stacks`); what could not be
/// set goes to `notes`.
pub fn add_thread_stacks(c: &Capture, tids: &[(CpuId, Pid)], no_stacks: bool, notes: &mut Vec<String>) {
    if no_stacks {
        return;
    }
    let pids: Vec<Pid> = tids.iter().map(|t| t.1).collect();
    notes.extend(c.add_stacks(&StackSpec::switch_to(&pids).into_iter().collect::<Vec<_>>()));
}

/// A decoded capture.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The events, time-ordered.
    pub events: Vec<Event>,
    /// Events the pages say were lost (ring-buffer overrun).
    pub lost: u64,
}

/// Decodes one page of `cpu`, each event to `each`; the events the page says were lost are added to `lost`.
pub fn decode_page(dec: &mut RawDecoder, cpu: CpuId, page: &[u8], lost: &mut u64, each: &mut dyn FnMut(Event)) {
    if let Missed::Count(n) = dec.decode_page(cpu, page, each).missed {
        *lost += n;
    }
}

/// Decodes a finished capture's in-memory pages; what the reader should know goes to `warnings`.
pub fn decode(data: &CaptureData, warnings: &mut Vec<String>) -> Result<Decoded, CliError> {
    warnings.extend(data.report.notes.iter().cloned());
    let mut dec = decoder_for(&data.formats, &data.cmdlines)?;
    // Decoded on the machine that traced: its symbols name the timer functions.
    dec.set_kallsyms(&kallsyms_text(true));
    let mut out = Decoded::default();
    for cpu in &data.cpus {
        for p in &cpu.pages {
            decode_page(&mut dec, cpu.cpu, &p.data, &mut out.lost, &mut |e| out.events.push(e));
        }
        if cpu.pages_dropped > 0 {
            warnings.push(format!(
                "CPU {}: the trace kept only the last part of the run ({} pages let go)",
                cpu.cpu, cpu.pages_dropped
            ));
        }
        if let Some(e) = &cpu.error {
            warnings.push(format!("CPU {}: the trace reader stopped early: {e}", cpu.cpu));
        }
    }
    if out.lost > 0 {
        warnings.push(format!(
            "the trace lost {} events (ring buffer overrun): its explanations may miss something",
            out.lost
        ));
    }
    out.events.sort_by_key(|e| e.ts);
    Ok(out)
}

/// Stops the capture (restoring every knob, removing the instance) and decodes its pages.
pub fn finish(c: Capture, warnings: &mut Vec<String>) -> Result<Decoded, CliError> {
    let data = c.finish().map_err(CliError::msg)?;
    decode(&data, warnings)
}
