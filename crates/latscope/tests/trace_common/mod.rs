//! What the `--trace` ground-truth tests need from the machine: root, tracefs and CPU 1.

/// Whether this machine can run the live tracing tests; prints why not when it cannot.
pub fn can_trace() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to trace and to run SCHED_FIFO threads");
        return false;
    }
    if !std::path::Path::new("/sys/kernel/tracing/events").is_dir()
        && !std::fs::read_to_string("/proc/mounts").unwrap_or_default().contains(" tracefs ")
    {
        eprintln!("skipped: tracefs is not mounted");
        return false;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() == "0" {
        eprintln!("skipped: CPU 1 is not online");
        return false;
    }
    true
}
