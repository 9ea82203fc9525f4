//! `latscope analyze TRACE`: explain a trace (irqs-off sections, late timers, wakeup latency breakdown,
//! RT throttling, function-graph diff) leading with the verdict; `--json`; exit 2 over `--threshold`.

use crate::args::{self, OutputArgs};
use crate::budget::{Budget, Fit};
use crate::cmd::report::{say_written, write_perfetto, write_report_dir};
use crate::error::{CliError, CmdResult, Outcome};
use crate::input::Input;
use crate::output::{write_file, write_text, Kind};
use latscope_analyze::analysis::{analyze, analyze_diff, AnalyzeOptions};
use latscope_analyze::rtla::analyze_rtla;
use latscope_analyze::wakeup::{TaskFilter, WakeupSelection};
use latscope_analyze::windowed::{analyze_scanned, analyze_windowed, Scanned};
use latscope_decode::DecodedTrace;
use latscope_model::Nanos;
use latscope_report::json::write_json;
use latscope_report::text::analysis::write_analysis;
use std::path::{Path, PathBuf};

/// Arguments of `latscope analyze`.
#[derive(clap::Args, Debug)]
#[command(
    mut_arg("json", |a| a.help("Also write the analysis as JSON to FILE (`-` for stdout; the text report then goes to stderr)")),
    mut_arg("report", |a| a.help("Also write an HTML report directory (index.html with the CPU timelines, analysis.json)")),
    mut_arg("perfetto", |a| a.help("Also write the trace as a Perfetto / chrome://tracing JSON file (`-` for stdout)"))
)]
pub struct Args {
    /// Trace file: ftrace text (trace, trace_pipe, latency tracers, function_graph), trace-cmd report text
    /// or .dat, Android systrace; `-` reads standard input. Not needed with `--diff`.
    #[arg(required_unless_present = "diff")]
    pub trace: Option<PathBuf>,
    /// Compare two function-graph traces: the normal case, then the abnormal one.
    #[arg(long, num_args = 2, value_names = ["NORMAL", "ABNORMAL"])]
    pub diff: Option<Vec<PathBuf>>,
    /// How many of the worst wakeups (and sections, timers) to explain.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub top: usize,
    /// Only wakeups of this task (name or pid); default: every SCHED_FIFO/RR task.
    #[arg(long, value_name = "COMM|PID")]
    pub task: Option<String>,
    /// Exit with status 2 when a finding (latency, irqs-off section, lateness, wakeup) exceeds this (`100us`).
    #[arg(long, value_name = "DUR", allow_hyphen_values = true, value_parser = args::duration())]
    pub threshold: Option<Nanos>,
    /// Only the verdicts, without the detail sections.
    #[arg(long)]
    pub brief: bool,
    /// Print no text (use with --json, --report or --perfetto; the exit code still says whether --threshold
    /// was exceeded)
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// The memory a whole-trace analysis may use (`4G`, `512M`; default: 30M, about 130 k records, or 80 % of
    /// the memory available with --report, --perfetto or --diff): a larger trace is analysed in windows (see
    /// --windows), with the same results, and what needs every event (--report, --perfetto, --diff) is refused
    /// with its size
    #[arg(long, value_name = "SIZE", value_parser = crate::budget::parse_size)]
    pub max_memory: Option<u64>,
    /// Analyse in windows around the worst findings, in two streamed passes that hold one window at a time, into
    /// the same results (what analyze does by itself with a trace over --max-memory, by default 2^17 records):
    /// for traces of any length
    #[arg(long, conflicts_with = "diff")]
    pub windows: bool,
    #[command(flatten)]
    pub outputs: OutputArgs,
}

/// The trace at `path` (`-`: standard input) with its name, when its analysis fits the memory budget.
fn decode(path: &Path, budget: &Budget) -> Result<(String, DecodedTrace), CliError> {
    let input = Input::open(path)?;
    let trace = crate::budget::decode(&input, budget)?;
    Ok((input.name(), trace))
}

/// rtla timerlat output (a table or an auto-analysis) in `input`, when that is what it holds.
fn rtla_output(input: &Input) -> Result<Option<latscope_model::RtlaOutput>, CliError> {
    use latscope_decode::import::rtla;
    let cant = |e: std::io::Error| CliError(format!("cannot read {}: {e}", input.name()));
    let head = input.head(16384).map_err(cant)?;
    if head.starts_with(b"\x17\x08\x44tracing") || !rtla::is_rtla(&String::from_utf8_lossy(&head)) {
        return Ok(None);
    }
    let bytes = input.bytes().map_err(cant)?;
    let text = String::from_utf8_lossy(&bytes);
    rtla::parse(&input.name(), &text).map(Some).map_err(|e| CliError(format!("cannot analyse the rtla output: {e}")))
}

/// Runs `latscope analyze`.
pub fn run(args: Args) -> CmdResult {
    one_malloc_arena();
    let threshold = args.threshold;
    if args.top == 0 {
        return Err(CliError::msg("--top 0: give at least 1"));
    }
    let opts = AnalyzeOptions {
        selection: WakeupSelection { task: args.task.as_deref().map(TaskFilter::parse), top: args.top },
        threshold,
        // A trace is explained without assuming it came from this machine.
        remedy: Default::default(),
    };
    let outputs = args.outputs.outputs();
    outputs.check()?;
    let o = &args.outputs;
    let every_event = args.diff.is_some() || o.report.is_some() || o.perfetto.is_some();
    let budget = Budget::new(args.max_memory, every_event);
    let (mut analysis, trace) = match (&args.diff, &args.trace) {
        (Some(pair), _) if pair.len() == 2 => {
            if pair.iter().all(|p| p == Path::new("-")) {
                return Err(CliError::msg("--diff - -: standard input holds one trace; give at least one file"));
            }
            let (n, normal) = decode(&pair[0], &budget)?;
            let (a, abnormal) = decode(&pair[1], &budget)?;
            (analyze_diff((&n, &normal), (&a, &abnormal), &opts), abnormal)
        }
        (Some(_), _) => return Err(CliError::msg("--diff takes two files: NORMAL ABNORMAL")),
        (None, Some(path)) => {
            let input = Input::open(path)?;
            match rtla_output(&input)? {
                Some(r) => (analyze_rtla(&input.name(), r, &opts), DecodedTrace::default()),
                None => {
                    if args.windows {
                        let reason = "--windows asked for the windows".into();
                        (windowed(&args, &input, &opts, reason, None)?, DecodedTrace::default())
                    } else {
                        match crate::budget::fit(&input, &budget, &opts.selection)? {
                            Fit::Whole(t) => (analyze(&input.name(), &t, &opts), *t),
                            Fit::TooLarge(reason, scanned) => {
                                (windowed(&args, &input, &opts, reason, Some(*scanned))?, DecodedTrace::default())
                            }
                        }
                    }
                }
            }
        }
        (None, None) => return Err(CliError::msg("give a trace file to analyse (or --diff NORMAL ABNORMAL)")),
    };
    latscope_report::sentences::analysis(&mut analysis);
    if !args.quiet {
        write_text(|out| write_analysis(out, &analysis, !args.brief), outputs.takes_stdout())?;
    }
    if let Some(path) = &o.json {
        write_file(Kind::Json, path, |w| write_json(w, &analysis))?;
    }
    if let Some(dir) = &o.report {
        let mut json = Vec::new();
        write_json(&mut json, &analysis)?;
        let page = latscope_report::pages::analysis_page(&analysis, &trace.events).render();
        let index = write_report_dir(dir, o.force, &page, &[("analysis.json", json)])?;
        say_written("report", &index);
    }
    if let Some(path) = &o.perfetto {
        write_perfetto(path, &trace.events, None, None)?;
        say_written("Perfetto trace", path);
    }
    // The process ends next: freeing the events one by one would only delay the exit (0.2 s at 6 M events).
    std::mem::forget(trace);
    Ok(if analysis.exceeded { Outcome::ThresholdExceeded } else { Outcome::Ok })
}

/// `analyze` of a trace in windows ([`analyze_windowed`]): two streamed passes, one window held at a time; the
/// first may be done already (`scanned`). Refused when --report or --perfetto asks for every event.
fn windowed(
    args: &Args,
    input: &Input,
    opts: &AnalyzeOptions,
    reason: String,
    scanned: Option<Scanned>,
) -> Result<latscope_analyze::analysis::Analysis, CliError> {
    let o = &args.outputs;
    if o.report.is_some() || o.perfetto.is_some() {
        let name = input.name();
        return Err(CliError(format!(
            "cannot write --report or --perfetto for {name}: they draw every event, and the trace is analysed in \
             windows ({reason}); {}",
            crate::budget::split_advice(&name)
        )));
    }
    let mut stream = |visit: &mut dyn FnMut(&latscope_model::Event)| {
        input.visit(visit).map(|s| (s.info, s.warnings)).map_err(|e| CliError(format!("cannot analyse the trace: {e}")))
    };
    match scanned {
        Some(s) => analyze_scanned(&input.name(), s, &mut stream, opts, reason),
        None => analyze_windowed(&input.name(), &mut stream, opts, reason),
    }
}

/// Has glibc's malloc serve every thread from one arena. The windows are analysed on threads that each took an
/// arena of their own and kept what they freed: peak RSS then grew with the largest windows met (57 MB at 6.9 M
/// events, 63 MB at 22 M, 10 % more, with the heap's own peak 2 % more by heaptrack). With one arena it is
/// 49 and 50 MB, at the same CPU time (scripts/bench-analyze-scale.sh's files, 3 runs each).
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt changes a malloc parameter; called before analyze starts its threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
