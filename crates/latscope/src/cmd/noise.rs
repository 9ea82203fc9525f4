//! `latscope noise`: not built yet (see the open issues).

use crate::error::{CliError, CmdResult};

/// Arguments of `latscope noise`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `latscope noise`.
pub fn run(_args: Args) -> CmdResult {
    Err(CliError::msg("'latscope noise' is not built yet"))
}
