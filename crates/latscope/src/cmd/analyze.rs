//! `latscope analyze TRACE`: explain a trace (irqs-off sections, late timers, wakeup latency breakdown,
//! RT throttling, function-graph diff) leading with the verdict; `--json`; exit 2 over `--threshold`.

use crate::cmd::report::{write_perfetto, write_report_dir};
use crate::error::{CliError, CmdResult, Outcome};
use crate::output::JsonSink;
use latscope_analyze::analysis::{analyze, analyze_diff, AnalyzeOptions};
use latscope_analyze::wakeup::{TaskFilter, WakeupSelection};
use latscope_decode::DecodedTrace;
use latscope_model::parse_duration;
use latscope_report::json::write_json;
use latscope_report::text::analysis::write_analysis;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Arguments of `latscope analyze`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Trace file: ftrace text (trace, trace_pipe, latency tracers, function_graph), trace-cmd report text
    /// or .dat, Android systrace. Not needed with `--diff`.
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
    #[arg(long, value_name = "DUR")]
    pub threshold: Option<String>,
    /// Also write the analysis as JSON to FILE (`-` for stdout; the text report then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Only the verdicts, without the detail sections.
    #[arg(long)]
    pub brief: bool,
    /// Also write an HTML report directory (index.html with the CPU timelines, analysis.json)
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Also write the trace as a Perfetto / chrome://tracing JSON file
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
}

fn decode(path: &Path) -> Result<DecodedTrace, CliError> {
    latscope_decode::decode_file(path).map_err(|e| CliError(format!("cannot analyse the trace: {e}")))
}

/// Runs `latscope analyze`.
pub fn run(args: Args) -> CmdResult {
    let threshold = match &args.threshold {
        Some(t) => Some(parse_duration(t).map_err(|e| CliError(format!("--threshold {t}: {e}")))?),
        None => None,
    };
    if args.top == 0 {
        return Err(CliError::msg("--top 0: give at least 1"));
    }
    let opts = AnalyzeOptions {
        selection: WakeupSelection { task: args.task.as_deref().map(TaskFilter::parse), top: args.top },
        threshold,
        // A trace is explained without assuming it came from this machine.
        remedy: Default::default(),
    };
    let sink = args.json.as_deref().map(JsonSink::open).transpose()?;
    let (mut analysis, trace) = match (&args.diff, &args.trace) {
        (Some(pair), _) if pair.len() == 2 => {
            let normal = decode(&pair[0])?;
            let abnormal = decode(&pair[1])?;
            let n = pair[0].display().to_string();
            let a = pair[1].display().to_string();
            (analyze_diff((&n, &normal), (&a, &abnormal), &opts), abnormal)
        }
        (Some(_), _) => return Err(CliError::msg("--diff takes two files: NORMAL ABNORMAL")),
        (None, Some(path)) => {
            let t = decode(path)?;
            (analyze(&path.display().to_string(), &t, &opts), t)
        }
        (None, None) => return Err(CliError::msg("give a trace file to analyse (or --diff NORMAL ABNORMAL)")),
    };
    latscope_report::sentences::analysis(&mut analysis);
    let to_stdout_json = sink.as_ref().is_some_and(JsonSink::is_stdout);
    if to_stdout_json {
        write_analysis(&mut io::stderr().lock(), &analysis, !args.brief)?;
    } else {
        let mut out = io::stdout().lock();
        write_analysis(&mut out, &analysis, !args.brief)?;
        out.flush()?;
    }
    if let Some(sink) = sink {
        sink.write_with(|w| write_json(w, &analysis))?;
    }
    if let Some(dir) = &args.report {
        let mut json = Vec::new();
        write_json(&mut json, &analysis)?;
        let page = latscope_report::pages::analysis_page(&analysis, &trace.events).render();
        let index = write_report_dir(dir, &page, &[("analysis.json", json)])?;
        eprintln!("latscope: report: {}", index.display());
    }
    if let Some(path) = &args.perfetto {
        write_perfetto(path, &trace.events, None, None)?;
        eprintln!("latscope: Perfetto trace: {} (open in ui.perfetto.dev)", path.display());
    }
    Ok(if analysis.exceeded { Outcome::ThresholdExceeded } else { Outcome::Ok })
}
