//! Whether a hypervisor is underneath: the CPUID hypervisor bit and vendor leaf 0x40000000 (x86-64),
//! `/sys/hypervisor/type`, DMI, and steal time.

use super::counters::read_steal;
use super::read_fact::read_string;
use latscope_model::facts::{CpuCount, HypervisorFacts};
use latscope_model::{CpuList, Fact};

/// The vendor signature of CPUID leaf 0x40000000, when CPUID.1:ECX bit 31 (hypervisor present) is set.
#[cfg(target_arch = "x86_64")]
pub fn cpuid_vendor() -> Fact<String> {
    use core::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86-64 CPU; `__cpuid` is safe on newer toolchains.
    #[allow(unused_unsafe)]
    let leaf1 = unsafe { __cpuid(1) };
    if leaf1.ecx & (1 << 31) == 0 {
        return Fact::known(String::new(), "cpuid 0x1 ecx bit 31 (clear: no hypervisor)");
    }
    // SAFETY: as above; leaf 0x40000000 is defined whenever the hypervisor bit is set.
    #[allow(unused_unsafe)]
    let r = unsafe { __cpuid(0x4000_0000) };
    let mut bytes = Vec::with_capacity(12);
    for reg in [r.ebx, r.ecx, r.edx] {
        bytes.extend_from_slice(&reg.to_le_bytes());
    }
    let sig: String = bytes.iter().filter(|b| **b != 0).map(|b| char::from(*b)).collect();
    Fact::known(sig, "cpuid 0x40000000")
}

/// No CPUID outside x86-64.
#[cfg(not(target_arch = "x86_64"))]
pub fn cpuid_vendor() -> Fact<String> {
    Fact::unknown("cpuid 0x40000000", "not an x86-64 CPU")
}

/// Collects the hypervisor facts; `cpuinfo` is the `/proc/cpuinfo` text, `online` the CPUs for steal time.
pub fn read_hypervisor(cpuinfo: Option<&str>, online: Option<&CpuList>) -> HypervisorFacts {
    let cpu_flag = match cpuinfo {
        Some(t) if t.lines().any(|l| l.starts_with("flags")) => Fact::known(
            t.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor")),
            "/proc/cpuinfo flags",
        ),
        _ => Fact::unknown("/proc/cpuinfo flags", "no flags line (not x86) or not readable"),
    };
    let sys_type = read_string("/sys/hypervisor/type");
    let vendor = read_string("/sys/class/dmi/id/sys_vendor");
    let product = read_string("/sys/class/dmi/id/product_name");
    let dmi = match (vendor.value, product.value) {
        (Some(v), Some(p)) => Fact::known(format!("{v} {p}").trim().to_string(), "/sys/class/dmi/id"),
        (Some(v), None) => Fact::known(v, "/sys/class/dmi/id/sys_vendor"),
        (None, _) => Fact { value: None, from: vendor.from, note: vendor.note },
    };
    let steal_ns = match read_steal() {
        Ok(s) => Fact::known(
            s.ticks
                .iter()
                .filter(|(c, _)| !matches!(online, Some(l) if !l.contains(*c)))
                .filter_map(|(c, _)| Some(CpuCount { cpu: *c, count: s.steal_ns(*c)? }))
                .collect(),
            "/proc/stat",
        ),
        Err(e) => Fact::unknown("/proc/stat", e.to_string()),
    };
    HypervisorFacts { cpu_flag, cpuid_vendor: cpuid_vendor(), sys_type, dmi, steal_ns }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuid_agrees_with_the_cpu_flag() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok();
        let h = read_hypervisor(cpuinfo.as_deref(), None);
        if cfg!(target_arch = "x86_64") {
            let flagged = h.cpu_flag.value == Some(true);
            let vendor = h.cpuid_vendor.get().cloned().unwrap_or_default();
            assert_eq!(flagged, !vendor.is_empty(), "cpu flag {flagged} vs cpuid vendor {vendor:?}");
        }
        assert!(h.steal_ns.get().is_some_and(|v| !v.is_empty()));
    }
}
