//! Lockup watchdogs (soft-lockup hrtimer, NMI perf counter) and hardware watchdog devices (iTCO_wdt…).

use super::read_fact::read_parsed;
use super::sysctl::{read_sysctl_bool, read_sysctl_int, sysctl_path};
use latscope_model::facts::WatchdogFacts;
use latscope_model::{CpuList, Fact};

/// Reads the watchdog sysctls and `/sys/class/watchdog/*/identity`.
pub fn read_watchdogs() -> WatchdogFacts {
    let master = read_sysctl_bool("kernel.watchdog");
    let soft_only = read_sysctl_bool("kernel.soft_watchdog");
    let soft = match (master.value, soft_only.value) {
        (Some(m), Some(s)) => Fact::known(m && s, format!("{} and {}", master.from, soft_only.from)),
        (Some(false), None) => Fact::known(false, master.from.clone()),
        _ => Fact { value: None, from: soft_only.from, note: soft_only.note.or(master.note.clone()) },
    };
    let nmi_raw = read_sysctl_bool("kernel.nmi_watchdog");
    let nmi = match (master.value, nmi_raw.value) {
        (Some(false), _) => Fact::known(false, master.from.clone()),
        _ => nmi_raw,
    };
    WatchdogFacts {
        soft,
        nmi,
        thresh_s: read_sysctl_int("kernel.watchdog_thresh"),
        cpumask: read_parsed(sysctl_path("kernel.watchdog_cpumask"), |t| CpuList::parse(t).ok()),
        hardware: read_hardware(),
    }
}

fn read_hardware() -> Fact<Vec<String>> {
    let dir = std::path::Path::new("/sys/class/watchdog");
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Fact::known(Vec::new(), "/sys/class/watchdog (absent: no watchdog driver)")
        }
        Err(e) => return Fact::unknown(dir.display().to_string(), super::read_fact::why_unreadable(dir, &e)),
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let id = std::fs::read_to_string(e.path().join("identity")).ok()?;
            Some(format!("{}: {}", e.file_name().to_string_lossy(), id.trim()))
        })
        .collect();
    out.sort();
    Fact::known(out, "/sys/class/watchdog/*/identity")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_machine() {
        let w = read_watchdogs();
        assert!(w.soft.value.is_some() || w.soft.note.is_some());
        assert!(w.hardware.value.is_some() || w.hardware.note.is_some());
    }
}
