//! `latscope report`: not built yet (see the open issues).

use crate::error::{CliError, CmdResult};

/// Arguments of `latscope report`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `latscope report`.
pub fn run(_args: Args) -> CmdResult {
    Err(CliError::msg("'latscope report' is not built yet"))
}
