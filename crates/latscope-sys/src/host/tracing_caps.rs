//! What this kernel can trace: where tracefs is, its tracers and event subsystems, kprobe events, and BPF
//! prerequisites (unprivileged BPF, BTF, perf_event_paranoid), and tracing already switched on (the top level,
//! instances). Nothing is mounted or enabled.

use super::read_fact::{exists, why_unreadable};
use super::sysctl::read_sysctl_int;
use crate::tracefs::instance::owner_pid;
use crate::tracefs::mount::tracefs_mounts;
use latscope_model::facts::{ActiveTracing, TracingFacts};
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
    t.active = read_active(&root);
    t.kprobe_events = match std::fs::metadata(&root) {
        // Existence is only meaningful when the directory itself can be listed.
        Ok(_) if std::fs::read_dir(&root).is_ok() => Fact::known(kprobe.exists(), kprobe.display().to_string()),
        Ok(_) => Fact::unknown(kprobe.display().to_string(), format!("{rs}: permission denied; run latscope as root")),
        Err(e) => Fact::unknown(kprobe.display().to_string(), why_unreadable(Path::new(&root), &e)),
    };
    t
}

/// The top level and every instance under `root` with tracing on and a tracer or events set, this process's
/// own instances excepted.
pub fn read_active(root: &Path) -> Fact<Vec<ActiveTracing>> {
    let from = root.display().to_string();
    let top = match buffer_activity(root, String::new()) {
        Ok(a) => a,
        Err(e) => return Fact::unknown(from, why_unreadable(&root.join("tracing_on"), &e)),
    };
    let mut out: Vec<ActiveTracing> = top.into_iter().collect();
    let me = std::process::id();
    let mut names: Vec<String> = std::fs::read_dir(root.join("instances"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let owner = owner_pid(&name).map(|pid| (pid, Path::new(&format!("/proc/{pid}")).exists()));
        if owner.is_some_and(|(pid, _)| pid == me) {
            continue;
        }
        if let Ok(Some(mut a)) = buffer_activity(&root.join("instances").join(&name), name) {
            a.latscope_owner = owner;
            out.push(a);
        }
    }
    Fact::known(out, format!("{from}/{{tracing_on,current_tracer,set_event}}, {from}/instances/*"))
}

/// What the buffer at `dir` records, when tracing is on there and it records something.
fn buffer_activity(dir: &Path, instance: String) -> std::io::Result<Option<ActiveTracing>> {
    let on = std::fs::read_to_string(dir.join("tracing_on"))?;
    if on.trim() != "1" {
        return Ok(None);
    }
    let tracer = std::fs::read_to_string(dir.join("current_tracer"))
        .map(|t| t.trim().to_string())
        .ok()
        .filter(|t| !t.is_empty() && t != "nop");
    let events: Vec<String> = std::fs::read_to_string(dir.join("set_event"))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if tracer.is_none() && events.is_empty() {
        return Ok(None);
    }
    Ok(Some(ActiveTracing { instance, tracer, events, latscope_owner: None }))
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
