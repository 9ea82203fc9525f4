//! SMI counts: Intel CPUs count the System Management Interrupts they took in MSR_SMI_COUNT (0x34), read
//! through `/dev/cpu/N/msr` (the `msr` module, root). Where that is not possible the reason is data.

use latscope_model::{CpuId, CpuList};
use std::os::unix::fs::FileExt;

/// MSR_SMI_COUNT: SMIs since reset, in its low 32 bits (Nehalem and later).
const MSR_SMI_COUNT: u64 = 0x34;

/// Reads the SMI count of each CPU of `cpus`, or says in one line why it is not readable here.
pub fn smi_counts(cpus: &CpuList) -> Result<Vec<(CpuId, u64)>, String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if !cpuinfo.lines().any(|l| l.starts_with("vendor_id") && l.contains("GenuineIntel")) {
        return Err("MSR_SMI_COUNT is an Intel MSR and this CPU is not Intel".into());
    }
    cpus.iter().map(|cpu| smi_count(cpu).map(|n| (cpu, n))).collect()
}

/// The SMI count of one CPU.
pub fn smi_count(cpu: CpuId) -> Result<u64, String> {
    let path = format!("/dev/cpu/{}/msr", cpu.0);
    let f = std::fs::File::open(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("no {path}: load the msr module (modprobe msr, CONFIG_X86_MSR)"),
        std::io::ErrorKind::PermissionDenied => format!("{path}: permission denied; run as root (sudo)"),
        _ => format!("{path}: {e}"),
    })?;
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, MSR_SMI_COUNT).map_err(|e| {
        format!("{path}: reading MSR 0x34 (MSR_SMI_COUNT) failed: {e} (the CPU or a hypervisor does not offer it)")
    })?;
    Ok(u64::from_le_bytes(b) & 0xffff_ffff)
}
