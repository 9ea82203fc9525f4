//! The same capture, live and offline: `latscope record` runs around a traced `latscope timer` while a
//! SCHED_FIFO 97 spinner delays CPU 1; `latscope analyze FILE` of the recording must find the same
//! wakeups with the same blocking task (comm, pid) and the same durations as the live run's explanation.
//! Needs root, tracefs and CPU 1; skips with the reason otherwise (fails under
//! LATSCOPE_REQUIRE_LIVE=1).

use latscope_model::{CauseKind, Explanation, TimerResult};
use serde_json::Value;
use std::process::{Command, Stdio};

mod live;

use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// A task part's pid and comm in the analysis JSON.
fn task(c: &Value) -> (Option<i64>, Option<&str>) {
    let t = &c["culprit"]["task"];
    (t["pid"].as_i64(), t["comm"].as_str())
}

/// The time the analysis JSON's parts blame on task `pid`.
fn blocking(components: &[Value], pid: i64) -> u64 {
    components
        .iter()
        .filter(|c| c["cause"] == "blocking_task" && task(c).0 == Some(pid))
        .filter_map(|c| c["magnitude_ns"].as_u64())
        .sum()
}

/// The time the live explanation gives to interrupts (their handlers, vectors, softirqs, NMIs).
fn interrupts_live(shares: &[Explanation]) -> u64 {
    use CauseKind::{Irq, IrqHandler, Nmi, Softirq, Vector};
    shares.iter().filter(|s| matches!(s.cause, Irq | IrqHandler | Vector | Softirq | Nmi)).map(|s| s.magnitude.0).sum()
}

/// The time the analysis JSON's parts give to interrupts, as [`interrupts_live`] counts them.
fn interrupts_offline(components: &[Value]) -> u64 {
    const CAUSES: [&str; 5] = ["irq", "irq_handler", "vector", "softirq", "nmi"];
    components
        .iter()
        .filter(|c| c["cause"].as_str().is_some_and(|k| CAUSES.contains(&k)))
        .filter_map(|c| c["magnitude_ns"].as_u64())
        .sum()
}

#[test]
fn recorded_capture_analysed_offline_matches_the_live_explanation() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)]) {
        return;
    }
    let _turn = live::turn::take();
    let dir = std::env::temp_dir().join(format!("latscope-trace-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let dat = dir.join("run.dat");
    let json = dir.join("timer.json");
    let mut injector = Command::new(BIN)
        .args(["inject", "--cpu", "1", "--prio", "97", "--spin", "700us", "--every", "37ms"])
        .args(["--align", "1ms", "--phase", "950us", "-D", "7s"])
        .stdout(Stdio::null())
        .spawn()
        .expect("start latscope inject");
    let rec = Command::new(BIN)
        .args(["record", "-o"])
        .arg(&dat)
        .args(["-c", "1", "--no-kallsyms", "--", BIN, "timer", "-c", "1", "-p", "95", "-D", "5s", "--trace"])
        .args(["--top", "100", "-q", "--json"])
        .arg(&json)
        .output()
        .expect("run latscope record");
    let _ = injector.wait();
    let rec_out = String::from_utf8_lossy(&rec.stdout);
    assert!(rec.status.success(), "record failed: {rec_out}{}", String::from_utf8_lossy(&rec.stderr));
    let live: TimerResult = serde_json::from_str(&std::fs::read_to_string(&json).expect("timer json")).expect("json");
    let worst = live.trace.as_ref().map(|t| t.worst.as_slice()).unwrap_or_default();
    let tid = i64::from(worst.first().expect("an explained wakeup").tid);

    let an = Command::new(BIN)
        .arg("analyze")
        .arg(&dat)
        .args(["--task", &tid.to_string(), "--top", "400", "--json", "-", "--report"])
        .arg(dir.join("report"))
        .arg("--perfetto")
        .arg(dir.join("trace.perfetto.json"))
        .output()
        .expect("run latscope analyze");
    assert!(an.status.success(), "analyze failed: {}", String::from_utf8_lossy(&an.stderr));
    let offline: Value = serde_json::from_slice(&an.stdout).expect("analysis json");
    let wakeups = offline["wakeups"].as_array().expect("wakeups");
    // The offline analysis also renders as a report directory and a Perfetto trace.
    assert!(dir.join("report/index.html").is_file() && dir.join("report/analysis.json").is_file());
    let perfetto: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("trace.perfetto.json")).expect("perfetto"))
            .expect("json");
    assert!(perfetto["traceEvents"].as_array().is_some_and(|e| e.len() > 100), "empty Perfetto trace");
    assert!(!wakeups.is_empty(), "the recording has no wakeup of tid {tid}");

    // The recording analysed in windows (#18: two streamed passes, one window held) gives the same 20 worst
    // wakeups of the thread as the whole-trace analysis: the same breakdowns, with the file's event indices.
    let json_of = |extra: &[&str]| -> Value {
        let out = Command::new(BIN)
            .arg("analyze")
            .arg(&dat)
            .args(["--task", &tid.to_string(), "--top", "20", "--json", "-", "-q"])
            .args(extra)
            .output()
            .expect("run latscope analyze");
        assert!(out.status.success(), "analyze {extra:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("analysis json")
    };
    // Whole whatever its size (by default a recording of more than 2^17 records is analysed in windows too).
    let (whole, windowed) = (json_of(&["--max-memory", "64G"]), json_of(&["--windows"]));
    assert_eq!(whole.get("windowed"), None, "the recording was not analysed whole");
    assert!(windowed["windowed"]["windows"].as_array().is_some_and(|w| !w.is_empty()), "not analysed in windows");
    assert!(whole["wakeups"].as_array().is_some_and(|w| w.len() == 20), "{}", whole["wakeups"]);
    assert_eq!(windowed["wakeups"], whole["wakeups"], "the windows' worst wakeups are not the whole trace's");

    let mut compared = 0;
    for w in worst {
        if !w.found() || w.switch_in_ns.0 == 0 {
            continue;
        }
        let main = w.shares.iter().filter(|s| s.cause == CauseKind::BlockingTask).max_by_key(|s| s.magnitude);
        let Some(main) = main.filter(|m| m.culprit.task.as_ref().is_some_and(|t| t.comm == "latscope-inject")) else {
            continue;
        };
        let pid = i64::from(main.culprit.pid().expect("pid"));
        // The same wakeup in the recording: the same timer expiry (a field of `hrtimer_start`, the same value
        // in both instances; the timer's period is 1 ms).
        let expiry = w.expected_ns.0;
        let off = wakeups
            .iter()
            .filter(|o| o["start"].as_u64().is_some_and(|s| s.abs_diff(expiry) < 500_000))
            .min_by_key(|o| o["start"].as_u64().map(|s| s.abs_diff(expiry)))
            .unwrap_or_else(|| panic!("the live wakeup of the timer expiring at {expiry} is not in the recording"));
        assert_eq!(off["task"]["pid"].as_i64(), Some(tid));
        // Each instance stamps a tracepoint hit when it writes it, one after the other: the two stamps of one
        // event differ by ~0.1–0.3 µs, and by as much as the hypervisor stalls the CPU between the two writes
        // (2.7 µs, once 157 µs, seen here). The blocked time can differ by the two ends' differences.
        let stamp = |key: &str, live: u64| off[key].as_u64().map_or(u64::MAX, |o| o.abs_diff(live));
        let (d_switch, d_woken) = (stamp("switch_in", w.switch_in_ns.0), stamp("waking", w.woken_ns.0));
        assert!(d_switch < 1_000_000 && d_woken < 1_000_000, "not the same wakeup: {off} LIVE {w:?}");
        let comps = off["components"].as_array().expect("components");
        let top = comps
            .iter()
            .filter(|c| c["cause"] == "blocking_task")
            .max_by_key(|c| c["magnitude_ns"].as_u64())
            .expect("offline blocking task");
        assert_eq!(task(top), (Some(pid), Some("latscope-inject")), "{off} LIVE {w:?}");
        let live_ns = main.magnitude.0;
        let off_ns = blocking(comps, pid);
        // An interrupt inside the spin is bounded by events that each instance stamps too: when the CPU is
        // stalled between the two writes of its entry (once 116 us here, between the recording's
        // local_timer_entry and its stack trace), that time is the interrupt's in one instance and the
        // spinner's in the other. Whatever moved between the interrupts and the task is allowed, no more.
        let moved = interrupts_live(&w.shares).abs_diff(interrupts_offline(comps));
        assert!(
            live_ns.abs_diff(off_ns) as f64 <= 0.05 * live_ns as f64 + 2_000.0 + (d_switch + d_woken + moved) as f64,
            "blocked {live_ns} ns live vs {off_ns} ns offline (the instances' stamps differ by {d_switch} ns at \
             the switch-in, {d_woken} ns at the wakeup; {moved} ns moved between interrupts and tasks)\n\
             OFFLINE {off}\nLIVE {w:?}"
        );
        compared += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    if compared == 0 {
        let smallest = worst.iter().map(|w| w.sample_latency_ns.0).min().unwrap_or(0);
        // The machine's own noise hid the spinner from the 100 worst wakeups (this VM alone has 10-20 wakeups
        // above 1 ms in 5 s, which is why the list is that long): nothing to compare, which is not a pass (a
        // failure under LATSCOPE_REQUIRE_LIVE).
        if smallest > 800_000 {
            live::skip(format!("the machine's own noise ({smallest} ns and worse) hides the 700 µs spinner"));
            return;
        }
    }
    assert!(compared >= 2, "only {compared} spinner wakeups to compare: {:?}", live.trace);
}
