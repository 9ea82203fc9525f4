//! Decode errors (the input is not a trace at all); warnings (a line or record was skipped) are
//! [`latscope_model::Warning`]s.

/// The input cannot be decoded at all (or a `.dat` cannot be written). Partial damage is a [`Warning`](latscope_model::Warning), not
/// an error.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Reading the input failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The input is not a trace in any format we know.
    #[error("{path}: not a trace latscope can read ({why}); expected ftrace text, trace-cmd .dat, or systrace/atrace")]
    NotATrace {
        /// The file.
        path: String,
        /// What was seen instead.
        why: String,
    },
    /// Writing a trace (a `.dat`) failed.
    #[error("{path}: {source}; pick a writable path on a file system with free space")]
    Write {
        /// The file being written.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A tracefs format text (`header_page`, an event's `format` file, from tracefs or a `.dat`) does not
    /// parse.
    #[error("{format}: {what}")]
    Format {
        /// Which text: `header_page`, `SYSTEM event format`.
        format: String,
        /// What is wrong, with the line when it is one line.
        what: String,
    },
    /// A result file (cyclictest or oslat output, a saved latscope JSON result) cannot be imported.
    #[error("{file}{}: {message}", .line.map(|l| format!(":{l}")).unwrap_or_default())]
    Import {
        /// The file as named by the user.
        file: String,
        /// 1-based line, when the problem is on one line.
        line: Option<usize>,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// The input is a known format but its structure is broken beyond recovery.
    #[error("{path}: {what} at {location}")]
    Corrupt {
        /// The file.
        path: String,
        /// `line N` or `offset 0x…`.
        location: String,
        /// What is wrong.
        what: String,
    },
}
