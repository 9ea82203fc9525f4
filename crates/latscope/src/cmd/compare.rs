//! `latscope compare`: not built yet (see the open issues).

use crate::error::{CliError, CmdResult};

/// Arguments of `latscope compare`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `latscope compare`.
pub fn run(_args: Args) -> CmdResult {
    Err(CliError::msg("'latscope compare' is not built yet"))
}
