//! `latscope audit` on this machine: what it reports is checked against the live system read directly
//! here, with root and without.

use serde_json::Value;
use std::process::{Command, Output};

mod live;

use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn parse(out: &Output) -> Value {
    let code = out.status.code();
    assert!(matches!(code, Some(0) | Some(2)), "exit {code:?}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON: {e}\n{}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["schema"], "latscope/1");
    assert_eq!(v["kind"], "audit");
    assert!(v["facts"].is_object(), "no facts");
    let findings = v["findings"].as_array().expect("findings array");
    assert!(!findings.is_empty());
    // Exit code 2 exactly when a finding fails.
    let fail = findings.iter().any(|f| f["severity"] == "fail");
    assert_eq!(code == Some(2), fail, "exit code {code:?} vs fail findings");
    v
}

fn finding<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["findings"].as_array().and_then(|a| a.iter().find(|f| f["id"] == id)).unwrap_or_else(|| {
        let ids: Vec<&str> =
            v["findings"].as_array().map(|a| a.iter().filter_map(|f| f["id"].as_str()).collect()).unwrap_or_default();
        panic!("no finding {id}; have {ids:?}")
    })
}

fn evidence_has(f: &Value, pred: impl Fn(&str, &str, &str) -> bool) -> bool {
    f["evidence"].as_array().is_some_and(|a| {
        a.iter().any(|e| {
            pred(e["fact"].as_str().unwrap_or(""), e["value"].as_str().unwrap_or(""), e["from"].as_str().unwrap_or(""))
        })
    })
}

#[test]
fn audit_json_reports_this_machine() {
    let out = Command::new(BIN).args(["audit", "--json", "-"]).output().expect("run latscope");
    let v = parse(&out);
    // The table goes to stderr when JSON takes stdout.
    assert!(String::from_utf8_lossy(&out.stderr).contains("latscope audit:"));

    // Hypervisor: the cpuinfo flag as read here.
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let flagged = cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let h = finding(&v, "platform.hypervisor");
    if flagged {
        assert_eq!(h["severity"], "warn", "{h}");
        assert!(h["title"].as_str().is_some_and(|t| t.starts_with("running under a hypervisor")));
    } else {
        assert_eq!(h["severity"], "ok", "{h}");
    }

    // RT throttling at the live runtime/period.
    let runtime: i64 = read("/proc/sys/kernel/sched_rt_runtime_us").and_then(|s| s.parse().ok()).expect("runtime");
    let period: i64 = read("/proc/sys/kernel/sched_rt_period_us").and_then(|s| s.parse().ok()).expect("period");
    let rt = finding(&v, "sched.rt_throttling");
    assert!(rt["title"].as_str().is_some_and(|t| t.contains(&format!("{runtime}/{period}"))), "{rt}");
    assert_eq!(rt["severity"], if runtime >= 0 && runtime < period { "warn" } else { "ok" });
    assert!(evidence_has(rt, |f, val, from| f == "kernel.sched_rt_runtime_us"
        && val == runtime.to_string()
        && from == "/proc/sys/kernel/sched_rt_runtime_us"));
    assert_eq!(v["facts"]["sched"]["rt_period_us"]["value"], period);

    // Console log level and every console.
    let loglevel =
        read("/proc/sys/kernel/printk").and_then(|s| s.split_whitespace().next().map(str::to_string)).expect("printk");
    let c = finding(&v, "console.loglevel");
    assert!(c["title"].as_str().is_some_and(|t| t.contains(&format!("loglevel {loglevel}"))), "{c}");
    for name in read("/proc/consoles").unwrap_or_default().lines().filter_map(|l| l.split_whitespace().next()) {
        assert!(
            evidence_has(c, |f, _, from| f == format!("console {name}") && from == "/proc/consoles"),
            "{name}: {c}"
        );
    }

    // Isolation as the kernel shows it.
    let isolated = read("/sys/devices/system/cpu/isolated").unwrap_or_default();
    let iso = finding(&v, "isolation.isolcpus");
    if isolated.is_empty() {
        assert_eq!(iso["title"], "no isolated CPUs");
        assert!(evidence_has(iso, |f, val, _| f == "isolated CPUs" && val == "none"));
    }

    // The clocksource.
    let cs = read("/sys/devices/system/clocksource/clocksource0/current_clocksource").expect("clocksource");
    let clock = finding(&v, "clock.source");
    assert!(evidence_has(clock, |f, val, _| f == "current_clocksource" && val == cs), "{clock}");

    // Tracers latscope wants that this kernel lacks, with their CONFIG options.
    if let Some(tracers) = read("/sys/kernel/tracing/available_tracers") {
        let have: Vec<&str> = tracers.split_whitespace().collect();
        for (t, config) in [
            ("irqsoff", "CONFIG_IRQSOFF_TRACER"),
            ("function_graph", "CONFIG_FUNCTION_GRAPH_TRACER"),
            ("timerlat", "CONFIG_TIMERLAT_TRACER"),
            ("osnoise", "CONFIG_OSNOISE_TRACER"),
            ("hwlat", "CONFIG_HWLAT_TRACER"),
        ] {
            let id = format!("tracer.{t}");
            let present = v["findings"].as_array().is_some_and(|a| a.iter().any(|f| f["id"] == id.as_str()));
            assert_eq!(present, !have.contains(&t), "{id}: available_tracers = {tracers}");
            if present {
                let f = finding(&v, &id);
                assert!(f["title"].as_str().is_some_and(|x| x.contains(config)), "{f}");
                assert_eq!(f["fix"][0]["action"], format!("{config}=y"));
                assert_eq!(f["fix"][0]["kind"], "kernel_config");
            }
        }
    } else {
        live::skip("the tracer checks: /sys/kernel/tracing/available_tracers not readable (not root or not mounted)");
    }
}

#[test]
fn fix_script_is_valid_shell_and_table_groups() {
    let dir = std::env::temp_dir().join(format!("latscope-audit-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let script = dir.join("fixes.sh");
    let out = Command::new(BIN).args(["audit", "--fix-script"]).arg(&script).output().expect("run latscope");
    assert!(matches!(out.status.code(), Some(0) | Some(2)), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8_lossy(&out.stdout);
    let pos: Vec<usize> = ["\nWARN (", "\nINFO (", "\nOK ("].iter().filter_map(|h| table.find(h)).collect();
    assert!(pos.len() >= 2 && pos.windows(2).all(|w| w[0] < w[1]), "groups out of order:\n{table}");
    let text = std::fs::read_to_string(&script).expect("script written");
    assert!(text.starts_with("#!/bin/sh\n") && text.contains("latscope applied NOTHING"));
    let check = Command::new("sh").arg("-n").arg(&script).output().expect("sh -n");
    assert!(check.status.success(), "sh -n: {}\n{text}", String::from_utf8_lossy(&check.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn works_without_root() {
    if !is_root() {
        // Already unprivileged: the plain run is the test.
        let v = parse(&Command::new(BIN).args(["audit", "--json", "-"]).output().expect("run"));
        assert_eq!(v["facts"]["as_root"], false);
        live::skip("needs root to compare with a run as nobody; checked as this user only");
        return;
    }
    if !live::ready(&[Need::Tool("setpriv")]) {
        return;
    }
    let copy = live::nobody::binary();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&copy.path)
        .args(["audit", "--json", "-"])
        .output()
        .expect("run setpriv");
    let v = parse(&out);
    assert_eq!(v["facts"]["as_root"], false);
    // Facts that need root are unknown with a reason, not guessed.
    let dma = &v["facts"]["cpus"]["dma_latency"]["current_us"];
    assert!(dma["value"].is_null() && dma["note"].as_str().is_some_and(|n| n.contains("permission denied")), "{dma}");
    let tracers = &v["facts"]["tracing"]["tracers"];
    if std::path::Path::new("/sys/kernel/tracing/available_tracers").exists() {
        assert!(tracers["value"].is_null(), "tracefs should not be readable by nobody: {tracers}");
    }
    let u = finding(&v, "audit.unprivileged");
    assert!(evidence_has(u, |_, _, from| from == "/dev/cpu_dma_latency"), "{u}");
    // World-readable facts are still there.
    assert!(v["facts"]["sched"]["rt_runtime_us"]["value"].is_i64());
    assert!(v["facts"]["clock"]["current"]["value"].is_string());
    finding(&v, "platform.hypervisor");
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/facts").join(name)
}

#[test]
fn judges_saved_facts_offline() {
    // A machine with failures exits 2; a tuned box judged for its isolated CPUs exits 0.
    let cloud = Command::new(BIN)
        .args(["audit", "--json", "-", "--facts"])
        .arg(fixture("cloud_vm.json"))
        .output()
        .expect("run");
    assert_eq!(cloud.status.code(), Some(2), "{}", String::from_utf8_lossy(&cloud.stderr));
    let v = parse(&cloud);
    assert_eq!(finding(&v, "console.loglevel")["severity"], "fail");
    let rt =
        Command::new(BIN).args(["audit", "-c", "2-7", "--facts"]).arg(fixture("rt_box.json")).output().expect("run");
    assert_eq!(rt.status.code(), Some(0), "{}", String::from_utf8_lossy(&rt.stdout));
    // A saved audit result is accepted too (its facts are re-judged).
    let dir = std::env::temp_dir().join(format!("latscope-audit-saved-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let saved = dir.join("audit.json");
    std::fs::write(&saved, &cloud.stdout).expect("write");
    let again = Command::new(BIN).args(["audit", "-q", "--facts"]).arg(&saved).output().expect("run");
    assert_eq!(again.status.code(), Some(2));
    // Bad input: exit 1 with the file and line named.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\n  \"cpus\": 7,\n}\n").expect("write");
    let out = Command::new(BIN).args(["audit", "--facts"]).arg(&bad).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.json") && err.contains("line "), "{err}");
    // A CPU the audited machine did not have.
    let out =
        Command::new(BIN).args(["audit", "-c", "9", "--facts"]).arg(fixture("cloud_vm.json")).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CPU 9"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn judges_kernel_thread_priorities_against_the_given_priority() {
    // The Debian 6.1 PREEMPT_RT guest's facts: its IRQ threads are SCHED_FIFO 50.
    let rt = fixture("debian-6.1-rt-guest.json");
    let at = |prio: &str| {
        let out = Command::new(BIN)
            .args(["audit", "-c", "1", "-p", prio, "--json", "-", "--facts"])
            .arg(&rt)
            .output()
            .expect("run");
        parse(&out)
    };
    let low = at("40");
    let above = finding(&low, "priority.kernel_threads_above");
    assert_eq!(above["severity"], "warn", "{above}");
    assert!(evidence_has(above, |f, v, _| f == "irq/4-ttyS0 (pid 99)" && v == "FIFO 50 on CPUs 1"), "{above}");
    let high = at("95");
    assert!(high["findings"].as_array().expect("findings").iter().all(|f| f["id"] != "priority.kernel_threads_above"));
    assert_eq!(finding(&high, "priority.deferred_work_below")["severity"], "info");
    let out = Command::new(BIN).args(["audit", "-p", "120", "--facts"]).arg(&rt).output().expect("run");
    assert_eq!(out.status.code(), Some(1), "a bad argument exits 1");
    assert!(String::from_utf8_lossy(&out.stderr).contains("-p/--priority '120'"));
}
