//! `latscope timer`: parses the options, sets up the real-time environment (mlockall, cpu_dma_latency),
//! runs the per-CPU measurement, shows the live table, and renders the summary and JSON. Wiring only.

use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{stderr_is_terminal, stdout_is_terminal, JsonSink};
use crate::signal;
use latscope_analyze::timer_summary::{summarize_timer, CpuSamples};
use latscope_model::{parse_duration, CpuList, Nanos, TimerOptions, TimerResult};
use latscope_report::json::write_json;
use latscope_report::live::{LiveRow, LiveTable};
use latscope_report::text::timer::write_timer;
use latscope_sys::host::cpus::{check_online, online_cpus};
use latscope_sys::host::metadata::run_metadata;
use latscope_sys::measure::clock;
use latscope_sys::measure::rt::{hold_dma_latency_zero, lock_memory, Policy};
use latscope_sys::measure::timer::{start_timer, TimerConfig, TimerRun};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `latscope timer`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CPUs to measure, one thread each: `1`, `0,2-3` [default: all online CPUs]
    #[arg(short = 'c', long = "cpus", value_name = "LIST")]
    cpus: Option<String>,
    /// Timer period (units ns, us, ms, s), e.g. 1ms or 1333us
    #[arg(short = 'i', long, value_name = "DUR", default_value = "1ms")]
    interval: String,
    /// SCHED_FIFO priority of the measuring threads, 1-99; 0 runs them as SCHED_OTHER
    #[arg(short = 'p', long, value_name = "N", default_value = "95", allow_hyphen_values = true)]
    priority: String,
    /// How long to measure (ns, us, ms, s, m, h) [default: until Ctrl-C]
    #[arg(short = 'D', long, value_name = "DUR")]
    duration: Option<String>,
    /// Count wakeups later than this; exceeding it makes the exit code 2
    #[arg(long, value_name = "DUR")]
    threshold: Option<String>,
    /// End the run at the first wakeup later than --threshold
    #[arg(long)]
    stop_on_threshold: bool,
    /// Also report statistics per window of this length (mean, stddev, % above threshold, min-max)
    #[arg(long, value_name = "DUR")]
    window: Option<String>,
    /// Write the result as JSON to FILE (`-` for stdout; the text summary then goes to stderr)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// No live table; only the final summary
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// The validated options.
struct Plan {
    config: TimerConfig,
    options: TimerOptions,
}

fn duration_arg(flag: &str, value: &str) -> Result<Nanos, CliError> {
    parse_duration(value).map_err(|e| CliError(format!("{flag}: {e}")))
}

fn plan(args: &Args) -> Result<Plan, CliError> {
    let cpus = match &args.cpus {
        Some(list) => {
            let cpus = CpuList::parse(list).map_err(|e| CliError(format!("--cpus: {e}")))?;
            check_online(&cpus).map_err(|e| CliError(format!("--cpus: {e}")))?;
            cpus
        }
        None => online_cpus().map_err(CliError::msg)?,
    };
    let interval = duration_arg("--interval", &args.interval)?;
    if interval.0 == 0 {
        return Err(CliError("--interval: the period must be longer than 0, e.g. 1ms".into()));
    }
    let priority: i64 = args.priority.trim().parse().map_err(|_| {
        CliError(format!(
            "--priority: '{}' is not a number; give 1-99 for SCHED_FIFO or 0 for SCHED_OTHER",
            args.priority
        ))
    })?;
    let policy = Policy::from_priority(priority).map_err(|e| CliError(format!("--priority: {e}")))?;
    let duration = args.duration.as_deref().map(|d| duration_arg("--duration", d)).transpose()?;
    if duration.is_some_and(|d| d < interval) {
        return Err(CliError("--duration is shorter than one --interval; measure for at least one period".into()));
    }
    let threshold = args.threshold.as_deref().map(|t| duration_arg("--threshold", t)).transpose()?;
    if args.stop_on_threshold && threshold.is_none() {
        return Err(CliError("--stop-on-threshold needs --threshold DUR, e.g. --threshold 100us".into()));
    }
    let window = args.window.as_deref().map(|w| duration_arg("--window", w)).transpose()?;
    if window.is_some_and(|w| w < interval) {
        return Err(CliError("--window is shorter than --interval; make it at least one period, e.g. 1s".into()));
    }
    let mut config = TimerConfig::new(cpus.clone(), interval, policy);
    config.duration = duration;
    config.threshold = threshold;
    config.stop_on_threshold = args.stop_on_threshold;
    config.window = window;
    let options = TimerOptions {
        cpus,
        interval_ns: interval.0,
        priority: u32::from(policy.priority()),
        duration_ns: duration.map(|d| d.0),
        threshold_ns: threshold.map(|t| t.0),
        stop_on_threshold: args.stop_on_threshold,
        window_ns: window.map(|w| w.0),
    };
    Ok(Plan { config, options })
}

/// Runs `latscope timer`.
pub fn run(args: Args) -> CmdResult {
    let plan = plan(&args)?;
    let sink = args.json.as_deref().map(JsonSink::open).transpose()?;
    let to_stdout_json = sink.as_ref().is_some_and(JsonSink::is_stdout);
    let mut metadata = run_metadata(std::env::args().collect());

    // Real-time environment: degrade (and say so) rather than refuse, except for SCHED_FIFO itself.
    let mut warnings = Vec::new();
    let _memory = lock_memory().map_err(|e| warnings.push(format!("degraded: memory not locked ({e})"))).ok();
    let _dma =
        hold_dma_latency_zero().map_err(|e| warnings.push(format!("degraded: CPU idle states not limited ({e})"))).ok();
    if plan.config.policy == Policy::Other {
        warnings.push("measuring as SCHED_OTHER (-p 0): any other task can delay the wakeups".into());
    }
    for w in &warnings {
        eprintln!("latscope: {w}");
    }

    let run = start_timer(plan.config.clone(), signal::stop_flag()).map_err(CliError::msg)?;
    show_live(&run, args.quiet, to_stdout_json);
    let start = run.start();
    let m = run.join().map_err(CliError::msg)?;

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
    let summary = summarize_timer(&samples, start, plan.config.threshold);
    metadata.duration_ns = m.cpus.iter().map(|c| c.last_actual.0).max().unwrap_or(start.0).saturating_sub(start.0);
    let mut result = TimerResult::new(metadata, plan.options);
    result.start_monotonic_ns = start.0;
    result.stopped_by = m.stopped_by;
    result.cpus = summary.cpus;
    result.all = summary.all;
    result.warnings = warnings;
    for c in result.cpus.iter().filter(|c| c.windows_dropped > 0) {
        result
            .warnings
            .push(format!("CPU {}: {} windows beyond the first kept ones were dropped", c.cpu, c.windows_dropped));
    }

    let text = {
        let mut buf = Vec::new();
        write_timer(&mut buf, &result).map_err(CliError::from)?;
        buf
    };
    if to_stdout_json {
        std::io::stderr().write_all(&text)?;
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(&text)?;
        out.flush()?;
    }
    if let Some(sink) = sink {
        sink.write_with(|w| write_json(w, &result))?;
    }
    Ok(if result.exceeded_threshold() { Outcome::ThresholdExceeded } else { Outcome::Ok })
}

/// Polls the run until every thread has ended, redrawing the live table about once a second.
fn show_live(run: &TimerRun, quiet: bool, to_stderr: bool) {
    let terminal = if to_stderr { stderr_is_terminal() } else { stdout_is_terminal() };
    let mut table = LiveTable::new(terminal);
    let mut next_frame = clock::now() + Nanos::from_secs(1);
    while !run.is_done() {
        std::thread::sleep(Duration::from_millis(50));
        let now = clock::now();
        if quiet || now < next_frame {
            continue;
        }
        next_frame = next_frame + Nanos::from_secs(1);
        let rows: Vec<LiveRow> = run
            .live()
            .into_iter()
            .map(|s| LiveRow {
                cpu: s.cpu,
                count: s.count,
                cur_ns: s.cur_ns,
                min_ns: s.min_ns,
                avg_ns: s.avg_ns,
                max_ns: s.max_ns,
                overruns: s.overruns,
            })
            .collect();
        let frame = table.frame(now.saturating_sub(run.start()), &rows);
        emit(&frame, to_stderr);
    }
    emit(&table.finish(), to_stderr);
}

fn emit(text: &str, to_stderr: bool) {
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
