//! Each seed's trace, decoded by the real decoder, yields the conclusion its author reached by hand.

use latscope_analyze::analysis::{analyze, analyze_diff, AnalyzeOptions};
use latscope_analyze::verdict::{Compared, VerdictKind};
use latscope_decode::{decode_file, DecodedTrace};
use latscope_model::{CauseKind, CpuId, Nanos, Pattern};
use std::path::PathBuf;

fn fixture(rel: &str) -> (String, DecodedTrace) {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let t = decode_file(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
    (rel.to_string(), t)
}

#[test]
fn seed_000_printk_irqsoff_12ms() {
    let (name, t) = fixture("seeds/000-irqsoff-5.4.161-arm64-printk-12ms.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let r = a.latency_trace.as_ref().expect("latency-tracer report");
    assert_eq!(r.latency, Nanos::from_us(12116));
    assert_eq!(r.cpu, Some(CpuId(7)));
    let big = r.big.as_ref().expect("big delay entry");
    assert_eq!(big.func.as_deref(), Some("console_trylock_spinning"));
    assert_eq!(big.parent.as_deref(), Some("vprintk_emit"));
    assert_eq!(big.marker, '*');
    assert_eq!(r.chain[..3], ["printk", "__dynamic_pr_debug", "__qseecom_unload_app_kthread_func"]);
    let v = &a.verdicts[0];
    assert_eq!(v.kind, VerdictKind::LatencyTrace);
    let e = &v.explanation;
    assert_eq!((e.cause, e.magnitude, e.cpu), (CauseKind::IrqsOff, Nanos::from_us(12116), Some(CpuId(7))));
    assert_eq!(e.culprit.name, "console_trylock_spinning");
    assert_eq!(e.culprit.chain[..3], ["printk", "__dynamic_pr_debug", "__qseecom_unload_app_kthread_func"]);
    assert_eq!(
        e.culprit.task.as_ref().map(|t| (t.comm.to_string(), t.pid)),
        Some(("qseecom-unload-".into(), 207)),
        "the header names the task qseecom-unload--207"
    );
    let hint = e.hint.as_ref().expect("hint");
    assert_eq!(hint.pattern, Some(Pattern::ConsolePrint));
    assert!(hint.remedy.contains("dmesg -n 1"));
    assert!(v.evidence.len() >= 2, "the big-delay line and the stack");
    assert_eq!(a.worst(), Nanos::from_us(12116));
}

#[test]
fn seed_002_console_unlock_irqs_off_delays_arch_timer() {
    let (name, t) = fixture("seeds/002-preemptirq-irq-events-5.4.161-arm64.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let f = a.irqs_off.longest().expect("an irqs-off section");
    assert_eq!(f.section.duration(), Nanos(10_966_000));
    assert_eq!(f.section.cpu, CpuId(6));
    let d = f.delayed.as_ref().expect("the IRQ it delayed");
    assert_eq!(d.name, "irq 3 arch_timer");
    assert_eq!(d.printed.iter().filter_map(|p| p.lateness).max(), Some(Nanos(9_656_000)));
    assert_eq!(d.printed.iter().filter_map(|p| p.overruns).max(), Some(8));
    let v = a.verdicts.iter().find(|v| v.kind == VerdictKind::IrqsOff).expect("irqs-off verdict");
    let e = &v.explanation;
    assert_eq!((e.cause, e.magnitude, e.cpu), (CauseKind::IrqsOff, Nanos(10_966_000), Some(CpuId(6))));
    assert_eq!(e.culprit.chain, ["console_unlock+0xc0", "vprintk_emit"]);
    assert_eq!(e.hint.as_ref().and_then(|h| h.pattern), Some(Pattern::ConsolePrint));
    // Evidence: disable, enable, IRQ entry, both prints, IRQ exit.
    assert_eq!(v.evidence.len(), 6, "{:?}", v.evidence.iter().map(|e| e.index).collect::<Vec<_>>());
}

#[test]
fn seed_001_funcgraph_diff_rt_bandwidth_timer() {
    let normal = fixture("seeds/001-funcgraph-normal.txt");
    let abnormal = fixture("seeds/001-funcgraph-abnormal.txt");
    let a = analyze_diff((&normal.0, &normal.1), (&abnormal.0, &abnormal.1), &AnalyzeOptions::default());
    let d = a.diff.as_ref().expect("diff");
    assert_eq!(&*d.root, "smp_apic_timer_interrupt");
    assert_eq!(d.extra, 63_996 - 53_940);
    let top = &d.entries[0];
    assert_eq!(top.func(), "hrtimer_start_range_ns");
    assert_eq!(top.extra, 7_505);
    assert!(top.path.iter().any(|p| &**p == "enqueue_task_rt"), "{:?}", top.path);
    assert_eq!(top.path[top.path.len() - 2].as_ref(), "enqueue_task_rt");
    assert_eq!(d.patterns, [Pattern::RtBandwidthTimer]);
    let v = &a.verdicts[0];
    assert_eq!(v.kind, VerdictKind::FuncGraphDiff);
    let e = &v.explanation;
    assert_eq!((e.cause, e.magnitude), (CauseKind::FunctionTime, Nanos((63_996 - 53_940) as u64)));
    assert_eq!(e.culprit.name, "hrtimer_start_range_ns");
    assert_eq!(e.culprit.chain[1], "enqueue_task_rt", "innermost first: {:?}", e.culprit.chain);
    assert_eq!(e.within[0].magnitude, Nanos(7_505));
    assert_eq!(e.hint.as_ref().and_then(|h| h.pattern), Some(Pattern::RtBandwidthTimer));
    let compared = v.diff.as_ref().map(|d| &d.compared);
    assert!(matches!(compared, Some(Compared::Traces { abnormal, .. }) if abnormal.ends_with("abnormal.txt")));
}

#[test]
fn seed_001_event_trace_wakeup_breakdown() {
    let (name, t) = fixture("seeds/001-latency-format-events-cyclictest.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let w = a.wakeups.first().expect("the cyclictest wakeup");
    assert_eq!(&*w.task.comm, "cyclictest");
    assert_eq!(w.task.pid, 1213);
    // hrtimer_start expires=6389900935569, hrtimer_expire_entry now=6389900945120: 9.551 us late.
    let timer_delay = w.components.iter().find(|c| c.cause == CauseKind::TimerIrqDelay).expect("timer irq delay");
    let handler = w.components.iter().find(|c| c.cause == CauseKind::IrqHandler).expect("handler");
    assert_eq!(handler.culprit.name, "local_timer");
    assert_eq!(handler.magnitude, Nanos::from_us(13), "local_timer_entry 695110 .. exit 695123");
    assert!(timer_delay.magnitude < Nanos::from_us(1), "{:?}", timer_delay);
    assert!(w.components.iter().any(|c| c.cause == CauseKind::ReturnToUser));
    assert_eq!(w.remainder, 0, "{w:?}");
}

#[test]
fn seed_001_callback_ran_9us_after_the_tick_entered() {
    let (name, t) = fixture("seeds/001-latency-format-events-cyclictest.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let w = a.wakeups.first().expect("the cyclictest wakeup");
    // The author's question: local_timer_entry at 695110 us, hrtimer_expire_entry at 695119 us.
    assert_eq!(w.callback_delay, Some(Nanos::from_us(9)));
    // The handler that ran the timer is the largest part: the headline names it.
    let h = w.headline.as_ref().expect("headline");
    assert_eq!((h.cause, h.culprit.name.as_str()), (CauseKind::IrqHandler, "local_timer"));
}
