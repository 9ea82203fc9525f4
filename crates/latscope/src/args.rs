//! The arguments the measuring commands share (`-c` CPUs, `-D` duration, `-p` priority, `--json` /
//! `--report` / `--perfetto` outputs), flattened into each command, and the typed value parsers behind
//! them: a value is checked once, by clap, and a bad one ends the run with one line that names the flag,
//! the value and what to give instead ([`usage_error_line`]).
//!
//! A command whose flag says something more specific than the shared help (e.g. `noise`'s spinners at
//! priority 0 by default) overrides the help or default with `#[command(mut_arg(…))]` on its own struct.

use crate::error::CliError;
use crate::output::{Kind, Outputs};
use clap::builder::TypedValueParser;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use latscope_model::{parse_duration, CpuList, Nanos};
use latscope_sys::host::{check_online, online_cpus};
use latscope_sys::measure::Policy;
use std::ffi::OsStr;
use std::path::PathBuf;

/// `-c/--cpus LIST`: the CPUs to measure.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CpuArgs {
    /// CPUs to measure, one thread each: `1`, `0,2-3` [default: all online CPUs]
    #[arg(short = 'c', long = "cpus", value_name = "LIST", value_parser = cpu_list())]
    pub cpus: Option<CpuList>,
}

impl CpuArgs {
    /// The CPUs asked for, each checked to be online, or every online CPU.
    pub fn resolve(&self) -> Result<CpuList, CliError> {
        match &self.cpus {
            Some(cpus) => {
                check_online(cpus).map_err(|e| CliError(format!("-c/--cpus: {e}")))?;
                Ok(cpus.clone())
            }
            None => online_cpus().map_err(CliError::msg),
        }
    }
}

/// `-D/--duration DUR`: how long to measure.
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct DurationArg {
    /// How long to measure (ns, us, ms, s, m, h) [default: until Ctrl-C]
    #[arg(short = 'D', long, value_name = "DUR", allow_hyphen_values = true, value_parser = duration())]
    pub duration: Option<Nanos>,
}

impl DurationArg {
    /// The duration, refused when it is 0 (a run must measure something).
    pub fn nonzero(&self) -> Result<Option<Nanos>, CliError> {
        match self.duration {
            Some(d) if d.0 == 0 => Err(CliError("-D/--duration must be longer than 0, e.g. -D 10s".into())),
            d => Ok(d),
        }
    }
}

/// `-p/--priority N`: the measuring threads' scheduling policy.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct PriorityArg {
    /// SCHED_FIFO priority of the measuring threads, 1-99; 0 runs them as SCHED_OTHER
    #[arg(
        short = 'p',
        long,
        value_name = "N",
        default_value = "95",
        allow_hyphen_values = true,
        value_parser = priority()
    )]
    pub priority: Policy,
}

/// `--json`, `--report`, `--perfetto` (and `--force`): where a measuring command writes its result besides
/// the text. Every one is checked before the measurement starts ([`Outputs::check`]).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct OutputArgs {
    /// Write the result as JSON to FILE (`-` for stdout; the text summary then goes to stderr)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write an HTML report directory (index.html, plots, result.json); a previous latscope report
    /// there is replaced
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Also write a Perfetto / chrome://tracing JSON file (`-` for stdout; with tracing, the trace events too)
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Write the --report into a non-empty directory that holds no latscope report (files of the same names
    /// are replaced, the others kept)
    #[arg(long)]
    pub force: bool,
}

impl OutputArgs {
    /// The outputs, for checking before measuring ([`Outputs::check`]) and for where the text goes.
    pub fn outputs(&self) -> Outputs<'_> {
        Outputs::new(self.force)
            .file(Kind::Json, self.json.as_deref())
            .file(Kind::Perfetto, self.perfetto.as_deref())
            .report(self.report.as_deref())
    }
}

/// `--no-stacks`: for the commands that trace, whether to leave the kernel stacks out.
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct StacksArg {
    /// With tracing: do not record kernel stacks (the stacktrace trigger at a timer interrupt that finds a
    /// task running, and at the measuring threads' switch-in after another task), which name the code that
    /// held an interrupt or the CPU off; each costs ~3 us, and only when a task, not idle, was interrupted
    #[arg(long)]
    pub no_stacks: bool,
}

/// `CPU 1` or `CPUs 0-3`, for the messages that name the measured CPUs.
pub fn cpus_label(cpus: &CpuList) -> String {
    if cpus.len() == 1 {
        format!("CPU {cpus}")
    } else {
        format!("CPUs {cpus}")
    }
}

/// A CPU list: `1`, `0,2-3`.
pub fn cpu_list() -> Checked<CpuList> {
    Checked(|s| CpuList::parse(s).map_err(|e| e.to_string()))
}

/// A duration with its unit: `1ms`, `1333us`, `2.5s` (see [`parse_duration`]). A bare number is said to lack
/// its unit, a negative one to be negative (flags that take one allow a leading `-` so that this is said).
pub fn duration() -> Checked<Nanos> {
    Checked(|s| {
        let t = s.trim();
        if let Some(rest) = t.strip_prefix('-') {
            if rest.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                return Err(format!("'{s}' is negative; give a positive duration with a unit, e.g. 5s"));
            }
        }
        if !t.is_empty() && t.parse::<f64>().is_ok() {
            return Err(format!("'{s}' has no unit; add one of {DURATION_UNITS}, e.g. {t}ms or {t}s"));
        }
        parse_duration(s).map_err(|e| e.to_string())
    })
}

/// A share of time: `1%`, `0.5%` (more than 0, less than 100 %), as a fraction.
pub fn duty() -> Checked<f64> {
    Checked(|s| {
        let t = s.trim();
        let n: f64 = t
            .strip_suffix('%')
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| format!("'{s}' is not a share; give a percentage, e.g. 1%"))?;
        if n > 0.0 && n < 100.0 {
            Ok(n / 100.0)
        } else {
            Err(format!("'{s}' must be more than 0% and less than 100%, e.g. 1%"))
        }
    })
}

/// The units every duration flag takes, for help texts and errors.
pub const DURATION_UNITS: &str = "ns, us, ms, s, m, h";

/// A priority in the command-line convention: 1-99 is SCHED_FIFO, 0 SCHED_OTHER.
pub fn priority() -> Checked<Policy> {
    Checked(|s| {
        let n: i64 = s
            .trim()
            .parse()
            .map_err(|_| format!("'{s}' is not a number; give 1-99 for SCHED_FIFO or 0 for SCHED_OTHER"))?;
        Policy::from_priority(n).map_err(|e| e.to_string())
    })
}

/// A value parser from a function whose error says what is wrong with the value. The clap error it makes
/// carries the flag, the value and that reason, for [`usage_error_line`].
#[derive(Clone, Copy)]
pub struct Checked<T>(fn(&str) -> Result<T, String>);

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Checked<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<T, clap::Error> {
        let text = value.to_string_lossy();
        (self.0)(&text).map_err(|why| {
            let mut e = clap::Error::new(ErrorKind::ValueValidation).with_cmd(cmd);
            e.insert(ContextKind::InvalidArg, ContextValue::String(arg.map_or_else(String::new, flag_names)));
            e.insert(ContextKind::InvalidValue, ContextValue::String(text.into_owned()));
            e.insert(ContextKind::Custom, ContextValue::String(why));
            e
        })
    }
}

/// `-D/--duration`, or `--threshold` for a flag without a short name.
fn flag_names(arg: &clap::Arg) -> String {
    match (arg.get_short(), arg.get_long()) {
        (Some(s), Some(l)) => format!("-{s}/--{l}"),
        (None, Some(l)) => format!("--{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, None) => arg.get_id().to_string(),
    }
}

/// The one line that says what is wrong with a value a [`Checked`] parser refused: the flag, the value,
/// and the reason, which continues the sentence when it starts with the value itself
/// (`-p/--priority 'high' is not a number; …`, `-p/--priority '120': priority 120 is out of range …`).
/// `None` for every other clap error (clap renders those).
pub fn usage_error_line(e: &clap::Error) -> Option<String> {
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let (flag, value, why) =
        (text(ContextKind::InvalidArg)?, text(ContextKind::InvalidValue)?, text(ContextKind::Custom)?);
    let quoted = format!("'{value}'");
    Some(match why.strip_prefix(&quoted) {
        Some(rest) => format!("{flag} {quoted}{rest}"),
        None => format!("{flag} {quoted}: {why}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use latscope_model::CpuId;

    #[derive(clap::Parser, Debug)]
    struct Cmd {
        #[command(flatten)]
        cpus: CpuArgs,
        #[command(flatten)]
        duration: DurationArg,
        #[command(flatten)]
        priority: PriorityArg,
        #[arg(long, allow_hyphen_values = true, value_parser = duration())]
        threshold: Option<Nanos>,
        #[command(flatten)]
        outputs: OutputArgs,
    }

    fn parse(args: &[&str]) -> Result<Cmd, String> {
        Cmd::try_parse_from(std::iter::once("cmd").chain(args.iter().copied()))
            .map_err(|e| usage_error_line(&e).unwrap_or_else(|| format!("clap: {e}")))
    }

    #[test]
    fn values_are_typed_once() {
        let c = parse(&["-c", "0,2-3", "-D", "1.5s", "-p", "0", "--threshold", "20us", "--json", "-"]).expect("parse");
        assert_eq!(c.cpus.cpus, Some(CpuList(vec![CpuId(0), CpuId(2), CpuId(3)])));
        assert_eq!(c.duration.duration, Some(Nanos::from_ms(1500)));
        assert_eq!(c.priority.priority, Policy::Other);
        assert_eq!(c.threshold, Some(Nanos::from_us(20)));
        assert_eq!(c.outputs.json, Some(PathBuf::from("-")));
        let d = parse(&[]).expect("defaults");
        assert_eq!((d.cpus.cpus, d.duration.duration, d.priority.priority), (None, None, Policy::Fifo(95)));
    }

    #[test]
    fn a_bad_value_is_one_line_naming_the_flag_the_value_and_what_to_give() {
        assert_eq!(
            parse(&["-p", "high"]).expect_err("not a number"),
            "-p/--priority 'high' is not a number; give 1-99 for SCHED_FIFO or 0 for SCHED_OTHER"
        );
        let e = parse(&["-p", "-3"]).expect_err("out of range");
        assert!(e.starts_with("-p/--priority '-3': priority -3 is out of range"), "{e}");
        assert_eq!(
            parse(&["-D", "10 parsecs"]).expect_err("unit"),
            "-D/--duration '10 parsecs' has an unknown unit; use ns, us, ms, s, m or h"
        );
        // Issue 15 item 18: a bare number lacks its unit (it has no unknown one), a negative value is said
        // to be negative (not "unexpected argument '-5'").
        assert_eq!(
            parse(&["--threshold", "5"]).expect_err("unit"),
            "--threshold '5' has no unit; add one of ns, us, ms, s, m, h, e.g. 5ms or 5s"
        );
        let e = parse(&["-D", "0"]).expect_err("unit");
        assert!(e.starts_with("-D/--duration '0' has no unit"), "{e}");
        assert_eq!(
            parse(&["-D", "-5s"]).expect_err("negative"),
            "-D/--duration '-5s' is negative; give a positive duration with a unit, e.g. 5s"
        );
        let e = parse(&["-c", "1,,2"]).expect_err("cpu list");
        assert!(e.starts_with("-c/--cpus '1,,2': '' in CPU list '1,,2' is not a CPU number"), "{e}");
        // Errors that are not about a value are clap's own.
        assert!(parse(&["--bogus"]).expect_err("unknown flag").starts_with("clap: "));
    }
}
