//! The binary's error type and the outcome of a successful run (exit code 0 or 2).

use std::fmt;
use std::process::ExitCode;

/// An error that ends the run with exit code 1. The message says what and how to fix it.
#[derive(Debug)]
pub struct CliError(pub String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl CliError {
    /// An error from any displayable cause.
    pub fn msg(m: impl fmt::Display) -> CliError {
        CliError(m.to_string())
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            // The reader of our output went away (`latscope analyze … | head`): nothing to tell it.
            std::io::ErrorKind::BrokenPipe => CliError(String::new()),
            _ => CliError(e.to_string()),
        }
    }
}

impl CliError {
    /// Whether this error has nothing to say (the output pipe was closed by its reader).
    pub fn is_silent(&self) -> bool {
        self.0.is_empty()
    }
}

/// How a run that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0: done.
    Ok,
    /// Exit 2: a latency threshold was exceeded (or an audit found a failure).
    ThresholdExceeded,
    /// The exit code of a command latscope ran (`record -- CMD` that failed), passed on.
    Child(u8),
}

impl Outcome {
    /// The process exit code.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Ok => ExitCode::SUCCESS,
            Outcome::ThresholdExceeded => ExitCode::from(2),
            Outcome::Child(code) => ExitCode::from(code),
        }
    }
}

/// What every command returns.
pub type CmdResult = Result<Outcome, CliError>;
