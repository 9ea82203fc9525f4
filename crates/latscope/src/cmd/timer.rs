//! `latscope timer`: not built yet (see the open issues).

use crate::error::{CliError, CmdResult};

/// Arguments of `latscope timer`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `latscope timer`.
pub fn run(_args: Args) -> CmdResult {
    Err(CliError::msg("'latscope timer' is not built yet"))
}
