//! `latscope report RESULT [--report DIR]`: re-renders a saved latscope JSON result — or imports a
//! cyclictest histogram/JSON or oslat text/JSON file — as text and as a report directory (index.html, the
//! plots as SVG, the result as latscope JSON). Also home of the report-directory and Perfetto writers the
//! other commands use (`--report DIR`, `--perfetto FILE`). Wiring only.

use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{self, Kind};
use latscope_decode::import::{load, Loaded};
use latscope_model::noise_result::NoiseResult;
use latscope_model::wire::ResultKind;
use latscope_model::{Event, RunResult, TimerResult};
use latscope_report::html::ReportFiles;
use latscope_report::json::write_json;
use latscope_report::pages;
use latscope_report::perfetto::PerfettoTrace;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `latscope report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A latscope JSON result, cyclictest -h/--histfile or --json output, or oslat text or --json output
    #[arg(value_name = "RESULT")]
    input: PathBuf,
    /// Write the report directory here (index.html, *.svg, result.json); default: `<RESULT>-report`
    #[arg(long = "report", value_name = "DIR")]
    report: Option<PathBuf>,
    /// Print nothing but the report's path
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Write into a non-empty directory that holds no latscope report (files of the same names are replaced)
    #[arg(long)]
    force: bool,
}

/// Serialises a result as latscope JSON.
macro_rules! json_bytes {
    ($v:expr) => {{
        let mut buf = Vec::new();
        write_json(&mut buf, $v).map(|()| buf).map_err(CliError::from)
    }};
}

/// Reads a result file; the error names the file and what is accepted.
pub fn read_result(path: &Path) -> Result<Loaded, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError(format!("cannot read {}: {e}; give a latscope JSON result or a cyclictest/oslat file", path.display()))
    })?;
    load(&path.display().to_string(), &text).map_err(CliError::msg)
}

/// Writes a report directory (see [`output::write_report`]): `index.html`, every plot as `<id>.svg`, and
/// `extra` files (name, bytes); `force`: into a directory that holds no latscope report. Returns the path of
/// `index.html`.
pub fn write_report_dir(
    dir: &Path,
    force: bool,
    files: &ReportFiles,
    extra: &[(&str, Vec<u8>)],
) -> Result<PathBuf, CliError> {
    let mut all: Vec<(String, Vec<u8>)> = vec![("index.html".to_string(), files.index_html.clone().into_bytes())];
    all.extend(files.svgs.iter().map(|(n, svg)| (n.clone(), svg.clone().into_bytes())));
    all.extend(extra.iter().map(|(n, b)| (n.to_string(), b.clone())));
    output::write_report(dir, force, &all)
}

/// Writes the report directory of a timer result (for `latscope timer --report DIR` too).
pub fn write_timer_report(dir: &Path, force: bool, r: &TimerResult, name: &str) -> Result<PathBuf, CliError> {
    write_report_dir(dir, force, &pages::timer_page(r, name).render(), &[("result.json", json_bytes!(r)?)])
}

/// Writes the report directory of a noise result (for `latscope noise --report DIR` too).
pub fn write_noise_report(dir: &Path, force: bool, r: &NoiseResult, name: &str) -> Result<PathBuf, CliError> {
    write_report_dir(dir, force, &pages::noise_page(r, name).render(), &[("result.json", json_bytes!(r)?)])
}

/// Writes a Perfetto / chrome://tracing JSON file of trace events and measurements (`--perfetto FILE`,
/// `-` for stdout).
pub fn write_perfetto(
    path: &Path,
    events: &[Event],
    timer: Option<&TimerResult>,
    noise: Option<&NoiseResult>,
) -> Result<(), CliError> {
    let p = perfetto_trace(events, timer, noise);
    output::write_file(Kind::Perfetto, path, |mut w| p.write(&mut w))
}

/// The Perfetto trace of trace events and the measurements they explain.
pub fn perfetto_trace(events: &[Event], timer: Option<&TimerResult>, noise: Option<&NoiseResult>) -> PerfettoTrace {
    let mut p = PerfettoTrace::new();
    p.add_events(events);
    if let Some(t) = timer {
        p.add_timer(t);
    }
    if let Some(n) = noise {
        p.add_noise(n);
    }
    p
}

/// Says where an output went, in the one wording every command uses: `latscope: report written to DIR/index.html`.
pub fn say_written(what: &str, path: &Path) {
    if output::is_stdout(path) {
        return;
    }
    let open = if what == "Perfetto trace" { " (open in ui.perfetto.dev)" } else { "" };
    eprintln!("latscope: {what} written to {}{open}", path.display());
}

/// The default report directory for an input file: `<file name without extension>-report` beside it.
fn default_dir(input: &Path) -> PathBuf {
    let stem = input.file_stem().map_or("latscope".into(), |s| s.to_string_lossy().into_owned());
    input.with_file_name(format!("{stem}-report"))
}

/// Runs `latscope report`.
pub fn run(args: Args) -> CmdResult {
    let loaded = read_result(&args.input)?;
    let name = args.input.file_name().map_or_else(|| args.input.display().to_string(), |n| n.to_string_lossy().into());
    let dir = args.report.clone().unwrap_or_else(|| default_dir(&args.input));
    let force = args.force;
    output::Outputs::new(force).report(Some(&dir)).check()?;
    let mut text = Vec::new();
    let index = match &loaded {
        Loaded::Timer(r) => {
            latscope_report::text::timer::write_timer(&mut text, r)?;
            write_timer_report(&dir, force, r, &name)?
        }
        Loaded::Noise(r) => {
            latscope_report::text::noise::write_noise(&mut text, r)?;
            write_noise_report(&dir, force, r, &name)?
        }
        Loaded::Audit(r) => {
            latscope_report::text::audit::write_audit(&mut text, r, false)?;
            write_report_dir(&dir, force, &pages::audit_page(r, &name).render(), &[("result.json", json_bytes!(r)?)])?
        }
        Loaded::Other(ResultKind::Run, v) => {
            let r: RunResult = serde_json::from_value((**v).clone())
                .map_err(|e| CliError(format!("{}: not a valid latscope run result: {e}", args.input.display())))?;
            text.extend_from_slice(latscope_report::text::verdict::render(&r.causes).as_bytes());
            write_report_dir(
                &dir,
                force,
                &pages::run_page(&r, Vec::new()).render(),
                &[("result.json", json_bytes!(&r)?)],
            )?
        }
        Loaded::Other(kind, _) => {
            return Err(CliError(format!(
                "{}: latscope cannot draw a '{kind:?}' result yet; report takes timer, noise, audit and run results",
                args.input.display()
            )))
        }
    };
    let mut out = std::io::stdout().lock();
    if args.quiet {
        writeln!(out, "{}", index.display())?;
    } else {
        out.write_all(&text)?;
        writeln!(out)?;
        writeln!(out, "report written to {}", index.display())?;
    }
    Ok(Outcome::Ok)
}
