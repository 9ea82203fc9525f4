//! `latscope noise --backend osnoise`: the kernel's osnoise tracer measures (sys's `OsnoiseRun`), the
//! instance's pages are decoded as they come and fed to analyze's `OsnoiseSamples`, a live line is drawn
//! from them, and the run becomes the same `NoiseResult` as the loop backend's, with the noise by source
//! and the tracer's per-period accounting. Wiring only.

use super::timer::emit;
use crate::capture::decoder_for;
use crate::error::CliError;
use crate::output::{stderr_is_terminal, stdout_is_terminal};
use crate::signal;
use latscope_analyze::noise::LoopRun;
use latscope_analyze::osnoise_samples::{OsnoiseSamples, OsnoiseSetup};
use latscope_decode::RawDecoder;
use latscope_model::noise_result::{CounterInfo, NoiseEnvironment, NoiseOptions, NoiseResult};
use latscope_model::{Nanos, RunMetadata, StopReason};
use latscope_sys::host::{counter_deltas, counter_snapshot};
use latscope_sys::measure::{clock, OsnoiseConfig, OsnoiseRun, Policy};
use latscope_sys::tracefs::RawPage;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often the instance's pages are taken and decoded.
const POLL: Duration = Duration::from_millis(50);

/// Runs osnoise as `cfg` asks for `duration` (until Ctrl-C when `None`) and returns the result;
/// `warnings` are the setup's so far. The live line goes to stderr when `to_stderr`, nowhere when `quiet`.
#[allow(clippy::too_many_arguments)]
pub fn measure(
    cfg: &OsnoiseConfig,
    duration: Option<Nanos>,
    options: NoiseOptions,
    mut metadata: RunMetadata,
    env: NoiseEnvironment,
    mut warnings: Vec<String>,
    quiet: bool,
    to_stderr: bool,
) -> Result<NoiseResult, CliError> {
    let counters_before = counter_snapshot(&cfg.cpus);
    let run = OsnoiseRun::start(cfg).map_err(|e| CliError(format!("--backend osnoise: {e}")))?;
    let start = run.tracer().start_time();
    let end = duration.map(|d| start + d);
    let mut samples = OsnoiseSamples::new(OsnoiseSetup {
        cpus: cfg.cpus.0.clone(),
        end,
        gap_capacity: options.gap_capacity as usize,
        stop_above: cfg.stop_above,
    });
    let mut dec = decoder_for(run.tracer().capture().formats(), "")?;
    let mut lost = 0u64;
    let terminal = if to_stderr { stderr_is_terminal() } else { stdout_is_terminal() };
    let mut next_line = start + Nanos::from_secs(1);
    let stops = cfg.stop_above.is_some() || cfg.stop_total_above.is_some();
    let mut above = false;
    let stopped_by = loop {
        std::thread::sleep(POLL);
        above |= feed(&mut dec, run.tracer().capture().take_pages(), &mut samples, &mut lost);
        let now = clock::now();
        if signal::stop_flag().load(Ordering::Relaxed) {
            break StopReason::Signal;
        }
        if stops && (above || run.tracer().stopped_by_kernel()) {
            break StopReason::Threshold;
        }
        if end.is_some_and(|e| now >= e) {
            break StopReason::Duration;
        }
        if !quiet && now >= next_line {
            next_line = next_line + Nanos::from_secs(1);
            emit(&live_line(&samples, now.saturating_sub(start), terminal), to_stderr);
        }
    };
    let finished = clock::now();
    let counters_after = counter_snapshot(&cfg.cpus);
    warnings.extend(run.tracer().notes().iter().cloned());
    let threads: Vec<String> = run.thread_ids().iter().map(|(c, t)| format!("osnoise/{c} (pid {t})")).collect();
    let data = run.finish().map_err(|e| CliError(format!("--backend osnoise: stopping the tracer: {e}")))?;
    warnings.extend(data.report.notes.iter().cloned());
    for cpu in data.cpus {
        if let Some(e) = &cpu.error {
            warnings.push(format!("CPU {}: the osnoise reader stopped early: {e}", cpu.cpu));
        }
        above |= feed(&mut dec, cpu.pages, &mut samples, &mut lost);
    }
    if !quiet && terminal {
        emit("\r\x1b[K", to_stderr);
    }
    if lost > 0 {
        warnings.push(format!(
            "the kernel's buffer lost {lost} osnoise records (ring buffer overrun): the figures miss them"
        ));
    }
    if samples.period_count() == 0 && samples.gap_count() == 0 {
        warnings.push(format!(
            "osnoise recorded nothing on CPU {} ({}): a run shorter than one --period ({}) and no noise above the \
             threshold, or the tracer did not run (check dmesg and the osnoise/ settings)",
            cfg.cpus,
            threads.join(", "),
            cfg.period
        ));
    }
    warnings.extend(counters_before.warnings.iter().cloned());
    let ended = end.map_or(finished, |e| e.min(finished));
    metadata.duration_ns = ended.saturating_sub(start).0;
    // The share of each period the threads measured, over the run.
    let runtime = Nanos((metadata.duration_ns as f64 * cfg.runtime.0 as f64 / cfg.period.0 as f64) as u64);
    let counter = CounterInfo { name: "osnoise".into(), freq_hz: 0.0, calibrated_against: String::new() };
    let mut result = NoiseResult::new(metadata, options, counter);
    result.start_monotonic_ns = start.0;
    result.stopped_by = if above || (stopped_by == StopReason::Threshold) { StopReason::Threshold } else { stopped_by };
    let span = LoopRun { start, end: ended, counter_hz: 0.0 };
    result.cpus = samples
        .summarize(span, runtime, &result.options, &env, &|cpu| counter_deltas(&counters_before, &counters_after, cpu));
    if result.stopped_by == StopReason::Threshold && !result.cpus.iter().any(|c| c.stopped_on_threshold) {
        // The kernel stopped on the total of a period (stop_tracing_total_us): its CPU is the one whose noise
        // passed it; without a record of it, every measured CPU is marked.
        for c in &mut result.cpus {
            c.stopped_on_threshold = true;
        }
    }
    if matches!(cfg.policy, Policy::Fifo(_)) && cfg.runtime == cfg.period {
        warnings.push(
            "the osnoise threads run SCHED_FIFO for whole periods: RT throttling stops them each \
             sched_rt_period_us, which counts as noise; give --runtime shorter than --period"
                .into(),
        );
    }
    result.environment = env;
    result.warnings = warnings;
    Ok(result)
}

/// Decodes `pages` into the samples; returns whether a single noise crossed `stop_above`.
fn feed(dec: &mut RawDecoder, pages: Vec<RawPage>, samples: &mut OsnoiseSamples, lost: &mut u64) -> bool {
    let mut above = false;
    for p in pages {
        crate::capture::decode_page(dec, p.cpu, &p.data, lost, &mut |e| above |= samples.add(&e));
    }
    above
}

/// `[Ns] CPU 1: 12 noises, noise 1.2ms, max 300us | …`, redrawn in place on a terminal.
fn live_line(samples: &OsnoiseSamples, since: Nanos, terminal: bool) -> String {
    let parts: Vec<String> = samples
        .live()
        .iter()
        .map(|l| {
            let n = latscope_report::human::counted(l.gaps, "noise", "noises");
            format!("CPU {}: {n}, noise {}, max {}", l.cpu, l.noise, l.max_gap)
        })
        .collect();
    let line = format!("[{}s] {}", since.0 / 1_000_000_000, parts.join(" | "));
    if terminal {
        format!("\r\x1b[K{line}")
    } else {
        format!("{line}\n")
    }
}
