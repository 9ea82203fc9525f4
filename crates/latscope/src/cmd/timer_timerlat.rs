//! `latscope timer --backend timerlat`: the kernel's timerlat tracer measures (sys's `TimerlatRun`), the
//! instance's pages are decoded as they come and fed to analyze's `TimerlatSamples`, the live table is
//! drawn from them, and the run becomes the same `TimerResult` as the user-space backend's, with the
//! timer IRQ's latency beside the thread latency. Wiring only.

use super::timer::emit;
use crate::capture::decoder_for;
use crate::error::CliError;
use crate::output::{stderr_is_terminal, stdout_is_terminal};
use crate::signal;
use latscope_analyze::timerlat_samples::{TimerlatSamples, TimerlatSetup};
use latscope_decode::RawDecoder;
use latscope_model::{IrqLatency, Nanos, RunMetadata, StopReason, TimerOptions, TimerResult};
use latscope_report::live::LiveTable;
use latscope_sys::measure::{clock, TimerConfig, TimerlatConfig, TimerlatRun};
use latscope_sys::tracefs::RawPage;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often the instance's pages are taken and decoded.
const POLL: Duration = Duration::from_millis(50);

/// Runs timerlat as `config` asks (CPUs, period, policy, duration, threshold, windows) and returns the
/// result; `warnings` are the setup's so far. The live table goes to stderr when `to_stderr`.
pub fn measure(
    config: &TimerConfig,
    options: TimerOptions,
    mut metadata: RunMetadata,
    mut warnings: Vec<String>,
    quiet: bool,
    to_stderr: bool,
) -> Result<TimerResult, CliError> {
    let cfg = TimerlatConfig {
        cpus: config.cpus.clone(),
        interval: config.interval,
        policy: config.policy,
        stop_above: config.threshold.filter(|_| config.stop_on_threshold),
    };
    let run = TimerlatRun::start(&cfg).map_err(|e| CliError(format!("--backend timerlat: {e}")))?;
    let start = run.tracer().start_time();
    let end = config.duration.map(|d| start + d);
    let mut samples = TimerlatSamples::new(TimerlatSetup {
        cpus: config.cpus.0.clone(),
        interval: config.interval,
        start,
        end,
        window: config.window,
        max_windows: config.max_windows,
        threshold: config.threshold,
        worst_kept: config.worst_kept,
    });
    let mut dec = decoder_for(run.tracer().capture().formats(), "")?;
    let mut lost = 0u64;
    let terminal = if to_stderr { stderr_is_terminal() } else { stdout_is_terminal() };
    let mut table = LiveTable::new(terminal);
    let mut next_frame = start + Nanos::from_secs(1);
    let mut above = false;
    let stopped_by = loop {
        std::thread::sleep(POLL);
        above |= feed(&mut dec, run.tracer().capture().take_pages(), &mut samples, &mut lost);
        let now = clock::now();
        if signal::stop_flag().load(Ordering::Relaxed) {
            break StopReason::Signal;
        }
        if config.stop_on_threshold && (above || run.tracer().stopped_by_kernel()) {
            break StopReason::Threshold;
        }
        if end.is_some_and(|e| now >= e) {
            break StopReason::Duration;
        }
        if !quiet && now >= next_frame {
            next_frame = next_frame + Nanos::from_secs(1);
            emit(&table.frame(now.saturating_sub(start), &samples.live()), to_stderr);
        }
    };
    let finished = clock::now();
    warnings.extend(run.tracer().notes().iter().cloned());
    let threads: Vec<String> = run.thread_ids().iter().map(|(c, t)| format!("timerlat/{c} (pid {t})")).collect();
    let data = run.finish().map_err(|e| CliError(format!("--backend timerlat: stopping the tracer: {e}")))?;
    warnings.extend(data.report.notes.iter().cloned());
    for cpu in data.cpus {
        if let Some(e) = &cpu.error {
            warnings.push(format!("CPU {}: the timerlat reader stopped early: {e}", cpu.cpu));
        }
        above |= feed(&mut dec, cpu.pages, &mut samples, &mut lost);
    }
    if !quiet {
        emit(&table.finish(), to_stderr);
    }
    if lost > 0 {
        warnings.push(format!(
            "the kernel's buffer lost {lost} timerlat samples (ring buffer overrun): the statistics miss them"
        ));
    }
    if samples.thread_samples() == 0 {
        warnings.push(format!(
            "timerlat recorded no sample on CPU {} ({}): check dmesg and the osnoise/ settings",
            config.cpus,
            threads.join(", ")
        ));
    }
    let (thread, irq) = samples.summarize();
    metadata.duration_ns = end.map_or(finished, |e| e.min(finished)).saturating_sub(start).0;
    let mut result = TimerResult::new(metadata, options);
    result.start_monotonic_ns = start.0;
    result.stopped_by = if stopped_by == StopReason::Duration && above && config.stop_on_threshold {
        StopReason::Threshold
    } else {
        stopped_by
    };
    result.cpus = thread.cpus;
    result.all = thread.all;
    result.irq = Some(IrqLatency { cpus: irq.cpus, all: irq.all });
    result.warnings = warnings;
    Ok(result)
}

/// Decodes `pages` into the samples; returns whether a thread sample crossed the threshold.
fn feed(dec: &mut RawDecoder, pages: Vec<RawPage>, samples: &mut TimerlatSamples, lost: &mut u64) -> bool {
    let mut above = false;
    for p in pages {
        crate::capture::decode_page(dec, p.cpu, &p.data, lost, &mut |e| above |= samples.add(&e));
    }
    above
}
