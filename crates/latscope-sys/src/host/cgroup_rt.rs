//! The RT budget of this process's cgroup (cgroup v1 `cpu.rt_runtime_us` under `CONFIG_RT_GROUP_SCHED`)
//! and whether we run in a container.

use super::read_fact::read_string;
use latscope_model::facts::CgroupRt;
use latscope_model::Fact;
use std::path::Path;

/// The cgroup path of the v1 hierarchy that has the `cpu` controller, from `/proc/self/cgroup` text.
pub fn cpu_cgroup_path(proc_self_cgroup: &str) -> Option<String> {
    proc_self_cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "cpu").then(|| path.to_string())
    })
}

/// A container marker: `/.dockerenv`, `/run/.containerenv`, or a container runtime in the cgroup paths.
pub fn container_marker(proc_self_cgroup: &str) -> Option<String> {
    if Path::new("/.dockerenv").exists() {
        return Some("docker (/.dockerenv)".into());
    }
    if Path::new("/run/.containerenv").exists() {
        return Some("podman (/run/.containerenv)".into());
    }
    for key in ["docker", "kubepods", "libpod", "containerd", "lxc"] {
        if let Some(l) = proc_self_cgroup.lines().find(|l| l.contains(key)) {
            return Some(format!("{key} (cgroup {})", l.splitn(3, ':').nth(2).unwrap_or(l)));
        }
    }
    None
}

/// Reads the container marker and the cgroup RT budget.
pub fn read_cgroup_rt() -> (Fact<String>, Fact<CgroupRt>) {
    let cg = read_string("/proc/self/cgroup");
    let Some(text) = cg.value.clone() else {
        let why = cg.note.unwrap_or_default();
        return (Fact::unknown("/proc/self/cgroup", why.clone()), Fact::unknown("/proc/self/cgroup", why));
    };
    let container = match container_marker(&text) {
        Some(m) => Fact::known(m, "/proc/self/cgroup, /.dockerenv, /run/.containerenv"),
        None => Fact::known(String::new(), "/proc/self/cgroup, /.dockerenv, /run/.containerenv"),
    };
    let Some(path) = cpu_cgroup_path(&text) else {
        return (
            container,
            Fact::unknown("/proc/self/cgroup", "no cgroup v1 'cpu' hierarchy (RT group budgets exist only there)"),
        );
    };
    let rel = path.trim_start_matches('/');
    for mount in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"] {
        let dir = Path::new(mount).join(rel);
        let runtime = read_string(dir.join("cpu.rt_runtime_us"));
        let period = read_string(dir.join("cpu.rt_period_us"));
        if let (Some(r), Some(p)) =
            (runtime.get().and_then(|v| v.parse::<i64>().ok()), period.get().and_then(|v| v.parse::<u64>().ok()))
        {
            return (container, Fact::known(CgroupRt { cgroup: path, runtime_us: r, period_us: p }, runtime.from));
        }
    }
    (
        container,
        Fact::unknown(
            format!("/sys/fs/cgroup/cpu{path}/cpu.rt_runtime_us"),
            "not visible: kernel without CONFIG_RT_GROUP_SCHED or the cpu hierarchy is not mounted",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cpu_hierarchy() {
        let text = "9:name=systemd:/\n4:memory:/x\n2:cpu,cpuacct:/docker/abc\n0::/\n";
        assert_eq!(cpu_cgroup_path(text).as_deref(), Some("/docker/abc"));
        assert_eq!(cpu_cgroup_path("0::/user.slice\n"), None);
    }

    #[test]
    fn reads_this_process() {
        let (container, rt) = read_cgroup_rt();
        assert!(container.value.is_some());
        assert!(rt.value.is_some() || rt.note.is_some());
    }
}
