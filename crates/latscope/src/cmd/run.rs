//! `latscope run`: the one-command investigation — audit the machine, measure timer latency while tracing,
//! measure noise, explain the worst wakeups from the trace, print the verdict (top causes with evidence
//! and remedy) and write the report directory (HTML + SVG plots, result JSON, Perfetto trace). Runs what
//! it can without root or tracefs and says what it skipped. Wiring only: every step is a library call.

use crate::args::{self, CpuArgs, OutputArgs, PriorityArg, StacksArg};
use crate::beside::Beside;
use crate::capture;
use crate::cmd::report::write_report_dir;
use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{self, write_file, write_text, Kind};
use crate::signal;
use latscope_analyze::audit::findings_at;
use latscope_analyze::ranking;
use latscope_analyze::remedy::RemedyContext;
use latscope_analyze::sample_explain::{explain_samples, worst_samples};
use latscope_model::facts::SystemFacts;
use latscope_model::noise_result::{NoiseOptions, NoiseResult};
use latscope_model::{
    AuditResult, CpuId, CpuList, Event, MissingFeature, Nanos, Pid, RunResult, TimerOptions, TimerResult, TimerTrace,
};
use latscope_report::json::write_json;
use latscope_report::pages::{run_page, worst_case_timelines};
use latscope_report::slices::{self, CpuSlices};
use latscope_sys::host::{collect, run_metadata};
use latscope_sys::measure::{
    hold_dma_latency_zero, lock_memory, start_timer, NoiseConfig, Policy, TimerConfig, DEFAULT_GAP_CAPACITY,
};
use latscope_sys::tracefs::Capture;
use std::io::Write;
use std::sync::atomic::Ordering;

/// Arguments of `latscope run`.
#[derive(clap::Args, Debug)]
#[command(
    mut_arg("priority", |a| a.help("SCHED_FIFO priority of the timer threads (0 = SCHED_OTHER)")),
    mut_arg("report", |a| a.help(
        "Where to write the report (index.html, plots, result.json, trace.perfetto.json); default: \
         `./latscope-report-<date>-<time>` (`-2`, `-3` … appended when taken)"
    )),
    mut_arg("json", |a| a.help("Also write the whole result as JSON to FILE (`-` for stdout; the verdict then goes to stderr)")),
    mut_arg("perfetto", |a| a.help(
        "Also write the Perfetto trace to FILE (`-` for stdout), besides the report's trace.perfetto.json"
    ))
)]
pub struct Args {
    /// How long each measurement (timer, then noise) runs
    #[arg(
        short = 'D',
        long,
        value_name = "DUR",
        default_value = "30s",
        allow_hyphen_values = true,
        value_parser = args::duration()
    )]
    duration: Nanos,
    /// Count timer wakeups later than this; exceeding it makes the exit code 2
    #[arg(long, value_name = "DUR", allow_hyphen_values = true, value_parser = args::duration())]
    threshold: Option<Nanos>,
    /// No progress lines; only the verdict and where the report went
    #[arg(short = 'q', long)]
    quiet: bool,
    #[command(flatten)]
    cpus: CpuArgs,
    #[command(flatten)]
    priority: PriorityArg,
    /// SCHED_FIFO priority of the noise spinners; 0 (SCHED_OTHER, the default) spares the machine, N>0
    /// shows what a real-time thread sees, RT throttling included
    #[arg(long = "noise-priority", value_name = "N", default_value = "0", value_parser = args::priority())]
    noise_priority: Policy,
    /// Do not trace the timer and noise measurements
    #[arg(long)]
    no_trace: bool,
    #[command(flatten)]
    stacks: StacksArg,
    #[command(flatten)]
    outputs: OutputArgs,
}

/// Timer interval, window and kept worst wakeups of the run.
const INTERVAL: Nanos = Nanos::from_ms(1);
const WINDOW: Nanos = Nanos::from_secs(1);
const TIMELINES: usize = 3;

/// Progress on stderr (none with `-q`).
struct Progress(bool);

impl Progress {
    fn say(&self, msg: &str) {
        if !self.0 {
            eprintln!("latscope run: {msg}");
        }
    }
}

/// `2026-11-22T21:40:10Z` → `20261122-214010`.
fn stamp(rfc3339: &str) -> String {
    let digits: String = rfc3339.chars().filter(char::is_ascii_digit).take(14).collect();
    if digits.len() == 14 {
        format!("{}-{}", &digits[..8], &digits[8..])
    } else {
        format!("pid{}", std::process::id())
    }
}

fn stopped() -> bool {
    signal::stop_flag().load(Ordering::Relaxed)
}

/// Runs `latscope run`.
pub fn run(args: Args) -> CmdResult {
    let duration = args.duration;
    if duration < Nanos::from_ms(100) {
        return Err(CliError("-D/--duration: measure at least 100ms, e.g. -D 10s".into()));
    }
    let cpus = args.cpus.resolve()?;
    let (timer_policy, noise_policy) = (args.priority.priority, args.noise_priority);
    let progress = Progress(args.quiet);
    let say = |m: &str| progress.say(m);
    let facts = collect();
    let remedy = RemedyContext::from_facts(&facts);
    let metadata = run_metadata(std::env::args().collect(), &facts);
    // Every output is checked before measuring for a minute; the default directory is made unique now.
    let o = &args.outputs;
    o.outputs().check()?;
    let dir = match &o.report {
        Some(d) => d.clone(),
        None => output::new_report_dir(&format!("latscope-report-{}", stamp(&metadata.start_time)))?,
    };
    let stdout_taken = o.outputs().takes_stdout();
    let started = std::time::Instant::now();
    let mut result = RunResult::new(metadata.clone(), duration.0);

    // 1. Audit (the facts were read above, before any measuring thread started).
    say("auditing the machine …");
    let findings = findings_at(&facts, &CpuList::default(), u32::from(timer_policy.priority()));
    let audit = AuditResult::new(metadata.clone(), cpus.clone(), facts, findings);
    say(&format!("audit: {}", latscope_report::html::severity_counts(&audit.findings)));

    // 2. Timer latency, traced.
    let _memory = lock_memory().map_err(|e| result.warnings.push(format!("memory not locked ({e})"))).ok();
    let _dma =
        hold_dma_latency_zero().map_err(|e| result.warnings.push(format!("CPU idle states not limited ({e})"))).ok();
    let mut events: Vec<Event> = Vec::new();
    let mut noise_events: Vec<Event> = Vec::new();
    let mut measured: Vec<(CpuId, Pid)> = Vec::new();
    let mut timer_prio = None;
    // latscope's other threads stay off the measured CPUs; another latscope run there is said.
    let mut beside = Beside::start(&cpus, &mut result.warnings);
    if !stopped() {
        say(&format!(
            "measuring timer latency on {} for {duration}{} …",
            args::cpus_label(&cpus),
            if args.no_trace { "" } else { " with tracing" }
        ));
        let capture = if args.no_trace {
            result.skipped.push(MissingFeature::new("trace of the timer run", "--no-trace", "run without --no-trace"));
            None
        } else {
            start_capture(&cpus, duration, args.stacks.no_stacks, &mut result)
        };
        let stacks = capture.as_ref().map(|c| (c, args.stacks.no_stacks));
        let measured_timer = measure_timer(&cpus, duration, timer_policy, args.threshold, stacks, &mut result);
        beside.look_again(&mut result.warnings);
        match measured_timer {
            Ok(MeasuredTimer { result: t, tids, policy }) => {
                if policy != timer_policy {
                    say("SCHED_FIFO was refused: the timer threads ran as SCHED_OTHER");
                }
                measured = tids;
                timer_prio = Some(policy.kernel_prio());
                say(&format!(
                    "timer: {} wakeups, p99 {}, max {}",
                    t.all.count,
                    t.all.percentile("99").map_or("-".into(), |v| Nanos(v).to_string()),
                    Nanos(t.all.max_ns)
                ));
                result.timer = Some(t);
            }
            Err(e) => result.skipped.push(MissingFeature::new("timer measurement", e.to_string(), "run as root")),
        }
        if let Some(c) = capture {
            match finish_capture(c, &mut result) {
                Ok(ev) => events = ev,
                Err(e) => result.warnings.push(format!("the trace could not be decoded: {e}")),
            }
        }
    }

    // 3. Noise.
    if !stopped() {
        say(&format!(
            "measuring OS noise on {} for {duration}{} …",
            args::cpus_label(&cpus),
            if args.no_trace { "" } else { " with tracing" }
        ));
        match measure_noise(&cpus, duration, noise_policy, &audit.facts, !args.no_trace, args.stacks.no_stacks) {
            Ok((n, ev)) => {
                let max = n.cpus.iter().map(|c| c.max_gap_ns).max().unwrap_or(0);
                say(&format!("noise: longest gap {}", Nanos(max)));
                result.noise = Some(n);
                noise_events = ev;
            }
            Err(e) => result.skipped.push(MissingFeature::new("noise measurement", e.to_string(), "run as root")),
        }
    }
    if stopped() {
        result.warnings.push("interrupted: the run was stopped before every step ended".into());
    }

    result.audit = Some(audit);

    // 4. Explain, report.
    // While /dev/cpu_dma_latency was held at 0 the CPUs only polled when idle: no idle exit to wait for.
    let remedy = if _dma.is_some() { remedy.with_idle_polling() } else { remedy };
    let built: Option<CpuSlices> = (!events.is_empty()).then(|| slices::build(&events));
    if let Some(t) = result.timer.as_mut().filter(|_| !events.is_empty()) {
        let mut worst = explain_worst(&events, t, &measured, timer_prio, &remedy);
        beside.threads().mark_wakeups(&mut worst);
        let (counted, stacks) = latscope_model::count_events_and_stacks(&events);
        t.trace = Some(TimerTrace { worst, events: counted, stacks, ..TimerTrace::default() });
    }
    result.causes = ranking::rank(result.audit.as_ref(), result.timer.as_ref(), result.noise.as_ref(), &remedy);
    latscope_report::sentences::run(&mut result);
    result.metadata.duration_ns = started.elapsed().as_nanos() as u64;
    let timelines = match (&result.timer, &built) {
        (Some(t), Some(s)) => worst_case_timelines(t, s, &measured, TIMELINES),
        _ => Vec::new(),
    };
    let mut json = Vec::new();
    write_json(&mut json, &result)?;
    let mut files = vec![("result.json", json.clone())];
    let traced = !events.is_empty() || !noise_events.is_empty() || result.timer.is_some();
    let mut perfetto = Vec::new();
    if traced {
        // The timer trace, then the noise trace: two spans of one clock, in order.
        events.append(&mut noise_events);
        perfetto = perfetto_bytes(&events, result.timer.as_ref(), result.noise.as_ref())?;
        files.push(("trace.perfetto.json", perfetto.clone()));
    }
    // The result first: it is the smallest output and the one a failing report (a full disk) must not take.
    if let Some(path) = &o.json {
        write_file(Kind::Json, path, |w| w.write_all(&json))?;
    }
    let index = write_report_dir(&dir, o.force, &run_page(&result, timelines).render(), &files)?;
    if let Some(path) = &o.perfetto {
        write_file(Kind::Perfetto, path, |w| w.write_all(&perfetto))?;
    }

    let mut text = Vec::new();
    writeln!(text)?;
    text.write_all(latscope_report::text::verdict::render(&result.causes).as_bytes())?;
    for m in &result.skipped {
        writeln!(text, "skipped: {m}")?;
    }
    for w in &result.warnings {
        writeln!(text, "note: {w}")?;
    }
    writeln!(text, "report written to {}", index.display())?;
    if traced {
        writeln!(
            text,
            "Perfetto trace written to {} (open in ui.perfetto.dev)",
            dir.join("trace.perfetto.json").display()
        )?;
    }
    write_text(|out| out.write_all(&text), stdout_taken)?;
    let exceeded = result.timer.as_ref().is_some_and(TimerResult::exceeded_threshold);
    Ok(if exceeded { Outcome::ThresholdExceeded } else { Outcome::Ok })
}

/// The Perfetto trace of the run, as bytes (it goes into the report and, with `--perfetto`, to a file).
fn perfetto_bytes(
    events: &[Event],
    timer: Option<&TimerResult>,
    noise: Option<&NoiseResult>,
) -> Result<Vec<u8>, CliError> {
    let mut out = Vec::new();
    crate::cmd::report::perfetto_trace(events, timer, noise).write(&mut out)?;
    Ok(out)
}

/// The worst measured wakeups explained from the trace, worst first, each matched to its own measuring
/// thread's wakeup (`measured` tids) as `latscope timer --trace` does (trace clock `mono` is the samples'
/// CLOCK_MONOTONIC).
fn explain_worst(
    events: &[Event],
    t: &TimerResult,
    measured: &[(CpuId, Pid)],
    prio: Option<i32>,
    remedy: &RemedyContext,
) -> Vec<latscope_model::TracedWakeup> {
    let threads = t
        .cpus
        .iter()
        .filter_map(|c| Some((c.cpu, measured.iter().find(|(cpu, _)| *cpu == c.cpu)?.1, c.worst.as_slice())));
    let samples = worst_samples(threads, prio, TIMELINES);
    explain_samples(events, &samples, remedy)
}

fn start_capture(cpus: &CpuList, duration: Nanos, no_stacks: bool, result: &mut RunResult) -> Option<Capture> {
    capture::start(cpus, duration + Nanos::from_secs(5), "trace of the timer run", no_stacks, &mut result.skipped)
}

/// Stops the capture (restoring every knob) and decodes its pages.
fn finish_capture(c: Capture, result: &mut RunResult) -> Result<Vec<Event>, CliError> {
    Ok(capture::finish(c, &mut result.warnings)?.events)
}

/// A timer measurement with the measuring threads' ids and the policy they ran under.
struct MeasuredTimer {
    result: TimerResult,
    tids: Vec<(CpuId, Pid)>,
    policy: Policy,
}

/// The timer measurement and the measuring threads' ids; falls back to SCHED_OTHER when SCHED_FIFO is
/// refused (no root), saying so. With `stacks` (the capture, and whether stacks are off), the switch to the
/// measuring threads records the stack of the task they waited for.
fn measure_timer(
    cpus: &CpuList,
    duration: Nanos,
    policy: Policy,
    threshold: Option<Nanos>,
    stacks: Option<(&Capture, bool)>,
    result: &mut RunResult,
) -> Result<MeasuredTimer, CliError> {
    let config = |policy| {
        let mut c = TimerConfig::new(cpus.clone(), INTERVAL, policy);
        c.duration = Some(duration);
        c.window = Some(WINDOW);
        c.threshold = threshold;
        c
    };
    let (run, policy) = match start_timer(config(policy), signal::stop_flag()) {
        Ok(r) => (r, policy),
        Err(e) if policy != Policy::Other => {
            // The error says how to enable it already.
            result.skipped.push(MissingFeature::new("SCHED_FIFO timer threads", e.to_string(), ""));
            (start_timer(config(Policy::Other), signal::stop_flag()).map_err(CliError::msg)?, Policy::Other)
        }
        Err(e) => return Err(CliError::msg(e)),
    };
    if let Some((c, no_stacks)) = stacks {
        capture::add_thread_stacks(c, run.thread_ids(), no_stacks, &mut result.warnings);
    }
    let start = run.start();
    let m = run.join().map_err(CliError::msg)?;
    let summary = crate::cmd::timer::summarize(&m, start, threshold);
    let mut md = result.metadata.clone();
    md.duration_ns = m.end.saturating_sub(start).0;
    let options = TimerOptions {
        cpus: cpus.clone(),
        interval_ns: INTERVAL.0,
        priority: u32::from(policy.priority()),
        duration_ns: Some(duration.0),
        window_ns: Some(WINDOW.0),
        threshold_ns: threshold.map(|t| t.0),
        ..TimerOptions::default()
    };
    let mut t = TimerResult::new(md, options);
    t.start_monotonic_ns = start.0;
    t.stopped_by = m.stopped_by;
    t.cpus = summary.cpus;
    t.all = summary.all;
    result.warnings.extend(crate::cmd::timer::overrun_warnings(&t));
    let tids = m.cpus.iter().map(|c| (c.cpu, c.tid)).collect();
    Ok(MeasuredTimer { result: t, tids, policy })
}

/// The noise measurement as `latscope noise` makes it (traced unless `--no-trace`), with the trace's events.
fn measure_noise(
    cpus: &CpuList,
    duration: Nanos,
    policy: Policy,
    facts: &SystemFacts,
    trace: bool,
    no_stacks: bool,
) -> Result<(NoiseResult, Vec<Event>), CliError> {
    let threshold = Nanos::from_us(5);
    let config = NoiseConfig {
        cpus: cpus.clone(),
        policy,
        duration: Some(duration),
        threshold,
        gap_capacity: DEFAULT_GAP_CAPACITY,
        stop_on_threshold: false,
    };
    let options = NoiseOptions {
        cpus: cpus.clone(),
        priority: u32::from(policy.priority()),
        duration_ns: Some(duration.0),
        threshold_ns: threshold.0,
        window_ns: Some(WINDOW.0),
        stop_on_threshold: false,
        gap_capacity: DEFAULT_GAP_CAPACITY as u64,
        ..NoiseOptions::default()
    };
    crate::cmd::noise::measure(&config, options, facts, trace, no_stacks, None)
}

#[cfg(test)]
mod tests {
    use super::stamp;

    #[test]
    fn report_dir_stamp() {
        assert_eq!(stamp("2026-11-22T21:40:10Z"), "20261122-214010");
        assert!(stamp("").starts_with("pid"));
    }
}
