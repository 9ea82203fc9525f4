//! Online CPUs, from `/sys/devices/system/cpu/online`.

use super::read_trimmed;
use crate::SysError;
use latscope_model::CpuList;
use std::path::PathBuf;

/// Where the kernel lists online CPUs.
pub const ONLINE: &str = "/sys/devices/system/cpu/online";

/// The CPUs that are online now.
pub fn online_cpus() -> Result<CpuList, SysError> {
    let text = read_trimmed(ONLINE)?;
    CpuList::parse(&text).map_err(|e| SysError::Parse { path: PathBuf::from(ONLINE), what: e.to_string() })
}

/// Checks that every CPU of `wanted` is online; the error names the first that is not.
pub fn check_online(wanted: &CpuList) -> Result<(), SysError> {
    let online = online_cpus()?;
    for cpu in wanted.iter() {
        if !online.contains(cpu) {
            // Only a CPU that exists can be brought online.
            let exists = std::path::Path::new(&format!("/sys/devices/system/cpu/cpu{cpu}")).exists();
            return Err(SysError::Invalid(if exists {
                format!(
                    "CPU {cpu} is not online (online CPUs: {online}); pick CPUs from that list, or bring it up with \
                     'echo 1 > /sys/devices/system/cpu/cpu{cpu}/online'"
                )
            } else {
                format!("CPU {cpu} does not exist on this machine (online CPUs: {online}); pick CPUs from that list")
            }));
        }
    }
    Ok(())
}

/// The CPU this thread runs on now (tests check where a thread was pinned).
#[cfg(test)]
pub fn current_cpu() -> Option<latscope_model::CpuId> {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(latscope_model::CpuId(c as u32))
}
