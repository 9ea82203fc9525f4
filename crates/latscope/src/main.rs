//! The `latscope` binary: argument parsing, wiring, rendering choice, exit codes and signals. Nothing else.

mod args;
mod beside;
mod budget;
mod capture;
mod cmd;
mod error;
mod input;
mod output;
mod signal;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Finds out why a Linux machine misses its deadlines.
#[derive(Parser, Debug)]
#[command(name = "latscope", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Measure how late a periodic timer wakes a real-time thread (the cyclictest method).
    Timer(cmd::timer::Args),
    /// Measure OS and hardware noise seen by a spinning thread, and account for it.
    Noise(cmd::noise::Args),
    /// Measure hardware and firmware latency (SMIs, hypervisor stalls) with the kernel's hwlat tracer.
    Hwlat(cmd::hwlat::Args),
    /// Decode a trace file and print the events latscope understood.
    Decode(cmd::decode::Args),
    /// Explain a trace: irqs-off sections, late timers, wakeup latency breakdown.
    Analyze(cmd::analyze::Args),
    /// Check the machine for known latency traps and say how to fix each.
    Audit(cmd::audit::Args),
    /// Record the latency event set into a file for later analysis.
    Record(cmd::record::Args),
    /// Re-render a saved JSON result.
    Report(cmd::report::Args),
    /// Compare saved timer or noise results side by side.
    Compare(cmd::compare::Args),
    /// The one-command investigation: audit, measure, trace, analyse, report.
    Run(cmd::run::Args),
    /// Measure continuously and serve Prometheus metrics; with --trace, capture and explain every breach.
    Monitor(cmd::monitor::Args),
    /// Known load for tests and benchmarks: spin on a CPU at a priority, periodically.
    #[command(hide = true)]
    Inject(cmd::inject::Args),
}

fn main() -> ExitCode {
    // Usage errors exit 1 (clap's default 2 is our "threshold exceeded"); --help and --version exit 0.
    // A value refused by one of our parsers is one line naming the flag, the value and what to give.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            match args::usage_error_line(&e) {
                Some(line) => eprintln!("latscope: {line}"),
                None => {
                    let _ = e.print();
                }
            }
            return ExitCode::from(if e.use_stderr() { 1 } else { 0 });
        }
    };
    match cli.command {
        // Nothing to restore: a signal ends these at once (130/143), also with a decoding thread stuck.
        Command::Decode(_) | Command::Analyze(_) | Command::Compare(_) | Command::Report(_) | Command::Audit(_) => {
            signal::install_exit_at_once()
        }
        _ => signal::install(),
    }
    // A run killed with SIGKILL leaves its tracefs instance tracing: no measurement runs beside it.
    if matches!(
        cli.command,
        Command::Timer(_) | Command::Noise(_) | Command::Record(_) | Command::Run(_) | Command::Hwlat(_)
    ) {
        capture::remove_stale_instances();
    }
    // A service stopped by SIGTERM ends as it should (0, or 2 for a crossed threshold); a command stopped
    // by a signal exits 128 + the signal, as shells expect.
    let service = matches!(cli.command, Command::Monitor(_));
    let result = match cli.command {
        Command::Timer(a) => cmd::timer::run(a),
        Command::Noise(a) => cmd::noise::run(a),
        Command::Hwlat(a) => cmd::hwlat::run(a),
        Command::Decode(a) => cmd::decode::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Audit(a) => cmd::audit::run(a),
        Command::Record(a) => cmd::record::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Monitor(a) => cmd::monitor::run(a),
        Command::Inject(a) => cmd::inject::run(a),
    };
    match result {
        // Stopped by SIGINT/SIGTERM: the partial result was written; the exit code says how it ended.
        Ok(_) if signal::received().is_some() && !service => {
            ExitCode::from(128 + signal::received().map_or(0, |s| s.clamp(0, 127) as u8))
        }
        Ok(outcome) => outcome.exit_code(),
        Err(e) if e.is_silent() => ExitCode::from(1),
        Err(e) => {
            eprintln!("latscope: {e}");
            ExitCode::from(1)
        }
    }
}
