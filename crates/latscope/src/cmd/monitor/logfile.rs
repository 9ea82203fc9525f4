//! Where `latscope monitor` logs: one line per event on stderr (journald), or appended to `--log FILE`,
//! which SIGHUP reopens (so that logrotate can move it away).

use crate::error::CliError;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The log file, when one is given.
static SINK: Mutex<Option<(PathBuf, File)>> = Mutex::new(None);

fn open_append(path: &Path) -> Result<File, CliError> {
    std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| {
        CliError(format!("--log {}: cannot open it for appending ({e}); pick a writable file", path.display()))
    })
}

/// Logs to `path` from now on.
pub fn open(path: &Path) -> Result<(), CliError> {
    let f = open_append(path)?;
    *SINK.lock().unwrap_or_else(PoisonError::into_inner) = Some((path.to_path_buf(), f));
    Ok(())
}

/// Reopens the log file by its name (a new file when it was moved away); its path, or `None` when logs go
/// to stderr. On failure the old file is kept.
pub fn reopen() -> Result<Option<PathBuf>, CliError> {
    let mut sink = SINK.lock().unwrap_or_else(PoisonError::into_inner);
    let Some((path, file)) = sink.as_mut() else { return Ok(None) };
    *file = open_append(path)?;
    Ok(Some(path.clone()))
}

/// Writes one line (to the log file, or to stderr).
pub fn line(text: &str) {
    let mut sink = SINK.lock().unwrap_or_else(PoisonError::into_inner);
    // A full disk must not stop the monitor: the line goes to stderr instead.
    let written = sink.as_mut().is_some_and(|(_, f)| writeln!(f, "latscope: {text}").is_ok());
    if !written {
        eprintln!("latscope: {text}");
    }
}
