//! `latscope audit`: collects the system facts, judges them for the CPUs asked about, prints the findings
//! grouped by severity, and optionally writes JSON and a fix script. Exit 2 when a finding is `fail`.

use crate::args;
use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{is_stdout, write_file, write_text, Kind, Outputs};
use latscope_analyze::audit::{findings_at, has_fail};
use latscope_model::{AuditResult, CpuList, RunMetadata, SystemFacts};
use latscope_report::fix_script::write_fix_script;
use latscope_report::json::write_json;
use latscope_report::text::audit::write_audit;
use latscope_sys::host::{check_online, collect, run_metadata};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `latscope audit`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CPUs you care about, e.g. 2-3 (default: all online CPUs)
    #[arg(short = 'c', long = "cpus", value_name = "LIST", value_parser = args::cpu_list())]
    cpus: Option<CpuList>,
    /// The SCHED_FIFO priority of your real-time thread (1-99; 0 for SCHED_OTHER): kernel threads at or above it
    /// on the CPUs are reported, and on PREEMPT_RT the deferred work waiting below it
    #[arg(short = 'p', long = "priority", value_name = "N", default_value = "95", value_parser = args::priority())]
    priority: latscope_sys::measure::Policy,
    /// Write the facts and findings as JSON to FILE (`-` for stdout; the table then goes to stderr)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write a commented shell script of the suggested fixes to FILE (latscope applies nothing)
    #[arg(long = "fix-script", value_name = "FILE")]
    fix_script: Option<PathBuf>,
    /// Show every piece of evidence, every fix and the reason for each finding
    #[arg(short, long)]
    verbose: bool,
    /// Print no table (use with --json or --fix-script)
    #[arg(short, long)]
    quiet: bool,
    /// Judge saved facts instead of this machine: a `latscope audit --json` file or a bare SystemFacts JSON
    #[arg(long, value_name = "FILE")]
    facts: Option<PathBuf>,
}

/// Runs `latscope audit`.
pub fn run(args: Args) -> CmdResult {
    let started = Instant::now();
    let saved = args.facts.as_deref().map(load_facts).transpose()?;
    let cpus = match &args.cpus {
        Some(cpus) => {
            match &saved {
                Some((facts, _)) => check_in_facts(cpus, facts)?,
                None => check_online(cpus).map_err(|e| CliError(format!("--cpus: {e}")))?,
            }
            cpus.clone()
        }
        None => CpuList::default(),
    };
    // Open outputs first so a bad path fails before any work.
    let outputs =
        Outputs::new(false).file(Kind::Json, args.json.as_deref()).file(Kind::FixScript, args.fix_script.as_deref());
    outputs.check()?;
    let to_stdout_json = outputs.takes_stdout();

    let (facts, mut metadata) = match saved {
        Some((facts, metadata)) => (facts, metadata.unwrap_or_default()),
        None => {
            let facts = collect();
            let metadata = run_metadata(std::env::args().collect(), &facts);
            (facts, metadata)
        }
    };
    let findings = findings_at(&facts, &cpus, u32::from(args.priority.priority()));
    let audited = if cpus.is_empty() { facts.cpus.online.get().cloned().unwrap_or_default() } else { cpus };
    if args.facts.is_none() {
        metadata.duration_ns = started.elapsed().as_nanos() as u64;
    }
    let fail = has_fail(&findings);
    let result = AuditResult::new(metadata, audited, facts, findings);

    if !args.quiet {
        write_text(|out| write_audit(out, &result, args.verbose), to_stdout_json)?;
    }
    if let Some(path) = &args.fix_script {
        write_file(Kind::FixScript, path, |w| write_fix_script(w, &result))?;
        make_executable(path);
        if !args.quiet && !is_stdout(path) {
            eprintln!("latscope: fix script written to {} (review it; nothing was applied)", path.display());
        }
    }
    if let Some(path) = &args.json {
        write_file(Kind::Json, path, |w| write_json(w, &result))?;
    }
    Ok(if fail { Outcome::ThresholdExceeded } else { Outcome::Ok })
}

/// Makes a new fix script executable by its owner (a device or FIFO is left as it is).
fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(m) = std::fs::metadata(path).ok().filter(|m| m.is_file()) {
        let mut p = m.permissions();
        p.set_mode(p.mode() | 0o100);
        let _ = std::fs::set_permissions(path, p);
    }
}

/// Reads saved facts: an audit result (its `facts` and `metadata`) or a bare `SystemFacts` document.
fn load_facts(path: &Path) -> Result<(SystemFacts, Option<RunMetadata>), CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError(format!("--facts {}: {e}; give a file written by 'latscope audit --json'", path.display()))
    })?;
    let bad = |e: serde_json::Error| {
        CliError(format!(
            "--facts {}: line {} column {}: {e}; expected a 'latscope audit --json' result or SystemFacts JSON",
            path.display(),
            e.line(),
            e.column()
        ))
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(bad)?;
    if value.get("kind").and_then(|k| k.as_str()) == Some("audit") {
        let r: AuditResult = serde_json::from_value(value).map_err(bad)?;
        return Ok((r.facts, Some(r.metadata)));
    }
    if value.get("kind").is_some() {
        return Err(CliError(format!(
            "--facts {}: this is a '{}' result, not an audit; give a file written by 'latscope audit --json'",
            path.display(),
            value["kind"].as_str().unwrap_or("?")
        )));
    }
    let facts: SystemFacts = serde_json::from_value(value).map_err(bad)?;
    Ok((facts, None))
}

/// Checks that saved facts know every CPU asked about.
fn check_in_facts(cpus: &CpuList, facts: &SystemFacts) -> Result<(), CliError> {
    let Some(online) = facts.cpus.online.get() else { return Ok(()) };
    match cpus.iter().find(|c| !online.contains(*c)) {
        Some(c) => Err(CliError(format!(
            "--cpus: CPU {c} was not online on the audited machine (online CPUs: {online}); pick CPUs from that list"
        ))),
        None => Ok(()),
    }
}
