//! Real-time setup for measurement threads: scheduling policy, CPU pinning, mlockall and the
//! `/dev/cpu_dma_latency` request, the process-wide ones as guards that restore on `Drop`.
//!
//! Per-thread settings ([`set_current_thread_policy`], [`pin_current_thread`]) apply to the calling
//! thread only and last until it ends: call them first thing in a thread you spawned for the purpose.
//! Process-wide settings ([`lock_memory`], [`hold_dma_latency_zero`]) return guards; keep them alive
//! for the whole measurement.

use crate::SysError;
use latscope_model::CpuId;
use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Where the PM QoS CPU latency request lives.
pub const DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// Highest SCHED_FIFO priority Linux accepts.
pub const MAX_FIFO_PRIORITY: u32 = 99;

/// A scheduling policy for a measurement or load thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_OTHER (the default time-sharing policy), nice 0.
    Other,
    /// SCHED_FIFO at a priority in 1..=99.
    Fifo(u8),
}

impl Policy {
    /// Maps the command-line convention: `0` is SCHED_OTHER, `1..=99` SCHED_FIFO; anything else is refused
    /// with an error that says the valid range.
    pub fn from_priority(priority: i64) -> Result<Policy, SysError> {
        match priority {
            0 => Ok(Policy::Other),
            1..=99 => Ok(Policy::Fifo(priority as u8)),
            _ => Err(SysError::Invalid(format!(
                "priority {priority} is out of range: SCHED_FIFO priorities are 1-{MAX_FIFO_PRIORITY}, \
                 and 0 selects SCHED_OTHER"
            ))),
        }
    }

    /// The priority in the command-line convention (0 for SCHED_OTHER).
    pub fn priority(self) -> u8 {
        match self {
            Policy::Other => 0,
            Policy::Fifo(p) => p,
        }
    }

    /// The priority as the kernel and its trace events show it: `99 - p` for SCHED_FIFO p, 120 for
    /// SCHED_OTHER at nice 0.
    pub fn kernel_prio(self) -> i32 {
        match self {
            Policy::Other => 120,
            Policy::Fifo(p) => 99 - i32::from(p),
        }
    }

    /// `SCHED_FIFO 95` or `SCHED_OTHER`, for messages.
    pub fn describe(self) -> String {
        match self {
            Policy::Other => "SCHED_OTHER".into(),
            Policy::Fifo(p) => format!("SCHED_FIFO {p}"),
        }
    }
}

/// Sets the calling thread's scheduling policy. It lasts until the thread ends (or is changed again).
/// Without permission for SCHED_FIFO the error says to run as root, grant CAP_SYS_NICE, or use priority 0.
pub fn set_current_thread_policy(policy: Policy) -> Result<(), SysError> {
    let (pol, prio) = match policy {
        Policy::Other => (libc::SCHED_OTHER, 0),
        Policy::Fifo(p) => (libc::SCHED_FIFO, i32::from(p)),
    };
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, pol, &param) };
    if rc != 0 {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let hint = if errno == libc::EPERM {
            "run as root (sudo) or with CAP_SYS_NICE / a raised RLIMIT_RTPRIO, or use priority 0 (-p 0, SCHED_OTHER)"
        } else {
            ""
        };
        return Err(SysError::call(format!("sched_setscheduler({})", policy.describe()), hint));
    }
    Ok(())
}

/// The calling thread's policy as the kernel reports it (`None` for policies other than OTHER/FIFO).
#[cfg(test)]
pub fn current_thread_policy() -> Option<Policy> {
    // SAFETY: pid 0 is the calling thread.
    let pol = unsafe { libc::sched_getscheduler(0) };
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid, writable sched_param.
    let rc = unsafe { libc::sched_getparam(0, &mut param) };
    match (pol, rc) {
        (libc::SCHED_OTHER, 0) => Some(Policy::Other),
        (libc::SCHED_FIFO, 0) => Some(Policy::Fifo(param.sched_priority as u8)),
        _ => None,
    }
}

/// Moves the calling thread off `measured` (and with it every thread it starts later, which inherit its
/// affinity): the measured CPUs are left to the measuring threads, which pin themselves there. Returns the
/// CPUs the thread may now run on, or `None` when no other allowed CPU is left (nothing changed). Nothing is
/// restored: only this process's threads are moved.
pub fn keep_off(measured: &[CpuId]) -> Result<Option<Vec<CpuId>>, SysError> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: cpu_set_t is plain data; CPU_ISSET/CPU_CLR index within CPU_SETSIZE; sched_{get,set}affinity(0, …)
    // act on the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut set) != 0 {
            return Err(SysError::call("sched_getaffinity", "check /proc/self/status Cpus_allowed_list"));
        }
        for c in measured.iter().filter(|c| (c.0 as usize) < libc::CPU_SETSIZE as usize) {
            libc::CPU_CLR(c.0 as usize, &mut set);
        }
        let left: Vec<CpuId> =
            (0..libc::CPU_SETSIZE as usize).filter(|i| libc::CPU_ISSET(*i, &set)).map(|i| CpuId(i as u32)).collect();
        if left.is_empty() {
            return Ok(None);
        }
        if libc::sched_setaffinity(0, size, &set) != 0 {
            return Err(SysError::call("sched_setaffinity", "check this process's cpuset (Cpus_allowed_list)"));
        }
        Ok(Some(left))
    }
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> Result<Vec<CpuId>, SysError> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: cpu_set_t is plain data; sched_getaffinity(0, …) fills it for the calling thread; CPU_ISSET
    // indexes within CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut set) != 0 {
            return Err(SysError::call("sched_getaffinity", "check /proc/self/status Cpus_allowed_list"));
        }
        Ok((0..libc::CPU_SETSIZE as usize).filter(|i| libc::CPU_ISSET(*i, &set)).map(|i| CpuId(i as u32)).collect())
    }
}

/// Makes `cmd`'s process run on `cpus` (the CPUs latscope itself was allowed before [`keep_off`] moved it),
/// so that a command latscope starts is not confined with latscope's own threads.
pub fn run_on(cmd: &mut std::process::Command, cpus: &[CpuId]) {
    use std::os::unix::process::CommandExt;
    // SAFETY: cpu_set_t is plain data built before the fork; the closure only calls sched_setaffinity, which
    // is async-signal-safe, on the child.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in cpus.iter().filter(|c| (c.0 as usize) < libc::CPU_SETSIZE as usize) {
        unsafe { libc::CPU_SET(c.0 as usize, &mut set) };
    }
    unsafe {
        cmd.pre_exec(move || {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            Ok(())
        });
    }
}

/// Pins the calling thread to one CPU. It lasts until the thread ends (or is changed again).
pub fn pin_current_thread(cpu: CpuId) -> Result<(), SysError> {
    if cpu.0 as usize >= libc::CPU_SETSIZE as usize {
        return Err(SysError::Invalid(format!("CPU {cpu} is beyond the {} CPUs a cpu_set_t holds", libc::CPU_SETSIZE)));
    }
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write inside it (index checked above).
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu.0 as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(SysError::call(
            format!("sched_setaffinity(CPU {cpu})"),
            "check that the CPU is online and allowed by this process's cpuset (see /proc/self/status Cpus_allowed_list)",
        ));
    }
    Ok(())
}

/// All pages of the process locked in RAM (`mlockall(MCL_CURRENT | MCL_FUTURE)`); unlocked on `Drop`.
#[derive(Debug)]
#[must_use = "memory is unlocked when the guard is dropped"]
pub struct MemoryLock(());

/// Locks current and future pages so the hot loop never takes a page fault.
/// Fails with a hint when the caller may not lock memory (not root, low RLIMIT_MEMLOCK).
pub fn lock_memory() -> Result<MemoryLock, SysError> {
    // Without CAP_IPC_LOCK the kernel charges locked pages to RLIMIT_MEMLOCK; mlockall(MCL_FUTURE) would then
    // succeed and make every later mapping beyond the limit fail (a new thread's stack: EAGAIN). Refuse early.
    let limit = memlock_limit();
    if !has_cap_ipc_lock() && limit.is_some_and(|l| l < MIN_MEMLOCK) {
        return Err(SysError::Invalid(format!(
            "mlockall: the memlock limit is {} KiB, too small to lock the whole process without making later \
             allocations fail; run as root (sudo) or raise the limit (ulimit -l unlimited)",
            limit.unwrap_or(0) / 1024
        )));
    }
    // SAFETY: mlockall has no memory-safety preconditions.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc != 0 {
        return Err(SysError::call(
            "mlockall(MCL_CURRENT|MCL_FUTURE)",
            "run as root (sudo) or raise the memlock limit (ulimit -l unlimited); without it page faults can \
             add latency",
        ));
    }
    Ok(MemoryLock(()))
}

/// The smallest RLIMIT_MEMLOCK under which [`lock_memory`] still locks everything (without CAP_IPC_LOCK).
pub const MIN_MEMLOCK: u64 = 1 << 30;

/// The soft RLIMIT_MEMLOCK in bytes, `None` when unlimited.
pub fn memlock_limit() -> Option<u64> {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `rl` is a valid, writable rlimit.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) };
    (rc == 0 && rl.rlim_cur != libc::RLIM_INFINITY).then_some(rl.rlim_cur)
}

/// Whether this process has CAP_IPC_LOCK in its effective set (`CapEff` of `/proc/self/status`).
pub fn has_cap_ipc_lock() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    cap_eff_has(&status, 14)
}

fn cap_eff_has(status: &str, cap: u32) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << cap) != 0)
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        // SAFETY: munlockall has no memory-safety preconditions.
        unsafe { libc::munlockall() };
    }
}

/// An open `/dev/cpu_dma_latency` holding a 0 µs request: CPUs stay out of deep idle states while it lives.
/// Dropping it closes the file, which withdraws the request (the kernel restores the previous limit).
#[derive(Debug)]
#[must_use = "the latency request is withdrawn when the guard is dropped"]
pub struct DmaLatency {
    _file: File,
}

/// Asks the kernel to keep CPU exit latency at 0 µs for as long as the guard lives.
pub fn hold_dma_latency_zero() -> Result<DmaLatency, SysError> {
    hold_dma_latency_at(Path::new(DMA_LATENCY), 0)
}

/// Like [`hold_dma_latency_zero`] for another target (µs) or file (tests).
pub fn hold_dma_latency_at(path: &Path, target_us: i32) -> Result<DmaLatency, SysError> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path).map_err(|e| SysError::file(path, e))?;
    file.write_all(&target_us.to_ne_bytes()).map_err(|e| SysError::file(path, e))?;
    Ok(DmaLatency { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_priorities() {
        assert_eq!(Policy::from_priority(0).ok(), Some(Policy::Other));
        assert_eq!(Policy::from_priority(95).ok(), Some(Policy::Fifo(95)));
        let err = Policy::from_priority(120).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("priority 120 is out of range"), "{err}");
        assert!(Policy::from_priority(-1).is_err());
        assert_eq!(Policy::Fifo(7).describe(), "SCHED_FIFO 7");
    }

    #[test]
    fn pins_and_sets_policy_on_own_thread() {
        let cpu = crate::host::cpus::current_cpu().unwrap_or(CpuId(0));
        let seen = std::thread::spawn(move || {
            pin_current_thread(cpu).map_err(|e| e.to_string())?;
            set_current_thread_policy(Policy::Other).map_err(|e| e.to_string())?;
            Ok::<_, String>((crate::host::cpus::current_cpu(), current_thread_policy()))
        })
        .join()
        .expect("thread");
        assert_eq!(seen, Ok((Some(cpu), Some(Policy::Other))));
    }

    #[test]
    fn writes_dma_request_as_binary_s32() {
        let path = std::env::temp_dir().join(format!("latscope-dma-{}", std::process::id()));
        std::fs::write(&path, b"").expect("create");
        let guard = hold_dma_latency_at(&path, 0).expect("open");
        drop(guard);
        assert_eq!(std::fs::read(&path).expect("read"), 0i32.to_ne_bytes());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn reads_capabilities() {
        assert!(cap_eff_has("Name:\tx\nCapEff:\t000001ffffffffff\n", 14));
        assert!(!cap_eff_has("CapEff:\t0000000000000000\n", 14));
        assert!(!cap_eff_has("no caps here", 14));
    }

    #[test]
    fn refuses_impossible_cpu() {
        assert!(pin_current_thread(CpuId(1 << 20)).is_err());
    }
}
