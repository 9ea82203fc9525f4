//! A tracing run killed with SIGINT, SIGTERM or SIGKILL (then followed by another run) leaves no tracefs
//! instance behind and no global tracing knob changed. Needs root and tracefs; skips with a reason otherwise
//! (fails under LATSCOPE_REQUIRE_LIVE=1).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod live;

use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// The tracefs mount point, when this machine can run these tests (root, tracefs mounted).
fn tracefs() -> Option<PathBuf> {
    if !live::ready(&[Need::Root, Need::Tracefs]) {
        return None;
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "tracefs").then(|| PathBuf::from(f[1]))
    })
}

/// Every global file a capture could touch, with its content; plus the tracefs mounts.
fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut files: Vec<PathBuf> = [
        "tracing_on",
        "trace_clock",
        "buffer_size_kb",
        "buffer_percent",
        "buffer_subbuf_size_kb",
        "tracing_cpumask",
        "current_tracer",
        "set_event",
        "set_event_pid",
        "saved_cmdlines_size",
        "tracing_thresh",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    let dirs = |p: PathBuf| -> Vec<PathBuf> {
        std::fs::read_dir(p).into_iter().flatten().flatten().map(|e| e.path()).collect()
    };
    files.extend(dirs(root.join("options")));
    for cpu in dirs(root.join("per_cpu")) {
        files.push(cpu.join("buffer_size_kb"));
    }
    for sys in ["irq", "irq_vectors", "timer", "sched", "nmi", "syscalls", "raw_syscalls", "ftrace"] {
        files.push(root.join("events").join(sys).join("enable"));
        files.push(root.join("events").join(sys).join("filter"));
        for ev in dirs(root.join("events").join(sys)) {
            files.push(ev.join("enable"));
            files.push(ev.join("filter"));
            files.push(ev.join("trigger"));
        }
    }
    let mut snap = BTreeMap::new();
    for f in files {
        if let Ok(text) = std::fs::read_to_string(&f) {
            snap.insert(f.display().to_string(), text);
        }
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let tracefs: Vec<&str> = mounts.lines().filter(|l| l.contains(" tracefs ")).collect();
    snap.insert("/proc/mounts (tracefs)".into(), tracefs.join("\n"));
    snap
}

fn instances_of(root: &Path, pid: u32) -> Vec<String> {
    let own = format!("latscope-{pid}");
    std::fs::read_dir(root.join("instances"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| *n == own || n.starts_with(&format!("{own}-")))
        .collect()
}

fn diff(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            Some(a) if a == v => {}
            Some(a) => out.push(format!("{k}: {v:?} -> {a:?}")),
            None => out.push(format!("{k}: disappeared")),
        }
    }
    for k in after.keys().filter(|k| !before.contains_key(*k)) {
        out.push(format!("{k}: appeared"));
    }
    out
}

/// Starts a long `latscope record` on CPU 0 and waits until its instance is recording.
fn start_recording(root: &Path, dir: &Path, tag: &str) -> Child {
    let child = Command::new(BIN)
        .args(["record", "-o"])
        .arg(dir.join(format!("{tag}.dat")))
        .args(["-c", "0", "-D", "60s", "--no-kallsyms", "--buffer-kb", "512"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn latscope record");
    let pid = child.id();
    let t0 = Instant::now();
    loop {
        let name = format!("latscope-{pid}");
        let on = std::fs::read_to_string(root.join("instances").join(&name).join("tracing_on")).unwrap_or_default();
        // tracing_on goes 0 during setup and 1 once the readers run.
        let enabled =
            std::fs::read_to_string(root.join("instances").join(&name).join("events/sched/sched_switch/enable"))
                .unwrap_or_default();
        if on.trim() == "1" && enabled.trim() == "1" {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{tag}: the instance of pid {pid} never started recording");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let a few pages be read.
    std::thread::sleep(Duration::from_millis(300));
    child
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("latscope-cleanup-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

#[test]
fn sigint_and_sigterm_restore_everything_and_keep_the_recording() {
    let Some(root) = tracefs() else { return };
    let dir = scratch("signals");
    for (sig, tag) in [(libc::SIGINT, "sigint"), (libc::SIGTERM, "sigterm")] {
        let before = snapshot(&root);
        let child = start_recording(&root, &dir, tag);
        let pid = child.id();
        assert_eq!(instances_of(&root, pid).len(), 1, "{tag}: the run has its instance");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as libc::pid_t, sig) };
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        // A stop signal ends the run cleanly, with the exit code shells expect (issue 15 item 18).
        assert_eq!(out.status.code(), Some(128 + sig), "{tag}: {stderr}");
        assert!(instances_of(&root, pid).is_empty(), "{tag}: instance left behind");
        let changed = diff(&before, &snapshot(&root));
        assert!(changed.is_empty(), "{tag}: global knobs changed: {changed:#?}");
        // The run still wrote what it had recorded.
        assert!(stdout.contains("wrote"), "{tag}: {stdout}");
        let len = std::fs::metadata(dir.join(format!("{tag}.dat"))).map(|m| m.len()).unwrap_or(0);
        assert!(len > 4096, "{tag}: the .dat holds data ({len} bytes)");
        // No spool left next to the output.
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .expect("ls")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".latscope-"))
            .collect();
        assert!(leftovers.is_empty(), "{tag}: spool left: {leftovers:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigkill_leaves_an_instance_that_the_next_run_removes() {
    let Some(root) = tracefs() else { return };
    let dir = scratch("sigkill");
    let before = snapshot(&root);
    let mut child = start_recording(&root, &dir, "killed");
    let pid = child.id();
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    // Nothing ran on the way out: the instance is still there (with its events enabled)…
    assert_eq!(instances_of(&root, pid), vec![format!("latscope-{pid}")]);
    // …but it lives in the instance only: no global knob changed.
    let changed = diff(&before, &snapshot(&root));
    assert!(changed.is_empty(), "SIGKILL: global knobs changed: {changed:#?}");
    // The next run removes it and says so.
    let next = Command::new(BIN)
        .args(["record", "-o"])
        .arg(dir.join("next.dat"))
        .args(["-c", "0", "-D", "200ms", "--no-kallsyms", "--buffer-kb", "256"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run latscope record");
    let next_pid = next.id();
    let out = next.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "next run: {stderr}");
    assert!(instances_of(&root, pid).is_empty(), "the stale instance of pid {pid} is still there");
    assert!(stderr.contains(&format!("removed instance latscope-{pid} left by dead process {pid}")), "{stderr}");
    assert!(instances_of(&root, next_pid).is_empty(), "the next run removed its own instance too");
    let changed = diff(&before, &snapshot(&root));
    assert!(changed.is_empty(), "after the next run: global knobs changed: {changed:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}
