//! Which reader an input needs, decided from its first bytes (never from the file name).

use crate::dat::is_dat;

/// The kind of input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// trace-cmd `.dat` (`\x17\x08\x44tracing` magic).
    Dat,
    /// `atrace -z` output: `TRACE:` then a zlib stream starting at this offset.
    AtraceZlib(usize),
    /// An HTML page (systrace).
    Html,
    /// Anything else is tried as ftrace text (binary junk is rejected by the text reader).
    Text,
}

/// How many leading bytes [`detect`] wants to see.
pub const HEAD_LEN: usize = 4096;

/// Classify an input by its first bytes (up to [`HEAD_LEN`]).
pub fn detect(head: &[u8]) -> InputKind {
    if is_dat(head) {
        InputKind::Dat
    } else if let Some(off) = crate::text::zlib_offset(head) {
        InputKind::AtraceZlib(off)
    } else if crate::text::is_html(head) {
        InputKind::Html
    } else {
        InputKind::Text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_content() {
        assert_eq!(detect(b"\x17\x08\x44tracing6\0"), InputKind::Dat);
        assert_eq!(detect(b"TRACE:\n\x78\x9c\x01\x02"), InputKind::AtraceZlib(7));
        assert_eq!(detect(b"<!DOCTYPE html>\n<html>"), InputKind::Html);
        assert_eq!(detect(b"# tracer: nop\n"), InputKind::Text);
    }
}
