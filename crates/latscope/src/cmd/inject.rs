//! `latscope inject` (hidden): runs the known-load injector in its own process, for ground-truth tests,
//! benchmarks and manual experiments: a thread pinned to a CPU that spins D every E at a given priority.

use crate::args;
use crate::error::{CliError, CmdResult, Outcome};
use crate::signal;
use latscope_model::{CpuId, Nanos};
use latscope_sys::host::check_online;
use latscope_sys::measure::{clock, start_injector, InjectSpec, Policy};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Arguments of `latscope inject`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// CPU to load
    #[arg(long, value_name = "N")]
    cpu: u32,
    /// SCHED_FIFO priority 1-99 of the load; 0 = SCHED_OTHER
    #[arg(long = "prio", value_name = "N", default_value = "97", value_parser = args::priority())]
    prio: Policy,
    /// How long each spin lasts
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    spin: Nanos,
    /// Period between spin starts
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    every: Nanos,
    /// Delay before the first spin
    #[arg(long, value_name = "DUR", default_value = "0ns", value_parser = args::duration())]
    delay: Nanos,
    /// Align spins to the deadlines of a `latscope timer -i DUR` run: each starts --phase after one [default: none]
    #[arg(long, value_name = "DUR", value_parser = args::duration())]
    align: Option<Nanos>,
    /// With --align: how long after a timer deadline each spin starts (e.g. interval − 200us)
    #[arg(long, value_name = "DUR", default_value = "0ns", value_parser = args::duration())]
    phase: Nanos,
    /// How long to run [default: until Ctrl-C]
    #[arg(short = 'D', long, value_name = "DUR", value_parser = args::duration())]
    duration: Option<Nanos>,
    /// Print every spin as `start_ns end_ns` (CLOCK_MONOTONIC) after the summary line
    #[arg(long)]
    times: bool,
}

/// Runs `latscope inject`.
pub fn run(args: Args) -> CmdResult {
    let cpu = CpuId(args.cpu);
    check_online(&latscope_model::CpuList(vec![cpu])).map_err(|e| CliError(format!("--cpu: {e}")))?;
    let policy = args.prio;
    let mut spec = InjectSpec::new(cpu, policy, args.spin, args.every);
    spec.start_delay = args.delay;
    spec.align = args.align.map(|a| (a, args.phase));
    let duration = args.duration;
    let injector = start_injector(spec).map_err(CliError::msg)?;
    let end = duration.map(|d| clock::now() + d);
    while !signal::stop_flag().load(Ordering::Relaxed) {
        let now = clock::now();
        if end.is_some_and(|e| now >= e) {
            break;
        }
        let left = end.map_or(Nanos::from_ms(10), |e| (e - now).min(Nanos::from_ms(10)));
        std::thread::sleep(Duration::from_nanos(left.0));
    }
    let report = injector.stop();
    let durations: Vec<u64> = report.spins.iter().map(|s| s.duration().0).collect();
    let mean = if durations.is_empty() { 0 } else { durations.iter().sum::<u64>() / durations.len() as u64 };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "injected {} spins on CPU {cpu} ({}) of {} every {}: spin min {} mean {} max {}, missed periods {}",
        report.total_spins,
        policy.describe(),
        spec.spin,
        spec.every,
        Nanos(durations.iter().copied().min().unwrap_or(0)),
        Nanos(mean),
        Nanos(durations.iter().copied().max().unwrap_or(0)),
        report.missed_periods
    )?;
    if args.times {
        for s in &report.spins {
            writeln!(out, "{} {}", s.start.0, s.end.0)?;
        }
    }
    Ok(Outcome::Ok)
}
