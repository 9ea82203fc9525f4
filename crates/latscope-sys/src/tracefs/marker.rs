//! [`Marker`]: writes to the instance's `trace_marker`, so a sample that crossed a threshold is marked in
//! the trace at the moment it was seen (one `write(2)`, no allocation).

use crate::SysError;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

/// The longest marker text written in one record (the kernel splits or truncates longer writes).
pub const MAX_MARK: usize = 256;

/// The open `trace_marker` of an instance, owned by the capture: dropping it closes the file (an open
/// file keeps the kernel from removing the instance), after which every [`Marker`] does nothing.
#[derive(Debug)]
pub struct MarkerFile {
    file: Arc<File>,
    path: PathBuf,
}

impl MarkerFile {
    /// Opens `trace_marker` in a tracefs directory (an instance).
    pub fn open(dir: &Path) -> Result<MarkerFile, SysError> {
        let path = dir.join("trace_marker");
        let file = std::fs::OpenOptions::new().write(true).open(&path).map_err(|e| SysError::file(&path, e))?;
        Ok(MarkerFile { file: Arc::new(file), path })
    }

    /// A handle for the threads that mark.
    pub fn handle(&self) -> Marker {
        Marker { file: Arc::downgrade(&self.file), path: self.path.clone() }
    }
}

/// A handle on an instance's `trace_marker`; cheap to clone and usable from any thread. It does not keep
/// the file open: once the capture ends, marks are silently dropped (`Ok(false)`).
#[derive(Clone, Debug)]
pub struct Marker {
    file: Weak<File>,
    path: PathBuf,
}

impl Marker {
    /// A marker that marks nothing (no capture is running).
    pub fn closed() -> Marker {
        Marker { file: Weak::new(), path: PathBuf::new() }
    }

    /// Writes `text` as one `ftrace/print` record (cut at [`MAX_MARK`] bytes). `Ok(false)` when the
    /// capture has ended.
    pub fn mark(&self, text: &str) -> Result<bool, SysError> {
        let b = text.as_bytes();
        self.write(&b[..b.len().min(MAX_MARK)])
    }

    /// Marks a measured sample: `latscope: cpu=C seq=N latency=NS ns`. Formats on the stack: no allocation.
    pub fn mark_sample(&self, cpu: u32, seq: u64, latency_ns: u64) -> Result<bool, SysError> {
        let mut buf = [0u8; 96];
        let mut cur = std::io::Cursor::new(&mut buf[..]);
        let _ = write!(cur, "latscope: cpu={cpu} seq={seq} latency={latency_ns} ns");
        let n = cur.position() as usize;
        self.write(&buf[..n])
    }

    fn write(&self, bytes: &[u8]) -> Result<bool, SysError> {
        let Some(file) = self.file.upgrade() else { return Ok(false) };
        let r = (&*file).write(bytes);
        r.map(|_| true).map_err(|e| SysError::file(&self.path, e))
    }
}

/// Parses a [`Marker::mark_sample`] text back: `(cpu, seq, latency_ns)`.
#[cfg(test)]
pub fn parse_sample_mark(text: &str) -> Option<(u32, u64, u64)> {
    let rest = text.trim().strip_prefix("latscope: ")?;
    let mut cpu = None;
    let mut seq = None;
    let mut lat = None;
    for part in rest.split_whitespace() {
        if let Some(v) = part.strip_prefix("cpu=") {
            cpu = v.parse().ok();
        } else if let Some(v) = part.strip_prefix("seq=") {
            seq = v.parse().ok();
        } else if let Some(v) = part.strip_prefix("latency=") {
            lat = v.parse().ok();
        }
    }
    Some((cpu?, seq?, lat?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_marks_round_trip_through_a_file() {
        let dir = std::env::temp_dir().join(format!("latscope-marker-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("trace_marker"), "").expect("create");
        let owner = MarkerFile::open(&dir).expect("open");
        let m = owner.handle();
        assert!(m.mark_sample(1, 42, 123_456).expect("mark"));
        let text = std::fs::read_to_string(dir.join("trace_marker")).expect("read");
        assert_eq!(text, "latscope: cpu=1 seq=42 latency=123456 ns");
        assert_eq!(parse_sample_mark(&text), Some((1, 42, 123_456)));
        assert_eq!(parse_sample_mark("hello"), None);
        drop(owner);
        assert!(!m.mark("after the end").expect("no-op"), "marks after the capture ended are dropped");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(MarkerFile::open(&dir).is_err());
    }
}
