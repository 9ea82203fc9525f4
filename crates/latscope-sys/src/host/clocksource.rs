//! The clocksource (current and available) and the CPU's TSC flags.

use super::read_fact::{read_parsed, read_string};
use latscope_model::Fact;

const DIR: &str = "/sys/devices/system/clocksource/clocksource0";

/// The TSC-related flags of the first `flags` line of `/proc/cpuinfo` text.
pub fn tsc_flags(cpuinfo: &str) -> Vec<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| {
            l.split_whitespace()
                .filter(|f| matches!(*f, "constant_tsc" | "nonstop_tsc" | "tsc_reliable" | "tsc_known_freq"))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Reads the current and available clocksources; `cpuinfo` is the `/proc/cpuinfo` text when readable.
pub fn read_clock(cpuinfo: Option<&str>) -> (Fact<String>, Fact<Vec<String>>, Fact<Vec<String>>) {
    let current = read_string(format!("{DIR}/current_clocksource"));
    let available = read_parsed(format!("{DIR}/available_clocksource"), |t| {
        Some(t.split_whitespace().map(str::to_string).collect())
    });
    let flags = match cpuinfo {
        Some(text) if text.lines().any(|l| l.starts_with("flags")) => Fact::known(tsc_flags(text), "/proc/cpuinfo"),
        Some(_) => Fact::unknown("/proc/cpuinfo", "no 'flags' line (not an x86 CPU)"),
        None => Fact::unknown("/proc/cpuinfo", "not readable"),
    };
    (current, available, flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_tsc_flags() {
        let f = tsc_flags("processor: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc hypervisor\n");
        assert_eq!(f, vec!["constant_tsc".to_string(), "nonstop_tsc".to_string()]);
    }
}
