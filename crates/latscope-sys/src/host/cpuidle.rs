//! Idle states of one CPU (`cpuN/cpuidle/stateK`: exit latency, residency, disabled) and the cpuidle
//! driver and governor.

use super::read_fact::{read_string, why_unreadable};
use super::topology::CPU_DIR;
use latscope_model::facts::IdleState;
use latscope_model::{CpuId, Fact};
use std::path::Path;

fn text(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name)).ok().map(|s| s.trim().to_string())
}

/// The cpuidle driver in use (`current_driver`).
pub fn driver() -> Fact<String> {
    read_string(format!("{CPU_DIR}/cpuidle/current_driver"))
}

/// The cpuidle governor in use (`current_governor`, or `current_governor_ro` on older kernels).
pub fn governor() -> Fact<String> {
    let f = read_string(format!("{CPU_DIR}/cpuidle/current_governor"));
    if f.value.is_some() {
        return f;
    }
    read_string(format!("{CPU_DIR}/cpuidle/current_governor_ro"))
}

/// Reads every idle state of `cpu`, in index order.
pub fn read_idle_states(cpu: CpuId) -> Fact<Vec<IdleState>> {
    let dir = Path::new(CPU_DIR).join(format!("cpu{cpu}/cpuidle"));
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) => {
            let why = if e.kind() == std::io::ErrorKind::NotFound {
                format!("{} does not exist: no cpuidle driver (idle is the architecture default)", dir.display())
            } else {
                why_unreadable(&dir, &e)
            };
            return Fact::unknown(dir.display().to_string(), why);
        }
    };
    let mut states = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(index) = name.strip_prefix("state").and_then(|n| n.parse::<u32>().ok()) else { continue };
        let d = e.path();
        states.push(IdleState {
            index,
            name: text(&d, "name").unwrap_or_default(),
            desc: text(&d, "desc").unwrap_or_default(),
            exit_latency_us: text(&d, "latency").and_then(|v| v.parse().ok()).unwrap_or(0),
            residency_us: text(&d, "residency").and_then(|v| v.parse().ok()).unwrap_or(0),
            disabled: text(&d, "disable").is_some_and(|v| v != "0"),
        });
    }
    states.sort_by_key(|s| s.index);
    Fact::known(states, dir.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_states_of_cpu0_or_says_why() {
        let f = read_idle_states(CpuId(0));
        match f.value {
            Some(states) => {
                assert!(states.windows(2).all(|w| w[0].index < w[1].index));
                assert!(states.iter().all(|s| !s.name.is_empty()));
            }
            None => assert!(f.note.is_some()),
        }
    }
}
