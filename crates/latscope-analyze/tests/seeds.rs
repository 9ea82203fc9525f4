//! Each seed's trace, decoded by the real decoder, yields the conclusion its author reached by hand.

use latscope_analyze::analysis::{analyze, analyze_diff, AnalyzeOptions, VerdictKind};
use latscope_analyze::hints::HintKind;
use latscope_decode::{decode_file, DecodedTrace};
use latscope_model::{CpuId, Nanos};
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
    assert!(
        v.sentence.starts_with(
            "12116 us with irqs off on CPU 7 in console_trylock_spinning called from vprintk_emit, reached from \
             printk ← __dynamic_pr_debug ← __qseecom_unload_app_kthread_func"
        ),
        "{}",
        v.sentence
    );
    assert_eq!(v.hints[0].kind, HintKind::ConsolePrint);
    assert!(v.hints[0].remedy.contains("dmesg -n 1"));
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
    assert!(
        v.sentence.starts_with(
            "irqs off 10.966 ms on CPU 6 from console_unlock+0xc0 to console_unlock+0x39c (parent vprintk_emit)"
        ),
        "{}",
        v.sentence
    );
    assert!(v.sentence.contains("arch_timer interrupt that ran right after it delivered the hrtimer 9.656 ms late"));
    assert!(v.sentence.contains("\"8 overruns\""));
    assert_eq!(v.hints[0].kind, HintKind::ConsolePrint);
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
    assert_eq!(d.hints[0].kind, HintKind::RtBandwidthTimer);
    let v = &a.verdicts[0];
    assert_eq!(v.kind, VerdictKind::FuncGraphDiff);
    assert!(v.sentence.contains("7.505 us of it in hrtimer_start_range_ns"), "{}", v.sentence);
    assert!(v.sentence.contains("under enqueue_task_rt"), "{}", v.sentence);
}

#[test]
fn seed_001_event_trace_wakeup_breakdown() {
    let (name, t) = fixture("seeds/001-latency-format-events-cyclictest.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let w = a.wakeups.first().expect("the cyclictest wakeup");
    assert_eq!(&*w.task.comm, "cyclictest");
    assert_eq!(w.task.pid, 1213);
    // hrtimer_start expires=6389900935569, hrtimer_expire_entry now=6389900945120: 9.551 us late.
    let timer_delay = w.components.iter().find(|c| c.kind.as_str() == "timer_irq_delay").expect("timer irq delay");
    let handler = w.components.iter().find(|c| c.kind.as_str() == "irq_handler").expect("handler");
    assert_eq!(handler.name, "local_timer");
    assert_eq!(handler.duration, Nanos::from_us(13), "local_timer_entry 695110 .. exit 695123");
    assert!(timer_delay.duration < Nanos::from_us(1), "{:?}", timer_delay);
    assert!(w.components.iter().any(|c| c.kind.as_str() == "return_to_user"));
    assert_eq!(w.remainder, 0, "{w:?}");
}

#[test]
fn seed_001_callback_ran_9us_after_the_tick_entered() {
    let (name, t) = fixture("seeds/001-latency-format-events-cyclictest.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let w = a.wakeups.first().expect("the cyclictest wakeup");
    // The author's question: local_timer_entry at 695110 us, hrtimer_expire_entry at 695119 us.
    assert_eq!(w.callback_delay, Some(Nanos::from_us(9)));
    assert!(w.explanation.contains("9 us of it before the timer callback ran"), "{}", w.explanation);
}
