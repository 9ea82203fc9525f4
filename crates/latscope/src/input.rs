//! A trace given on the command line: a file, or `-` for standard input (read whole first: a `.dat` is
//! read by seeking, and a pipe cannot seek).

use crate::error::CliError;
use latscope_decode::{Bounded, DecodeError, Streamed};
use latscope_model::Event;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

/// Where a trace comes from.
pub enum Input {
    /// A file.
    File(PathBuf),
    /// Standard input, read whole.
    Stdin(Vec<u8>),
}

/// The name standard input goes by in messages.
const STDIN: &str = "standard input";

impl Input {
    /// The input `path` names: standard input for `-` (refused when it is a terminal: nothing would come).
    pub fn open(path: &Path) -> Result<Input, CliError> {
        if path != Path::new("-") {
            return Ok(Input::File(path.to_path_buf()));
        }
        let mut stdin = std::io::stdin().lock();
        if stdin.is_terminal() {
            return Err(CliError::msg(
                "'-' reads the trace from standard input, which is a terminal: pipe a trace in (`cat trace.txt | \
                 latscope analyze -`) or give its file",
            ));
        }
        let mut bytes = Vec::new();
        stdin.read_to_end(&mut bytes).map_err(|e| CliError(format!("cannot read {STDIN}: {e}")))?;
        Ok(Input::Stdin(bytes))
    }

    /// The first `n` bytes (fewer when the input is shorter).
    pub fn head(&self, n: usize) -> std::io::Result<Vec<u8>> {
        match self {
            Input::File(p) => {
                let mut head = Vec::new();
                std::fs::File::open(p)?.take(n as u64).read_to_end(&mut head)?;
                Ok(head)
            }
            Input::Stdin(bytes) => Ok(bytes[..n.min(bytes.len())].to_vec()),
        }
    }

    /// The whole input.
    pub fn bytes(&self) -> std::io::Result<std::borrow::Cow<'_, [u8]>> {
        match self {
            Input::File(p) => std::fs::read(p).map(std::borrow::Cow::Owned),
            Input::Stdin(bytes) => Ok(std::borrow::Cow::Borrowed(bytes)),
        }
    }

    /// The name to use in messages and results.
    pub fn name(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Stdin(_) => STDIN.to_string(),
        }
    }

    /// Decodes the whole input when it has at most `max_events` events, else only counts them (see
    /// [`latscope_decode::decode_file_bounded`]).
    pub fn decode_bounded(&self, max_events: usize) -> Result<Bounded, DecodeError> {
        match self {
            Input::File(p) => latscope_decode::decode_file_bounded(p, max_events),
            Input::Stdin(bytes) => latscope_decode::decode_bytes_bounded(STDIN, bytes, max_events),
        }
    }

    /// Streams the input's events to `sink` (see [`latscope_decode::stream_file`]).
    pub fn stream(&self, sink: &mut dyn FnMut(Event)) -> Result<Streamed, DecodeError> {
        match self {
            Input::File(p) => latscope_decode::stream_file(p, sink),
            Input::Stdin(bytes) => latscope_decode::stream_bytes(STDIN, bytes, sink),
        }
    }

    /// Lends the input's events to `visit` (see [`latscope_decode::visit_file`]).
    pub fn visit(&self, visit: &mut dyn FnMut(&Event)) -> Result<Streamed, DecodeError> {
        match self {
            Input::File(p) => latscope_decode::visit_file(p, visit),
            Input::Stdin(bytes) => latscope_decode::stream_bytes(STDIN, bytes, &mut |e| visit(&e)),
        }
    }
}
