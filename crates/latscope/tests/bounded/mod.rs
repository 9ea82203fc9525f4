//! Waiting for a spawned latscope with a time limit, reading its output meanwhile.

use std::process::{Child, Output};
use std::sync::mpsc;
use std::time::Duration;

/// Waits for `child` at most `limit`, draining its piped stdout and stderr all along (a child that fills
/// a pipe nobody reads would block forever); kills it and fails the test if it hangs.
pub fn wait_bounded(child: Child, limit: Duration, what: &str) -> Output {
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("output"),
        Err(_) => {
            // SAFETY: kill(2) on the child's pid, which is not reaped before the waiting thread returns.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let out = rx.recv().expect("waiting thread").expect("output");
            panic!("{what} hung for {limit:?}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}
