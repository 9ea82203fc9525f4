//! latscope measuring beside latscope (issue #15 items 9, 10, 13): a run keeps its other threads off the
//! measured CPU (checked from /proc while it runs) and never names one of its own threads as a culprit
//! without saying it is latscope's; two runs on one CPU warn about each other; a SIGKILLed traced run's
//! instance is removed by the next untraced run; `audit` reports an instance left tracing. Needs root,
//! tracefs and CPU 1; skips with the reason otherwise (fails under LATSCOPE_REQUIRE_LIVE=1).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod live;

use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

fn ready() -> bool {
    live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)])
}

fn tracefs() -> PathBuf {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && f[2] == "tracefs").then(|| PathBuf::from(f[1]))
        })
        .expect("tracefs mounted")
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("latscope-beside-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

/// The threads of process `pid`: (tid, name, allowed CPUs as the kernel lists them).
fn threads(pid: u32) -> Vec<(u32, String, String)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let Ok(tid) = t.file_name().to_string_lossy().parse::<u32>() else { continue };
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default().trim().to_string();
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let allowed = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default();
        if !comm.is_empty() {
            out.push((tid, comm, allowed));
        }
    }
    out
}

/// Whether a kernel CPU list (`0`, `0-1`, `0,2-3`) holds `cpu`.
fn list_has(list: &str, cpu: u32) -> bool {
    list.split(',').filter(|p| !p.is_empty()).any(|p| match p.split_once('-') {
        Some((a, b)) => a.parse::<u32>().is_ok_and(|a| a <= cpu) && b.parse::<u32>().is_ok_and(|b| cpu <= b),
        None => p.parse::<u32>() == Ok(cpu),
    })
}

/// Starts `latscope ARGS` and waits until its measuring thread `measuring` runs.
fn start(args: &[&str], measuring: &str) -> Child {
    let child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let t0 = Instant::now();
    while !threads(child.id()).iter().any(|t| t.1 == measuring) {
        assert!(t0.elapsed() < Duration::from_secs(30), "{args:?}: {measuring} never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// Every (comm, pid) task object in a JSON document, with whether it carries the `latscope` naming.
fn tasks(v: &Value, out: &mut Vec<(String, i64, bool)>) {
    match v {
        Value::Object(m) => {
            if let (Some(Value::String(c)), Some(Value::Number(p))) = (m.get("comm"), m.get("pid")) {
                out.push((c.clone(), p.as_i64().unwrap_or(-1), m.contains_key("latscope")));
            }
            m.values().for_each(|x| tasks(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| tasks(x, out)),
        _ => {}
    }
}

/// Asserts that the result at `json` and the text never name one of `tids` (latscope's non-measuring
/// threads) without saying whose it is (`phrase`).
fn never_unnamed(what: &str, json: &Path, text: &str, tids: &[u32], phrase: &str) {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).expect("json")).expect("parse");
    let mut all = Vec::new();
    tasks(&v, &mut all);
    for (comm, pid, named) in &all {
        if tids.contains(&(*pid as u32)) {
            assert!(named, "{what}: JSON names thread {comm}:{pid} without saying it is latscope's");
        }
    }
    for tid in tids {
        for (at, _) in text.match_indices(&format!("pid {tid}")) {
            let before = &text[at.saturating_sub(200)..at];
            assert!(before.contains(phrase), "{what}: text names pid {tid} without '{phrase}': …{before}pid {tid}");
        }
    }
}

fn finish(child: Child) -> Output {
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 2),
        "latscope failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Issue #15 item 9: while `timer`/`noise -c 1 --trace` run, only the measuring thread may run on CPU 1; the
/// result never names the main thread or a trace reader as a culprit without saying it is latscope's.
#[test]
fn only_the_measuring_thread_runs_on_the_measured_cpu_and_own_threads_are_named() {
    if !ready() {
        return;
    }
    let _turn = live::turn::take();
    let dir = scratch("own");
    for (cmd, measuring) in [("timer", "latscope-t1"), ("noise", "latscope-noise1")] {
        let json = dir.join(format!("{cmd}.json"));
        let args = [cmd, "-c", "1", "--trace", "-D", "3s", "-q", "--json", json.to_str().expect("utf-8")];
        let child = start(&args, measuring);
        // Let the trace readers start too.
        std::thread::sleep(Duration::from_millis(500));
        let seen = threads(child.id());
        assert!(seen.iter().any(|t| t.1.starts_with("latscope-rd")), "{cmd}: no trace reader in {seen:?}");
        for (tid, comm, allowed) in &seen {
            if comm == measuring {
                assert_eq!(allowed, "1", "{cmd}: the measuring thread is pinned to CPU 1");
            } else {
                assert!(!list_has(allowed, 1), "{cmd}: thread {comm} ({tid}) may run on CPU 1: {allowed}");
            }
        }
        let own: Vec<u32> = seen.iter().filter(|t| t.1 != measuring).map(|t| t.0).collect();
        let out = finish(child);
        let text = String::from_utf8_lossy(&out.stdout);
        never_unnamed(cmd, &json, &text, &own, "latscope's own");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #15 item 10: two traced timer runs on CPU 1, 0.3 s apart, each warn (text and JSON) about the other,
/// and neither names the other's threads without saying they are another latscope run's.
#[test]
fn two_runs_on_one_cpu_warn_about_each_other() {
    if !ready() {
        return;
    }
    let _turn = live::turn::take();
    let dir = scratch("two");
    let (ja, jb) = (dir.join("a.json"), dir.join("b.json"));
    let args = |j: &Path| {
        ["timer", "-c", "1", "--trace", "-D", "3s", "-q", "--json", j.to_str().expect("utf-8")].map(String::from)
    };
    let a = start(&args(&ja).each_ref().map(String::as_str), "latscope-t1");
    std::thread::sleep(Duration::from_millis(300));
    let b = Command::new(BIN).args(args(&jb)).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("b");
    let (pa, pb) = (a.id(), b.id());
    std::thread::sleep(Duration::from_millis(500));
    let (ta, tb) = (threads(pa), threads(pb));
    let (oa, ob) = (finish(a), finish(b));
    for (me, other, json, out, other_tids) in [("A", pb, &ja, &oa, &tb), ("B", pa, &jb, &ob, &ta)] {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(json).expect("json")).expect("parse");
        let warning = format!("another latscope run (pid {other})");
        let warned =
            v["warnings"].as_array().is_some_and(|w| w.iter().any(|x| x.as_str().unwrap_or("").contains(&warning)));
        assert!(warned, "{me}: JSON warnings lack '{warning}': {}", v["warnings"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&warning), "{me}: stderr lacks '{warning}': {stderr}");
        let tids: Vec<u32> = other_tids.iter().map(|t| t.0).collect();
        never_unnamed(me, json, &String::from_utf8_lossy(&out.stdout), &tids, "another latscope run");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #15 item 10, found in the second hour: a run that starts and ends while another measures the same
/// CPU was missed by the longer run (it looked only at its start and end). The watcher sees it.
#[test]
fn a_run_that_starts_and_ends_inside_another_is_warned_about() {
    if !ready() {
        return;
    }
    let _turn = live::turn::take();
    let dir = scratch("inside");
    let ja = dir.join("a.json");
    let a = start(&["timer", "-c", "1", "-D", "5s", "-q", "--json", ja.to_str().expect("utf-8")], "latscope-t1");
    std::thread::sleep(Duration::from_millis(1000));
    let b = Command::new(BIN)
        .args(["timer", "-c", "1", "-D", "1500ms", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("b");
    let pb = b.id();
    let ob = b.wait_with_output().expect("wait b");
    assert!(ob.status.code().is_some_and(|c| c == 0 || c == 2), "B failed");
    assert!(a.id() > 0);
    let oa = finish(a);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&ja).expect("json")).expect("parse");
    let warning = format!("another latscope run (pid {pb}) measures CPU 1 too");
    let warned =
        v["warnings"].as_array().is_some_and(|w| w.iter().any(|x| x.as_str().unwrap_or("").contains(&warning)));
    assert!(warned, "A's JSON warnings lack '{warning}': {}", v["warnings"]);
    let stderr = String::from_utf8_lossy(&oa.stderr);
    assert!(stderr.contains(&warning), "A's stderr lacks '{warning}': {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #15 item 9 for `record -c 1`: its own threads (main, trace reader) stay off CPU 1 while it records,
/// and the recorded command still runs where latscope was allowed (CPU 1 included).
#[test]
fn record_keeps_its_threads_off_the_traced_cpu_but_not_the_command() {
    if !ready() {
        return;
    }
    let _turn = live::turn::take();
    let dir = scratch("record");
    let dat = dir.join("r.dat");
    let command = "grep Cpus_allowed_list /proc/self/status; sleep 2";
    let child = Command::new(BIN)
        .args(["record", "-c", "1", "-o", dat.to_str().expect("utf-8"), "--", "sh", "-c", command])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let t0 = Instant::now();
    while !threads(child.id()).iter().any(|t| t.1.starts_with("latscope-rd")) {
        assert!(t0.elapsed() < Duration::from_secs(30), "record's reader never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let seen = threads(child.id());
    for (tid, comm, allowed) in &seen {
        assert!(!list_has(allowed, 1), "record: thread {comm} ({tid}) may run on CPU 1: {allowed}");
    }
    let out = finish(child);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let allowed = stdout.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(str::trim);
    assert!(allowed.is_some_and(|a| list_has(a, 1)), "the command's CPUs: {allowed:?} (stdout: {stdout})");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #15 item 13: a SIGKILLed `timer --trace` leaves its instance tracing; the next untraced `timer`
/// removes it and says so.
#[test]
fn an_untraced_run_removes_the_instance_a_killed_traced_run_left() {
    if !ready() {
        return;
    }
    let _turn = live::turn::take();
    let root = tracefs();
    let mut child = start(&["timer", "-c", "1", "--trace", "-D", "60s", "-q"], "latscope-t1");
    let pid = child.id();
    let inst = root.join("instances").join(format!("latscope-{pid}"));
    let t0 = Instant::now();
    while std::fs::read_to_string(inst.join("tracing_on")).unwrap_or_default().trim() != "1" {
        assert!(t0.elapsed() < Duration::from_secs(20), "the instance of pid {pid} never started tracing");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert_eq!(std::fs::read_to_string(inst.join("tracing_on")).unwrap_or_default().trim(), "1", "still tracing");
    let out = Command::new(BIN).args(["timer", "-c", "1", "-D", "200ms", "-q"]).output().expect("timer");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "untraced timer: {stderr}");
    assert!(!inst.exists(), "the killed run's instance is still there");
    assert!(stderr.contains(&format!("removed instance latscope-{pid} left by dead process {pid}")), "{stderr}");
}

/// An instance this test made, removed on drop (also when an assertion fails).
struct Foreign(PathBuf);

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("tracing_on"), "0");
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Issue #15 item 13: `audit` reports a tracing instance that is not latscope's as a latency risk.
#[test]
fn audit_reports_a_foreign_instance_left_tracing() {
    if !live::ready(&[Need::Root, Need::Tracefs]) {
        return;
    }
    let name = format!("beside-test-{}", std::process::id());
    let inst = Foreign(tracefs().join("instances").join(&name));
    std::fs::create_dir(&inst.0).expect("mkdir instance");
    // One rare event on CPU 0 only: tracing on, little cost to the machine.
    std::fs::write(inst.0.join("tracing_cpumask"), "1").expect("cpumask");
    std::fs::write(inst.0.join("events/sched/sched_process_exec/enable"), "1").expect("enable");
    let out = Command::new(BIN).args(["audit", "--json", "-", "-q"]).output().expect("audit");
    let v: Value = serde_json::from_slice(&out.stdout).expect("audit JSON");
    let findings = v["findings"].as_array().expect("findings");
    let id = format!("tracing.active.{name}");
    let f = findings.iter().find(|f| f["id"] == id.as_str()).unwrap_or_else(|| panic!("no {id}: {findings:?}"));
    assert_eq!(f["severity"], "warn", "{f}");
    assert!(f["title"].as_str().unwrap_or("").contains(&format!("instance {name} is tracing (1 event(s))")), "{f}");
    assert!(f["evidence"].to_string().contains("sched:sched_process_exec"), "{f}");
    drop(inst);
    let out = Command::new(BIN).args(["audit", "--json", "-", "-q"]).output().expect("audit");
    let v: Value = serde_json::from_slice(&out.stdout).expect("audit JSON");
    assert!(!v["findings"].to_string().contains(&id), "the finding went with the instance");
}
