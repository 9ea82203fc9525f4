//! `latscope timer`: parses the options, sets up the real-time environment (mlockall, cpu_dma_latency),
//! runs the per-CPU measurement, shows the live table, and renders the summary and JSON. Wiring only.
//! With `--trace`, a capture runs beside the measurement, driven by sys's trigger (threshold crossings and
//! new worsts marked in the trace, the window around them held); the worst samples are explained from it
//! at the end.

use crate::args::{self, CpuArgs, DurationArg, OutputArgs, PriorityArg, StacksArg};
use crate::beside::Beside;
use crate::capture;
use crate::cmd::report::{say_written, write_perfetto, write_timer_report};
use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{stderr_is_terminal, stdout_is_terminal, write_file, write_text, Kind};
use crate::signal;
use latscope_analyze::audit::findings_at;
use latscope_analyze::remedy::RemedyContext;
use latscope_analyze::sample_explain::{explain_irq_samples, explain_samples, worst_samples, MeasuredSample};
use latscope_analyze::timer_summary::{summarize_timer, CpuSamples, TimerSummary};
use latscope_analyze::wakeup_graph;
use latscope_model::{Event, Nanos, TimerBackend, TimerOptions, TimerResult, TimerTrace};
use latscope_report::json::write_json;
use latscope_report::live::LiveTable;
use latscope_report::text::timer::write_timer;
use latscope_sys::host::{collect, run_metadata};
use latscope_sys::measure::timerlat_available;
use latscope_sys::measure::{
    clock, hold_dma_latency_zero, lock_memory, start_timer, Policy, TimerConfig, TimerMeasurement, TimerRun,
};
use latscope_sys::tracefs::{graph_available, graph_config, Capture, CpuProgress, Trigger};
use std::io::Write;
use std::time::Duration;

/// Arguments of `latscope timer`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    cpus: CpuArgs,
    /// Timer period (ns, us, ms, s, m, h), e.g. 1ms or 1333us; at least 10us
    #[arg(
        short = 'i',
        long,
        value_name = "DUR",
        default_value = "1ms",
        allow_hyphen_values = true,
        value_parser = args::duration()
    )]
    interval: Nanos,
    #[command(flatten)]
    priority: PriorityArg,
    #[command(flatten)]
    duration: DurationArg,
    /// Count wakeups later than this; exceeding it makes the exit code 2
    #[arg(long, value_name = "DUR", allow_hyphen_values = true, value_parser = args::duration())]
    threshold: Option<Nanos>,
    /// End the run at the first wakeup later than --threshold
    #[arg(long)]
    stop_on_threshold: bool,
    /// Also report statistics per window of this length (mean, stddev, % above threshold, min-max)
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    window: Option<Nanos>,
    /// No live table; only the final summary
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Trace the measured CPUs while measuring (private tracefs instance, rolling window) and explain the
    /// worst wakeups from the trace: timer IRQ delay, IRQ handler, interference, blocking tasks, remedy
    #[arg(long)]
    trace: bool,
    #[command(flatten)]
    stacks: StacksArg,
    /// With --trace: also record the kernel's function_graph tracer on the measured CPUs (in the top-level
    /// tracing directory, every setting written back at the end; kernels with CONFIG_FUNCTION_GRAPH_TRACER) and
    /// compare the calls during the worst wakeup with those during the median one (`analyze --diff`'s diff)
    #[arg(long)]
    graph: bool,
    /// Also run the kernel's wakeup latency tracer meanwhile (wakeup_rt: real-time and deadline tasks,
    /// wakeup_dl: deadline only; CONFIG_SCHED_TRACER) in latscope's own tracefs instance, function tracing off,
    /// every setting written back, and show the worst wakeup it measured beside latscope's own worst
    #[arg(long, value_enum, value_name = "rt|dl")]
    wakeup_tracer: Option<super::timer_wakeup::Tracer>,
    /// With --wakeup-tracer: also record the functions the CPU ran between the worst wakeup and its switch
    /// (options/function-trace; slows every kernel function while it runs)
    #[arg(long)]
    wakeup_function_trace: bool,
    /// With --trace: how many of the worst wakeups to explain
    #[arg(long, value_name = "N", default_value_t = 3)]
    top: usize,
    /// What measures: latscope's own threads (user), the kernel's timerlat tracer (timerlat: thread latency
    /// as the headline, the timer IRQ's latency beside it), or timerlat when the kernel has it (auto)
    #[arg(long, value_enum, default_value_t = Backend::User)]
    backend: Backend,
    #[command(flatten)]
    outputs: OutputArgs,
}

/// `--backend`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// latscope's measuring threads (cyclictest's method)
    User,
    /// The kernel's timerlat tracer in latscope's tracefs instance
    Timerlat,
    /// timerlat when this kernel has it, else user; says which ran
    Auto,
}

/// The rolling window the trace keeps (plus what is held around marked samples).
const TRACE_SPAN: Nanos = Nanos::from_secs(12);

/// The validated options.
struct Plan {
    config: TimerConfig,
    options: TimerOptions,
}

fn plan(args: &Args) -> Result<Plan, CliError> {
    let cpus = args.cpus.resolve()?;
    let interval = args.interval;
    check_interval(interval, clock::resolution())?;
    let policy = args.priority.priority;
    let duration = args.duration.nonzero()?;
    if duration.is_some_and(|d| d < interval) {
        return Err(CliError("--duration is shorter than one --interval; measure for at least one period".into()));
    }
    let threshold = args.threshold;
    if args.stop_on_threshold && threshold.is_none() {
        return Err(CliError("--stop-on-threshold needs --threshold DUR, e.g. --threshold 100us".into()));
    }
    if args.graph && !args.trace {
        return Err(CliError("--graph needs --trace: add --trace".into()));
    }
    if args.wakeup_function_trace && args.wakeup_tracer.is_none() {
        return Err(CliError("--wakeup-function-trace needs --wakeup-tracer rt|dl: add --wakeup-tracer rt".into()));
    }
    if args.trace && args.top == 0 {
        return Err(CliError("--top 0: explain at least 1 wakeup".into()));
    }
    let window = args.window;
    if window.is_some_and(|w| w < interval) {
        return Err(CliError("--window is shorter than --interval; make it at least one period, e.g. 1s".into()));
    }
    let mut config = TimerConfig::new(cpus.clone(), interval, policy);
    config.duration = duration;
    config.threshold = threshold;
    config.stop_on_threshold = args.stop_on_threshold;
    config.window = window;
    if args.trace {
        // Every sample to explain must be among the kept worst ones.
        config.worst_kept = config.worst_kept.max(args.top);
    }
    let options = TimerOptions {
        cpus,
        interval_ns: interval.0,
        priority: u32::from(policy.priority()),
        duration_ns: duration.map(|d| d.0),
        threshold_ns: threshold.map(|t| t.0),
        stop_on_threshold: args.stop_on_threshold,
        window_ns: window.map(|w| w.0),
        backend: TimerBackend::User,
    };
    Ok(Plan { config, options })
}

/// The shortest period latscope measures: one wakeup (timer interrupt, switch, clock read) takes
/// microseconds on any machine, so a shorter period only counts overruns.
pub const MIN_INTERVAL: Nanos = Nanos::from_us(10);

/// Refuses a period below what the clock (`resolution`, from clock_getres) and the kernel can deliver.
fn check_interval(interval: Nanos, resolution: Nanos) -> Result<(), CliError> {
    let floor = MIN_INTERVAL.max(resolution);
    if interval < floor {
        let why = if resolution > MIN_INTERVAL {
            format!("the clock ticks every {resolution} here (clock_getres: no high-resolution timers)")
        } else {
            "a wakeup alone (timer interrupt, context switch, clock read) takes microseconds".to_string()
        };
        return Err(CliError(format!(
            "-i/--interval {interval} is shorter than any period this machine can keep: {why}; give at least {floor}, \
             e.g. -i 100us or -i 1ms"
        )));
    }
    Ok(())
}

/// The share of missed periods above which a run says its interval was not kept.
const OVERRUN_WARN_SHARE: f64 = 0.02;

/// One warning per CPU whose overruns pass a few percent of its wakeups: the interval was not kept.
pub(crate) fn overrun_warnings(r: &TimerResult) -> Vec<String> {
    let interval = Nanos(r.options.interval_ns);
    r.cpus
        .iter()
        .filter(|c| c.stats.count > 0 && c.stats.overruns as f64 > OVERRUN_WARN_SHARE * c.stats.count as f64)
        .map(|c| {
            format!(
                "CPU {}: {} missed periods (overruns) for {} wakeups, {:.0} % of the periods: the {interval} interval \
                 was not kept and the statistics describe a slower timer; use a longer -i/--interval",
                c.cpu,
                c.stats.overruns,
                c.stats.count,
                100.0 * c.stats.overruns as f64 / (c.stats.overruns + c.stats.count) as f64
            )
        })
        .collect()
}

/// The backend `--backend` resolves to on this machine; `auto` says on stderr which it took and why.
fn backend(args: &Args) -> Result<TimerBackend, CliError> {
    match args.backend {
        Backend::User => Ok(TimerBackend::User),
        Backend::Timerlat => match timerlat_available() {
            Ok(()) => Ok(TimerBackend::Timerlat),
            Err(why) => Err(CliError(format!("--backend timerlat: {why}; use --backend user (the default) instead"))),
        },
        Backend::Auto => match timerlat_available().err() {
            None => {
                let traced = if args.trace { ", the latency events traced in its instance" } else { "" };
                eprintln!("latscope: --backend auto: measuring with the kernel's timerlat tracer{traced}");
                Ok(TimerBackend::Timerlat)
            }
            Some(why) => {
                eprintln!("latscope: --backend auto: measuring with latscope's own threads ({why})");
                Ok(TimerBackend::User)
            }
        },
    }
}

/// Runs `latscope timer`.
pub fn run(args: Args) -> CmdResult {
    let mut plan = plan(&args)?;
    let outputs = args.outputs.outputs();
    outputs.check()?;
    plan.options.backend = backend(&args)?;
    if args.graph && plan.options.backend != TimerBackend::User {
        return Err(CliError("--graph works with --backend user (the default) only".into()));
    }
    if args.graph {
        graph_available().map_err(|why| CliError(format!("--graph: {why}")))?;
    }
    // Refused before anything is set up on a kernel without it; started before the measuring threads.
    let wakeup_tracer =
        args.wakeup_tracer.map(|t| super::timer_wakeup::start(t, args.wakeup_function_trace)).transpose()?;
    let to_stdout_json = outputs.takes_stdout();
    // The configuration around the numbers, read before the measuring threads start.
    let facts = collect();
    let mut metadata = run_metadata(std::env::args().collect(), &facts);
    let findings = findings_at(&facts, &plan.config.cpus, u32::from(plan.config.policy.priority()));

    // Real-time environment: degrade (and say so) rather than refuse, except for SCHED_FIFO itself.
    let mut warnings = Vec::new();
    // latscope's other threads stay off the measured CPUs; another latscope run there is said.
    let mut beside = Beside::start(&plan.config.cpus, &mut warnings);
    let _memory = lock_memory().map_err(|e| warnings.push(format!("degraded: memory not locked ({e})"))).ok();
    let _dma =
        hold_dma_latency_zero().map_err(|e| warnings.push(format!("degraded: CPU idle states not limited ({e})"))).ok();
    if plan.config.policy == Policy::Other {
        warnings.push("measuring as SCHED_OTHER (-p 0): any other task can delay the wakeups".into());
    }
    // Said once, in the summary (and the JSON).

    // While /dev/cpu_dma_latency was held at 0 the CPUs only polled when idle: no idle exit to wait for.
    let remedy = RemedyContext::from_facts(&facts);
    let remedy = if _dma.is_some() { remedy.with_idle_polling() } else { remedy };

    if plan.options.backend == TimerBackend::Timerlat {
        let ask = args.trace.then_some(super::timer_timerlat::TraceAsk {
            span: TRACE_SPAN,
            no_stacks: args.stacks.no_stacks,
            top: args.top,
        });
        let (mut result, traced) = super::timer_timerlat::measure(
            &plan.config,
            plan.options,
            metadata,
            warnings,
            args.quiet,
            to_stdout_json,
            ask,
        )?;
        result.findings = findings;
        result.kernel_wakeup =
            wakeup_tracer.map(|w| super::timer_wakeup::finish(w, |_, comm| comm.starts_with("timerlat/")));
        beside.look_again(&mut result.warnings);
        let mut events = Vec::new();
        if let Some(t) = traced {
            let base = TimerTrace { notes: t.notes, frozen: t.frozen, ..TimerTrace::default() };
            let (mut trace, ev) = explained(base, t.decoded, &t.samples, &remedy);
            let (irq_worst, notes) = explain_irq_samples(&ev, &t.irq_samples, &remedy);
            trace.irq_worst = irq_worst;
            trace.notes.extend(notes);
            beside.threads().mark_wakeups(&mut trace.worst);
            result.trace = Some(trace);
            events = ev;
        }
        return finish(&args, result, events, to_stdout_json);
    }

    let mut tracing = if args.trace {
        let mut skipped = Vec::new();
        let no_stacks = args.stacks.no_stacks;
        let what = "trace of the timer run";
        let c = if args.graph {
            // Asked for by name: a graph that cannot start is an error, not a note.
            let cfg = graph_config(&plan.config.cpus, TRACE_SPAN, capture::WINDOW_BYTES);
            Some(Capture::start(&cfg).map_err(|e| CliError(format!("--graph: {}", e.error)))?)
        } else {
            capture::start(&plan.config.cpus, TRACE_SPAN, what, no_stacks, &mut skipped)
        };
        // Said once, in the trace section of the summary.
        let notes: Vec<String> = skipped.iter().map(|m| format!("missing {m}")).collect();
        Some(Tracing { trigger: c.map(|c| Trigger::new(c, args.stop_on_threshold)), notes, graph: args.graph })
    } else {
        None
    };
    let run = start_timer(plan.config.clone(), signal::stop_flag()).map_err(CliError::msg)?;
    beside.look_again(&mut warnings);
    if let Some(t) = tracing.as_mut() {
        if let Some(trigger) = &t.trigger {
            capture::add_thread_stacks(trigger.capture(), run.thread_ids(), args.stacks.no_stacks, &mut t.notes);
        }
    }
    show_live(&run, args.quiet, to_stdout_json, tracing.as_mut().and_then(|t| t.trigger.as_mut()));
    let start = run.start();
    let m = run.join().map_err(CliError::msg)?;
    let kernel_wakeup = wakeup_tracer
        .map(|w| super::timer_wakeup::finish(w, |pid, _| m.cpus.iter().any(|c| i64::from(c.tid) == i64::from(pid))));
    beside.look_again(&mut warnings);
    let mut traced = tracing.map(|t| explain(t, &m, args.top, plan.config.policy, &remedy));
    if let Some((trace, _)) = traced.as_mut() {
        beside.threads().mark_wakeups(&mut trace.worst);
    }

    let summary = summarize(&m, start, plan.config.threshold);
    metadata.duration_ns = m.cpus.iter().map(|c| c.last_actual.0).max().unwrap_or(start.0).saturating_sub(start.0);
    let mut result = TimerResult::new(metadata, plan.options);
    result.start_monotonic_ns = start.0;
    result.stopped_by = m.stopped_by;
    result.cpus = summary.cpus;
    result.all = summary.all;
    result.warnings = warnings;
    result.findings = findings;
    result.kernel_wakeup = kernel_wakeup;

    let mut events = Vec::new();
    if let Some((trace, ev)) = traced {
        result.trace = Some(trace);
        events = ev;
    }
    finish(&args, result, events, to_stdout_json)
}

/// The warnings every backend adds from the result, the text, and the files asked for; the exit code.
fn finish(args: &Args, mut result: TimerResult, events: Vec<Event>, to_stdout_json: bool) -> CmdResult {
    result.warnings.extend(overrun_warnings(&result));
    for c in result.cpus.iter().filter(|c| c.windows_dropped > 0) {
        result
            .warnings
            .push(format!("CPU {}: {} windows beyond the first kept ones were dropped", c.cpu, c.windows_dropped));
    }
    latscope_report::sentences::timer(&mut result);
    write_text(|out| write_timer(out, &result), to_stdout_json)?;
    if let Some(path) = &args.outputs.json {
        write_file(Kind::Json, path, |w| write_json(w, &result))?;
    }
    if let Some(dir) = &args.outputs.report {
        let index = write_timer_report(dir, args.outputs.force, &result, "timer")?;
        say_written("report", &index);
    }
    if let Some(path) = &args.outputs.perfetto {
        write_perfetto(path, &events, Some(&result), None)?;
        say_written("Perfetto trace", path);
    }
    Ok(if result.exceeded_threshold() { Outcome::ThresholdExceeded } else { Outcome::Ok })
}

/// `--trace`: the trigger driving the capture beside the run (`None` when tracing is unavailable) and
/// what the capture runs without.
struct Tracing {
    trigger: Option<Trigger>,
    notes: Vec<String>,
    /// `--graph`: function_graph is in the capture; compare the worst wakeup's calls with a normal one's.
    graph: bool,
}

/// Stops the capture, decodes it and explains the `top` worst samples of every CPU together (`policy`:
/// the measuring threads', `remedy`: what is known of this machine).
fn explain(
    tracing: Tracing,
    m: &TimerMeasurement,
    top: usize,
    policy: Policy,
    remedy: &RemedyContext,
) -> (TimerTrace, Vec<Event>) {
    let Tracing { trigger, mut notes, graph } = tracing;
    let Some(trigger) = trigger else {
        return (TimerTrace { notes, ..TimerTrace::default() }, Vec::new());
    };
    let (marks, frozen) = (trigger.marks(), trigger.is_frozen());
    let decoded = capture::finish(trigger.into_capture(), &mut notes);
    let t = TimerTrace { marks, frozen, notes, ..TimerTrace::default() };
    let threads = m.cpus.iter().map(|c| (c.cpu, c.tid, c.worst.as_slice()));
    let samples = worst_samples(threads, Some(policy.kernel_prio()), top);
    let (mut t, events) = explained(t, decoded, &samples, remedy);
    if let Some(s) = samples.first().filter(|_| graph && !events.is_empty()) {
        // The worst CPU's thread: its worst samples the trace holds (all it kept, worst first).
        let kept = m.cpus.iter().find(|c| c.cpu == s.cpu).map(|c| c.worst.as_slice()).unwrap_or_default();
        let mut kept: Vec<_> = kept.iter().collect();
        kept.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.seq.cmp(&b.seq)));
        let measured: Vec<(Nanos, Nanos)> = kept.iter().map(|w| (Nanos(w.expected_ns), Nanos(w.latency_ns))).collect();
        match wakeup_graph::compare(&events, s.cpu, s.tid, &measured) {
            Ok(g) => t.graph = Some(g),
            Err(why) => t.notes.push(format!("--graph: no comparison of the worst wakeup's calls: {why}")),
        }
    }
    (t, events)
}

/// The trace section `t` completed from a decoded capture: `samples` explained from its events (every
/// backend's `--trace` ends here), its counts; the events are returned for the Perfetto output.
pub(crate) fn explained(
    mut t: TimerTrace,
    decoded: Result<capture::Decoded, CliError>,
    samples: &[MeasuredSample],
    remedy: &RemedyContext,
) -> (TimerTrace, Vec<Event>) {
    let d = match decoded {
        Ok(d) => d,
        Err(e) => {
            t.notes.push(format!("the trace could not be decoded: {e}"));
            return (t, Vec::new());
        }
    };
    t.worst = explain_samples(&d.events, samples, remedy);
    (t.events, t.stacks) = latscope_model::count_events_and_stacks(&d.events);
    t.lost_events = d.lost;
    (t, d.events)
}

/// Polls the run until every thread has ended, redrawing the live table about once a second; a trigger
/// is polled every 10 ms.
fn show_live(run: &TimerRun, quiet: bool, to_stderr: bool, mut trigger: Option<&mut Trigger>) {
    let terminal = if to_stderr { stderr_is_terminal() } else { stdout_is_terminal() };
    let mut table = LiveTable::new(terminal);
    let mut next_frame = clock::now() + Nanos::from_secs(1);
    let tick = Duration::from_millis(if trigger.is_some() { 10 } else { 50 });
    while !run.is_done() {
        std::thread::sleep(tick);
        if let Some(t) = trigger.as_deref_mut() {
            t.poll(run.live().into_iter().map(CpuProgress::from));
        }
        let now = clock::now();
        if quiet || now < next_frame {
            continue;
        }
        next_frame = next_frame + Nanos::from_secs(1);
        let rows: Vec<_> = run.live().into_iter().map(|s| s.progress).collect();
        let frame = table.frame(now.saturating_sub(run.start()), &rows);
        emit(&frame, to_stderr);
    }
    if let Some(t) = trigger {
        t.poll(run.live().into_iter().map(CpuProgress::from));
    }
    emit(&table.finish(), to_stderr);
}

pub(crate) fn emit(text: &str, to_stderr: bool) {
    if text.is_empty() {
        return;
    }
    // A closed pipe must not abort the measurement: write errors of the live view are ignored.
    if to_stderr {
        let _ = std::io::stderr().write_all(text.as_bytes());
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

/// The timer summary of a finished measurement, from the measuring threads' own histograms (timer, run and
/// monitor all summarise this way).
pub(crate) fn summarize(m: &TimerMeasurement, start: Nanos, threshold: Option<Nanos>) -> TimerSummary {
    let samples: Vec<CpuSamples<'_>> = m
        .cpus
        .iter()
        .map(|c| CpuSamples {
            cpu: c.cpu,
            histogram: &c.histogram,
            overruns: c.overruns,
            windows: &c.windows,
            windows_dropped: c.windows_dropped,
            worst: &c.worst,
        })
        .collect();
    summarize_timer(&samples, start, threshold)
}
