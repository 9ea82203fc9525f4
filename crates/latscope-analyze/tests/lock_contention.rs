//! Kernel lock contention (#17 item 5, `lock:contention_begin`/`end`) in a real recording of this machine:
//! the waits are paired per waiter, the locks summed, and the longest named with their context.

use latscope_analyze::analysis::{analyze, AnalyzeOptions};
use latscope_analyze::lock_contention::WaitContext;
use latscope_decode::decode_file;
use latscope_model::{CpuId, Nanos};
use std::path::PathBuf;

#[test]
fn a_recording_under_pipe_and_dentry_stress_names_the_contended_locks() {
    let rel = "dat/local-6.18-x86_64-lock-contention-zstd-v7.dat";
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let t = decode_file(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let a = analyze(rel, &t, &AnalyzeOptions::default());
    let r = &a.locks;
    assert_eq!((r.events, r.unmatched, r.locks.len()), (12_848, 0, 13));
    let w = &r.longest[0];
    assert_eq!(
        (w.task.comm.as_str(), w.task.pid, w.cpu, w.kind.as_str(), w.lock, w.context, w.acquired),
        ("stress-ng-dentr", 13844, CpuId(0), "WRITE", 0xffff_8882_aa00_a950, WaitContext::Task, true)
    );
    assert_eq!(w.duration, Nanos(58_569_095));
    // The most waited-for spinlock: 6,184 short waits.
    let spin = r.locks.iter().find(|l| l.lock == 0xffff_8881_0056_8b7c).expect("the dentry spinlock");
    assert_eq!((spin.kind.as_str(), spin.waits), ("SPIN", 6184));
    assert!(spin.longest.duration <= Nanos(143_000) && spin.total > Nanos(1_800_000), "{spin:?}");
    // Waits inside interrupts are told apart: a softirq waited 135 us for a spinlock.
    let soft = r.longest.iter().find(|w| w.context == WaitContext::Softirq).expect("a softirq wait");
    assert_eq!((soft.task.comm.as_str(), soft.lock), ("rustc", 0xffff_8881_003c_63ec));
    assert_eq!(r.locks.iter().map(|l| l.waits).sum::<u64>() * 2, r.events);
}
