//! Frequency scaling of one CPU (`/sys/devices/system/cpu/cpuN/cpufreq`): driver, governor and limits.

use super::read_fact::why_unreadable;
use super::topology::CPU_DIR;
use latscope_model::facts::CpuFreq;
use latscope_model::{CpuId, Fact};
use std::path::Path;

fn text(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name)).ok().map(|s| s.trim().to_string())
}

fn khz(dir: &Path, name: &str) -> Option<u64> {
    text(dir, name)?.parse().ok()
}

/// Reads `cpu`'s cpufreq directory; unknown (with the reason) when the CPU has no cpufreq driver, as
/// in most VMs where the host owns the frequency.
pub fn read_cpufreq(cpu: CpuId) -> Fact<CpuFreq> {
    let dir = Path::new(CPU_DIR).join(format!("cpu{cpu}/cpufreq"));
    if let Err(e) = std::fs::metadata(&dir) {
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            format!("{} does not exist: no cpufreq driver (frequency is set by firmware or the host)", dir.display())
        } else {
            why_unreadable(&dir, &e)
        };
        return Fact::unknown(dir.display().to_string(), why);
    }
    let f = CpuFreq {
        driver: text(&dir, "scaling_driver"),
        governor: text(&dir, "scaling_governor"),
        min_khz: khz(&dir, "scaling_min_freq"),
        max_khz: khz(&dir, "scaling_max_freq"),
        cur_khz: khz(&dir, "scaling_cur_freq"),
        hw_min_khz: khz(&dir, "cpuinfo_min_freq"),
        hw_max_khz: khz(&dir, "cpuinfo_max_freq"),
        energy_performance_preference: text(&dir, "energy_performance_preference"),
    };
    Fact::known(f, dir.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_cpufreq_is_unknown_with_reason() {
        let f = read_cpufreq(CpuId(100_000));
        assert!(f.value.is_none());
        assert!(f.note.as_deref().is_some_and(|n| n.contains("no cpufreq driver")));
    }
}
