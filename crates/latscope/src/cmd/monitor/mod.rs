//! `latscope monitor`: the timer measurement of `latscope timer`, run until SIGINT/SIGTERM, with its
//! latencies exposed as Prometheus metrics (`--listen`, `--textfile`) and, with `--trace`, a flight
//! recorder that captures and explains every breach of `--threshold`. Wiring only: the measuring threads
//! hand their samples over through taps (sys), `MonitorStats` (analyze) accumulates them in bounded memory,
//! `report::prometheus` renders the exposition.
//!
//! Threads: the measuring threads (one per CPU, SCHED_FIFO); this one, which drains the taps every
//! 100 ms and publishes a snapshot every second; the HTTP server's; the flight recorder's.

mod logfile;
mod noise_causes;
mod recorder;
mod server;
mod textfile;

use crate::args::{self, CpuArgs, DurationArg, PriorityArg, StacksArg};
use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{is_stdout, write_file, write_text, Kind, Outputs};
use crate::signal;
use latscope_analyze::audit::findings_at;
use latscope_analyze::monitor_stats::MonitorStats;
use latscope_model::{CpuMonitor, MonitorSnapshot, Nanos, Severity, TimerBackend, TimerOptions, TimerResult};
use latscope_report::json::write_json;
use latscope_report::text::timer::write_timer;
use latscope_sys::host::{collect, own_usage, run_metadata};
use latscope_sys::measure::{
    clock, hold_dma_latency_zero, lock_memory, start_noise_bursts, start_timer, BurstConfig, NoiseBursts, Policy,
    TapCursor, TimerConfig, TimerRun, DEFAULT_TAP_SAMPLES,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Where the metrics are served when neither `--listen` nor `--textfile` is given.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";

/// Arguments of `latscope monitor`.
#[derive(clap::Args, Debug)]
#[command(mut_arg("duration", |a| a.help("Stop after this long [default: until SIGINT/SIGTERM]")))]
#[command(after_help = "Signals: SIGTERM or SIGINT stop the monitor, restoring every tracing and real-time setting. \
SIGHUP reopens what it writes, measuring on: the --log file by its name (after logrotate moved it), the \
--capture-dir (created again if it was moved away, pruned to --keep) and the --textfile (rewritten at once); \
it logs one line saying what it reopened.")]
pub struct Args {
    #[command(flatten)]
    cpus: CpuArgs,
    /// Timer period (units ns, us, ms, s), e.g. 1ms or 1333us
    #[arg(short = 'i', long, value_name = "DUR", default_value = "1ms", value_parser = args::duration())]
    interval: Nanos,
    #[command(flatten)]
    priority: PriorityArg,
    #[command(flatten)]
    duration: DurationArg,
    /// A wakeup later than this is a breach: counted, and captured with --trace
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    threshold: Option<Nanos>,
    /// The rolling window of the max-latency gauge
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = args::duration())]
    window: Nanos,
    /// Serve the metrics at http://ADDR/metrics [default: 127.0.0.1:9464 unless --textfile is given];
    /// 0.0.0.0:9464 serves every interface
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Also write the metrics to DIR/latscope.prom every second (atomically), for node_exporter's
    /// textfile collector; without --listen, no port is opened
    #[arg(long, value_name = "DIR")]
    textfile: Option<PathBuf>,
    /// Flight recorder: trace the measured CPUs (rolling window) and capture, explain and save every
    /// breach of --threshold into --capture-dir
    #[arg(long, requires = "threshold")]
    trace: bool,
    #[command(flatten)]
    stacks: StacksArg,
    /// With --trace: where each capture's directory (`YYYYMMDD-HHMMSS-cpuN`, UTC) is written
    #[arg(long, value_name = "DIR", default_value = "latscope-captures")]
    capture_dir: PathBuf,
    /// With --trace: at most this many captures in any hour (later breaches are counted, not captured)
    #[arg(long, value_name = "N", default_value_t = 6)]
    max_captures_per_hour: u32,
    /// With --trace: keep the newest N capture directories, removing the oldest
    #[arg(long, value_name = "N", default_value_t = 20)]
    keep: usize,
    /// Also sample OS noise: on each measured CPU, run the `noise` loop for this share of every second
    /// (e.g. 1% = 10 ms; at most 10%), one priority below the timer thread (SCHED_OTHER with -p 0 or 1); the timer
    /// thread's own wakeups interrupt it and are part of what it measures
    #[arg(long, value_name = "DUTY", value_parser = args::duty())]
    noise: Option<f64>,
    /// With --noise: gaps in the noise loop longer than this are noise
    #[arg(long, value_name = "DUR", default_value = "5us", value_parser = args::duration(), requires = "noise")]
    noise_threshold: Nanos,
    /// Append the log lines to FILE instead of stderr. SIGHUP reopens it (after logrotate moved it), re-creates
    /// the --capture-dir if it was moved away (and applies --keep) and rewrites the --textfile at once
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// At the end, write the whole run's timer result as JSON to FILE (`-` for stdout)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// How often the taps are drained, and the snapshot published.
const DRAIN_EVERY: Duration = Duration::from_millis(100);
const PUBLISH_EVERY: Nanos = Nanos::from_secs(1);

/// The latest snapshot, shared with the HTTP server and the textfile writer.
pub type Shared = Arc<Mutex<Arc<MonitorSnapshot>>>;

/// Runs `latscope monitor`.
pub fn run(args: Args) -> CmdResult {
    let cpus = args.cpus.resolve()?;
    if args.interval.0 == 0 {
        return Err(CliError("--interval: the period must be longer than 0, e.g. 1ms".into()));
    }
    if args.window < Nanos::from_secs(1) {
        return Err(CliError("--window: make the rolling window at least 1s, e.g. 60s".into()));
    }
    if args.max_captures_per_hour == 0 || args.keep == 0 {
        return Err(CliError("--max-captures-per-hour and --keep must be at least 1".into()));
    }
    if let Some(duty) = args.noise {
        if args.noise_threshold.0 == 0 {
            return Err(CliError("--noise-threshold must be longer than 0, e.g. 5us".into()));
        }
        if duty > MAX_NOISE_DUTY {
            return Err(CliError(format!(
                "--noise {}%: at most {}% of each second, so that the CPU stays the application's (use \
                 `latscope noise` to take a CPU whole)",
                duty * 100.0,
                MAX_NOISE_DUTY * 100.0
            )));
        }
    }
    // SIGHUP reopens what the monitor writes (see `hangup`) instead of ending it.
    signal::install_hangup();
    if let Some(path) = &args.log {
        logfile::open(path)?;
    }
    let listen = match (args.listen, &args.textfile) {
        (Some(a), _) => Some(a),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_LISTEN.parse().map_err(CliError::msg)?),
    };
    if let Some(dir) = &args.textfile {
        textfile::check_dir(dir)?;
    }
    // The result file is written at the end: find out now, not after hours of monitoring, that it cannot be.
    Outputs::new(false).file(Kind::Json, args.json.as_deref()).check()?;
    let policy = args.priority.priority;
    let mut config = TimerConfig::new(cpus.clone(), args.interval, policy);
    config.duration = args.duration.duration;
    config.threshold = args.threshold;
    config.tap = Some(DEFAULT_TAP_SAMPLES);

    let facts = collect();
    let mut metadata = run_metadata(std::env::args().collect(), &facts);
    let findings = findings_at(&facts, &cpus, u32::from(policy.priority()));
    let mut warnings = Vec::new();
    let _memory = lock_memory().map_err(|e| warnings.push(format!("degraded: memory not locked ({e})"))).ok();
    let dma =
        hold_dma_latency_zero().map_err(|e| warnings.push(format!("degraded: CPU idle states not limited ({e})"))).ok();
    if policy == Policy::Other {
        warnings.push("measuring as SCHED_OTHER (-p 0): any other task can delay the wakeups".into());
    }
    for w in &warnings {
        log(w);
    }

    let started_unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let base = MonitorSnapshot {
        version: env!("CARGO_PKG_VERSION").to_string(),
        interval: args.interval,
        window: args.window,
        threshold: args.threshold,
        findings: findings.iter().filter(|f| f.severity > Severity::Ok).map(|f| (f.id.clone(), f.severity)).collect(),
        // Every series exists, at 0, from the first scrape on.
        cpus: cpus.iter().map(|cpu| CpuMonitor { cpu, ..CpuMonitor::default() }).collect(),
        ..MonitorSnapshot::default()
    };
    let shared: Shared = Arc::new(Mutex::new(Arc::new(base.clone())));
    // Bind before measuring: a port in use is an error the user must see at once.
    let server = match listen {
        Some(addr) => Some(server::bind(addr)?),
        None => None,
    };
    let recorder = if args.trace {
        Some(recorder::Recorder::new(recorder::Plan {
            cpus: cpus.clone(),
            dir: args.capture_dir.clone(),
            per_hour: args.max_captures_per_hour,
            keep: args.keep,
            no_stacks: args.stacks.no_stacks,
            policy,
            interval: args.interval,
            threshold: args.threshold.unwrap_or(Nanos::ZERO),
            idle_polling: dma.is_some(),
            facts: facts.clone(),
        })?)
    } else {
        None
    };

    let run = start_timer(config.clone(), signal::stop_flag()).map_err(CliError::msg)?;
    let noise = match args.noise {
        Some(duty) => {
            Some(start_noise_bursts(&noise_plan(&cpus, policy, duty, args.noise_threshold)).map_err(CliError::msg)?)
        }
        None => None,
    };
    log(&format!(
        "monitor: measuring CPUs {} every {} at {}; metrics at {}{}",
        cpus,
        args.interval,
        match policy {
            Policy::Other => "SCHED_OTHER".to_string(),
            p => format!("SCHED_FIFO {}", p.priority()),
        },
        listen.map_or_else(|| "(no port)".to_string(), |a| format!("http://{a}/metrics")),
        args.textfile.as_ref().map_or_else(String::new, |d| format!(", textfile {}", d.join(textfile::FILE).display())),
    ));
    if let (Some(duty), Some(_)) = (args.noise, &noise) {
        log(&format!(
            "monitor: sampling noise {}% of every second on CPUs {} ({}), gaps above {}",
            duty * 100.0,
            cpus,
            match noise_plan(&cpus, policy, duty, args.noise_threshold).policy {
                Policy::Other => "SCHED_OTHER".to_string(),
                p => format!("SCHED_FIFO {}", p.priority()),
            },
            args.noise_threshold,
        ));
    }
    let done = AtomicBool::new(false);
    let stats = std::thread::scope(|s| -> Result<Vec<MonitorStats>, CliError> {
        if let Some(server) = &server {
            let (shared, done) = (&shared, &done);
            s.spawn(move || server::serve(server, shared, done));
        }
        let rec = recorder.as_ref().map(|r| {
            let (run, done) = (&run, &done);
            s.spawn(move || r.run(run, done))
        });
        let sources = Sources { run: &run, noise: noise.as_ref(), recorder: recorder.as_ref() };
        let result = collect_loop(&sources, &base, started_unix, &shared, args.textfile.as_deref());
        done.store(true, Ordering::SeqCst);
        run.stop();
        if let Some(h) = rec {
            let _ = h.join();
        }
        result
    })?;
    drop(server);
    if let Some(n) = noise {
        n.stop();
    }
    for c in stats.iter().filter_map(|s| s.snapshot(0, 0, 0).noise.map(|n| (s.cpu(), n))) {
        log(&format!(
            "monitor: noise on CPU {}: {:.3}% of {} sampled, longest gap {}",
            c.0,
            c.1.ratio() * 100.0,
            c.1.sampled,
            c.1.max_gap
        ));
    }
    let start = run.start();
    let m = run.join().map_err(CliError::msg)?;
    if let Some(r) = &recorder {
        warnings.extend(r.notes());
    }

    // The exit summary is the timer's, from the measuring threads' own histograms.
    let summary = crate::cmd::timer::summarize(&m, start, config.threshold);
    let counted: u64 = stats.iter().map(|s| s.total().count()).sum();
    let measured: u64 = m.cpus.iter().map(|c| c.histogram.count()).sum();
    if measured > counted {
        warnings.push(format!("the exporter missed {} samples (not in the metrics)", measured - counted));
    }
    metadata.duration_ns = m.end.saturating_sub(start).0;
    let options = TimerOptions {
        cpus,
        interval_ns: args.interval.0,
        priority: u32::from(policy.priority()),
        duration_ns: args.duration.duration.map(|d| d.0),
        threshold_ns: args.threshold.map(|t| t.0),
        stop_on_threshold: false,
        window_ns: None,
        backend: TimerBackend::User,
    };
    let mut result = TimerResult::new(metadata, options);
    result.start_monotonic_ns = start.0;
    result.stopped_by = m.stopped_by;
    result.cpus = summary.cpus;
    result.all = summary.all;
    result.warnings = warnings;
    result.findings = findings;
    latscope_report::sentences::timer(&mut result);
    let to_stdout_json = args.json.as_deref().is_some_and(is_stdout);
    write_text(|out| write_timer(out, &result), to_stdout_json)?;
    if let Some(path) = &args.json {
        write_file(Kind::Json, path, |w| write_json(w, &result))?;
    }
    log("monitor: stopped; tracing and real-time settings restored");
    Ok(if result.exceeded_threshold() { Outcome::ThresholdExceeded } else { Outcome::Ok })
}

/// The noise sampler's plan: `duty` of every second, one priority below the timer threads.
fn noise_plan(cpus: &latscope_model::CpuList, timer: Policy, duty: f64, threshold: Nanos) -> BurstConfig {
    let period = Nanos::from_secs(1);
    BurstConfig {
        cpus: cpus.clone(),
        policy: match timer {
            Policy::Fifo(p) if p > 1 => Policy::Fifo(p - 1),
            _ => Policy::Other,
        },
        threshold,
        on: Nanos(((period.0 as f64 * duty).round() as u64).max(1)),
        period,
        gap_capacity: BURST_GAPS,
    }
}

/// The largest share of each second the noise loop may take.
const MAX_NOISE_DUTY: f64 = 0.1;

/// Gaps kept per burst for the attribution (more are counted).
const BURST_GAPS: usize = 4096;

/// What the collecting loop reads.
struct Sources<'a> {
    run: &'a TimerRun,
    noise: Option<&'a NoiseBursts>,
    recorder: Option<&'a recorder::Recorder>,
}

/// Drains the taps (and the noise bursts) every 100 ms into per-CPU statistics and publishes a snapshot
/// (and the textfile) every second, until the run ends (duration or signal). Returns the statistics.
fn collect_loop(
    sources: &Sources<'_>,
    base: &MonitorSnapshot,
    started_unix: u64,
    shared: &Shared,
    textfile: Option<&std::path::Path>,
) -> Result<Vec<MonitorStats>, CliError> {
    let (run, recorder) = (sources.run, sources.recorder);
    let window = base.window;
    let now = clock::now();
    let mut stats: Vec<MonitorStats> = run.config().cpus.iter().map(|c| MonitorStats::new(c, window, now)).collect();
    let mut cursors = vec![TapCursor::default(); stats.len()];
    let mut next_publish = now;
    let mut textfile_error = false;
    loop {
        let finished = run.is_done() || signal::STOP.load(Ordering::SeqCst);
        let now = clock::now();
        for (i, s) in stats.iter_mut().enumerate() {
            s.advance(now);
            if let Some(tap) = run.tap(i) {
                tap.drain(&mut cursors[i], |v| s.record(Nanos(v)));
            }
            if let Some(n) = sources.noise {
                let (bursts, _) = n.take(i);
                for b in &bursts {
                    s.record_noise(b.span(), b.noise, b.max_gap.duration_ns);
                }
                if let Some(r) = recorder {
                    r.noise.queue(&bursts);
                }
            }
        }
        if signal::take_hangup() {
            hangup(recorder, textfile);
            next_publish = now; // the textfile is rewritten at once
        }
        if now >= next_publish || finished {
            next_publish = now + PUBLISH_EVERY;
            let live = run.live();
            let mut snap = base.clone();
            snap.cpus = stats
                .iter()
                .zip(&live)
                .zip(&cursors)
                .map(|((s, l), c)| s.snapshot(l.progress.overruns, l.progress.above_threshold, c.lost))
                .collect();
            if let Some(r) = recorder {
                r.fill(&mut snap);
                r.publish_windows(&stats);
            }
            snap.process = own_usage();
            snap.process.start_time_unix_s = started_unix;
            let snap = Arc::new(snap);
            *shared.lock().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&snap);
            if let Some(dir) = textfile {
                match textfile::write(dir, &snap) {
                    Ok(()) => textfile_error = false,
                    Err(e) if !textfile_error => {
                        log(&e.0);
                        textfile_error = true;
                    }
                    Err(_) => {}
                }
            }
        }
        if finished {
            return Ok(stats);
        }
        std::thread::sleep(DRAIN_EVERY);
    }
}

/// SIGHUP: reopens the log file, re-creates the capture directory (pruned to `--keep`) and has the textfile
/// rewritten; says so in one line.
fn hangup(recorder: Option<&recorder::Recorder>, textfile: Option<&std::path::Path>) {
    let mut done = Vec::new();
    match logfile::reopen() {
        Ok(Some(path)) => done.push(format!("log {} reopened", path.display())),
        Ok(None) => {}
        Err(e) => done.push(format!("log not reopened ({})", e.0)),
    }
    if let Some(r) = recorder {
        match r.reopen() {
            Ok(dir) => done.push(format!("capture directory {} ready", dir.display())),
            Err(e) => done.push(e.0),
        }
    }
    if let Some(dir) = textfile {
        done.push(format!("textfile {} rewritten", dir.join(textfile::FILE).display()));
    }
    if done.is_empty() {
        done.push("nothing to reopen (logs go to stderr)".into());
    }
    log(&format!("monitor: SIGHUP: {}", done.join("; ")));
}

/// One line to stderr or the `--log` file, journald-friendly (no colour, no carriage return).
pub fn log(line: &str) {
    logfile::line(line);
}
