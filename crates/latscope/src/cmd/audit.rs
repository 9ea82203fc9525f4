//! `latscope audit`: not built yet (see the open issues).

use crate::error::{CliError, CmdResult};

/// Arguments of `latscope audit`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `latscope audit`.
pub fn run(_args: Args) -> CmdResult {
    Err(CliError::msg("'latscope audit' is not built yet"))
}
