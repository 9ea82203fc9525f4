//! [`Knobs`]: every tracefs file latscope writes is saved first and written back, newest first, on drop.

use crate::SysError;
use std::path::{Path, PathBuf};

/// A save-and-restore guard over the files of one tracefs directory (an instance, normally).
///
/// The first write to a file saves what the kernel showed before; [`restore`](Knobs::restore) (also run
/// on drop) writes the saved values back in reverse order, so dependent settings unwind correctly.
#[derive(Debug)]
pub struct Knobs {
    dir: PathBuf,
    /// Each file's path, the value to write back, and whether it is written NUL-terminated.
    saved: Vec<(PathBuf, Option<String>, bool)>,
}

impl Knobs {
    /// A guard over files under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Knobs {
        Knobs { dir: dir.into(), saved: Vec::new() }
    }

    /// Writes `value` to `rel` (relative to the directory), saving the old value on the first write.
    pub fn set(&mut self, rel: &str, value: &str) -> Result<(), SysError> {
        self.save(rel, false)?;
        write_knob(&self.dir.join(rel), value)
    }

    /// [`set`](Knobs::set) for a file whose kernel parser reads past the bytes written unless they end in a
    /// NUL: 6.1's `osnoise/cpus` copies the write into a stack buffer it does not terminate, so after
    /// `1\n` it parses whatever the stack held (EINVAL, or a wrong CPU list). The value (and its restore)
    /// is written as `VALUE\0`.
    pub fn set_nul_terminated(&mut self, rel: &str, value: &str) -> Result<(), SysError> {
        self.save(rel, true)?;
        write_bytes(&self.dir.join(rel), value, format!("{value}\0").as_bytes())
    }

    /// Writes `value` to `rel` and writes `undo` back on restore, for a file that shows more than one write
    /// sets: `osnoise/options` lists every option and takes one (`NAME` or `NO_NAME`) per write. Each call
    /// is undone, newest first; nothing is saved when the write fails.
    pub fn set_undo(&mut self, rel: &str, value: &str, undo: &str) -> Result<(), SysError> {
        let path = self.dir.join(rel);
        write_knob(&path, value)?;
        self.saved.push((path, Some(undo.to_string()), false));
        Ok(())
    }

    fn save(&mut self, rel: &str, nul: bool) -> Result<(), SysError> {
        let path = self.dir.join(rel);
        if !self.saved.iter().any(|(p, _, _)| *p == path) {
            // One large read: some files refuse a read buffer no longer than their text (6.1's osnoise/cpus
            // answers EINVAL), which read_to_string's growing buffer hits for `0-1\n`.
            let old = super::capture::read_text(&path)?;
            self.saved.push((path, restore_value(rel, &old), nul));
        }
        Ok(())
    }

    /// The files written so far, in order.
    #[cfg(test)]
    pub fn touched(&self) -> impl Iterator<Item = &Path> {
        self.saved.iter().map(|(p, _, _)| p.as_path())
    }

    /// Writes every saved value back, newest first; returns the failures (the others are still restored).
    pub fn restore(&mut self) -> Vec<SysError> {
        let mut errors = Vec::new();
        while let Some((path, old, nul)) = self.saved.pop() {
            let Some(old) = old else { continue };
            // The file is gone with its instance or event: nothing to restore.
            if !path.exists() {
                continue;
            }
            let written =
                if nul { write_bytes(&path, &old, format!("{old}\0").as_bytes()) } else { write_knob(&path, &old) };
            if let Err(e) = written {
                errors.push(e);
            }
        }
        errors
    }
}

impl Drop for Knobs {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// Writes one tracefs file in a single `write(2)`, as `echo VALUE > FILE` does.
pub fn write_knob(path: &Path, value: &str) -> Result<(), SysError> {
    let mut line = value.to_string();
    if !line.ends_with('\n') {
        line.push('\n');
    }
    write_bytes(path, value, line.as_bytes())
}

/// Writes `bytes` (which say `value`) to a tracefs file in a single `write(2)`.
fn write_bytes(path: &Path, value: &str, bytes: &[u8]) -> Result<(), SysError> {
    use std::io::Write;
    let mut f =
        std::fs::OpenOptions::new().write(true).truncate(true).open(path).map_err(|e| SysError::file(path, e))?;
    f.write_all(bytes).map_err(|e| {
        let hint = if e.raw_os_error() == Some(libc::EINVAL) {
            format!("; the kernel rejected '{value}' (its error_log in the tracefs root says why)")
        } else if e.kind() == std::io::ErrorKind::PermissionDenied {
            "; run as root (sudo)".to_string()
        } else {
            String::new()
        };
        SysError::File { path: path.to_path_buf(), source: e, hint }
    })
}

/// The value to write back to `rel` so it shows `shown` again, or `None` when it cannot be written back.
pub fn restore_value(rel: &str, shown: &str) -> Option<String> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let t = shown.trim();
    match name {
        // "[local] global counter …": the selected clock is bracketed; so is hwlat_detector/mode's
        // "none [round-robin] per-cpu".
        "trace_clock" | "mode" => {
            let start = t.find('[')?;
            let end = t[start..].find(']')? + start;
            Some(t[start + 1..end].to_string())
        }
        // "7 (expanded: 1408)": the size the buffer takes once tracing starts.
        "buffer_size_kb" => {
            if let Some(i) = t.find("expanded:") {
                let n: String = t[i + 9..].trim().chars().take_while(char::is_ascii_digit).collect();
                (!n.is_empty()).then_some(n)
            } else {
                let n: String = t.chars().take_while(char::is_ascii_digit).collect();
                (!n.is_empty()).then_some(n)
            }
        }
        // "none" means no filter; writing "0" clears one.
        "filter" => Some(if t == "none" { "0".to_string() } else { t.to_string() }),
        // A system's "enable" shows "X" when its events are mixed: that state has no single value.
        "enable" => (t == "0" || t == "1").then(|| t.to_string()),
        _ => Some(t.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_how_to_write_back_what_the_kernel_shows() {
        assert_eq!(restore_value("trace_clock", "[local] global counter mono\n").as_deref(), Some("local"));
        assert_eq!(restore_value("trace_clock", "local global [mono]\n").as_deref(), Some("mono"));
        assert_eq!(
            restore_value("hwlat_detector/mode", "none [round-robin] per-cpu\n").as_deref(),
            Some("round-robin")
        );
        assert_eq!(restore_value("buffer_size_kb", "1410\n").as_deref(), Some("1410"));
        assert_eq!(restore_value("buffer_size_kb", "7 (expanded: 1408)\n").as_deref(), Some("1408"));
        assert_eq!(restore_value("events/sched/sched_switch/filter", "none\n").as_deref(), Some("0"));
        assert_eq!(
            restore_value("events/sched/sched_switch/filter", "prev_pid == 1\n").as_deref(),
            Some("prev_pid == 1")
        );
        assert_eq!(restore_value("events/sched/enable", "X\n"), None);
        assert_eq!(restore_value("events/sched/sched_switch/enable", "1\n").as_deref(), Some("1"));
        assert_eq!(restore_value("tracing_cpumask", "3\n").as_deref(), Some("3"));
        assert_eq!(restore_value("options/overwrite", "1\n").as_deref(), Some("1"));
    }

    #[test]
    fn restores_files_in_reverse_order_on_drop() {
        let dir = std::env::temp_dir().join(format!("latscope-knobs-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("options")).expect("mkdir");
        std::fs::write(dir.join("trace_clock"), "[local] mono\n").expect("write");
        std::fs::write(dir.join("options/overwrite"), "1\n").expect("write");
        std::fs::write(dir.join("options/cpus"), "0-1\n").expect("write");
        std::fs::write(dir.join("options/list"), "A NO_ON\n").expect("write");
        {
            let mut k = Knobs::new(&dir);
            k.set("trace_clock", "mono").expect("set");
            k.set("trace_clock", "global").expect("set twice");
            k.set("options/overwrite", "0").expect("set");
            assert_eq!(std::fs::read_to_string(dir.join("trace_clock")).expect("read"), "global\n");
            assert_eq!(k.touched().count(), 2);
            assert!(k.set("no/such/file", "1").is_err());
            k.set_nul_terminated("options/cpus", "1").expect("set");
            k.set_undo("options/list", "ON", "NO_ON").expect("set");
            assert_eq!(std::fs::read_to_string(dir.join("options/list")).expect("read"), "ON\n");
            assert_eq!(std::fs::read(dir.join("options/cpus")).expect("read"), b"1\0");
        }
        // A plain file echoes what was written: the saved selection is written back.
        assert_eq!(std::fs::read_to_string(dir.join("trace_clock")).expect("read"), "local\n");
        assert_eq!(std::fs::read_to_string(dir.join("options/overwrite")).expect("read"), "1\n");
        // A NUL-terminated file gets its value back NUL-terminated.
        assert_eq!(std::fs::read(dir.join("options/cpus")).expect("read"), b"0-1\0");
        // A write with its own undo gets the undo back.
        assert_eq!(std::fs::read_to_string(dir.join("options/list")).expect("read"), "NO_ON\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
