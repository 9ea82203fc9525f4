//! Reading sysctls (`kernel.sched_rt_runtime_us` → `/proc/sys/kernel/sched_rt_runtime_us`).

use super::read_fact::{read_bool, read_int};
use latscope_model::Fact;

/// The `/proc/sys` path of a dotted sysctl name.
pub fn sysctl_path(name: &str) -> String {
    format!("/proc/sys/{}", name.replace('.', "/"))
}

/// A sysctl as text.
#[cfg(test)]
pub fn read_sysctl(name: &str) -> Fact<String> {
    super::read_fact::read_string(sysctl_path(name))
}

/// An integer sysctl.
pub fn read_sysctl_int<T: std::str::FromStr>(name: &str) -> Fact<T> {
    read_int(sysctl_path(name))
}

/// A 0/1 sysctl.
pub fn read_sysctl_bool(name: &str) -> Fact<bool> {
    read_bool(sysctl_path(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_names_to_paths_and_reads() {
        assert_eq!(sysctl_path("kernel.sched_rt_runtime_us"), "/proc/sys/kernel/sched_rt_runtime_us");
        let f: Fact<u64> = read_sysctl_int("kernel.sched_rt_period_us");
        assert!(f.get().is_some_and(|v| *v > 0), "{f:?}");
        assert_eq!(f.from, "/proc/sys/kernel/sched_rt_period_us");
        let missing: Fact<String> = read_sysctl("kernel.no_such_sysctl_latscope");
        assert!(missing.note.is_some());
    }
}
