//! `latscope noise`: parses the options, runs the per-CPU spinning loops (or the kernel's osnoise tracer,
//! `noise_osnoise.rs`), shows a live line, accounts the noise (analysis), and renders the text summary and
//! JSON. Wiring only.
//!
//! Default priority: `-p 0` (SCHED_OTHER), like oslat. A SCHED_OTHER spinner is not subject to RT
//! throttling and does not starve the per-CPU kernel threads, but every other runnable task on its CPU
//! shows up as noise. With `-p N` (SCHED_FIFO N) the loop sees what a real-time thread sees; on a kernel
//! with `sched_rt_runtime_us` below the period it is then stopped for `period − runtime` every period
//! (50 ms every second by default), which latscope detects and names instead of reporting it as noise.

use crate::args::{self, CpuArgs, DurationArg, OutputArgs, PriorityArg, StacksArg};
use crate::beside::Beside;
use crate::capture;
use crate::cmd::report::{say_written, write_noise_report, write_perfetto};
use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{stderr_is_terminal, stdout_is_terminal, write_file, write_text, Kind};
use crate::signal;
use latscope_analyze::audit::findings_at;
use latscope_analyze::noise::{summarize, CpuLoop, LoopRun};
use latscope_analyze::noise_attribution::{attribute, CpuGaps};
use latscope_model::facts::SystemFacts;
use latscope_model::noise_result::{CounterInfo, NoiseBackend, NoiseOptions, NoiseResult, OsnoiseSettings};
use latscope_model::{Event, Nanos, NoiseCauses, Pid, StopReason};
use latscope_report::json::write_json;
use latscope_report::text::noise::write_noise;
use latscope_sys::host::{collect, counter_deltas, run_metadata};
use latscope_sys::measure::{
    noise_environment, osnoise_available, start_noise, NoiseConfig, NoiseHandle, NoiseRun, OsnoiseConfig, COUNTER_NAME,
    DEFAULT_GAP_CAPACITY,
};
use latscope_sys::tracefs::{Capture, StackSpec};
use std::io::Write;
use std::time::Duration;

/// Arguments of `latscope noise`.
#[derive(clap::Args, Debug)]
#[command(
    mut_arg("cpus", |a| a.help("CPUs to measure, one spinning thread each: `1`, `0,2-3` [default: all online CPUs]")),
    mut_arg("priority", |a| a.default_value("0").help(
        "SCHED_FIFO priority of the spinners, 1-99. Default 0 = SCHED_OTHER: other tasks' time counts as noise, no RT \
         throttling. With SCHED_FIFO the kernel stops the spinner for (sched_rt_period_us − sched_rt_runtime_us) \
         every period; latscope detects and names that"
    ))
)]
pub struct Args {
    #[command(flatten)]
    cpus: CpuArgs,
    #[command(flatten)]
    priority: PriorityArg,
    #[command(flatten)]
    duration: DurationArg,
    /// Gaps longer than this count as noise and are recorded with their start time
    #[arg(long, value_name = "DUR", default_value = "5us", value_parser = args::duration())]
    threshold: Nanos,
    /// End the run at the first gap longer than --threshold, with exit code 2
    #[arg(long)]
    stop_on_threshold: bool,
    /// Also report the noise per window of this length
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    window: Option<Nanos>,
    /// Gaps kept per CPU for the lists and windows (more are counted, not kept)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_GAP_CAPACITY)]
    max_gaps: usize,
    /// No live line; only the final summary
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Trace the measured CPUs while measuring and attribute every recorded gap to what ran in it (IRQ,
    /// softirq, NMI, timer tick, another task, RT throttling) or to no kernel event at all (hardware or
    /// hypervisor)
    #[arg(long)]
    trace: bool,
    #[command(flatten)]
    stacks: StacksArg,
    /// What measures: latscope's spinning loops (loop), the kernel's osnoise tracer (osnoise: each noise
    /// named by its source, IRQ, softirq, thread, NMI or hardware), or osnoise when the kernel has it (auto)
    #[arg(long, value_enum, default_value_t = Backend::Loop)]
    backend: Backend,
    /// osnoise: the tracer's period (osnoise/period_us); it reports once per period
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    period: Option<Nanos>,
    /// osnoise: how much of each period its threads measure (osnoise/runtime_us) [default: the whole period]
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    runtime: Option<Nanos>,
    /// osnoise: the kernel stops at the first single noise longer than this (osnoise/stop_tracing_us), exit
    /// code 2 (--stop-on-threshold is --stop-above THRESHOLD)
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    stop_above: Option<Nanos>,
    /// osnoise: the kernel stops at the first period whose noise passes this (osnoise/stop_tracing_total_us),
    /// exit code 2
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    stop_total_above: Option<Nanos>,
    #[command(flatten)]
    outputs: OutputArgs,
}

/// `--backend`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// latscope's spinning loops (oslat's method)
    Loop,
    /// The kernel's osnoise tracer in latscope's tracefs instance
    Osnoise,
    /// osnoise when this kernel has it (and --trace is not asked for), else loop; says which ran
    Auto,
}

/// The osnoise tracer's default period (the kernel's and rtla's): one record per second.
const OSNOISE_PERIOD: Nanos = Nanos::from_secs(1);

fn plan(args: &Args) -> Result<(NoiseConfig, NoiseOptions), CliError> {
    let cpus = args.cpus.resolve()?;
    let policy = args.priority.priority;
    let duration = args.duration.nonzero()?;
    let threshold = args.threshold;
    if threshold.0 == 0 {
        return Err(CliError("--threshold must be longer than 0, e.g. 5us".into()));
    }
    let window = args.window;
    if window.is_some_and(|w| w < Nanos::from_ms(1)) {
        return Err(CliError("--window must be at least 1ms, e.g. 1s".into()));
    }
    let config = NoiseConfig {
        cpus: cpus.clone(),
        policy,
        duration,
        threshold,
        gap_capacity: args.max_gaps,
        stop_on_threshold: args.stop_on_threshold,
    };
    let options = NoiseOptions {
        cpus,
        priority: u32::from(policy.priority()),
        duration_ns: duration.map(|d| d.0),
        threshold_ns: threshold.0,
        window_ns: window.map(|w| w.0),
        stop_on_threshold: args.stop_on_threshold,
        gap_capacity: args.max_gaps as u64,
        backend: NoiseBackend::Loop,
        osnoise: None,
    };
    Ok((config, options))
}

/// The backend `--backend` resolves to on this machine; `auto` says on stderr which it took and why.
fn backend(args: &Args) -> Result<NoiseBackend, CliError> {
    let osnoise_only = [
        ("--period", args.period.is_some()),
        ("--runtime", args.runtime.is_some()),
        ("--stop-above", args.stop_above.is_some()),
        ("--stop-total-above", args.stop_total_above.is_some()),
    ];
    let loop_only = |b: NoiseBackend| -> Result<NoiseBackend, CliError> {
        match osnoise_only.iter().find(|(_, given)| *given) {
            Some((flag, _)) if b == NoiseBackend::Loop => Err(CliError(format!(
                "{flag} sets the kernel's osnoise tracer and needs --backend osnoise; the loop backend stops at \
                 the first gap above --threshold with --stop-on-threshold"
            ))),
            _ => Ok(b),
        }
    };
    match args.backend {
        Backend::Loop => loop_only(NoiseBackend::Loop),
        Backend::Osnoise if args.trace => Err(CliError(
            "--trace is for --backend loop: the osnoise backend names each noise's source from the tracer's own \
             events"
                .into(),
        )),
        Backend::Osnoise => match osnoise_available() {
            Ok(()) => Ok(NoiseBackend::Osnoise),
            Err(why) => Err(CliError(format!("--backend osnoise: {why}; use --backend loop (the default) instead"))),
        },
        Backend::Auto => {
            let why_not =
                if args.trace { Some("--trace needs the loop backend".to_string()) } else { osnoise_available().err() };
            match why_not {
                None => {
                    eprintln!("latscope: --backend auto: measuring with the kernel's osnoise tracer");
                    Ok(NoiseBackend::Osnoise)
                }
                Some(why) => {
                    eprintln!("latscope: --backend auto: measuring with latscope's spinning loops ({why})");
                    loop_only(NoiseBackend::Loop)
                }
            }
        }
    }
}

/// The osnoise tracer's settings from the options (`--stop-on-threshold` stops above `--threshold`).
fn osnoise_config(args: &Args, config: &NoiseConfig) -> (OsnoiseConfig, OsnoiseSettings) {
    let period = args.period.unwrap_or(OSNOISE_PERIOD);
    let runtime = args.runtime.unwrap_or(period);
    let stop_above = args.stop_above.or(args.stop_on_threshold.then_some(config.threshold));
    let cfg = OsnoiseConfig {
        cpus: config.cpus.clone(),
        period,
        runtime,
        policy: config.policy,
        threshold: config.threshold,
        stop_above,
        stop_total_above: args.stop_total_above,
    };
    let settings = OsnoiseSettings {
        period_ns: period.0,
        runtime_ns: runtime.0,
        stop_above_ns: stop_above.map(|v| v.0),
        stop_total_above_ns: args.stop_total_above.map(|v| v.0),
    };
    (cfg, settings)
}

/// Runs `latscope noise`.
pub fn run(args: Args) -> CmdResult {
    let (config, mut options) = plan(&args)?;
    let outputs = args.outputs.outputs();
    outputs.check()?;
    options.backend = backend(&args)?;
    let to_stdout_json = outputs.takes_stdout();
    let live = (!args.quiet).then_some(to_stdout_json);
    let (mut result, events) = if options.backend == NoiseBackend::Osnoise {
        (measure_osnoise(&args, &config, options, to_stdout_json)?, Vec::new())
    } else {
        measure(&config, options, &collect(), args.trace, args.stacks.no_stacks, live)?
    };
    latscope_report::sentences::noise(&mut result);

    write_text(|out| write_noise(out, &result), to_stdout_json)?;
    if let Some(path) = &args.outputs.json {
        write_file(Kind::Json, path, |w| write_json(w, &result))?;
    }
    if let Some(dir) = &args.outputs.report {
        let index = write_noise_report(dir, args.outputs.force, &result, "noise")?;
        say_written("report", &index);
    }
    if let Some(path) = &args.outputs.perfetto {
        write_perfetto(path, &events, None, Some(&result))?;
        say_written("Perfetto trace", path);
    }
    let exceeded = result.cpus.iter().any(|c| c.stopped_on_threshold);
    Ok(if exceeded { Outcome::ThresholdExceeded } else { Outcome::Ok })
}

/// Measures with the kernel's osnoise tracer (`--backend osnoise`).
fn measure_osnoise(
    args: &Args,
    config: &NoiseConfig,
    mut options: NoiseOptions,
    to_stdout_json: bool,
) -> Result<NoiseResult, CliError> {
    let (cfg, settings) = osnoise_config(args, config);
    options.osnoise = Some(settings);
    let facts = collect();
    let mut warnings = Vec::new();
    // latscope's other threads stay off the measured CPUs; another latscope run there is said.
    let mut beside = Beside::start(&config.cpus, &mut warnings);
    let metadata = run_metadata(std::env::args().collect(), &facts);
    let env = noise_environment(&config.cpus, metadata.hypervisor.clone());
    let findings = findings_at(&facts, &config.cpus, u32::from(config.policy.priority()));
    let mut result = super::noise_osnoise::measure(
        &cfg,
        config.duration,
        options,
        metadata,
        env,
        warnings,
        args.quiet,
        to_stdout_json,
    )?;
    beside.look_again(&mut result.warnings);
    result.findings = findings;
    Ok(result)
}

/// Measures noise as `config` says, tracing beside the spinners when `trace`: the result (with the
/// gaps' causes when traced) and the trace's events. `facts`: the machine as read before the spinners
/// start (metadata and findings). `live`: show the live line (on stderr when true).
pub(crate) fn measure(
    config: &NoiseConfig,
    options: NoiseOptions,
    facts: &SystemFacts,
    trace: bool,
    no_stacks: bool,
    live: Option<bool>,
) -> Result<(NoiseResult, Vec<Event>), CliError> {
    let mut beside_warnings = Vec::new();
    // latscope's other threads stay off the measured CPUs; another latscope run there is said.
    let mut beside = Beside::start(&config.cpus, &mut beside_warnings);
    let mut metadata = run_metadata(std::env::args().collect(), facts);
    let env = noise_environment(&config.cpus, metadata.hypervisor.clone());
    let findings = findings_at(facts, &config.cpus, u32::from(config.policy.priority()));

    let mut trace_notes = Vec::new();
    let capture = if trace {
        let span = config.duration.map_or(UNTIMED_SPAN, |d| d + Nanos::from_secs(5));
        let mut skipped = Vec::new();
        // No stack at the start: the spinners' own ticks are not worth ~3 µs each (see below).
        let c = capture::start(&config.cpus, span, "trace of the noise run", true, &mut skipped);
        // Said once, with the trace's attribution in the summary.
        trace_notes.extend(skipped.iter().map(|m| format!("missing {m}")));
        c
    } else {
        None
    };
    let handle = start_noise(config, signal::stop_flag()).map_err(CliError::msg)?;
    beside.look_again(&mut beside_warnings);
    if let (Some(c), false) = (&capture, no_stacks) {
        // The timer interrupt's stack when it finds another task than the spinner running: what ran in
        // a gap, and where.
        let spinners: Vec<Pid> = handle.thread_ids().iter().map(|t| t.1).collect();
        trace_notes.extend(c.add_stacks(&StackSpec::timer_interrupt_except(&spinners)));
    }
    show_live(&handle, live);
    let run = handle.join().map_err(CliError::msg)?;
    beside.look_again(&mut beside_warnings);

    metadata.duration_ns = run.end.saturating_sub(run.start).0;
    let mut result = NoiseResult::new(
        metadata,
        options,
        CounterInfo {
            name: COUNTER_NAME.to_string(),
            freq_hz: run.calibration.freq_hz,
            calibrated_against: "CLOCK_MONOTONIC_RAW".to_string(),
        },
    );
    result.start_monotonic_ns = run.start.0;
    result.stopped_by = if run.cpus.iter().any(|c| c.stopped_on_threshold) {
        StopReason::Threshold
    } else if signal::stop_flag().load(std::sync::atomic::Ordering::Relaxed) {
        StopReason::Signal
    } else {
        StopReason::Duration
    };
    let span = LoopRun { start: run.start, end: run.end, counter_hz: run.calibration.freq_hz };
    result.cpus = summarize(&loops(&run), span, &result.options, &env);
    result.environment = env;
    result.warnings = beside_warnings;
    result.warnings.extend(warnings(&run, &result));
    result.findings = findings;
    let mut events = Vec::new();
    if trace {
        let (mut causes, ev) = attribute_gaps(capture, &run, &result, trace_notes);
        beside.threads().mark_noise(&mut causes);
        result.causes = Some(causes);
        events = ev;
    }
    Ok((result, events))
}

/// The rolling window of a trace without -D (the gaps before it are counted, not attributed).
const UNTIMED_SPAN: Nanos = Nanos::from_secs(60);

/// Stops the capture, decodes it and attributes every recorded gap (`--trace`).
fn attribute_gaps(
    capture: Option<Capture>,
    run: &NoiseRun,
    r: &NoiseResult,
    mut notes: Vec<String>,
) -> (NoiseCauses, Vec<Event>) {
    let mut out = NoiseCauses::default();
    let Some(c) = capture else {
        out.notes = notes;
        return (out, Vec::new());
    };
    let decoded = capture::finish(c, &mut notes);
    let d = match decoded {
        Ok(d) => d,
        Err(e) => {
            notes.push(format!("the trace could not be decoded: {e}"));
            out.notes = notes;
            return (out, Vec::new());
        }
    };
    let gaps: Vec<CpuGaps<'_>> = run
        .cpus
        .iter()
        .map(|c| CpuGaps {
            cpu: c.cpu,
            spinner: c.tid,
            gaps: &c.gaps,
            measured_noise: c.noise,
            steal_ns: r.cpus.iter().find(|x| x.cpu == c.cpu).and_then(|x| x.counters.steal_ns),
        })
        .collect();
    out.cpus = attribute(&d.events, &gaps);
    out.events = d.events.len() as u64;
    out.lost_events = d.lost;
    out.notes = notes;
    (out, d.events)
}

/// What the loops measured, with each CPU's counter deltas, as the analysis takes it.
fn loops(run: &NoiseRun) -> Vec<CpuLoop<'_>> {
    run.cpus
        .iter()
        .map(|c| CpuLoop {
            cpu: c.cpu,
            loops: c.loops,
            loop_cycles: c.loop_cycles,
            min_cycles: c.min_cycles,
            runtime: c.runtime,
            histogram: &c.histogram,
            gaps: &c.gaps,
            gap_count: c.gap_count,
            dropped: c.dropped,
            noise: c.noise,
            max_gap: c.max_gap,
            stopped_on_threshold: c.stopped_on_threshold,
            counters: counter_deltas(&run.counters_before, &run.counters_after, c.cpu),
        })
        .collect()
}

fn warnings(run: &NoiseRun, r: &NoiseResult) -> Vec<String> {
    let mut w = run.warnings.clone();
    w.extend(run.counters_before.warnings.iter().cloned());
    for c in r.cpus.iter().filter(|c| c.gaps.dropped > 0) {
        w.push(format!(
            "CPU {}: {} gaps did not fit in the buffer of {} (raise --max-gaps); they are in the totals only",
            c.cpu, c.gaps.dropped, r.options.gap_capacity
        ));
    }
    for s in r.environment.smt.iter().filter(|s| !s.online.is_empty()) {
        w.push(format!("CPU {} has online SMT siblings (CPU {}): their load is part of this reading", s.cpu, s.online));
    }
    w
}

/// A live line about once a second until the run ends (nothing with --quiet).
fn show_live(handle: &NoiseHandle<'_>, live: Option<bool>) {
    let (quiet, to_stderr) = (live.is_none(), live.unwrap_or(false));
    let terminal = if to_stderr { stderr_is_terminal() } else { stdout_is_terminal() };
    let mut ticks = 0u32;
    while !handle.is_done() {
        std::thread::sleep(Duration::from_millis(100));
        ticks += 1;
        if quiet || ticks % 10 != 0 {
            continue;
        }
        let parts: Vec<String> = handle
            .live()
            .iter()
            .map(|l| {
                let gaps = latscope_report::human::counted(l.gaps, "gap", "gaps");
                format!("CPU {}: {gaps}, noise {}, max {}", l.cpu, l.noise, l.max_gap)
            })
            .collect();
        let line = format!("[{}s] {}", ticks / 10, parts.join(" | "));
        let text = if terminal { format!("\r\x1b[K{line}") } else { format!("{line}\n") };
        emit(&text, to_stderr);
    }
    if !quiet && terminal && ticks >= 10 {
        emit("\r\x1b[K", to_stderr);
    }
}

fn emit(text: &str, to_stderr: bool) {
    // A closed pipe must not abort the measurement: write errors of the live view are ignored.
    if to_stderr {
        let _ = std::io::stderr().write_all(text.as_bytes());
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}
