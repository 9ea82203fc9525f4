//! `latscope timer --backend timerlat`: the kernel's timerlat tracer measures (sys's `TimerlatRun`), the
//! instance's pages are decoded as they come and fed to analyze's `TimerlatSamples`, the live table is
//! drawn from them, and the run becomes the same `TimerResult` as the user-space backend's, with the
//! timer IRQ's latency beside the thread latency. With `--trace` the instance also records the latency
//! events (the same set, window and stacks as the user-space backend's capture): the pages are copied as
//! they come for the samples and kept in the window, the window is held around every kept worst sample,
//! and at the end the whole window is decoded for the explanation of the worst thread samples and of the worst
//! timer IRQ samples (by their activations' wakeups). Wiring only.

use super::timer::emit;
use crate::capture::{self, decoder_for, Decoded};
use crate::error::CliError;
use crate::output::{stderr_is_terminal, stdout_is_terminal};
use crate::signal;
use latscope_analyze::sample_explain::{worst_samples, MeasuredSample};
use latscope_analyze::timerlat_samples::{TimerlatSamples, TimerlatSetup};
use latscope_decode::RawDecoder;
use latscope_model::{CpuId, CpuTimer, IrqLatency, Nanos, RunMetadata, StopReason, TimerOptions, TimerResult};
use latscope_report::live::LiveTable;
use latscope_sys::measure::{clock, TimerConfig, TimerlatConfig, TimerlatRun};
use latscope_sys::tracefs::{Capture, RawPage, HOLD_AFTER, HOLD_BEFORE};
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often the instance's pages are taken and decoded.
const POLL: Duration = Duration::from_millis(50);

/// `--trace`: what to record beside the samples and how many of the worst to explain.
#[derive(Clone, Copy, Debug)]
pub struct TraceAsk {
    /// The rolling window kept (plus what is held around the worst samples).
    pub span: Nanos,
    /// No stack triggers.
    pub no_stacks: bool,
    /// How many of the worst thread samples to explain.
    pub top: usize,
}

/// A traced run's capture, decoded, and the samples it is to explain (the worst thread latencies, as
/// wakeups of the `timerlat/N` threads).
#[derive(Debug)]
pub struct Traced {
    /// The instance's window, decoded.
    pub decoded: Result<Decoded, CliError>,
    /// What the capture lacked and other notes.
    pub notes: Vec<String>,
    /// The worst thread samples, worst first.
    pub samples: Vec<MeasuredSample>,
    /// The worst timer IRQ samples, worst first (explained by their activations' wakeups).
    pub irq_samples: Vec<MeasuredSample>,
    /// Whether the kernel stopped recording at the first threshold crossing (`--stop-on-threshold`).
    pub frozen: bool,
}

/// Runs timerlat as `config` asks (CPUs, period, policy, duration, threshold, windows) and returns the
/// result, and with `trace` the decoded window and the samples to explain; `warnings` are the setup's so
/// far. The live table goes to stderr when `to_stderr`.
pub fn measure(
    config: &TimerConfig,
    options: TimerOptions,
    mut metadata: RunMetadata,
    mut warnings: Vec<String>,
    quiet: bool,
    to_stderr: bool,
    trace: Option<TraceAsk>,
) -> Result<(TimerResult, Option<Traced>), CliError> {
    let cfg = TimerlatConfig {
        cpus: config.cpus.clone(),
        interval: config.interval,
        policy: config.policy,
        stop_above: config.threshold.filter(|_| config.stop_on_threshold),
        trace: trace.map(|t| capture::window_config(&config.cpus, t.span, t.no_stacks)),
    };
    let run = TimerlatRun::start(&cfg).map_err(|e| CliError(format!("--backend timerlat: {e}")))?;
    let mut trace_notes: Vec<String> = Vec::new();
    if let Some(t) = trace {
        let c = run.tracer().capture();
        trace_notes.extend(c.report().missing.iter().map(|m| format!("missing {m}")));
        capture::add_thread_stacks(c, run.thread_ids(), t.no_stacks, &mut trace_notes);
    }
    // Traced, the pages stay in the window: copies are decoded for the samples.
    let new_pages = |c: &Capture| if trace.is_some() { c.copy_new_pages() } else { c.take_pages() };
    let mut held = Held::default();
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
        above |= feed(&mut dec, new_pages(run.tracer().capture()), &mut samples, &mut lost);
        if trace.is_some() {
            held.hold_new(run.tracer().capture(), &samples);
        }
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
    let tids = run.thread_ids().to_vec();
    let threads: Vec<String> = tids.iter().map(|(c, t)| format!("timerlat/{c} (pid {t})")).collect();
    let mut data = run.finish().map_err(|e| CliError(format!("--backend timerlat: stopping the tracer: {e}")))?;
    let mut decoded = None;
    if trace.is_some() {
        // The window holds pages already fed: only the events after the last one fed count as samples.
        let until = samples.last_seen();
        for cpu in &data.cpus {
            let mut each = |e: latscope_model::Event| {
                if until.get(&e.cpu).map_or(true, |&t| e.ts > t) {
                    above |= samples.add(&e);
                }
            };
            for p in &cpu.pages {
                capture::decode_page(&mut dec, cpu.cpu, &p.data, &mut lost, &mut each);
            }
        }
        decoded = Some(capture::decode(&data, &mut trace_notes));
    } else {
        warnings.extend(data.report.notes.iter().cloned());
    }
    for cpu in &mut data.cpus {
        if let Some(e) = &cpu.error {
            warnings.push(format!("CPU {}: the timerlat reader stopped early: {e}", cpu.cpu));
        }
        if trace.is_none() {
            above |= feed(&mut dec, std::mem::take(&mut cpu.pages), &mut samples, &mut lost);
        }
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
    let traced = trace.zip(decoded).map(|(t, decoded)| {
        // Each CPU's kept worst samples as wakeups of its timerlat/N thread.
        let worst_of = |cpus: &[CpuTimer]| {
            let threads = cpus.iter().filter_map(|c| {
                let tid = tids.iter().find(|(cpu, _)| *cpu == c.cpu)?.1;
                Some((c.cpu, tid, c.worst.as_slice()))
            });
            worst_samples(threads, Some(config.policy.kernel_prio()), t.top)
        };
        let samples = worst_of(&result.cpus);
        let irq_samples = result.irq.as_ref().map_or_else(Vec::new, |i| worst_of(&i.cpus));
        let frozen = result.stopped_by == StopReason::Threshold;
        Traced { decoded, notes: trace_notes, samples, irq_samples, frozen }
    });
    Ok((result, traced))
}

/// The kept worst samples whose trace is held in the window (`(cpu, seq, whether an IRQ sample)`).
#[derive(Debug, Default)]
struct Held(BTreeSet<(CpuId, u64, bool)>);

impl Held {
    /// Holds the window around every kept worst thread and timer IRQ sample not held yet: from a little
    /// before it was due to a little after it was taken (after an IRQ sample, its thread's wakeup follows
    /// within that margin unless the thread itself was held off).
    fn hold_new(&mut self, c: &Capture, samples: &TimerlatSamples) {
        let thread = samples.kept_worst().into_iter().map(|(cpu, w)| (cpu, w, false));
        let irq = samples.kept_worst_irq().into_iter().map(|(cpu, w)| (cpu, w, true));
        for (cpu, w, is_irq) in thread.chain(irq) {
            if self.0.insert((cpu, w.seq, is_irq)) {
                c.hold(Nanos(w.expected_ns).saturating_sub(HOLD_BEFORE), Nanos(w.actual_ns) + HOLD_AFTER);
            }
        }
    }
}

/// Decodes `pages` into the samples; returns whether a thread sample crossed the threshold.
fn feed(dec: &mut RawDecoder, pages: Vec<RawPage>, samples: &mut TimerlatSamples, lost: &mut u64) -> bool {
    let mut above = false;
    for p in pages {
        crate::capture::decode_page(dec, p.cpu, &p.data, lost, &mut |e| above |= samples.add(&e));
    }
    above
}
