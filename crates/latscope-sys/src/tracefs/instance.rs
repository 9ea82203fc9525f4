//! Private tracefs instances (`instances/latscope-<pid>`): created by a guard that removes them, and the
//! clean-up of instances left behind by latscope runs that were killed.
//!
//! Kernels before 6.7 keep one kernel-wide "ring buffer expanded" flag: the top-level buffer is allocated
//! at its minimum on boot (`buffer_size_kb` shows `7 (expanded: 1408)`) and grows to the expanded size on
//! first use, but resizing *any* instance sets the flag, after which the top-level buffer never grows and
//! stays at 7 KB per CPU (seen on Debian's 6.1 kernels). The flag cannot be cleared from user space, so
//! when an instance leaves the top-level buffer in that state, removing it gives the top-level buffer the
//! size it would have taken on first use — what enabling an event in an instance does on these kernels
//! anyway. On later kernels the flag is per instance and the top-level buffer is left alone.

use super::knobs::Knobs;
use crate::SysError;
use std::path::{Path, PathBuf};

/// The last two steps of a run's teardown: every saved setting written back, then the instance removed.
/// Returns what failed, in words.
pub fn restore_and_remove(knobs: Option<Knobs>, instance: Option<Instance>) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(mut k) = knobs {
        errors.extend(k.restore().into_iter().map(|e| format!("restoring a trace setting failed: {e}")));
    }
    if let Some(mut i) = instance {
        if let Err(e) = i.remove() {
            errors.push(format!("removing the trace instance failed: {e}"));
        }
    }
    errors
}

/// The prefix of every instance latscope creates.
pub const PREFIX: &str = "latscope-";

/// A private ftrace instance, removed (with everything set inside it) when dropped.
#[derive(Debug)]
pub struct Instance {
    name: String,
    path: PathBuf,
    removed: bool,
    /// The tracefs root and the top-level buffer's expanded size, when it was not expanded yet at creation.
    top_unexpanded: Option<(PathBuf, String)>,
}

impl Instance {
    /// Creates `instances/latscope-<pid>` under the tracefs root (`latscope-<pid>-<n>` when this process
    /// already has one).
    pub fn create(tracefs_root: &Path) -> Result<Instance, SysError> {
        let pid = std::process::id();
        let dir = tracefs_root.join("instances");
        for n in 1..100u32 {
            let name = if n == 1 { format!("{PREFIX}{pid}") } else { format!("{PREFIX}{pid}-{n}") };
            let path = dir.join(&name);
            let top_unexpanded = top_buffer_state(tracefs_root)
                .and_then(|t| expanded_size(&t))
                .map(|size| (tracefs_root.to_path_buf(), size));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Instance { name, path, removed: false, top_unexpanded }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
                        "; creating a tracefs instance needs root (sudo)".to_string()
                    } else {
                        "; the kernel may lack instance support (CONFIG_TRACING, kernel 3.10 or later)".to_string()
                    };
                    return Err(SysError::File { path, source: e, hint });
                }
            }
        }
        Err(SysError::Invalid(format!("{}: this process already has 99 latscope instances", dir.display())))
    }

    /// The instance's name (`latscope-1234`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instance's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the instance now. Every file of it must be closed (the kernel answers EBUSY otherwise);
    /// a short busy spell is retried.
    pub fn remove(&mut self) -> Result<(), SysError> {
        if self.removed {
            return Ok(());
        }
        let mut last = None;
        for _ in 0..50 {
            match std::fs::remove_dir(&self.path) {
                Ok(()) => {
                    self.removed = true;
                    self.restore_top_buffer();
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.removed = true;
                    self.restore_top_buffer();
                    return Ok(());
                }
                Err(e) => {
                    last = Some(e);
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        }
        let source = last.unwrap_or_else(|| std::io::Error::from_raw_os_error(libc::EBUSY));
        Err(SysError::File {
            path: self.path.clone(),
            source,
            hint: "; a file of the instance is still open; the next latscope run removes it".to_string(),
        })
    }
}

impl Instance {
    /// When the top-level buffer was waiting to expand and no longer is, yet has not grown (the kernel-wide
    /// flag was set through this instance), gives it its expanded size: see the module comment.
    fn restore_top_buffer(&mut self) {
        let Some((root, size)) = self.top_unexpanded.take() else { return };
        let Some(now) = top_buffer_state(&root) else { return };
        if stuck_unexpanded(&now, &size) {
            let _ = std::fs::write(root.join("buffer_size_kb"), &size);
        }
    }
}

/// The top-level `buffer_size_kb` text.
fn top_buffer_state(root: &Path) -> Option<String> {
    std::fs::read_to_string(root.join("buffer_size_kb")).ok()
}

/// `1408` of `7 (expanded: 1408)`: the size a buffer not yet expanded takes on first use.
fn expanded_size(shown: &str) -> Option<String> {
    let after = shown.split_once("expanded:")?.1;
    let n: String = after.trim().chars().take_while(char::is_ascii_digit).collect();
    (!n.is_empty()).then_some(n)
}

/// Whether the top-level buffer shows a plain size below `expanded` (the flag set, the buffer not grown).
fn stuck_unexpanded(shown: &str, expanded: &str) -> bool {
    let t = shown.trim();
    if t.contains("expanded") {
        return false;
    }
    match (t.parse::<u64>(), expanded.parse::<u64>()) {
        (Ok(now), Ok(full)) => now < full,
        _ => false,
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// The pid in an instance name latscope made (`latscope-1234` or `latscope-1234-2`), else `None`.
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, suffix) = match rest.split_once('-') {
        Some((p, s)) => (p, Some(s)),
        None => (rest, None),
    };
    if let Some(s) = suffix {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
    }
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// An instance of a latscope run that no longer exists.
#[derive(Debug)]
pub struct StaleInstance {
    /// The instance name.
    pub name: String,
    /// Its owner's pid (dead).
    pub pid: u32,
    /// Whether removing it worked, with the error otherwise.
    pub removed: Result<(), String>,
}

/// Removes the `latscope-<pid>` instances whose process is gone (a run killed with SIGKILL leaves its
/// instance; removing the instance undoes every knob set inside it). Returns what was found.
pub fn remove_stale(tracefs_root: &Path) -> Vec<StaleInstance> {
    let dir = tracefs_root.join("instances");
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner_pid(&name) else { continue };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let removed = std::fs::remove_dir(entry.path()).map_err(|e| format!("{}: {e}", entry.path().display()));
        out.push(StaleInstance { name, pid, removed });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_only_latscope_instance_names() {
        assert_eq!(owner_pid("latscope-1234"), Some(1234));
        assert_eq!(owner_pid("latscope-1234-2"), Some(1234));
        assert_eq!(owner_pid("latscope-"), None);
        assert_eq!(owner_pid("latscope-12a"), None);
        assert_eq!(owner_pid("latscope-12-"), None);
        assert_eq!(owner_pid("latscope_b3fix"), None);
        assert_eq!(owner_pid("rtla-1234"), None);
    }

    #[test]
    fn removes_only_dead_owners_instances() {
        // A fake tracefs root: plain directories behave like instances for mkdir/rmdir.
        let root = std::env::temp_dir().join(format!("latscope-instance-test-{}", std::process::id()));
        let inst = root.join("instances");
        std::fs::create_dir_all(&inst).expect("mkdir");
        let me = std::process::id();
        // pid_max is at most 2^22, so this pid cannot exist.
        let dead = 4_194_999u32;
        for n in [format!("latscope-{me}"), format!("latscope-{dead}"), format!("latscope-{dead}-3"), "other".into()] {
            std::fs::create_dir_all(inst.join(n)).expect("mkdir");
        }
        let stale = remove_stale(&root);
        let names: Vec<&str> = stale.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec![format!("latscope-{dead}"), format!("latscope-{dead}-3")]);
        assert!(stale.iter().all(|s| s.removed.is_ok() && s.pid == dead));
        assert!(inst.join(format!("latscope-{me}")).exists());
        assert!(inst.join("other").exists());
        // Our own guard picks the next free name and removes its directory on drop.
        {
            let g = Instance::create(&root).expect("create");
            assert_eq!(g.name(), format!("latscope-{me}-2"));
            assert!(g.path().is_dir());
        }
        assert!(!inst.join(format!("latscope-{me}-2")).exists());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_top_level_buffer_left_unexpanded_gets_its_first_use_size() {
        // A fake tracefs root whose buffer_size_kb a "kernel" (this test) rewrites as 6.1 does.
        let root = std::env::temp_dir().join(format!("latscope-expand-test-{}", std::process::id()));
        std::fs::create_dir_all(root.join("instances")).expect("mkdir");
        let top = root.join("buffer_size_kb");
        std::fs::write(&top, "7 (expanded: 1408)\n").expect("write");
        {
            let _g = Instance::create(&root).expect("create");
            // Resizing the instance set the kernel-wide flag: the top level now shows a plain 7.
            std::fs::write(&top, "7\n").expect("write");
        }
        assert_eq!(std::fs::read_to_string(&top).expect("read").trim(), "1408");
        // Already expanded at creation (or on kernels with a per-instance flag): left alone.
        std::fs::write(&top, "7\n").expect("write");
        drop(Instance::create(&root).expect("create"));
        assert_eq!(std::fs::read_to_string(&top).expect("read").trim(), "7");
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(expanded_size("7 (expanded: 1408)\n").as_deref(), Some("1408"));
        assert!(!stuck_unexpanded("7 (expanded: 1408)", "1408") && !stuck_unexpanded("1408", "1408"));
        assert!(stuck_unexpanded("7\n", "1408"));
    }
}
