//! Private tracefs instances (`instances/latscope-<pid>`): created by a guard that removes them, and the
//! clean-up of instances left behind by latscope runs that were killed.

use crate::SysError;
use std::path::{Path, PathBuf};

/// The prefix of every instance latscope creates.
pub const PREFIX: &str = "latscope-";

/// A private ftrace instance, removed (with everything set inside it) when dropped.
#[derive(Debug)]
pub struct Instance {
    name: String,
    path: PathBuf,
    removed: bool,
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
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Instance { name, path, removed: false }),
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
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.removed = true;
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
}
