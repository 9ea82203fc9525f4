//! ftrace text of every flavour ➜ [`Event`]s: `trace`, `trace_pipe`, per-CPU and snapshot output (with
//! or without the header, 4- to 8-column flags, `(tgid)`, irq-info off), latency format and the latency
//! tracers (header ➜ [`LatencyHeader`](crate::LatencyHeader)), function and function_graph tracers,
//! `trace-cmd report` text, and Android systrace/atrace (plain, JS-escaped, HTML, zlib).
//!
//! The input is read line by line in fixed-size chunks, so memory does not grow with the file.
//! Lines that cannot be decoded become [`Warning`]s (`FILE:LINE`); decoding goes on.

mod body;
mod decoder;
mod fields;
mod flags;
mod graph;
mod latency;
mod line;
mod systrace;

pub use decoder::TextDecoder;
pub use systrace::{is_html, zlib_offset};

use crate::{DecodeError, TraceInfo, Warning};
use latscope_model::Event;
use std::io::Read;

/// Read size for streamed input.
const CHUNK: usize = 1 << 20;

/// What a streamed text decode returns besides the events.
pub type TextResult = Result<(TraceInfo, Vec<Warning>), DecodeError>;

/// Decode ftrace text held in memory (any wrapper: plain, JS-escaped, systrace HTML, `atrace -z`).
pub fn decode_text_bytes(name: &str, bytes: &[u8], sink: &mut dyn FnMut(Event)) -> TextResult {
    if let Some(off) = systrace::zlib_offset(&bytes[..bytes.len().min(64)]) {
        let z = flate2::read::ZlibDecoder::new(&bytes[off..]);
        return decode_text_reader(name, z, true, sink);
    }
    if systrace::is_html(bytes) {
        return decode_html_bytes(name, bytes, sink);
    }
    decode_plain_bytes(name, bytes, sink)
}

/// Decode the ftrace text inside a systrace HTML page held in memory.
pub fn decode_html_bytes(name: &str, page: &[u8], sink: &mut dyn FnMut(Event)) -> TextResult {
    let text = systrace::extract_html(page);
    if text.is_empty() {
        return Err(DecodeError::NotATrace { path: name.into(), why: "an HTML page without systrace data".into() });
    }
    let mut dec = TextDecoder::new(name);
    dec.set_systrace();
    feed_lines(&mut dec, &text, false, sink);
    finish(name, dec, sink)
}

/// Decode ftrace text held in memory, plain or JS-escaped (systrace's `\n\` lines), not wrapped.
pub fn decode_plain_bytes(name: &str, bytes: &[u8], sink: &mut dyn FnMut(Event)) -> TextResult {
    check_text(name, bytes)?;
    let mut dec = TextDecoder::new(name);
    let js = systrace::is_js_escaped(&bytes[..bytes.len().min(4096)]);
    if js {
        dec.set_systrace();
    }
    feed_lines(&mut dec, bytes, js, sink);
    finish(name, dec, sink)
}

/// Decode ftrace text from a reader, in chunks. `systrace` marks atrace output.
pub fn decode_text_reader<R: Read>(name: &str, mut r: R, systrace: bool, sink: &mut dyn FnMut(Event)) -> TextResult {
    let mut dec = TextDecoder::new(name);
    if systrace {
        dec.set_systrace();
    }
    let mut buf = vec![0u8; CHUNK];
    let mut filled = 0;
    let mut first = true;
    let mut js = false;
    // `buf[..clean]` is known to hold no newline: only bytes read since are scanned.
    let mut clean = 0;
    // Inside a line longer than the buffer whose start was decoded: its rest is skipped up to its newline,
    // so it stays one line (and the line numbers after it stay right).
    let mut in_long_line = false;
    loop {
        let n = match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if filled > 0 || dec.events() > 0 => {
                // A truncated compressed stream: keep what was decoded.
                feed_lines(&mut dec, &buf[..filled], js, sink);
                filled = 0;
                dec_warn_io(&mut dec, name, &e);
                break;
            }
            Err(source) => return Err(DecodeError::Io { path: name.into(), source }),
        };
        filled += n;
        if first {
            if filled < 4096.min(buf.len()) {
                continue;
            }
            first = false;
            check_text(name, &buf[..filled])?;
            js = systrace::is_js_escaped(&buf[..filled.min(4096)]);
            if js {
                dec.set_systrace();
            }
        }
        if in_long_line {
            match memchr::memchr(b'\n', &buf[..filled]) {
                Some(i) => {
                    buf.copy_within(i + 1..filled, 0);
                    filled -= i + 1;
                    clean = 0;
                    in_long_line = false;
                }
                None => {
                    filled = 0;
                    clean = 0;
                    continue;
                }
            }
        }
        // Decode all complete lines; keep the partial last line for the next read. Only the new bytes can
        // hold a newline (earlier complete lines were consumed), so small reads of a long line stay linear.
        let end = match memchr::memrchr(b'\n', &buf[clean..filled]) {
            Some(i) => clean + i + 1,
            None if filled == buf.len() => {
                // One line longer than the buffer: its start is decoded as a line, the rest skipped.
                in_long_line = true;
                filled
            }
            None => {
                clean = filled;
                continue;
            }
        };
        feed_lines(&mut dec, &buf[..end], js, sink);
        if in_long_line {
            dec.warn_input(format!("a line longer than {} MiB: only its start was read", CHUNK >> 20));
        }
        buf.copy_within(end..filled, 0);
        filled -= end;
        clean = filled;
    }
    if first {
        check_text(name, &buf[..filled])?;
        js = systrace::is_js_escaped(&buf[..filled.min(4096)]);
        if js {
            dec.set_systrace();
        }
    }
    feed_lines(&mut dec, &buf[..filled], js, sink);
    finish(name, dec, sink)
}

fn dec_warn_io(dec: &mut TextDecoder, name: &str, e: &std::io::Error) {
    dec.warn_input(format!("input ends early ({e}); {name} is truncated or corrupt, the events before were kept"));
}

fn feed_lines(dec: &mut TextDecoder, bytes: &[u8], js: bool, sink: &mut dyn FnMut(Event)) {
    // The usual block, valid UTF-8 without no-break spaces, is checked once rather than line by line.
    let plain = if js || memchr::memchr(0xc2, bytes).is_some() { None } else { std::str::from_utf8(bytes).ok() };
    let mut line = |start: usize, end: usize| match plain {
        Some(text) => dec.plain_line(&text[start..end], sink),
        None => feed_one(dec, &bytes[start..end], js, sink),
    };
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', bytes) {
        line(start, nl);
        start = nl + 1;
    }
    if start < bytes.len() {
        line(start, bytes.len());
    }
}

#[inline]
fn feed_one(dec: &mut TextDecoder, line: &[u8], js: bool, sink: &mut dyn FnMut(Event)) {
    if js {
        dec.line(&systrace::unescape_js_line(line), sink);
    } else {
        dec.line(line, sink);
    }
}

fn finish(name: &str, dec: TextDecoder, sink: &mut dyn FnMut(Event)) -> TextResult {
    if !dec.recognised() {
        return Err(DecodeError::NotATrace {
            path: name.into(),
            why: "no line looks like ftrace output (`TASK-PID [CPU] TIMESTAMP: event`, a `# tracer:` header, \
                  function_graph columns or a latency header)"
                .into(),
        });
    }
    Ok(dec.finish(sink))
}

/// Reject binary input early (NUL bytes or mostly non-text in the first block).
fn check_text(name: &str, head: &[u8]) -> Result<(), DecodeError> {
    let h = &head[..head.len().min(4096)];
    let bad = h.iter().filter(|&&b| b == 0 || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c))).count();
    if h.contains(&0) || bad * 20 > h.len() {
        return Err(DecodeError::NotATrace {
            path: name.into(),
            why: "binary data that is not a trace-cmd .dat (no `\\x17\\x08\\x44tracing` magic)".into(),
        });
    }
    Ok(())
}
