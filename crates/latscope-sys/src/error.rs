//! The error type of everything that touches the kernel: each names the file or call and how to fix it.

use std::path::PathBuf;

/// An error from the kernel interface.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// Reading or writing a kernel file failed.
    #[error("{path}: {source}{hint}")]
    File {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
        /// A fix, starting with "; " (empty when there is nothing to suggest).
        hint: String,
    },
    /// A system call failed.
    #[error("{call}: {source}{hint}")]
    Call {
        /// What was called, with its arguments.
        call: String,
        /// The OS error.
        source: std::io::Error,
        /// A fix, starting with "; " (empty when there is nothing to suggest).
        hint: String,
    },
    /// A kernel file held something we could not parse.
    #[error("{path}: unexpected content: {what}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
    /// The request itself is invalid (offline CPU, bad priority…).
    #[error("{0}")]
    Invalid(String),
}

impl SysError {
    /// A file error, with a permission hint when the error is EACCES/EPERM.
    pub fn file(path: impl Into<PathBuf>, source: std::io::Error) -> SysError {
        let hint = if matches!(source.kind(), std::io::ErrorKind::PermissionDenied) {
            "; run as root (sudo) or grant the needed capability".to_string()
        } else {
            String::new()
        };
        SysError::File { path: path.into(), source, hint }
    }

    /// A system call error from `errno`, with a hint.
    pub fn call(call: impl Into<String>, hint: &str) -> SysError {
        let source = std::io::Error::last_os_error();
        let hint = if hint.is_empty() { String::new() } else { format!("; {hint}") };
        SysError::Call { call: call.into(), source, hint }
    }
}
