//! The machine-wide turn of qemu guests (`/tmp/latscope-guest.lock`): two TCG guests on a 2-CPU machine halve
//! each other's vCPUs, and a guest test judges what happened inside a guest whose timers and RCU must keep
//! running. Every guest run takes it: the guest tests here (one boot at a time), and scripts run by hand as
//! `flock /tmp/latscope-guest.lock scripts/kernel-vm.sh run …`. A test run started under such a `flock` (an
//! ancestor process holds the lock file open) already has the turn: taking it again would wait forever.

use std::fs::File;
use std::path::Path;

/// The lock file every latscope checkout's guest runs share.
pub const LOCK_FILE: &str = "/tmp/latscope-guest.lock";

/// The guest turn, held until dropped (`None` when an ancestor process holds it for this run).
#[derive(Debug)]
pub struct GuestTurn(Option<File>);

/// Waits for the guest turn (as long as another guest run holds it) and takes it.
pub fn take() -> GuestTurn {
    if held_by_an_ancestor() {
        return GuestTurn(None);
    }
    GuestTurn(Some(super::turn::lock(LOCK_FILE)))
}

/// Whether a process this one descends from has the lock file open (`flock FILE make test-kernels`).
fn held_by_an_ancestor() -> bool {
    let mut pid = parent_of("self");
    while let Some(p) = pid.filter(|&p| p > 1) {
        let fds = std::fs::read_dir(format!("/proc/{p}/fd")).into_iter().flatten().flatten();
        if fds.filter_map(|fd| std::fs::read_link(fd.path()).ok()).any(|t| t == Path::new(LOCK_FILE)) {
            return true;
        }
        pid = parent_of(&p.to_string());
    }
    false
}

/// The parent process id of `/proc/PID` (`self` for this one).
fn parent_of(pid: &str) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may hold spaces: the fields after its closing parenthesis are state, ppid.
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}
