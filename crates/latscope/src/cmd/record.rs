//! `latscope record`: not built yet (see the open issues).

use crate::error::{CliError, CmdResult};

/// Arguments of `latscope record`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `latscope record`.
pub fn run(_args: Args) -> CmdResult {
    Err(CliError::msg("'latscope record' is not built yet"))
}
