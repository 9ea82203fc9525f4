//! `latscope decode FILE`: print the events latscope decoded from a trace (text or JSON lines), or only a
//! summary with `--stats` (the streaming fast path: no event is kept in memory).

use crate::error::{CliError, CmdResult, Outcome};
use crate::input::Input;
use latscope_decode::{Format, Streamed};
use latscope_model::{CpuId, CpuList, Event};
use latscope_report::decode_stats::DecodeStats;
use latscope_report::events::{write_json_line, write_text};
use std::collections::{BTreeSet, HashSet};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Output format of `latscope decode`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// One ftrace-like line per event.
    Text,
    /// One JSON object per line (per event; with `--stats` one summary object).
    Json,
}

/// Arguments of `latscope decode`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Trace file: ftrace text (trace, trace_pipe, latency tracers, function_graph), trace-cmd report
    /// text or .dat, Android systrace/atrace (text, HTML, compressed); `-` reads standard input.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Only events recorded on these CPUs (`2`, `0,3-5`).
    #[arg(long, value_name = "CPUS")]
    pub cpu: Option<String>,
    /// Only these events, comma separated (`sched_switch,irq_handler_entry,local_timer_entry`).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub events: Vec<String>,
    /// Print only a summary: events per CPU and per event, time span, lost events, warnings.
    #[arg(long)]
    pub stats: bool,
}

/// Runs `latscope decode`.
pub fn run(args: Args) -> CmdResult {
    let cpus = match &args.cpu {
        Some(c) => Some(
            CpuList::parse(c)
                .map_err(|e| CliError::msg(format!("--cpu {c}: {e}; expected a CPU list such as `2` or `0,3-5`")))?,
        ),
        None => None,
    };
    let names: HashSet<&str> = args.events.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).collect();
    // What the trace holds, to say so when a filter matches nothing in it.
    let mut seen = Seen::default();
    let filtering = !names.is_empty() || cpus.is_some();
    let mut keep = |e: &Event| -> bool {
        if !filtering {
            return true;
        }
        let name = e.kind.name();
        let (on_cpu, named) =
            (cpus.as_ref().map_or(true, |l| l.contains(e.cpu)), names.is_empty() || names.contains(name.as_str()));
        seen.note(e, &name, on_cpu, named);
        on_cpu && named
    };
    let input = Input::open(&args.file)?;
    let file = input.name();
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());

    if args.stats {
        let mut stats = DecodeStats::new(&file);
        let s = input
            .visit(&mut |e| {
                if keep(e) {
                    stats.add(e);
                }
            })
            .map_err(CliError::msg)?;
        seen.check(&file, &names, cpus.as_ref())?;
        let warnings: Vec<String> = s.warnings.iter().map(|w| format!("{}: {}", w.location, w.message)).collect();
        stats.finish(
            format_name(&s),
            s.info.tracer.clone(),
            s.info.cpus,
            &s.info.lost,
            &s.info.lost_unknown,
            &warnings,
        );
        match args.format {
            OutputFormat::Text => stats.write_text(&mut out)?,
            OutputFormat::Json => {
                serde_json::to_writer(&mut out, &stats).map_err(CliError::msg)?;
                out.write_all(b"\n")?;
            }
        }
        out.flush()?;
        return Ok(Outcome::Ok);
    }

    let mut write_err: Option<std::io::Error> = None;
    let s = input
        .stream(&mut |e| {
            if write_err.is_some() || !keep(&e) {
                return;
            }
            let r = match args.format {
                OutputFormat::Text => write_text(&mut out, &e),
                OutputFormat::Json => write_json_line(&mut out, &e),
            };
            if let Err(err) = r {
                write_err = Some(err);
            }
        })
        .map_err(CliError::msg)?;
    match write_err {
        // A closed pipe (`| head`) is a normal way to stop reading.
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(Outcome::Ok),
        Some(e) => return Err(e.into()),
        None => {}
    }
    out.flush()?;
    seen.check(&file, &names, cpus.as_ref())?;
    if !s.warnings.is_empty() {
        eprintln!(
            "latscope: {}: {} warning(s) (lines or records skipped, or approximations); first: {}: {} \
             (`latscope decode --stats` lists them)",
            file,
            s.warnings.len(),
            s.warnings[0].location,
            s.warnings[0].message
        );
    }
    Ok(Outcome::Ok)
}

/// What a trace held, for the filters of `--events` and `--cpu`.
#[derive(Debug, Default)]
struct Seen {
    /// Event names in the trace.
    names: BTreeSet<String>,
    /// CPUs with events in the trace.
    cpus: BTreeSet<CpuId>,
    /// Events kept by both filters.
    kept: u64,
}

impl Seen {
    fn note(&mut self, e: &Event, name: &str, on_cpu: bool, named: bool) {
        if !self.names.contains(name) {
            self.names.insert(name.to_string());
        }
        self.cpus.insert(e.cpu);
        if on_cpu && named {
            self.kept += 1;
        }
    }

    /// A filter that names what the trace does not hold is an error when nothing was printed, a warning
    /// otherwise; either says what the trace does hold.
    fn check(&self, file: &str, names: &HashSet<&str>, cpus: Option<&CpuList>) -> Result<(), CliError> {
        let mut missing = Vec::new();
        let mut absent: Vec<&str> = names.iter().copied().filter(|n| !self.names.contains(*n)).collect();
        absent.sort_unstable();
        if !absent.is_empty() {
            let have: Vec<&str> = self.names.iter().map(String::as_str).collect();
            missing.push(format!(
                "--events: {} {} not in the trace (its events: {})",
                absent.join(", "),
                if absent.len() == 1 { "is" } else { "are" },
                if have.is_empty() { "none".to_string() } else { have.join(", ") }
            ));
        }
        if let Some(list) = cpus {
            let none: Vec<String> = list.iter().filter(|c| !self.cpus.contains(c)).map(|c| c.to_string()).collect();
            if !none.is_empty() {
                let have: Vec<String> = self.cpus.iter().map(ToString::to_string).collect();
                missing.push(format!(
                    "--cpu: the trace has no event on CPU {} (its CPUs: {})",
                    none.join(", "),
                    if have.is_empty() { "none".to_string() } else { have.join(", ") }
                ));
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let why = missing.join("; ");
        if self.kept == 0 {
            return Err(CliError(format!("{file}: nothing to print: {why}")));
        }
        eprintln!("latscope: {file}: {why}");
        Ok(())
    }
}

fn format_name(s: &Streamed) -> String {
    match s.info.format {
        Some(Format::FtraceText) => "ftrace text".into(),
        Some(Format::LatencyText) => "latency tracer text".into(),
        Some(Format::FuncGraphText) => "function_graph text".into(),
        Some(Format::TraceCmdReport) => "trace-cmd report text".into(),
        Some(Format::Systrace) => "Android systrace/atrace".into(),
        Some(Format::TraceCmdDat(v)) => format!("trace-cmd .dat v{v}"),
        Some(Format::RawPages) => "raw ring-buffer pages".into(),
        None => "unknown".into(),
    }
}
