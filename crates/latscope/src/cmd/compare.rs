//! `latscope compare A B [C…]`: loads saved timer or noise results (latscope JSON, or cyclictest/oslat
//! files), prints them side by side per CPU and overall with the statistical tests and a verdict per run,
//! and with `--report DIR` draws the overlaid histograms and percentile plots. Wiring only.

use crate::cmd::report::{read_result, say_written, write_report_dir};
use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{write_file, write_text, Kind, Outputs};
use latscope_analyze::compare::{compare, letter, RunInput};
use latscope_decode::import::Loaded;
use latscope_report::compare::Comparison;
use latscope_report::json::write_json;
use latscope_report::pages::compare_page;
use std::path::PathBuf;

/// Arguments of `latscope compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Two or more results; the first is the baseline (latscope timer/noise JSON, cyclictest or oslat files)
    #[arg(value_name = "RESULT", num_args = 2.., required = true)]
    inputs: Vec<PathBuf>,
    /// Also write a report directory with overlaid histograms and percentile plots
    #[arg(long = "report", value_name = "DIR")]
    report: Option<PathBuf>,
    /// Write the comparison as JSON to FILE (`-` for stdout; the table then goes to stderr)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the --report into a non-empty directory that holds no latscope report (files of the same names
    /// are replaced, the others kept)
    #[arg(long)]
    force: bool,
    /// Print no table (use with --json or --report)
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// Runs `latscope compare`.
pub fn run(args: Args) -> CmdResult {
    let outputs = Outputs::new(args.force).file(Kind::Json, args.json.as_deref()).report(args.report.as_deref());
    outputs.check()?;
    let mut runs = Vec::new();
    let mut metadata = Vec::new();
    for (i, path) in args.inputs.iter().enumerate() {
        let name = path.display().to_string();
        let l = letter(i);
        match read_result(path)? {
            Loaded::Timer(r) => {
                metadata.push((format!("{l}: {name}"), r.metadata.clone()));
                runs.push(RunInput::timer(&l, &name, &r));
            }
            Loaded::Noise(r) => {
                metadata.push((format!("{l}: {name}"), r.metadata.clone()));
                runs.push(RunInput::noise(&l, &name, &r));
            }
            Loaded::Other(latscope_model::wire::ResultKind::Run, v) => {
                let r: latscope_model::RunResult = serde_json::from_value(*v)
                    .map_err(|e| CliError(format!("{name}: not a valid latscope run result: {e}")))?;
                let t =
                    r.timer.ok_or_else(|| CliError(format!("{name}: this run has no timer measurement to compare")))?;
                metadata.push((format!("{l}: {name}"), t.metadata.clone()));
                runs.push(RunInput::timer(&l, &name, &t));
            }
            _ => return Err(CliError(format!("{name}: compare takes timer or noise results (or run results)"))),
        }
    }
    let c = Comparison::from(
        compare(runs).map_err(|m| CliError(format!("compare: {}", latscope_report::compare::mismatch(&m))))?,
    );
    if !args.quiet {
        let text = latscope_report::compare::text::render(&c);
        write_text(|out| out.write_all(text.as_bytes()), outputs.takes_stdout())?;
    }
    if let Some(path) = &args.json {
        write_file(Kind::Json, path, |w| write_json(w, &c))?;
    }
    if let Some(dir) = &args.report {
        let mut json = Vec::new();
        write_json(&mut json, &c)?;
        let page = compare_page(&c, metadata).render();
        let index = write_report_dir(dir, args.force, &page, &[("comparison.json", json)])?;
        say_written("report", &index);
    }
    Ok(Outcome::Ok)
}
