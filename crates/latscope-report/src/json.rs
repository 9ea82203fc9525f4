//! JSON output of any result: pretty-printed, one document, newline-terminated. Results carry their own
//! `"schema": "latscope/1"` and `"kind"` fields (see `latscope_model::wire`), written first.

use serde::Serialize;
use std::io::{self, Write};

/// Writes `result` as pretty JSON followed by a newline, buffered (serde writes token by token, which is
/// one system call each on an unbuffered file or stdout).
pub fn write_json<W: Write, T: Serialize>(out: W, result: &T) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer_pretty(&mut out, result).map_err(io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{RunMetadata, TimerOptions, TimerResult};

    #[test]
    fn writes_schema_first_and_parses_back() {
        let r = TimerResult::new(RunMetadata::default(), TimerOptions::default());
        let mut buf = Vec::new();
        write_json(&mut buf, &r).expect("write");
        let text = String::from_utf8(buf).expect("utf8");
        assert!(text.starts_with("{\n  \"schema\": \"latscope/1\",\n  \"kind\": \"timer\""), "{text}");
        assert!(text.ends_with("}\n"));
        let back: TimerResult = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, r);
    }
}
