//! What this process costs the machine: CPU time of all its threads (`getrusage`) and resident memory
//! (`/proc/self/statm`), for `latscope monitor` to expose about itself.

use latscope_model::{Nanos, ProcessUsage};

/// This process's CPU time (user and system, every thread) and resident memory now. The start time is
/// left at 0 for the caller to fill.
pub fn own_usage() -> ProcessUsage {
    // SAFETY: rusage is plain data that getrusage fills.
    let cpu_time = unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut r) == 0 {
            let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
            Nanos(ns(r.ru_utime) + ns(r.ru_stime))
        } else {
            Nanos::ZERO
        }
    };
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
    let resident_pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .unwrap_or(0);
    ProcessUsage { cpu_time, resident_bytes: resident_pages * page, start_time_unix_s: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_running_process() {
        let spin_until = std::time::Instant::now() + std::time::Duration::from_millis(30);
        while std::time::Instant::now() < spin_until {
            std::hint::spin_loop();
        }
        let u = own_usage();
        assert!(u.cpu_time >= Nanos::from_ms(10), "{u:?}");
        assert!(u.resident_bytes > 1 << 20, "{u:?}");
    }
}
