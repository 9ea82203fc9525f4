//! CPU topology and isolation: online/present CPUs, SMT control and siblings, isolated and tickless CPUs.

use super::read_fact::{parse_list_or_empty, read_bool, read_parsed, read_string};
use latscope_model::{CpuId, CpuList, Fact};

/// The CPU sysfs directory.
pub const CPU_DIR: &str = "/sys/devices/system/cpu";

/// A CPU list file (`online`, `present`).
pub fn read_list(name: &str) -> Fact<CpuList> {
    read_parsed(format!("{CPU_DIR}/{name}"), |s| CpuList::parse(s).ok())
}

/// A CPU list file that is empty when no CPU is in it (`isolated`); a missing `nohz_full` file means
/// the kernel has no `CONFIG_NO_HZ_FULL`, so no CPU is tickless.
pub fn read_list_or_empty(name: &str) -> Fact<CpuList> {
    let path = format!("{CPU_DIR}/{name}");
    let f = read_parsed(&path, parse_list_or_empty);
    if f.value.is_none() && name == "nohz_full" && !std::path::Path::new(&path).exists() {
        return Fact::known(CpuList::default(), format!("{path} (absent: kernel without CONFIG_NO_HZ_FULL)"));
    }
    f
}

/// `smt/control`.
pub fn smt_control() -> Fact<String> {
    read_string(format!("{CPU_DIR}/smt/control"))
}

/// `smt/active`.
pub fn smt_active() -> Fact<bool> {
    read_bool(format!("{CPU_DIR}/smt/active"))
}

/// The hardware threads of `cpu`'s core, itself included. Unknown for offline CPUs (the kernel removes
/// their topology directory).
pub fn thread_siblings(cpu: CpuId) -> Fact<CpuList> {
    let core_cpus = format!("{CPU_DIR}/cpu{cpu}/topology/core_cpus_list");
    let f = read_parsed(&core_cpus, |s| CpuList::parse(s).ok());
    if f.value.is_some() {
        return f;
    }
    read_parsed(format!("{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list"), |s| CpuList::parse(s).ok())
}

/// Whether `cpu` is online: `cpuN/online` (absent for a CPU that cannot go offline, such as CPU 0), else
/// membership of the online list.
pub fn is_online(cpu: CpuId, online: Option<&CpuList>) -> bool {
    match read_string(format!("{CPU_DIR}/cpu{cpu}/online")).value.as_deref() {
        Some("1") => true,
        Some(_) => false,
        None => online.is_some_and(|l| l.contains(cpu)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_machine() {
        let online = read_list("online");
        let list = online.get().expect("online CPUs are always readable");
        assert!(!list.is_empty());
        let first = list.0[0];
        assert!(is_online(first, Some(list)));
        let sib = thread_siblings(first);
        assert!(sib.get().is_some_and(|s| s.contains(first)), "{sib:?}");
        assert!(read_list_or_empty("nohz_full").get().is_some());
    }
}
