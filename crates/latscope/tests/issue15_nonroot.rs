//! Issue 15, item 17: run as `nobody`, latscope says each thing it could not do once, with its advice once,
//! does not claim there is no sample when the samples are there but the trace is not, states memory limits
//! in one unit, and a `run` whose timer fell back to SCHED_OTHER says so in its verdict.

use std::process::{Command, Output};

mod live;

use live::Need;

fn as_nobody(bin: &std::path::Path, dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run setpriv")
}

fn both(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn ready() -> bool {
    live::ready(&[Need::Root, Need::Tracefs, Need::Tool("setpriv")])
}

/// A directory `nobody` may write into.
fn open_dir(tag: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = std::env::temp_dir().join(format!("latscope-nonroot-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    d
}

#[test]
fn a_traced_timer_as_nobody_says_each_degradation_once() {
    if !ready() {
        return;
    }
    let copy = live::nobody::binary();
    let d = open_dir("timer");
    let out = as_nobody(&copy.path, &d, &["timer", "-c", "0", "-p", "0", "-D", "300ms", "--trace", "-q"]);
    let all = both(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(all.matches("kernel tracing (tracefs)").count(), 1, "tracefs said more than once:\n{all}");
    assert_eq!(all.matches("memory not locked").count(), 1, "mlockall said more than once:\n{all}");
    assert!(all.lines().all(|l| l.matches("to enable:").count() <= 1), "nested advice:\n{all}");
    assert!(!all.contains("no sample to explain") && !all.contains("(0 events"), "{all}");
    assert!(all.contains("Worst wakeups, from the trace: not explained, no trace was taken"), "{all}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_run_as_nobody_says_its_timer_ran_as_sched_other() {
    if !ready() {
        return;
    }
    let copy = live::nobody::binary();
    let d = open_dir("run");
    let out = as_nobody(&copy.path, &d, &["run", "-c", "0", "-D", "200ms", "--report", "rep"]);
    let all = both(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let verdict: String = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Verdict"))
        .take_while(|l| !l.starts_with("skipped:"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(verdict.contains("the timer threads ran as SCHED_OTHER, not SCHED_FIFO"), "{verdict}");
    assert_eq!(all.matches("kernel tracing (tracefs)").count(), 1, "tracefs said more than once:\n{all}");
    assert!(all.lines().all(|l| l.matches("to enable:").count() <= 1), "nested advice:\n{all}");
    // One unit for memory limits: KiB, as `ulimit -l` and the mlockall note say.
    for l in all.lines().filter(|l| l.contains("memory-lock limit") || l.contains("RLIMIT_MEMLOCK")) {
        assert!(l.contains("KiB") || l.contains("unlimited"), "{l}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
