//! Issue 15, items 1-5 and 14: what latscope writes never destroys a user's file. Devices, FIFOs and
//! symlinks are written through (never replaced); a report directory latscope did not write is refused,
//! one it wrote is replaced completely; two outputs on one file, and a bad output path, are refused before
//! measuring; `-` is stdout for every output; a full disk and a SIGKILLed `record` leave nothing behind
//! (the next `record` removes what a killed one left). The runs that need no tracing measure CPU 0 as
//! SCHED_OTHER for a fraction of a second; the `record` ones need root and tracefs.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod bounded;
mod live;

use bounded::wait_bounded;
use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

fn run_in(dir: Option<&Path>, args: &[&str], limit: Duration) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    wait_bounded(cmd.spawn().expect("spawn latscope"), limit, &format!("latscope {}", args.join(" ")))
}

fn run(args: &[&str]) -> Output {
    run_in(None, args, Duration::from_secs(60))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("latscope-issue15-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn fixture(rel: &str) -> String {
    format!("{}/../../fixtures/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// A character device like /dev/null (1,3) or /dev/full (1,7), made here so the real ones are never at risk.
fn mknod_char(path: &Path, minor: u32) {
    let st = Command::new("mknod").args(["-m", "666", s(path), "c", "1", &minor.to_string()]).status().expect("mknod");
    assert!(st.success(), "mknod {}", path.display());
}

fn is_char_device(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

/// A short SCHED_OTHER timer run on CPU 0 with `extra` outputs.
fn timer(extra: &[&str]) -> Output {
    let mut args = vec!["timer", "-c", "0", "-p", "0", "-D", "100ms", "-q"];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn json_goes_through_a_symlink_and_a_device_without_replacing_them() {
    if !live::ready(&[Need::Root]) {
        return;
    }
    let d = scratch("through");
    let target = d.join("target.json");
    std::fs::write(&target, "old").expect("write");
    let link = d.join("link.json");
    std::os::unix::fs::symlink("target.json", &link).expect("symlink");
    let out = timer(&["--json", s(&link)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).expect("link").file_type().is_symlink(), "the symlink was replaced");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&target).expect("target")).expect("JSON");
    assert_eq!(v["kind"], "timer");

    let null = d.join("mynull");
    mknod_char(&null, 3);
    let out = timer(&["--json", s(&null), "--perfetto", s(&null)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(is_char_device(&null), "the device node became a regular file");

    // A device that refuses the write: an error naming it, and the device is still there.
    let full = d.join("myfull");
    mknod_char(&full, 7);
    let out = timer(&["--json", s(&full)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("cannot write --json {}", full.display())) && err.contains("No space left"), "{err}");
    assert!(is_char_device(&full), "the device node was replaced");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_fifo_is_written_through_to_its_reader() {
    let d = scratch("fifo");
    let fifo = d.join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).expect("read the FIFO"))
    };
    let out = timer(&["--json", s(&fifo)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got = reader.join().expect("reader");
    let v: serde_json::Value = serde_json::from_slice(&got).expect("the reader got the JSON");
    assert_eq!(v["kind"], "timer");
    assert!(std::fs::metadata(&fifo).expect("fifo").file_type().is_fifo(), "the FIFO was replaced");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_foreign_report_directory_is_refused_and_a_latscope_one_replaced_completely() {
    let d = scratch("report");
    let mine = d.join("mine");
    std::fs::create_dir(&mine).expect("mkdir");
    std::fs::write(mine.join("index.html"), "my own page").expect("write");
    let timer_result = fixture("cyclictest/vm-6.18-cyclictest-2.40.json");
    let out = run(&["report", &timer_result, "--report", s(&mine)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("holds no latscope report") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(mine.join("index.html")).expect("kept"), "my own page");
    // --force writes into it and keeps the user's other files.
    std::fs::write(mine.join("notes.txt"), "keep me").expect("write");
    let out = run(&["report", &timer_result, "--report", s(&mine), "--force", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(mine.join("notes.txt")).expect("kept"), "keep me");

    // A timer report, then a noise report in the same directory: nothing of the first is left.
    let rep = d.join("rep");
    let out = run(&["report", &timer_result, "--report", s(&rep), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let timer_svgs: Vec<String> = svgs(&rep);
    assert!(!timer_svgs.is_empty());
    let out = run(&["report", &fixture("oslat/vm-6.18-oslat-2.40.json"), "--report", s(&rep), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let noise_svgs = svgs(&rep);
    assert!(!noise_svgs.is_empty());
    let stale: Vec<&String> = timer_svgs.iter().filter(|n| !noise_svgs.contains(n)).collect();
    assert!(stale.iter().all(|n| !rep.join(n).exists()), "stale files of the first report: {stale:?}");
    assert!(timer_svgs.iter().any(|n| !noise_svgs.contains(n)), "the two reports should differ in their plots");
    let _ = std::fs::remove_dir_all(&d);
}

fn svgs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    v.sort();
    v
}

#[test]
fn clashing_outputs_and_bad_paths_are_refused_before_measuring() {
    let d = scratch("clash");
    let a = d.join("a.json");
    let same = format!("{}/./a.json", d.display());
    let started = Instant::now();
    // Each of these would measure for 20 s: they must fail at once, exit 1, one line, no file written.
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec!["--json".into(), s(&a).into(), "--perfetto".into(), same.clone()], "are the same file".into()),
        (vec!["--json".into(), "-".into(), "--perfetto".into(), "-".into()], "are standard output".into()),
        (vec!["--perfetto".into(), "/nonexistent-dir/p.json".into()], "--perfetto /nonexistent-dir/p.json".into()),
        (
            vec!["--report".into(), s(&d.join("r")).into(), "--json".into(), s(&d.join("r/x.json")).into()],
            "inside".into(),
        ),
        (vec!["--json".into(), s(&d).into()], "is a directory".into()),
    ];
    std::fs::write(d.join("plain"), "x").expect("write");
    let mut cases = cases;
    cases.push((vec!["--report".into(), s(&d.join("plain")).into()], "is not a directory".into()));
    for (extra, wanted) in &cases {
        let mut args: Vec<&str> = vec!["timer", "-c", "0", "-p", "0", "-D", "20s", "-q"];
        args.extend(extra.iter().map(String::as_str));
        let t = Instant::now();
        let out = run(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains(wanted.as_str()), "{extra:?}: {err}");
        assert!(t.elapsed() < Duration::from_secs(10), "{extra:?}: refused only after measuring");
    }
    assert!(!a.exists(), "nothing is written when the outputs are refused");
    // `run` checks its --perfetto and --json before measuring too.
    let out = run(&[
        "run",
        "-c",
        "0",
        "-D",
        "20s",
        "--no-trace",
        "--report",
        s(&d.join("run")),
        "--perfetto",
        "/nonexistent-dir/p.json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(40), "the checks waited for a measurement");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn dash_is_stdout_for_every_output() {
    let out = timer(&["--perfetto", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the Perfetto trace on stdout");
    assert!(v["traceEvents"].is_array(), "{v}");
    assert!(text(&out.stderr).contains("latscope timer:"), "the summary goes to stderr");

    let d = scratch("dash");
    let out = run_in(
        Some(&d),
        &["run", "-c", "0", "-p", "0", "-D", "100ms", "--no-trace", "-q", "--report", "rep", "--json", "-"],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the run result on stdout");
    assert_eq!(v["kind"], "run");
    assert!(!d.join("-").exists(), "a file named '-' was written");
    assert!(text(&out.stderr).contains("Verdict"), "the verdict goes to stderr");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn two_runs_started_in_the_same_second_get_their_own_report_directories() {
    let d = scratch("samesecond");
    let spawn = || {
        Command::new(BIN)
            .args(["run", "-c", "0", "-p", "0", "-D", "100ms", "--no-trace", "-q"])
            .current_dir(&d)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (wait_bounded(a, Duration::from_secs(60), "run a"), wait_bounded(b, Duration::from_secs(60), "run b"));
    assert_eq!((a.status.code(), b.status.code()), (Some(0), Some(0)), "{}{}", text(&a.stderr), text(&b.stderr));
    let where_ = |o: &Output| {
        text(&o.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("report written to ").map(str::to_string))
            .expect("report line")
    };
    let (ra, rb) = (where_(&a), where_(&b));
    assert_ne!(ra, rb, "both runs wrote one report directory");
    let dirs = std::fs::read_dir(&d).expect("ls").count();
    assert_eq!(dirs, 2, "one directory per run");
    let _ = std::fs::remove_dir_all(&d);
}

/// `record -o` into a device, a FIFO and a symlink: written through, never replaced.
#[test]
fn record_writes_through_devices_fifos_and_symlinks() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)]) {
        return;
    }
    let d = scratch("record-through");
    let rec = |out: &Path| run(&["record", "-c", "1", "-D", "300ms", "--no-kallsyms", "-o", s(out)]);
    let null = d.join("mynull");
    mknod_char(&null, 3);
    let out = rec(&null);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(is_char_device(&null), "the device node became a regular file");

    let full = d.join("myfull");
    mknod_char(&full, 7);
    let out = rec(&full);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("No space left"), "{}", text(&out.stderr));
    assert!(is_char_device(&full), "the device node was replaced");

    let target = d.join("real.dat");
    let link = d.join("link.dat");
    std::os::unix::fs::symlink("real.dat", &link).expect("symlink");
    let out = rec(&link);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).expect("link").file_type().is_symlink(), "the symlink was replaced");
    assert_eq!(&std::fs::read(&target).expect("the link's target")[..10], b"\x17\x08\x44tracing");

    let fifo = d.join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).expect("read the FIFO"))
    };
    let out = rec(&fifo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(&reader.join().expect("reader")[..10], b"\x17\x08\x44tracing");
    assert!(std::fs::metadata(&fifo).expect("fifo").file_type().is_fifo(), "the FIFO was replaced");

    // `-o -` is stdout; the summary goes to stderr.
    let out = run(&["record", "-c", "1", "-D", "300ms", "--no-kallsyms", "-o", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(&out.stdout[..10], b"\x17\x08\x44tracing");
    assert!(text(&out.stderr).contains("wrote standard output"), "{}", text(&out.stderr));
    assert!(!Path::new("-").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// A full file system: `record` fails with the reason and removes its partial file and its spool.
#[test]
fn record_into_a_full_filesystem_leaves_nothing() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)]) {
        return;
    }
    let d = scratch("full");
    let st = Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs", s(&d)]).status().expect("mount");
    assert!(st.success(), "mount a 1 MiB tmpfs");
    let out = run(&["record", "-c", "1", "-D", "1s", "-o", s(&d.join("r.dat"))]);
    let left: Vec<String> =
        std::fs::read_dir(&d).expect("ls").map(|e| e.expect("entry").file_name().to_string_lossy().into()).collect();
    let _ = Command::new("umount").arg(&d).status();
    let _ = std::fs::remove_dir_all(&d);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("No space left"), "{}", text(&out.stderr));
    assert!(left.is_empty(), "left on the full file system: {left:?}");
}

/// A SIGKILLed `record` leaves its spool; the next `record` beside it removes it and says so.
#[test]
fn the_next_record_removes_what_a_killed_one_left() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)]) {
        return;
    }
    let d = scratch("killed");
    let killed = Command::new(BIN)
        .args(["record", "-c", "1", "-D", "20s", "--no-kallsyms", "-o", s(&d.join("kill.dat"))])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = killed.id();
    let spool = d.join(format!(".kill.dat.latscope-{pid}"));
    let t = Instant::now();
    while !spool.join("cpu1.raw").exists() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let _ = wait_bounded(killed, Duration::from_secs(10), "the killed record");
    assert!(spool.exists(), "the killed record's spool {} should be there to clean", spool.display());

    let out = run(&["record", "-c", "1", "-D", "200ms", "--no-kallsyms", "-o", s(&d.join("next.dat"))]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("removed {}", spool.display())) && err.contains(&format!("process {pid}")), "{err}");
    assert!(!spool.exists(), "the leftover is still there");
    let _ = std::fs::remove_dir_all(&d);
}

/// Bytes under `p` (a file, or a directory's files).
fn size(p: &Path) -> u64 {
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => std::fs::read_dir(p).expect("ls").map(|e| size(&e.expect("entry").path())).sum(),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// Second hour: `run --report DIR --json FILE` into a file system that holds the result but not the report.
/// The result was written after the report and lost with it, and half a report was left; now the result is
/// written first and the half report removed, with the reason.
#[test]
fn run_into_a_full_filesystem_keeps_the_result_and_removes_the_half_report() {
    if !live::ready(&[Need::Root]) {
        return;
    }
    let args = |dir: &Path| {
        let (report, json) = (dir.join("rep"), dir.join("r.json"));
        let v =
            ["run", "-c", "0", "-p", "0", "-D", "1s", "--no-trace", "-q", "--report", s(&report), "--json", s(&json)];
        v.map(String::from)
    };
    // The sizes of this machine's outputs, from a run on a roomy disk.
    let roomy = scratch("roomy");
    let out = run(&args(&roomy).each_ref().map(String::as_str));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (json, report) = (size(&roomy.join("r.json")), size(&roomy.join("rep")));
    assert!(json > 0 && report > json, "json {json} report {report}");
    let _ = std::fs::remove_dir_all(&roomy);
    // Room for the result and half the report.
    let d = scratch("fullrun");
    let room = format!("size={}k", (json + report / 2) / 1024);
    let st = Command::new("mount").args(["-t", "tmpfs", "-o", &room, "tmpfs", s(&d)]).status().expect("mount");
    assert!(st.success(), "mount a tmpfs of {room}");
    let out = run(&args(&d).each_ref().map(String::as_str));
    let kept = size(&d.join("r.json"));
    let report_left = d.join("rep").exists();
    let _ = Command::new("umount").arg(&d).status();
    let _ = std::fs::remove_dir_all(&d);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left") && err.contains("the incomplete report"), "{err}");
    assert!(kept > 0, "the result was lost: {err}");
    assert!(!report_left, "half a report was left: {err}");
}

/// Second hour: a path on a kernel filesystem is refused for what it is ("No such file" said nothing).
#[test]
fn an_output_on_a_kernel_filesystem_says_so() {
    let out = timer(&["--json", "/proc/latscope-x.json"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("/proc is on a proc filesystem, which takes no new files"), "{err}");
    let out = timer(&["--report", "/proc/latscope-report"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("/proc is on a proc filesystem"), "{err}");
}

/// Second hour: `monitor --json` was checked only when the monitor ended (hours later).
#[test]
fn monitor_checks_its_result_file_before_measuring() {
    let t = Instant::now();
    let out = run(&["monitor", "-c", "0", "-p", "0", "-D", "30s", "--json", "/nonexistent-dir/m.json"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--json /nonexistent-dir/m.json"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(10), "refused only after monitoring: {err}");
}
