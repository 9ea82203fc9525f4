//! `timer --trace --graph`'s comparison on a real function_graph capture: Debian 6.1's standard kernel in the
//! qemu guest, CPU 1 traced while `latscope timer` (10 ms, SCHED_FIFO 95) measured there and a SCHED_OTHER
//! shell on CPU 1 wrote 900-character `<3>` messages to /dev/kmsg every 50 ms, sleeping with `usleep` between
//! them (fixtures/README.md has its origin).

use latscope_analyze::wakeup_graph::{compare, wakeups};
use latscope_decode::decode_file;
use latscope_model::{CpuId, Event, EventKind, GraphWindow, Nanos, WakeupGraph};
use std::path::PathBuf;

fn fixture() -> Vec<Event> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/dat/debian-6.1.0-56-amd64-qemu-kmsg-function_graph-v7.dat");
    decode_file(&p).expect("the fixture decodes").events
}

/// The measuring thread: the task whose timer is hrtimer_wakeup, absolute (clock_nanosleep TIMER_ABSTIME).
fn measuring_thread(ev: &[Event]) -> i32 {
    ev.iter()
        .find_map(|e| match &e.kind {
            EventKind::HrtimerStart { function, mode, .. } if &**function == "hrtimer_wakeup" && &**mode == "ABS" => {
                Some(e.pid)
            }
            _ => None,
        })
        .expect("latscope's measuring thread is in the trace")
}

/// Ground truth from the trace's own records: the time `func`'s calls on CPU 1 spent inside `w`, each call
/// taken from its funcgraph_exit (`[exit - duration, exit]`) and cut at the window's edges.
fn inside(ev: &[Event], func: &str, w: &GraphWindow) -> u64 {
    ev.iter()
        .filter_map(|e| match &e.kind {
            EventKind::GraphExit { func: Some(f), duration: Some(d), .. } if e.cpu == CpuId(1) && &**f == func => {
                Some(e.ts.0.min(w.woke_ns).saturating_sub((e.ts.0 - d.0).max(w.expected_ns)))
            }
            _ => None,
        })
        .sum()
}

/// The times the diff gives `func` among the extra calls: at the end of an entry's path, or on an added
/// entry's way down to where its time went.
fn named(g: &WakeupGraph, func: &str) -> Vec<u64> {
    g.entries
        .iter()
        .filter(|e| e.extra_ns > 0)
        .flat_map(|e| {
            let end = e.path.last().is_some_and(|f| &**f == func).then(|| e.worst_ns.unwrap_or_default());
            end.into_iter().chain(e.hot_path.iter().filter(|(f, _)| &**f == func).map(|(_, ns)| *ns))
        })
        .collect()
}

fn assert_names(ev: &[Event], g: &WakeupGraph, func: &str) {
    let truth = inside(ev, func, &g.worst);
    assert!(truth > 0, "the compared wakeup overlaps {func}: {g:#?}");
    assert_eq!(inside(ev, func, &g.normal), 0, "the median wakeup has no {func}");
    // Each call of it is an entry of its own (or a step down one); their times add up to the trace's.
    let got = named(g, func);
    assert!(!got.is_empty(), "the diff names {func}: {:#?}", g.entries);
    let sum: u64 = got.iter().sum();
    let tolerance = Nanos::from_us(1).0 * got.len() as u64;
    assert!(sum.abs_diff(truth) <= tolerance, "diff gives {func} {got:?} ns, the trace {truth} ns");
}

/// A wakeup that waited for the kernel's console write of a message (printk → console_unlock →
/// serial8250_console_write with interrupts off, seed 001's kind of cause), compared with the median one: the
/// diff names serial8250_console_write with the time the trace's exit record gives it inside the window.
#[test]
fn a_wakeup_behind_a_console_write_names_it_with_the_time_the_trace_shows() {
    let ev = fixture();
    let tid = measuring_thread(&ev);
    let all = wakeups(&ev, CpuId(1), tid);
    assert!(all.len() >= 20, "the fixture holds the thread's wakeups: {}", all.len());
    let behind = all
        .iter()
        .find(|w| inside(&ev, "serial8250_console_write", w) > 0)
        .expect("a wakeup of the fixture overlaps the console write");
    // Passed as the measured worst: the comparison takes the first measured sample the trace holds.
    let g = compare(&ev, CpuId(1), tid, &[(Nanos(behind.expected_ns), Nanos(behind.latency_ns()))]).expect("compared");
    assert_eq!(g.worst, *behind);
    assert_names(&ev, &g, "serial8250_console_write");
    assert!(g.worst.latency_ns() > g.normal.latency_ns());
}

/// The trace's own worst wakeup (no measured sample given) waited for a process exiting on the CPU (the
/// writer's `usleep` child unmapping its memory): the diff names the call that took the time, with the time
/// the trace shows; tasks switched out across the window (sleeping in `schedule()`) are not counted.
#[test]
fn the_traces_worst_wakeup_names_the_extra_call_with_its_time() {
    let ev = fixture();
    let tid = measuring_thread(&ev);
    let g = compare(&ev, CpuId(1), tid, &[]).expect("compared");
    let worst = wakeups(&ev, CpuId(1), tid).iter().map(|w| w.latency_ns()).max().unwrap_or(0);
    assert_eq!(g.worst.latency_ns(), worst);
    let top = &g.entries[0];
    assert_eq!(top.kind, "added");
    assert!(top.path.iter().any(|f| &**f == "__x64_sys_exit_group"), "{:#?}", g.entries);
    // The largest extra call is the trace's own call, with its time inside the window. (The diff also lists a
    // second, 2.0 ms `mark_page_accessed` overlapping it: a call rebuilt from returns whose entries the ring
    // buffer overwrote before the kept part began — an open defect of the tree building, not asserted here.)
    let func = top.path.last().expect("path").to_string();
    let truth = inside(&ev, &func, &g.worst);
    assert!(top.worst_ns.unwrap_or_default().abs_diff(truth) <= Nanos::from_us(1).0, "{top:?} against {truth} ns");
    assert_eq!(inside(&ev, &func, &g.normal), 0);
    assert!(g.entries.iter().all(|e| e.path.last().is_none_or(|f| &**f != "schedule_idle")), "{:#?}", g.entries);
}
