//! Skip or fail: a live test that cannot run on this machine (no root, no tracefs, a tool or CPU missing,
//! a kernel setting it needs) says why and returns — unless `LATSCOPE_REQUIRE_LIVE=1`, which `make test`
//! sets: CI and the developer machine have everything, so there a skip would hide a broken setup and the
//! test fails with the reason instead. Standard library only: the other crates' tests include this file.

use std::fmt::Display;
use std::path::Path;

/// The variable that turns skips into failures.
pub const REQUIRE_LIVE: &str = "LATSCOPE_REQUIRE_LIVE";

/// Whether a live test that cannot run must fail (`LATSCOPE_REQUIRE_LIVE=1`).
pub fn required() -> bool {
    std::env::var(REQUIRE_LIVE).is_ok_and(|v| v.trim() == "1")
}

/// Ends a live test that cannot run here: prints `skipped: {why}` (the caller returns), or panics with the
/// reason when live tests are required.
pub fn skip(why: impl Display) {
    assert!(!required(), "{REQUIRE_LIVE}=1 and this live test cannot run here: {why}");
    eprintln!("skipped: {why}");
}

/// Something a live test needs from the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Running as root (SCHED_FIFO, tracefs, /dev/cpu_dma_latency).
    Root,
    /// tracefs mounted.
    Tracefs,
    /// This CPU online, and at least one other (a test loads it while the rest of the machine goes on).
    Cpu(u32),
    /// A program on the PATH (`trace-cmd`, `setpriv`, `cyclictest`, `chromium` …).
    Tool(&'static str),
}

/// The first need this machine does not meet, said so that the reader knows what to install or do.
pub fn missing(needs: &[Need]) -> Option<String> {
    needs.iter().find_map(|n| match *n {
        Need::Root if effective_uid() != Some(0) => Some("needs root (SCHED_FIFO threads, tracefs)".to_string()),
        Need::Tracefs if !tracefs_mounted() => {
            Some("tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)".to_string())
        }
        Need::Cpu(cpu) => {
            let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
            let cpus = cpu_list(&online);
            (!cpus.contains(&cpu) || cpus.len() < 2)
                .then(|| format!("needs CPU {cpu} online and another CPU (online: {})", online.trim()))
        }
        Need::Tool(tool) if !on_path(tool) => {
            Some(format!("{tool} is not installed (scripts/install-deps.sh installs it)"))
        }
        _ => None,
    })
}

/// Whether the machine meets `needs`; when it does not, [`skip`]s (or fails) with the first one missing.
pub fn ready(needs: &[Need]) -> bool {
    match missing(needs) {
        Some(why) => {
            skip(why);
            false
        }
        None => true,
    }
}

/// The effective uid, from `/proc/self/status` (`Uid: real effective saved fs`).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn tracefs_mounted() -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts.lines().any(|l| l.split_whitespace().nth(2) == Some("tracefs"))
}

fn on_path(tool: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| {
        let f = dir.join(tool);
        Path::new(&f).is_file()
            && std::fs::metadata(&f)
                .is_ok_and(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0)
    })
}

/// `0-1,3` → [0, 1, 3] (what `/sys/devices/system/cpu/online` says).
fn cpu_list(text: &str) -> Vec<u32> {
    text.trim()
        .split(',')
        .filter_map(|part| match part.split_once('-') {
            Some((a, b)) => Some((a.parse().ok()?..=b.parse().ok()?).collect::<Vec<u32>>()),
            None => part.parse().ok().map(|c| vec![c]),
        })
        .flatten()
        .collect()
}
