//! Kernel stacks from real traces — this project's printk storm in three formats, and stacks other people
//! posted from arm, arm64 and x86 kernels — read as where the interrupted CPU was.

use latscope_analyze::analysis::{analyze, AnalyzeOptions};
use latscope_analyze::stacks::{interrupted, Interrupted};
use latscope_analyze::verdict::VerdictKind;
use latscope_decode::decode_file;
use latscope_model::{CauseKind, Event, EventKind, Pattern, Text};
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel)
}

/// The stacks of a fixture with the event each follows, in trace order.
fn stacks(rel: &str) -> Vec<(Event, Vec<Text>)> {
    let t = decode_file(&fixture(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(t.warnings.is_empty(), "{rel}: {:?}", t.warnings);
    let mut out = Vec::new();
    for (i, e) in t.events.iter().enumerate() {
        if let EventKind::Stack { frames } = &e.kind {
            // The event the stack belongs to: the one before it on the same CPU.
            let owner = t.events[..i].iter().rev().find(|o| o.cpu == e.cpu).unwrap_or_else(|| panic!("{rel}: {i}"));
            out.push((owner.clone(), frames.to_vec()));
        }
    }
    out
}

fn kernel(i: Interrupted) -> (Vec<String>, Option<String>, bool) {
    match i {
        Interrupted::Kernel { chain, syscall, at_irq_enable } => (chain, syscall, at_irq_enable),
        other => panic!("expected kernel code, got {other:?}"),
    }
}

#[test]
fn arm_and_arm64_interrupt_entries_are_seen_through() {
    // arm (4.19, Raspberry Pi): the timer IRQ through `__irq_svc` into the idle loop.
    let armv7 = stacks("events/rpi-4.19-armv7-arch_timer-irq_svc-stack.txt");
    assert_eq!(armv7.len(), 1);
    assert_eq!(interrupted(&armv7[0].1), Interrupted::Idle);
    // arm64 (5.15+ entry code, `el1h_64_irq`, frames with `+off/size`): idle, then a kworker in kernel code.
    let arm64 = stacks("events/rpi-arm64-el1h_64_irq-stacks-edited.txt");
    assert_eq!(arm64.len(), 2);
    assert_eq!(interrupted(&arm64[0].1), Interrupted::Idle);
    let (chain, syscall, at_irq_enable) = kernel(interrupted(&arm64[1].1));
    assert_eq!(chain, ["wq_worker_running", "worker_thread", "kthread", "ret_from_fork"]);
    assert_eq!((syscall, at_irq_enable), (None, false));
    assert_eq!(&*arm64[1].0.comm, "kworker/u8:0");
}

#[test]
fn x86_timerlat_stack_is_the_module_init_busy_wait_in_finit_module() {
    // The kernel documentation's timerlat example: the thread's latency came from a module busy-waiting in
    // its init function, which the stack at the timer interrupt shows.
    let s = stacks("events/timerlat-print_stack-7col-flags-doc.txt");
    let (chain, syscall, _) = kernel(interrupted(&s[0].1));
    assert_eq!(chain[..2], ["delay_tsc", "dummy_load_1ms_pd_init"]);
    assert_eq!(syscall.as_deref(), Some("finit_module"));
}

#[test]
fn the_printk_storm_reads_the_same_from_dat_report_text_and_ftrace_text() {
    // The .dat from `latscope record` (kernel_stack entries symbolised through its kallsyms) and the
    // `trace-cmd report` text of the same file agree frame for frame on the stacks they share.
    let dat = stacks("dat/local-6.18-x86_64-printk-stacks-v6.dat");
    let report = stacks("tracecmd-report/local-6.18-x86_64-printk-stacks-excerpt.txt");
    assert!(dat.len() > 400 && report.len() == 4, "{} {}", dat.len(), report.len());
    for (owner, frames) in &report {
        // The report prints microseconds: match by CPU, pid and time within 1 us.
        let (_, same) = dat
            .iter()
            .find(|(o, _)| o.cpu == owner.cpu && o.pid == owner.pid && o.ts.0.abs_diff(owner.ts.0) < 1_000)
            .unwrap_or_else(|| panic!("no .dat stack at {}", owner.ts));
        assert_eq!(same, frames, "at {}", owner.ts);
        assert!(frames.iter().all(|f| !f.contains(" (") && !f.starts_with("=>")), "{frames:?}");
    }
    // Every stack is at a timer interrupt that found a task (the trigger's filter: not idle).
    for (owner, _) in dat.iter().chain(&report) {
        assert!(owner.pid != 0 && owner.kind.name() == "local_timer_entry", "{owner:?}");
    }
    // The longest interrupt delay's stack is the console flush in the writing shell's write().
    let console: Vec<_> = dat
        .iter()
        .filter_map(|(o, f)| match interrupted(f) {
            Interrupted::Kernel { chain, syscall, .. } if chain[0] == "console_flush_all" => Some((o, syscall)),
            _ => None,
        })
        .collect();
    assert!(!console.is_empty());
    assert!(console.iter().all(|(o, s)| &*o.comm == "bash" && s.as_deref() == Some("write")));
    // The ftrace text capture (cyclictest during the same kind of storm) decodes the same way.
    let text = stacks("live/printk-cyclictest-trace.txt");
    assert!(text.iter().any(|(o, f)| &*o.comm == "sh"
        && matches!(interrupted(f), Interrupted::Kernel { chain, .. } if chain[0] == "console_flush_all")));
}

#[test]
fn offline_analysis_of_the_recorded_storm_names_console_printing_in_bash() {
    let t = decode_file(&fixture("dat/local-6.18-x86_64-printk-stacks-v6.dat")).expect("decode");
    let a = analyze("printk", &t, &AnalyzeOptions::default());
    let v = a.verdicts.iter().find(|v| v.kind == VerdictKind::Wakeup).expect("a late wakeup of the measuring thread");
    let e = &v.explanation;
    assert_eq!(e.cause, CauseKind::TimerIrqDelay, "{e:?}");
    let held = e.within.first().expect("what held the interrupt");
    assert_eq!(held.cause, CauseKind::IrqsOff);
    assert_eq!(held.culprit.task.as_ref().map(|t| &*t.comm), Some("bash"));
    assert_eq!(held.culprit.syscall.as_deref(), Some("write"));
    assert_eq!(e.hint.as_ref().and_then(|h| h.pattern), Some(Pattern::ConsolePrint));
    // No wakeup of the measuring thread is put on the hypervisor or the tick handler.
    for w in &a.wakeups {
        let delay = w.components.iter().find(|c| c.cause == CauseKind::TimerIrqDelay);
        if let Some(d) = delay.filter(|d| d.magnitude.0 * 2 > w.latency.0) {
            let first = d.within.first().map(|x| x.cause);
            assert!(first != Some(CauseKind::NoKernelEvent) && first != Some(CauseKind::IrqHandler), "{w:?}");
        }
    }
}
