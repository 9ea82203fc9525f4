//! Where output goes: the `--json` destination (`-` is stdout), and whether a stream is a terminal.

use crate::error::CliError;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The destination of `--json`.
#[derive(Debug)]
pub enum JsonSink {
    /// `--json -`: standard output (the text summary then goes to standard error).
    Stdout,
    /// A file, created (or truncated) before the run so a bad path fails early.
    File(PathBuf, File),
}

impl JsonSink {
    /// Opens `path` (`-` for stdout). The error names the file and says how to fix it.
    pub fn open(path: &Path) -> Result<JsonSink, CliError> {
        if path.as_os_str() == "-" {
            return Ok(JsonSink::Stdout);
        }
        File::create(path).map(|f| JsonSink::File(path.to_path_buf(), f)).map_err(|e| {
            CliError(format!(
                "cannot write the JSON output {}: {e}; pick a writable path or '-' for stdout",
                path.display()
            ))
        })
    }

    /// Whether the JSON goes to stdout.
    pub fn is_stdout(&self) -> bool {
        matches!(self, JsonSink::Stdout)
    }

    /// Writes through `write` into the sink; errors name the file.
    pub fn write_with(self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), CliError> {
        match self {
            JsonSink::Stdout => {
                let mut out = io::stdout().lock();
                write(&mut out).map_err(|e| CliError(format!("writing JSON to stdout: {e}")))
            }
            JsonSink::File(path, mut f) => {
                write(&mut f).map_err(|e| CliError(format!("writing {}: {e}", path.display())))
            }
        }
    }
}

/// Writes a rendered text report: to stdout, or to stderr when the JSON takes stdout (`--json -`).
pub fn write_text(render: impl FnOnce(&mut dyn Write) -> io::Result<()>, json_on_stdout: bool) -> io::Result<()> {
    let mut text = Vec::new();
    render(&mut text)?;
    if json_on_stdout {
        io::stderr().write_all(&text)
    } else {
        let mut out = io::stdout().lock();
        out.write_all(&text)?;
        out.flush()
    }
}

/// Whether standard output is a terminal.
pub fn stdout_is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(libc::STDOUT_FILENO) == 1 }
}

/// Whether standard error is a terminal.
pub fn stderr_is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(libc::STDERR_FILENO) == 1 }
}
