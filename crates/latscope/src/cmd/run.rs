//! `latscope run`: not built yet (see the open issues).

use crate::error::{CliError, CmdResult};

/// Arguments of `latscope run`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `latscope run`.
pub fn run(_args: Args) -> CmdResult {
    Err(CliError::msg("'latscope run' is not built yet"))
}
