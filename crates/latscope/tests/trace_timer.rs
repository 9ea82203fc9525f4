//! Ground truth for `latscope timer --trace`: a SCHED_FIFO 97 thread spins 700 µs every 37 ms on CPU 1
//! (started 50 µs before a timer deadline, so each spin delays one wakeup by a known ~650 µs), and the
//! traced timer run must name that thread (comm and pid) as the cause of the wakeups it hit, with the
//! blocked time within 10% of the real overlap (less the interrupts that hit it) and a small timer IRQ delay. Needs root, tracefs and CPU 1;
//! skips with the reason otherwise (fails under
//! LATSCOPE_REQUIRE_LIVE=1).

use latscope_model::{CauseKind, Explanation, SampleMatch, TimerResult, TracedWakeup};
use serde_json::Value;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod live;

use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// The injector process and its spinning thread's id (the `pid` trace events show).
fn start_injector(duration: &str) -> (Child, i32) {
    let mut child = Command::new(BIN)
        .args(["inject", "--cpu", "1", "--prio", "97", "--spin", "700us", "--every", "37ms"])
        .args(["--align", "1ms", "--phase", "950us", "--delay", "200ms", "-D", duration, "--times"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start latscope inject");
    for _ in 0..200 {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id())).into_iter().flatten().flatten();
        for t in tasks {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.trim() == "latscope-inject" {
                let tid = t.file_name().to_string_lossy().parse().expect("tid");
                return (child, tid);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the injector thread did not appear");
}

/// The spins as (start, end) CLOCK_MONOTONIC ns, from `inject --times`.
fn spins(mut child: Child) -> Vec<(u64, u64)> {
    let mut out = String::new();
    child.stdout.take().expect("stdout").read_to_string(&mut out).expect("read");
    assert!(child.wait().expect("wait").success(), "injector failed: {out}");
    out.lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace().map(|v| v.parse::<u64>());
            Some((f.next()?.ok()?, f.next()?.ok()?))
        })
        .collect()
}

/// The injector thread's runs on CPU 1 as (start, end) trace-clock ns, from the Perfetto export's task
/// slices (built from the raw `sched_switch` events, independently of the wakeup analysis).
fn injector_runs(perfetto: &Value, tid: i32) -> Vec<(u64, u64)> {
    let events = perfetto["traceEvents"].as_array().map(Vec::as_slice).unwrap_or_default();
    events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "task" && e["tid"] == 1 && e["args"]["pid"] == tid)
        .filter_map(|e| {
            let start = (e["ts"].as_f64()? * 1e3).round() as u64;
            Some((start, start + (e["dur"].as_f64()? * 1e3).round() as u64))
        })
        .collect()
}

/// How much of `[from, to)` the intervals cover.
fn overlap(intervals: &[(u64, u64)], from: u64, to: u64) -> u64 {
    intervals.iter().map(|(s, e)| (*e).min(to).saturating_sub((*s).max(from))).sum()
}

#[test]
fn timer_trace_names_the_spinner_and_measures_its_overlap() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)]) {
        return;
    }
    let _turn = live::turn::take();
    let perfetto_path = std::env::temp_dir().join(format!("latscope-trace-timer-{}.json", std::process::id()));
    let (injector, tid) = start_injector("10500ms");
    let out = Command::new(BIN)
        .args(["timer", "-c", "1", "-p", "95", "-D", "10s", "--trace", "--top", "100", "-q", "--json", "-"])
        .arg("--perfetto")
        .arg(&perfetto_path)
        .output()
        .expect("run latscope timer");
    let spins = spins(injector);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(0), "timer failed: {stderr}");
    let r: TimerResult = serde_json::from_slice(&out.stdout).expect("json");
    let perfetto = std::fs::read_to_string(&perfetto_path).unwrap_or_default();
    let _ = std::fs::remove_file(&perfetto_path);
    let p: Value = serde_json::from_str(&perfetto).expect("perfetto json");
    assert!(p["traceEvents"].as_array().is_some_and(|e| e.len() > 1000), "the Perfetto trace lacks the events");
    let runs = injector_runs(&p, tid);
    assert!(runs.len() >= 200, "the Perfetto trace shows {} runs of the injector", runs.len());
    let trace = r.trace.as_ref().expect("the result has the trace's explanations");
    assert!(trace.events > 1000, "too few events: {}", trace.events);
    // The trigger marked the new worsts in the trace as the run went (the first sample is one).
    assert!(trace.marks > 0, "no mark in the trace: {}", trace.marks);
    assert!(stderr.contains("Worst wakeups, from the trace"), "{stderr}");
    let worst = &trace.worst;
    assert_eq!(worst.len(), 100);
    assert!(spins.len() >= 200, "the injector ran {} spins", spins.len());

    let mut hit = 0;
    let mut late_irqs = 0;
    let mut covered = 0;
    let mut diffs = Vec::new();
    let sentence = |w: &TracedWakeup| w.headline.as_ref().map(|h| h.sentence.clone()).unwrap_or_default();
    for w in worst {
        // A sample the trace holds no account of (no wakeup matches and what the trace shows on the CPU covers
        // less than half of the lateness: the hypervisor, seen once here at 3.9 ms) is said to be so; the
        // injector may have run in it, for less than half of it (seen once in make test: 704 us of a 2.56 ms
        // sample whose wakeup the trace did not match within 200 us), never more.
        if w.matched == SampleMatch::NothingRan {
            let (from, to) = (w.expected_ns.0, w.expected_ns.0 + w.sample_latency_ns.0);
            let ran = overlap(&runs, from, to);
            assert!(2 * ran < w.sample_latency_ns.0, "the injector ran {ran} ns of a sample called unexplained: {w:?}");
            eprintln!("not in the trace: {} ns at {from}", w.sample_latency_ns.0);
            continue;
        }
        assert!(w.found(), "a worst sample is not in the trace: {w:?}");
        let (sample, traced) = (w.sample_latency_ns.0, w.trace_latency_ns.0);
        // The thread's own sample and the trace agree on the same wakeup: the trace's end (the syscall's
        // return) comes first and the clock read a few µs later (checked on the median below), more when the VM
        // stalls in between (134 us seen under a parallel build). Never the other way round by more than the
        // clocks' agreement: a trace end after the read is another wakeup, which latscope must not match.
        assert!(traced <= sample + 20_000, "sample {sample} ns vs trace {traced} ns: {w:?}");
        diffs.push(sample.abs_diff(traced));
        let expected = w.expected_ns.0;
        let blockers: Vec<&Explanation> =
            w.shares.iter().filter(|s| matches!(s.cause, CauseKind::BlockingTask | CauseKind::PreemptOff)).collect();
        // Other processes may run injectors too: ours is the one with our injector's thread id.
        let injector = blockers.iter().find(|b| b.culprit.pid() == Some(tid));
        let switch_in = w.switch_in_ns.0;
        // A spin starts 50 µs before a deadline; when the injector itself wakes later than that (a loaded
        // CPU 1 holds both), it still runs first if the timer thread is not yet on the CPU.
        let Some(&(spin_start, spin_end)) = spins.iter().find(|(s, e)| *s < switch_in && expected < *e) else {
            // Not hit while waiting (other noise on a shared machine): the spinner may only be blamed for
            // the time it really ran inside the sample's window, by the raw sched_switch events. Its runs
            // there are its spins (any run longer than its wakeup and sleep overlaps a spin it reported);
            // they may outlast the spin itself when the hypervisor stalls the CPU while it is current.
            let blamed = injector.map_or(0, |b| b.magnitude.0);
            let ran = overlap(&runs, expected, switch_in);
            for &(s, e) in runs.iter().filter(|(s, e)| *e > expected && *s < switch_in) {
                assert!(
                    e - s < 100_000 || overlap(&spins, s, e) > 0,
                    "the injector ran {} ns from {s} without spinning: {w:?}",
                    e - s
                );
            }
            assert!(
                blamed <= ran + 20_000,
                "blamed {blamed} ns on the injector, which ran {ran} ns in the window by the trace: {w:?}"
            );
            eprintln!("not a spinner wakeup ({sample} ns, {blamed} of the injector's {ran} ns): {}", sentence(w));
            continue;
        };
        hit += 1;
        let b = injector.unwrap_or_else(|| panic!("the spinner is not named: {w:?}"));
        let comm = b.culprit.task.as_ref().map(|t| t.comm.to_string());
        assert_eq!(comm.as_deref(), Some("latscope-inject"), "{w:?}");
        // On a shared machine other RT loads may also block; ours must outweigh every other task that did
        // not overlap a spin of ours, and is measured exactly below.
        let others: u64 = blockers.iter().filter(|x| x.culprit.pid() != Some(tid)).map(|x| x.magnitude.0).sum();
        if others > 0 {
            eprintln!("other tasks blocked too ({others} ns): {}", sentence(w));
        }
        // Real overlap: from the moment the thread was woken (or the spinner's run began, when later) to the end
        // of the spin (or its switch-in); when the CPU stalls after the spin while the injector is still
        // current, to the end of that run.
        let woken = w.woken_ns.0;
        let (run_start, run_end) =
            runs.iter().copied().find(|(s, e)| *s <= spin_end && spin_end <= *e).unwrap_or((spin_start, spin_end));
        // Interrupts that hit the spinner are not its time: the trace lists them as interference. Nor is the
        // rest of the timer interrupt that woke the thread (its handler from the wakeup to its exit): usually a
        // few µs, but the hypervisor can stall the CPU inside the handler (225 µs once here). The shares do not
        // say when each interrupt came: when another task also held the CPU in the window (a build's rustc in a
        // page fault for 2.1 ms, then the spin), some of them hit it, not the spinner. So the spinner's time
        // lies between the overlap less every interrupt and the whole overlap.
        let irqs: u64 = w.shares.iter().filter(|x| x.cause.is_interference()).map(|x| x.magnitude.0).sum();
        let irq_entry = expected + w.total_of(CauseKind::TimerIrqDelay).unwrap_or_default().0;
        let handler = w.total_of(CauseKind::IrqHandler).unwrap_or_default().0;
        let handler_after_wakeup =
            if run_start <= woken { handler.saturating_sub(woken.saturating_sub(irq_entry)) } else { 0 };
        let overlap = run_end.min(switch_in).saturating_sub(woken.max(run_start)).saturating_sub(handler_after_wakeup);
        let (least, most) = (overlap.saturating_sub(irqs) as f64, overlap as f64);
        let blocked = b.magnitude.0 as f64;
        assert!(
            blocked >= 0.90 * least && blocked <= 1.10 * most,
            "blocked {blocked} ns vs real overlap {least}..{most} ns (expected {expected}, woken {woken}, switch-in \
             {switch_in}, injector run {run_start}..{run_end}, spin {spin_start}..{spin_end}, interrupts {irqs} ns, \
             handler after the wakeup {handler_after_wakeup} ns; shares {:?}): {w:?}",
            w.shares.iter().map(|s| (s.cause, s.magnitude.0)).collect::<Vec<_>>()
        );
        // A spin that began after the deadline (the CPU was held before it) says nothing of the timer
        // interrupt and may not lead the explanation: what follows is for spins that covered the deadline.
        if spin_start > expected {
            eprintln!("a spin began {} ns after the deadline: {}", spin_start - expected, sentence(w));
            continue;
        }
        covered += 1;
        // The timer interrupt itself comes on time, but this VM's hypervisor now and then delivers one
        // tens of µs late: judged over all the spinner's wakeups, not one by one.
        let irq_delay = w.total_of(CauseKind::TimerIrqDelay).unwrap_or_default().0;
        if irq_delay * 10 >= traced {
            late_irqs += 1;
            eprintln!("timer IRQ delay {irq_delay} ns next to {traced} ns: {w:?}");
        }
        // The spinner explains most of the wakeup: it leads, and the remedy moves it away.
        let h = w.headline.as_ref().unwrap_or_else(|| panic!("no headline: {w:?}"));
        assert_eq!((h.cause, h.culprit.pid()), (CauseKind::BlockingTask, Some(tid)), "{w:?}");
        let remedy = h.hint.as_ref().map(|x| x.remedy.as_str()).unwrap_or("");
        assert!(remedy.contains("latscope-inject"), "{w:?}");
    }
    // A spin can delay a wakeup by at most its length; when every explained wakeup is longer, the machine's
    // own noise (other loads on CPU 1) hid the spinner from the worst list and there is nothing to judge:
    // not a pass (a machine that noisy cannot vouch for the explanations), a failure under LATSCOPE_REQUIRE_LIVE.
    let smallest = worst.iter().map(|w| w.sample_latency_ns.0).min().unwrap_or(0);
    if hit == 0 && smallest > 800_000 {
        live::skip(format!("the machine's own noise ({smallest} ns and worse) hides the 700 µs spinner"));
        return;
    }
    diffs.sort_unstable();
    let median = diffs[diffs.len() / 2];
    assert!(median <= 10_000, "sample and trace differ by {median} ns (median): {diffs:?}");
    assert!(hit >= 3, "only {hit} of the 100 worst wakeups overlapped a spin: {stderr}");
    // Under load the injector itself wakes late and none of its spins may cover a deadline: then only the
    // naming and measuring above were judged.
    assert!(
        late_irqs * 5 <= covered,
        "{late_irqs} of {covered} spinner wakeups had a timer IRQ delay not small next to their latency"
    );
}
