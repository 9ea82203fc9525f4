//! `latscope decode`: not built yet (see the open issues).

use crate::error::{CliError, CmdResult};

/// Arguments of `latscope decode`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `latscope decode`.
pub fn run(_args: Args) -> CmdResult {
    Err(CliError::msg("'latscope decode' is not built yet"))
}
