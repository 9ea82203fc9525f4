//! Finding tracefs (`/proc/mounts`), and mounting it, when root and it is not mounted, behind a guard.

use crate::SysError;
use latscope_model::MissingFeature;
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Where tracefs is mounted by convention.
pub const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// The tracefs mount points listed in a `/proc/mounts` text, best first: `tracefs` mounts, then
/// `debugfs` mounts (whose `tracing/` directory is tracefs, automounted on old kernels).
pub fn tracefs_mounts(proc_mounts: &str) -> Vec<PathBuf> {
    let mut tracefs = Vec::new();
    let mut debugfs = Vec::new();
    for line in proc_mounts.lines() {
        let mut f = line.split_whitespace();
        let (Some(_dev), Some(dir), Some(fstype)) = (f.next(), f.next(), f.next()) else { continue };
        let dir = unescape_mount_path(dir);
        match fstype {
            "tracefs" => tracefs.push(PathBuf::from(dir)),
            "debugfs" => debugfs.push(Path::new(&dir).join("tracing")),
            _ => {}
        }
    }
    // Prefer the conventional mount point when tracefs is mounted in several places.
    tracefs.sort_by_key(|p| p != Path::new(DEFAULT_MOUNT));
    tracefs.extend(debugfs);
    tracefs
}

/// `/proc/mounts` escapes space, tab, newline and backslash as octal (`\040`).
fn unescape_mount_path(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A usable tracefs root: it holds `instances/` and `events/`.
fn usable(dir: &Path) -> bool {
    dir.join("instances").is_dir() && dir.join("events").is_dir()
}

/// The tracefs root, and the guard that unmounts it again when this run mounted it.
#[derive(Debug)]
pub struct TraceFs {
    root: PathBuf,
    mounted_by_us: bool,
}

impl TraceFs {
    /// Find tracefs; when it is not mounted and we may mount, mount it at [`DEFAULT_MOUNT`] (and
    /// unmount it on drop). When tracefs cannot be used, the error is a [`MissingFeature`] that says why.
    pub fn open() -> Result<TraceFs, MissingFeature> {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let candidates = tracefs_mounts(&mounts);
        if let Some(root) = candidates.iter().find(|d| usable(d)) {
            return Ok(TraceFs { root: root.clone(), mounted_by_us: false });
        }
        if let Some(root) = candidates.first() {
            // Mounted but not usable: almost always a permission problem (tracefs is 0700 root).
            return Err(permission_missing(root));
        }
        mount_default()
    }

    /// A tracefs root given explicitly (tests, unusual mounts). Nothing is mounted or unmounted.
    pub fn at(root: impl Into<PathBuf>) -> Result<TraceFs, MissingFeature> {
        let root = root.into();
        if usable(&root) {
            Ok(TraceFs { root, mounted_by_us: false })
        } else {
            Err(permission_missing(&root))
        }
    }

    /// The root directory (`/sys/kernel/tracing`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this run mounted tracefs (it will unmount it on drop).
    pub fn mounted_by_us(&self) -> bool {
        self.mounted_by_us
    }
}

fn permission_missing(root: &Path) -> MissingFeature {
    let why = match std::fs::read_dir(root) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => format!("{}: permission denied", root.display()),
        Err(e) => format!("{}: {e}", root.display()),
        Ok(_) => format!("{} has no instances/ or events/ directory", root.display()),
    };
    MissingFeature::new(
        "kernel tracing (tracefs)",
        why,
        "run as root (sudo), or grant CAP_SYS_ADMIN and make tracefs readable (mount -o remount,mode=755 /sys/kernel/tracing)",
    )
}

fn mount_default() -> Result<TraceFs, MissingFeature> {
    let missing = |why: String| {
        MissingFeature::new(
            "kernel tracing (tracefs)",
            why,
            "build the kernel with CONFIG_FTRACE=y and CONFIG_EVENT_TRACING=y, and run as root so latscope can \
             mount tracefs (or: mount -t tracefs nodev /sys/kernel/tracing)",
        )
    };
    if !Path::new(DEFAULT_MOUNT).is_dir() {
        return Err(missing(format!("tracefs is not mounted and {DEFAULT_MOUNT} does not exist")));
    }
    match sys_mount(DEFAULT_MOUNT) {
        Ok(()) if usable(Path::new(DEFAULT_MOUNT)) => {
            Ok(TraceFs { root: PathBuf::from(DEFAULT_MOUNT), mounted_by_us: true })
        }
        Ok(()) => {
            let _ = sys_umount(DEFAULT_MOUNT);
            Err(missing(format!("tracefs mounted at {DEFAULT_MOUNT} has no instances/ or events/")))
        }
        Err(e) => Err(missing(format!("tracefs is not mounted and mounting it failed: {e}"))),
    }
}

fn sys_mount(dir: &str) -> Result<(), SysError> {
    let (Ok(src), Ok(target), Ok(fstype)) = (CString::new("nodev"), CString::new(dir), CString::new("tracefs")) else {
        return Err(SysError::Invalid(format!("mount point {dir} contains a NUL byte")));
    };
    // SAFETY: all pointers are valid NUL-terminated strings that outlive the call; data may be NULL.
    let rc = unsafe { libc::mount(src.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(SysError::call(format!("mount -t tracefs nodev {dir}"), "run as root"))
    }
}

fn sys_umount(dir: &str) -> Result<(), SysError> {
    let Ok(target) = CString::new(dir) else {
        return Err(SysError::Invalid(format!("mount point {dir} contains a NUL byte")));
    };
    // SAFETY: target is a valid NUL-terminated string.
    let rc = unsafe { libc::umount2(target.as_ptr(), 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(SysError::call(format!("umount {dir}"), ""))
    }
}

impl Drop for TraceFs {
    fn drop(&mut self) {
        if !self.mounted_by_us {
            return;
        }
        // Leave it mounted when another latscope run (or anyone) is still using an instance.
        let busy = std::fs::read_dir(self.root.join("instances")).map(|mut d| d.next().is_some()).unwrap_or(false);
        if !busy {
            if let Some(dir) = self.root.to_str() {
                let _ = sys_umount(dir);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tracefs_and_debugfs_mounts() {
        let text = "sysfs /sys sysfs rw 0 0\n\
                    debugfs /sys/kernel/debug debugfs rw 0 0\n\
                    nodev /mnt/my\\040trace tracefs rw 0 0\n\
                    nodev /sys/kernel/tracing tracefs rw,relatime 0 0\n\
                    garbage\n";
        let got = tracefs_mounts(text);
        assert_eq!(
            got,
            vec![
                PathBuf::from("/sys/kernel/tracing"),
                PathBuf::from("/mnt/my trace"),
                PathBuf::from("/sys/kernel/debug/tracing")
            ]
        );
        assert!(tracefs_mounts("proc /proc proc rw 0 0\n").is_empty());
    }

    #[test]
    fn explicit_root_that_is_not_tracefs_is_missing_with_a_fix() {
        let m = TraceFs::at("/nonexistent-latscope").expect_err("not tracefs");
        assert!(m.why.contains("/nonexistent-latscope"), "{m}");
        assert!(m.enable.contains("root"), "{m}");
    }
}
