//! What this kernel can trace: where tracefs is, its tracers and event subsystems, kprobe events, and BPF
//! prerequisites (unprivileged BPF, BTF, perf_event_paranoid). Nothing is mounted or enabled.

use super::read_fact::{exists, why_unreadable};
use super::sysctl::read_sysctl_int;
use crate::tracefs::mount::tracefs_mounts;
use latscope_model::facts::TracingFacts;
use latscope_model::Fact;
use std::path::Path;

/// Reads the tracing capabilities from the first tracefs mount in `/proc/mounts`.
pub fn read_tracing() -> TracingFacts {
    let bpf = |t: &mut TracingFacts| {
        t.unprivileged_bpf_disabled = read_sysctl_int("kernel.unprivileged_bpf_disabled");
        t.btf_vmlinux = exists("/sys/kernel/btf/vmlinux");
        t.perf_event_paranoid = read_sysctl_int("kernel.perf_event_paranoid");
    };
    let mut t = TracingFacts::default();
    bpf(&mut t);
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let Some(root) = tracefs_mounts(&mounts).into_iter().find(|p| p.exists()) else {
        let why = "tracefs is not mounted; mount it with 'mount -t tracefs nodev /sys/kernel/tracing'";
        t.tracefs = Fact::unknown("/proc/mounts", why);
        t.tracers = Fact::unknown("available_tracers", why);
        t.event_systems = Fact::unknown("events/", why);
        t.kprobe_events = Fact::unknown("kprobe_events", why);
        return t;
    };
    let rs = root.display().to_string();
    t.tracefs = Fact::known(rs.clone(), "/proc/mounts");
    let tracers = root.join("available_tracers");
    t.tracers = match std::fs::read_to_string(&tracers) {
        Ok(s) => Fact::known(s.split_whitespace().map(str::to_string).collect(), tracers.display().to_string()),
        Err(e) => Fact::unknown(tracers.display().to_string(), why_unreadable(&tracers, &e)),
    };
    let events = root.join("events");
    t.event_systems = match std::fs::read_dir(&events) {
        Ok(d) => {
            let mut v: Vec<String> = d
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            Fact::known(v, events.display().to_string())
        }
        Err(e) => Fact::unknown(events.display().to_string(), why_unreadable(&events, &e)),
    };
    let kprobe = root.join("kprobe_events");
    t.kprobe_events = match std::fs::metadata(&root) {
        // Existence is only meaningful when the directory itself can be listed.
        Ok(_) if std::fs::read_dir(&root).is_ok() => Fact::known(kprobe.exists(), kprobe.display().to_string()),
        Ok(_) => Fact::unknown(kprobe.display().to_string(), format!("{rs}: permission denied; run latscope as root")),
        Err(e) => Fact::unknown(kprobe.display().to_string(), why_unreadable(Path::new(&root), &e)),
    };
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_or_explains() {
        let t = read_tracing();
        assert!(t.btf_vmlinux.value.is_some());
        match t.tracers.get() {
            Some(list) => assert!(list.iter().any(|x| x == "nop"), "{list:?}"),
            None => assert!(t.tracers.note.is_some()),
        }
    }
}
