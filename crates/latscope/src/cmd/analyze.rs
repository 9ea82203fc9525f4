//! `latscope analyze`: not built yet (see the open issues).

use crate::error::{CliError, CmdResult};

/// Arguments of `latscope analyze`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `latscope analyze`.
pub fn run(_args: Args) -> CmdResult {
    Err(CliError::msg("'latscope analyze' is not built yet"))
}
