//! Issue 15, items 12, 18 and 19: messages that say what is wrong and what to do, exit codes as shells
//! expect (a failed recorded command, SIGINT 130, SIGTERM 143 with the partial result written), intervals
//! the machine cannot keep refused or warned about, and the same flags and words in every command. Runs
//! measure CPU 0 as SCHED_OTHER for a fraction of a second; the `record` ones need root and tracefs.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod bounded;
mod live;

use bounded::wait_bounded;
use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

fn run(args: &[&str]) -> Output {
    let child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    wait_bounded(child, Duration::from_secs(60), &format!("latscope {}", args.join(" ")))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixture(rel: &str) -> String {
    format!("{}/../../fixtures/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("latscope-issue15m-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

/// Item 18: a decode filter that matches nothing in the trace is an error naming what the trace holds.
#[test]
fn decode_filters_that_match_nothing_are_errors() {
    let trace = fixture("events/rpi-4.19-armv7-irq-softirq-nop.txt");
    let out = run(&["decode", &trace, "--events", "nosuch"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--events: nosuch is not in the trace (its events: ") && err.contains("irq_handler_entry"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let out = run(&["decode", &trace, "--cpu", "5", "--stats"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--cpu: the trace has no event on CPU 5 (its CPUs: "), "{err}");
    // A filter that matches part of the list prints what matched and warns about the rest.
    let out = run(&["decode", &trace, "--events", "irq_handler_entry,nosuch"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("irq_handler_entry"));
    assert!(text(&out.stderr).contains("nosuch is not in the trace"), "{}", text(&out.stderr));
}

/// Item 18: a result of a newer schema asks for an upgrade.
#[test]
fn a_newer_schema_asks_for_an_upgrade() {
    let d = scratch("schema");
    let json = std::fs::read_to_string(fixture("cyclictest/vm-6.18-cyclictest-2.40.json")).expect("fixture");
    // Turn an imported cyclictest result into a latscope one of schema 2.
    let out = run(&[
        "report",
        &fixture("cyclictest/vm-6.18-cyclictest-2.40.json"),
        "--report",
        d.join("r").to_str().expect("utf-8"),
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ours = std::fs::read_to_string(d.join("r/result.json")).expect("result.json");
    assert!(!json.is_empty() && ours.contains("\"latscope/1\""));
    let newer = d.join("newer.json");
    std::fs::write(&newer, ours.replace("\"latscope/1\"", "\"latscope/2\"")).expect("write");
    let out = run(&["report", newer.to_str().expect("utf-8")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("written by a newer latscope") && err.contains("upgrade latscope"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Item 18: SIGINT and SIGTERM end a run with 130 and 143, the summary and the JSON still written.
#[test]
fn stop_signals_exit_130_and_143_with_the_partial_result() {
    let d = scratch("signals");
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let json = d.join(format!("{sig}.json"));
        let child = Command::new(BIN)
            .args(["timer", "-c", "0", "-p", "0", "-q", "--json"])
            .arg(&json)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        std::thread::sleep(Duration::from_millis(700));
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let out = wait_bounded(child, Duration::from_secs(10), "timer after a stop signal");
        assert_eq!(out.status.code(), Some(code), "signal {sig}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("(interrupted)"), "{}", text(&out.stdout));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("the JSON")).expect("JSON");
        assert_eq!(v["stopped_by"], "signal", "{}", v["stopped_by"]);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Item 12: overruns past a few percent of the wakeups are said, in the text and the JSON. A SCHED_OTHER
/// thread's sleeps get the default 50 us timer slack, so a 20 us period cannot be kept.
#[test]
fn an_interval_that_is_not_kept_is_said() {
    let out = run(&["timer", "-c", "0", "-p", "0", "-i", "20us", "-D", "300ms", "-q", "--json", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let warnings: Vec<&str> = v["warnings"].as_array().expect("warnings").iter().filter_map(|w| w.as_str()).collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("missed periods (overruns)") && w.contains("the 20us interval was not kept")),
        "{warnings:?}"
    );
    assert!(text(&out.stderr).contains("the 20us interval was not kept"), "{}", text(&out.stderr));
    // A 1 ms period on a quiet CPU is kept: no such warning.
    let out = run(&["timer", "-c", "0", "-p", "0", "-D", "300ms", "-q", "--json", "-"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let all = v["warnings"].to_string();
    let overruns = v["cpus"][0]["overruns"].as_u64().unwrap_or(0);
    let count = v["cpus"][0]["count"].as_u64().unwrap_or(1);
    assert_eq!(all.contains("was not kept"), overruns * 50 > count, "{all}");
}

/// Item 19: every measuring command takes the same outputs and quiet flag; `-i` lists every unit.
#[test]
fn every_command_takes_the_same_flags() {
    let help = |cmd: &str| text(&run(&[cmd, "--help"]).stdout);
    for cmd in ["timer", "noise", "run", "analyze"] {
        let h = help(cmd);
        for flag in ["--json", "--report", "--perfetto", "--force", "-q, --quiet"] {
            assert!(h.contains(flag), "{cmd} --help lacks {flag}:\n{h}");
        }
    }
    assert!(help("run").contains("--threshold"), "run --help lacks --threshold");
    assert!(help("record").contains("--json"), "record --help lacks --json");
    assert!(help("compare").contains("-q, --quiet"), "compare --help lacks -q");
    let timer = help("timer");
    let interval = timer.lines().skip_while(|l| !l.contains("--interval")).take(3).collect::<Vec<_>>().join(" ");
    assert!(interval.contains("ns, us, ms, s, m, h"), "{interval}");
}

/// Item 19: one wording for a written report, and `analyze -q` prints nothing.
#[test]
fn a_written_report_is_said_one_way() {
    let d = scratch("wording");
    let trace = fixture("events/rpi-4.19-armv7-irq-softirq-nop.txt");
    let a = d.join("a");
    let out = run(&["analyze", &trace, "-q", "--report", a.to_str().expect("utf-8")]);
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "analyze -q printed: {}", text(&out.stdout));
    assert!(text(&out.stderr).contains(&format!("latscope: report written to {}", a.join("index.html").display())));
    let cyc = fixture("cyclictest/vm-6.18-cyclictest-2.40.json");
    let c = d.join("c");
    let out = run(&["compare", &cyc, &cyc, "-q", "--report", c.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "compare -q printed: {}", text(&out.stdout));
    assert!(text(&out.stderr).contains(&format!("latscope: report written to {}", c.join("index.html").display())));
    let r = d.join("r");
    let out = run(&["report", &cyc, "--report", r.to_str().expect("utf-8")]);
    assert!(text(&out.stdout).contains(&format!("report written to {}", r.join("index.html").display())));
    let _ = std::fs::remove_dir_all(&d);
}

/// Item 18: `record -D 0s` is refused like `timer -D 0s`; `record -- false` exits with the command's
/// failure; item 19: `record --json` says what it recorded.
#[test]
fn record_refuses_zero_and_passes_on_the_commands_failure() {
    let d = scratch("record");
    let never = d.join("never.dat");
    let out = run(&["record", "-o", never.to_str().expect("utf-8"), "-D", "0s"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("-D/--duration must be longer than 0"), "{}", text(&out.stderr));
    assert!(!never.exists());
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)]) {
        return;
    }
    let dat = d.join("f.dat");
    let out = run(&[
        "record",
        "-c",
        "1",
        "--no-kallsyms",
        "-o",
        dat.to_str().expect("utf-8"),
        "--json",
        "-",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the recording's JSON on stdout");
    assert_eq!(v["kind"], "record");
    assert_eq!(v["command_status"], "exit status: 3");
    assert_eq!(v["cpus"][0]["cpu"], 1);
    assert!(v["bytes"].as_u64().is_some_and(|b| b > 4096), "{v}");
    assert!(text(&out.stderr).contains("wrote "), "the summary goes to stderr");
    let out = run(&["record", "-c", "1", "--no-kallsyms", "-o", dat.to_str().expect("utf-8"), "--", "false"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

/// Second hour: `-` reads the trace from standard input for `analyze` and `decode` (it was taken as a file
/// named `-`), text and `.dat` alike; `--diff - -` is refused.
#[test]
fn dash_reads_the_trace_from_standard_input() {
    use std::io::Write;
    let piped = |args: &[&str], input: &str| -> Output {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let bytes = std::fs::read(input).expect("fixture");
        let mut stdin = child.stdin.take().expect("stdin");
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
        let out = wait_bounded(child, Duration::from_secs(60), &format!("latscope {}", args.join(" ")));
        feeder.join().expect("feeder");
        out
    };
    let trace = fixture("live/nohz-idle-moved-tick-trace.txt");
    let from_file = run(&["analyze", &trace, "--brief"]);
    let from_stdin = piped(&["analyze", "-", "--brief"], &trace);
    assert!(from_stdin.status.success(), "{}", text(&from_stdin.stderr));
    let body = |o: &Output| text(&o.stdout).lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&from_stdin), body(&from_file), "the same analysis from a pipe");
    assert!(text(&from_stdin.stdout).starts_with("latscope analyze: standard input"), "{}", text(&from_stdin.stdout));
    let dat = fixture("dat/buildroot-5.15.18-i686-sched_switch-v6.dat");
    let stats_file = run(&["decode", &dat, "--stats"]);
    let stats_stdin = piped(&["decode", "-", "--stats"], &dat);
    assert!(stats_stdin.status.success(), "{}", text(&stats_stdin.stderr));
    assert_eq!(body(&stats_stdin), body(&stats_file), "the same .dat summary from a pipe");
    let both = run(&["analyze", "--diff", "-", "-"]);
    assert_eq!(both.status.code(), Some(1));
    assert!(text(&both.stderr).contains("standard input holds one trace"), "{}", text(&both.stderr));
}

/// Second hour: a JSON error said its column twice ("at line 1 column 38 (column 38)").
#[test]
fn a_json_error_names_its_line_and_column_once() {
    let d = scratch("json-col");
    let f = d.join("k.json");
    std::fs::write(&f, "{\"schema\":\"latscope/1\",\"kind\":\"banana\"}\n").expect("write");
    let out = run(&["compare", f.to_str().expect("utf-8"), f.to_str().expect("utf-8")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("k.json:1: unknown variant `banana`"), "{err}");
    assert_eq!(err.matches("column").count(), 1, "{err}");
    assert!(!err.contains("at line"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
