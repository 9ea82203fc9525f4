//! `latscope record` writes a trace-cmd `.dat` that `trace-cmd report` reads, with the recorded CPU's
//! scheduler events in it. Live tests need root and tracefs and skip with a reason otherwise (fail under
//! LATSCOPE_REQUIRE_LIVE=1).

use std::path::PathBuf;
use std::process::Command;

mod live;

use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

fn can_trace() -> bool {
    live::ready(&[Need::Root, Need::Tracefs])
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("latscope-record-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

#[test]
fn records_cpu1_while_a_command_runs_and_trace_cmd_reads_it() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)]) {
        return;
    }
    let dir = scratch("cmd");
    let file = dir.join("x.dat");
    // `taskset` keeps the command's sleeps on CPU 1 so its wakeups are in the recording.
    let out = Command::new(BIN)
        .args(["record", "-o"])
        .arg(&file)
        .args(["-c", "1", "-D", "1s", "--", "taskset", "-c", "1", "sleep", "0.5"])
        .output()
        .expect("run latscope record");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "record failed: {stderr}");
    assert!(stdout.contains("command: exit status: 0"), "{stdout}");
    // Our own decoding of the pages found scheduler switches.
    assert!(stdout.contains("sched_switch "), "{stdout}");
    let bytes = std::fs::read(&file).expect("the .dat exists");
    assert_eq!(&bytes[..10], b"\x17\x08\x44tracing");
    assert_eq!(&bytes[10..12], b"6\0");

    if let Some(why) = live::require::missing(&[Need::Tool("trace-cmd")]) {
        let _ = std::fs::remove_dir_all(&dir);
        live::skip(format!("{why}: the file was checked by latscope only"));
        return;
    }
    let rep = Command::new("trace-cmd").arg("report").arg(&file).output().expect("trace-cmd report");
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(rep.status.success(), "trace-cmd report failed: {}", String::from_utf8_lossy(&rep.stderr));
    let switches_cpu1 = text.lines().filter(|l| l.contains("[001]") && l.contains("sched_switch:")).count();
    let lines_cpu0 = text.lines().filter(|l| l.contains("[000]")).count();
    assert!(switches_cpu1 > 0, "no sched_switch on CPU 1 in:\n{}", &text[..text.len().min(2000)]);
    assert_eq!(lines_cpu0, 0, "only CPU 1 was recorded");
    // The command's own sleep shows up: `sleep` ran on CPU 1 and was switched out.
    assert!(text.lines().any(|l| l.contains("sched_switch:") && l.contains("sleep:")), "sleep not seen on CPU 1");
    // The clock and the per-CPU stats went into the options.
    let stat = Command::new("trace-cmd").args(["report", "--stat"]).arg(&file).output().expect("trace-cmd --stat");
    let stat = String::from_utf8_lossy(&stat.stdout);
    assert!(stat.contains("CPU: 1"), "{stat}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--compress` (#18 item 5): a v7 zstd `.dat` that the real `trace-cmd report` reads whole: every event and
/// kernel stack latscope counted is in its output, the same as latscope decodes; the summary states the
/// data rate and the compression.
#[test]
fn a_compressed_recording_is_v7_zstd_and_trace_cmd_reads_every_event() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1), Need::Tool("trace-cmd")]) {
        return;
    }
    let dir = scratch("compress");
    let file = dir.join("z.dat");
    let out = Command::new(BIN)
        .args(["record", "--compress", "-o"])
        .arg(&file)
        .args(["-c", "1", "-D", "1s", "--", "taskset", "-c", "1", "sleep", "0.5"])
        .output()
        .expect("run latscope record");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "record failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("trace-cmd .dat v7, zstd"), "{stdout}");
    assert!(stdout.contains("MB of pages in") && stdout.contains("compressed"), "{stdout}");
    let bytes = std::fs::read(&file).expect("the .dat exists");
    assert_eq!(&bytes[..12], b"\x17\x08\x44tracing7\0");
    assert_eq!(&bytes[18..23], b"zstd\0");
    // Events (and stacks) per CPU as the summary's table counts them.
    let counted: u64 = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("CPU "))
        .skip(1)
        .map_while(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5).then(|| f[2].parse::<u64>().ok()).flatten()
        })
        .sum();
    assert!(counted > 100, "{stdout}");

    let rep = Command::new("trace-cmd").arg("report").arg(&file).output().expect("trace-cmd report");
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(rep.status.success(), "trace-cmd report failed: {}", String::from_utf8_lossy(&rep.stderr));
    assert!(rep.stderr.is_empty(), "trace-cmd report complained: {}", String::from_utf8_lossy(&rep.stderr));
    // One line per event and per `<stack trace >` (its `=> fn` frame lines and the `cpus=` header aside).
    let lines = text.lines().filter(|l| !l.trim_start().starts_with("=>") && !l.starts_with("cpus=")).count();
    assert_eq!(lines as u64, counted, "trace-cmd report shows {lines} entries, latscope counted {counted}");
    assert!(text.lines().any(|l| l.contains("sched_switch:") && l.contains("sleep:")), "sleep not seen on CPU 1");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_events_are_named_and_the_recording_continues() {
    if !can_trace() {
        return;
    }
    let dir = scratch("missing");
    let file = dir.join("y.dat");
    let out = Command::new(BIN)
        .args(["record", "-o"])
        .arg(&file)
        .args(["-c", "0", "-D", "200ms", "--no-kallsyms", "--events", "sched/sched_switch,nosuchsys/nosuchevent"])
        .output()
        .expect("run latscope record");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("missing event nosuchsys/nosuchevent: not in this kernel's tracefs"), "{stderr}");
    assert!(stderr.contains("tracing 1 event on CPU 0"), "{stderr}");
    assert!(stdout.contains("wrote"), "{stdout}");
    assert!(file.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_privileges_it_says_what_is_missing_and_how_to_fix_it() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Tool("setpriv")]) {
        return;
    }
    let copy = live::nobody::binary();
    let dir = scratch("nopriv");
    let mut perm = std::fs::metadata(&dir).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o777);
    std::fs::set_permissions(&dir, perm).expect("chmod");
    // As `nobody`: tracefs (mode 0700) is out of reach.
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&copy.path)
        .args(["record", "-o"])
        .arg(dir.join("n.dat"))
        .args(["-D", "100ms"])
        .output()
        .expect("run setpriv latscope record");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("missing kernel tracing (tracefs)"), "{stderr}");
    assert!(stderr.contains("permission denied"), "{stderr}");
    assert!(stderr.contains("to enable: run as root"), "{stderr}");
    assert!(!dir.join("n.dat").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_fail_with_a_clear_message() {
    let out = Command::new(BIN)
        .args(["record", "-o", "/nonexistent-dir/z.dat", "-D", "10 parsecs"])
        .output()
        .expect("run latscope record");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("-D/--duration '10 parsecs'"), "{stderr}");
    let out = Command::new(BIN).args(["record", "-o", "/nonexistent-dir/z.dat", "-D", "1s"]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent-dir"), "{stderr}");
}
