//! Running latscope as user `nobody` (setpriv): the binary is copied into a directory everyone may enter,
//! since the build tree may sit where only root can (a checkout under /root), which would make the
//! unprivileged run fail on `execve` instead of testing latscope.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Copies made by this process so far (each gets its own directory).
static COPIES: AtomicUsize = AtomicUsize::new(0);

/// A copy of the latscope binary that `nobody` can run, removed on drop.
#[derive(Debug)]
pub struct NobodyBinary {
    dir: PathBuf,
    /// The copy.
    pub path: PathBuf,
}

/// Copies the binary under test to a fresh world-readable directory in /tmp.
pub fn binary() -> NobodyBinary {
    use std::os::unix::fs::PermissionsExt;
    let n = COPIES.fetch_add(1, Ordering::Relaxed);
    let dir = PathBuf::from(format!("/tmp/latscope-nobody-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the directory of the copy");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod 755");
    let path = dir.join("latscope");
    // Copied by `cp`, not here: a file this process held open for writing would also be held by any child
    // another test thread forks meanwhile (until its exec), and running the copy then fails with "Text file
    // busy" (seen once). The writer is then only ever the `cp` process, gone when it exits.
    let cp = std::process::Command::new("cp")
        .arg(env!("CARGO_BIN_EXE_latscope"))
        .arg(&path)
        .status()
        .expect("run cp to copy the latscope binary");
    assert!(cp.success(), "cp of the latscope binary failed: {cp}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod 755");
    NobodyBinary { dir, path }
}

impl Drop for NobodyBinary {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
