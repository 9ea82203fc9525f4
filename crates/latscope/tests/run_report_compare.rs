//! `latscope run`, `report` and `compare` end to end: `run -D 3s` prints the verdict and writes the report
//! directory; `report` re-renders saved and imported results; `compare` says "no significant difference"
//! for two alternated runs of one configuration and "significant" against a run with an injected
//! SCHED_FIFO spinner.

use latscope_model::{LatencyHistogram, TimerResult, TimerStats};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod bounded;
mod live;

use bounded::wait_bounded;
use live::Need;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_latscope")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("latscope-run-test-{}-{name}", std::process::id()))
}

fn run(args: &[&str], limit: Duration) -> Output {
    let child =
        Command::new(bin()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn latscope");
    wait_bounded(child, limit, &format!("latscope {}", args.join(" ")))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel).display().to_string()
}

fn check_report_dir(dir: &Path) {
    let html = std::fs::read_to_string(dir.join("index.html")).expect("index.html");
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    let svgs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("report dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    assert!(!svgs.is_empty(), "no SVG in {}", dir.display());
    for p in svgs {
        let svg = std::fs::read_to_string(&p).expect("svg");
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{}: invalid XML: {e}", p.display()));
        assert!(doc.descendants().count() > 5, "{} is nearly empty", p.display());
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        assert!(html.contains(&format!("id=\"plot-{stem}\"")), "{stem} is not on the page");
    }
}

#[test]
fn run_prints_the_verdict_and_writes_the_report() {
    // The live tests measure the same CPUs: one at a time, machine-wide.
    let _turn = live::turn::take();
    let dir = tmp("run");
    let out = run(&["run", "-D", "3s", "--report", dir.to_str().unwrap_or_default()], Duration::from_secs(120));
    let text = stdout(&out);
    assert!(out.status.success(), "exit {:?}\n{text}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("Verdict: "), "{text}");
    assert!(text.contains(&format!("report written to {}", dir.join("index.html").display())), "{text}");
    check_report_dir(&dir);
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).expect("result.json")).expect("json");
    assert_eq!((v["schema"].as_str(), v["kind"].as_str()), (Some("latscope/1"), Some("run")));
    assert!(v["audit"]["findings"].as_array().is_some_and(|f| !f.is_empty()), "audit missing");
    if is_root() {
        assert!(v["timer"]["all"]["count"].as_u64().is_some_and(|n| n > 1000), "timer missing: {}", v["timer"]);
        assert!(v["noise"]["cpus"].as_array().is_some_and(|c| !c.is_empty()), "noise missing");
        assert!(v["causes"].as_array().is_some_and(|c| !c.is_empty()), "no causes");
        // Every cause is typed, and its title in the text is the sentence the JSON carries.
        let typed: latscope_model::RunResult = serde_json::from_value(v.clone()).expect("a typed run result");
        for c in &typed.causes {
            let s = &c.explanation.sentence;
            assert!(!s.is_empty() && text.contains(s.as_str()), "cause {c:?} not titled in the text:\n{text}");
        }
        // The Perfetto export of the traced timer run is well formed and nests.
        if let Ok(bytes) = std::fs::read(dir.join("trace.perfetto.json")) {
            let doc: serde_json::Value = serde_json::from_slice(&bytes).expect("perfetto json");
            let problems = latscope_report::perfetto::check(&doc);
            assert!(problems.is_empty(), "{} problems, first {:?}", problems.len(), problems.first());
            let events = doc["traceEvents"].as_array().expect("traceEvents");
            assert!(events.iter().any(|e| e["cat"] == "worst"), "worst cases not marked");
        }
        // The report re-renders from its own JSON.
        let again = tmp("run-again");
        let out = run(
            &[
                "report",
                dir.join("result.json").to_str().unwrap_or_default(),
                "--report",
                again.to_str().unwrap_or_default(),
            ],
            Duration::from_secs(30),
        );
        assert!(out.status.success() && stdout(&out).contains("Verdict: "), "{}", stdout(&out));
        check_report_dir(&again);
        let _ = std::fs::remove_dir_all(&again);
    } else {
        assert!(text.contains("skipped: "), "no root, but nothing said skipped:\n{text}");
        live::skip("needs root for the measured part; only the unprivileged run was checked");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_imports_cyclictest_and_oslat_files() {
    for rel in [
        "cyclictest/rpi4-nonrt-stress-histofall-4000buckets.log",
        "cyclictest/vm-6.18-cyclictest-2.40-histfile.txt",
        "cyclictest/vm-6.18-cyclictest-2.40-histofall-stdout.txt",
        "cyclictest/vm-6.18-cyclictest-2.40.json",
        "oslat/vm-6.18-oslat-2.40.json",
        "oslat/vm-6.18-oslat-2.40.txt",
        "oslat/oslat-1.10-rhel8.3-rt-4.18-x86_64-7cpu.txt",
    ] {
        let dir = tmp(&rel.replace('/', "_"));
        let out =
            run(&["report", &fixture(rel), "--report", dir.to_str().unwrap_or_default()], Duration::from_secs(30));
        assert!(out.status.success(), "{rel}: {}", String::from_utf8_lossy(&out.stderr));
        check_report_dir(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
    // The rpi4 file's footer: 4 threads, max 717 µs, 17982363 samples in all.
    let dir = tmp("rpi4");
    let out = run(
        &[
            "report",
            &fixture("cyclictest/rpi4-nonrt-stress-histofall-4000buckets.log"),
            "--report",
            dir.to_str().unwrap_or_default(),
        ],
        Duration::from_secs(30),
    );
    assert!(out.status.success());
    let r: TimerResult =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).expect("result.json")).expect("timer json");
    assert_eq!(r.cpus.len(), 4);
    assert_eq!(r.all.count, 17_982_363);
    assert_eq!(r.all.max_ns, 717_000);
    let _ = std::fs::remove_dir_all(&dir);
    // A file latscope does not read fails with exit 1 and names the file.
    let out = run(&["report", "/etc/hostname"], Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/etc/hostname: not a format latscope reads"));
}

/// Merges timer results (chunks of one alternated configuration, all on CPU 0) into one, keeping every
/// chunk's window rows: where in time the late wakeups lay.
fn merge(parts: &[PathBuf], into: &Path) {
    let mut merged: Option<TimerResult> = None;
    let mut hist = LatencyHistogram::new();
    let mut windows = Vec::new();
    for p in parts {
        let r: TimerResult = serde_json::from_slice(&std::fs::read(p).expect("part")).expect("timer json");
        hist.merge(&LatencyHistogram::from_buckets(&r.all.histogram));
        windows.extend(r.cpus.iter().flat_map(|c| c.windows.iter().cloned()));
        merged.get_or_insert(r);
    }
    let mut r = merged.expect("at least one part");
    r.all = TimerStats::from_histogram(&hist, 0, None);
    r.cpus.truncate(1);
    for c in &mut r.cpus {
        c.stats = r.all.clone();
        c.windows = windows.clone();
    }
    std::fs::write(into, serde_json::to_vec(&r).expect("json")).expect("write");
}

/// A and B: the same configuration; C: the same with a SCHED_FIFO 97 thread spinning 1 ms every 10 ms on
/// the measured CPU, starting 100 µs before a timer deadline (both align to the millisecond), so every
/// spin delays one wakeup by ~900 µs. The three alternate in short chunks so all see the same machine.
/// CPU 0: the other live tests inject their loads on CPU 1.
fn take_chunks() -> [Vec<PathBuf>; 3] {
    let path = |n: &str| tmp(n).display().to_string();
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    let timer = |name: &str| {
        let args = ["timer", "-c", "0", "-p", "95", "-D", "500ms", "--window", "100ms", "-q", "--json", &path(name)];
        let out = run(&args, Duration::from_secs(30));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        tmp(name)
    };
    for i in 0..6 {
        a.push(timer(&format!("a-{i}")));
        b.push(timer(&format!("b-{i}")));
        let spinner = Command::new(bin())
            .args(["inject", "--cpu", "0", "--prio", "97", "--spin", "1ms", "--every", "10ms", "--align", "1ms"])
            .args(["--phase", "900us", "-D", "800ms"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn inject");
        std::thread::sleep(Duration::from_millis(100));
        c.push(timer(&format!("c-{i}")));
        let inj = wait_bounded(spinner, Duration::from_secs(30), "latscope inject");
        assert!(inj.status.success(), "inject: {}", String::from_utf8_lossy(&inj.stderr));
    }
    [a, b, c]
}

#[test]
fn compare_same_configuration_and_injected_spinner() {
    if !live::ready(&[Need::Root]) {
        return;
    }
    let _turn = live::turn::take();
    let path = |n: &str| tmp(n).display().to_string();
    let dir = tmp("cmp");
    let [a, b, c] = take_chunks();
    merge(&a, &tmp("a.json"));
    merge(&b, &tmp("b.json"));
    merge(&c, &tmp("c.json"));
    // One configuration twice: no difference, even when the VM stalls in one of them (a burst of late
    // wakeups sits in one or two windows, and the comparison does not take it for a lasting difference).
    let same = run(&["compare", &path("a.json"), &path("b.json")], Duration::from_secs(30));
    let same_text = stdout(&same);
    assert!(same_text.contains("Verdict: no significant difference between A and B"), "{same_text}");
    // The spinner delays a wakeup every 10 ms: worse, significantly, in every window.
    let diff = run(
        &["compare", &path("a.json"), &path("c.json"), "--report", dir.to_str().unwrap_or_default()],
        Duration::from_secs(30),
    );
    let diff_text = stdout(&diff);
    assert!(diff_text.contains("Verdict: B's p99 is ") && diff_text.contains("B is worse, significant"), "{diff_text}");
    check_report_dir(&dir);
    for p in a.iter().chain(&b).chain(&c).cloned().chain(["a.json", "b.json", "c.json"].map(tmp)) {
        let _ = std::fs::remove_file(p);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #15 item 8: a timer result and a noise result measure different quantities: no verdict, exit 1,
/// one line saying why and what to compare instead.
#[test]
fn compare_refuses_results_of_different_kinds() {
    let timer = fixture("cyclictest/vm-6.18-cyclictest-2.40.json");
    let noise = fixture("oslat/vm-6.18-oslat-2.40.json");
    let out = run(&["compare", &timer, &noise], Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stdout(&out).contains("Verdict"), "no verdict: {}", stdout(&out));
    assert!(
        stderr.contains("is a noise result (loop iteration times) but A (")
            && stderr.contains("is a timer result (wakeup latency): they measure different quantities"),
        "{stderr}"
    );
}
