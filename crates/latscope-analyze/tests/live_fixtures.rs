//! Traces captured on this machine with a known injected cause (`scripts/capture-analyze-fixtures.sh`):
//! the analysis must find the cause, name it and measure it within a tolerance. Offline: the fixtures are files.

use latscope_analyze::analysis::{analyze, AnalyzeOptions, VerdictKind};
use latscope_analyze::component::ComponentKind;
use latscope_analyze::hints::HintKind;
use latscope_decode::decode_file;
use latscope_model::{EventKind, Nanos};
use std::path::PathBuf;

fn path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/live").join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `(start_ns, end_ns)` of every spin the injector made (CLOCK_MONOTONIC, the trace's clock).
fn spins() -> Vec<(u64, u64)> {
    read("spinner-cyclictest-spins.txt")
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace().map(|x| x.parse::<u64>());
            match (it.next(), it.next(), it.next()) {
                (Some(Ok(a)), Some(Ok(b)), None) => Some((a, b)),
                _ => None,
            }
        })
        .collect()
}

/// The value after `key` in cyclictest's output (`# Break thread: 11007`).
fn cyclictest_value(key: &str) -> u64 {
    let out = read("spinner-cyclictest-output.txt");
    let line = out.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("no '{key}' in cyclictest output"));
    line[key.len()..].trim().parse().unwrap_or_else(|e| panic!("{line}: {e}"))
}

#[test]
fn cyclictest_blocked_by_a_higher_priority_spinner() {
    let t = decode_file(&path("spinner-cyclictest-trace.txt")).expect("decode");
    // Ground truth from outside the analysis: the injector's pid as the scheduler names it, its spin times,
    // and what cyclictest itself measured when it broke.
    let inject_pid = t
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::SchedSwitch { next_comm, next_pid, next_prio, .. } if &**next_comm == "latscope-inject" => {
                assert_eq!(*next_prio, 2, "SCHED_FIFO 97 is kernel prio 2");
                Some(*next_pid)
            }
            _ => None,
        })
        .expect("the injector runs in the trace");
    let break_tid = cyclictest_value("# Break thread:") as i32;
    let break_us = cyclictest_value("# Break value:");
    let spins = spins();
    let spin = Nanos(spins[0].1 - spins[0].0);

    let a = analyze("spinner", &t, &AnalyzeOptions::default());
    let w = a.wakeups.first().expect("a wakeup");
    assert_eq!((&*w.task.comm, w.task.pid), ("cyclictest", break_tid));
    // The trace's latency (expiry to clock_nanosleep return) is what cyclictest measured, within the
    // text trace's microsecond resolution.
    assert!(w.latency.0.abs_diff(break_us * 1000) <= 10_000, "{} vs {break_us} us", w.latency);

    let blocking: Vec<_> = w.components.iter().filter(|c| c.kind == ComponentKind::BlockingTask).collect();
    let top = blocking.iter().max_by_key(|c| c.duration).expect("a blocking task");
    assert_eq!((top.name.as_str(), top.pid), ("latscope-inject", Some(inject_pid)));
    assert_eq!(top.prio, Some(2));
    // Within 10% of the spin, and of the real overlap: from the wakeup to the end of the spin it fell in.
    let tol = |x: Nanos| x.0 / 10;
    assert!(top.duration.0.abs_diff(spin.0) <= tol(spin), "blocked {} vs spin {}", top.duration, spin);
    // The injector stamps a spin's start after its own wakeup, so the timer may fire a few us before it.
    let (s, e) = spins
        .iter()
        .copied()
        .find(|(s, e)| *s <= w.switch_in.0 && w.waking.0 <= *e)
        .expect("the wait overlapped a spin");
    let overlap = Nanos(e.min(w.switch_in.0) - s.max(w.waking.0));
    assert!(top.duration.0.abs_diff(overlap.0) <= tol(overlap), "blocked {} vs overlap {}", top.duration, overlap);
    // The timer IRQ itself was on time.
    let irq_delay = w.components.iter().find(|c| c.kind == ComponentKind::TimerIrqDelay).map(|c| c.duration);
    assert!(irq_delay.unwrap_or_default() < Nanos::from_us(100), "{irq_delay:?}");
    assert!(w.explanation.contains(&format!("latscope-inject (pid {inject_pid}, SCHED_FIFO/RR prio 97)")));
    assert!(w.explanation.contains("Remedy: move latscope-inject off CPU"));
    assert_eq!(a.verdicts[0].kind, VerdictKind::Wakeup);
}

#[test]
fn busy_loop_gaps_are_rt_throttling() {
    let t = decode_file(&path("rt-throttle-busyloop-trace.txt")).expect("decode");
    let sysctl = read("rt-throttle-busyloop-sysctl.txt");
    let value = |k: &str| -> u64 {
        sysctl.lines().find_map(|l| l.strip_prefix(k)).and_then(|v| v.trim().parse().ok()).expect(k)
    };
    let budget = Nanos::from_us(value("kernel.sched_rt_period_us=") - value("kernel.sched_rt_runtime_us="));
    let a = analyze("busyloop", &t, &AnalyzeOptions::default());
    let th = a.throttling.as_ref().expect("throttling recognised");
    assert_eq!(&*th.gaps[0].task.comm, "sh");
    assert_eq!(th.gaps[0].task.prio, 49, "SCHED_FIFO 50");
    // The longest gap is the period's non-RT share (50 ms by default), within 20%.
    assert!(th.max.0.abs_diff(budget.0) <= budget.0 / 5, "longest gap {} vs budget {}", th.max, budget);
    let v = a.verdicts.iter().find(|v| v.kind == VerdictKind::RtThrottling).expect("verdict");
    assert!(v.sentence.contains("kernel.sched_rt_runtime_us"), "{}", v.sentence);
    assert_eq!(v.hints[0].kind, HintKind::RtThrottling);
    assert!(v.hints[0].remedy.contains("sched_rt_runtime_us=-1"));
    assert_eq!(v.evidence.len(), 2, "the switch-out and the switch back in");
}
