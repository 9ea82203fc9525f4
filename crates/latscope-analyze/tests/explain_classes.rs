//! The explanation classes of issue #19 (items 3-8), each on real traces: hard-IRQ time on an idle CPU,
//! cyclictest's threshold mark as the anchor, bottom-halves-off sections, explicit latency evidence
//! (synthetic events, tick storms), latency-report excerpts, and sampled irqs-off sections.

use latscope_analyze::analysis::{analyze, AnalyzeOptions};
use latscope_analyze::flag_sections::{Disabled, Sampled};
use latscope_analyze::reported::ReportedBy;
use latscope_analyze::timeline::IrqsOffSource;
use latscope_analyze::verdict::VerdictKind;
use latscope_decode::{decode_file, DecodedTrace};
use latscope_model::{CauseKind, CpuId, Nanos, Pattern};
use std::path::PathBuf;

fn fixture(rel: &str) -> (String, DecodedTrace) {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let t = decode_file(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
    (rel.to_string(), t)
}

fn near(a: Nanos, b: Nanos, tol: Nanos) -> bool {
    a.0.abs_diff(b.0) <= tol.0
}

/// Item 3: the wakeup happened inside the timer interrupt of an idle CPU (`d.h` flags, no irq events): the
/// 8 us until the interrupt's last `h` entry are interrupt time, not "the CPU sat idle".
#[test]
fn hard_irq_time_on_an_idle_cpu_is_irq_time() {
    let (name, t) = fixture("latency/wakeup_rt-3.8-doc-func.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let w = a.wakeups.first().expect("the wakeup");
    assert_eq!(w.latency, Nanos::from_us(29));
    let irq = w.components.iter().find(|c| c.cause == CauseKind::IrqHandler).expect("the interrupt's part");
    assert!(near(irq.magnitude, Nanos::from_us(8), Nanos(100)), "{:?}", w.components);
    assert_eq!(irq.culprit.name, "hard irq hrtimer_interrupt");
    let idle = Nanos(w.components.iter().filter(|c| c.cause == CauseKind::Idle).map(|c| c.magnitude.0).sum());
    assert!(near(idle, Nanos::from_us(21), Nanos(100)), "only the time after the interrupt is the idle task's");
    let stat = a.irq_stats.iter().find(|s| s.name.contains("hard irq")).expect("the inferred interrupt in the stats");
    assert_eq!(stat.cpu, CpuId(3));
}

/// Item 3: a wakeup_rt report whose 160 us were a NIC's interrupt handler on the idle CPU (`rtl8169_interrupt`,
/// flags `dn.h`): the time is that interrupt's, named after its handler (not the IRQ core's
/// `preempt_count_sub` or `__handle_irq_event_percpu` that the generic code calls first), not idle time.
#[test]
fn a_nic_handler_on_an_idle_cpu_is_irq_time_named_after_its_handler() {
    let (name, t) = fixture("explain/wakeup_rt-6.4-rt-x86_64-rtl8169-irq-on-idle-lkml.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let w = a.wakeups.first().expect("the wakeup");
    assert_eq!((w.task.pid, w.latency), (29050, Nanos::from_us(160)));
    // The hrtimer interrupt that woke it (0-4 us), then the NIC's, another hard IRQ.
    let timer = w.components.iter().find(|c| c.cause == CauseKind::IrqHandler).expect("the waking interrupt");
    assert_eq!((timer.culprit.name.as_str(), timer.magnitude), ("hard irq hrtimer_interrupt", Nanos::from_us(4)));
    let nic = w.components.iter().find(|c| c.cause == CauseKind::Irq).expect("the NIC's handler");
    assert_eq!(nic.culprit.name, "hard irq rtl8169_interrupt");
    // From `tick_irq_enter` at 4 us to its last `h` entry (`irq_exit_rcu`) at 152 us.
    assert_eq!(nic.magnitude, Nanos::from_us(148), "{:?}", w.components);
    let idle = Nanos(w.components.iter().filter(|c| c.cause == CauseKind::Idle).map(|c| c.magnitude.0).sum());
    assert!(idle <= Nanos::from_us(8), "only the way out of idle after the interrupt: {idle:?}");
    let h = w.headline.as_ref().expect("a headline");
    assert_eq!((h.cause, h.culprit.name.as_str()), (CauseKind::Irq, "hard irq rtl8169_interrupt"));
}

/// Item 3, event traces: `trace-cmd report` of sched and hrtimer events without interrupt events or flags.
/// cyclictest was woken in the hrtimer callback 533 us after its timer expired, and switched in 206 us after
/// the callback's exit. The callback ran in the timer interrupt: until its entry the time is the timer IRQ
/// delay (not known what held it: no stacks), the callback is interrupt time, and nothing is left unexplained.
#[test]
fn a_wakeup_in_an_untraced_timer_interrupt_is_irq_time() {
    let (name, t) = fixture("explain/tracecmd-report-6.18-sched-hrtimer-no-irq-events-cyclictest.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let w = a.wakeups.first().expect("the wakeup");
    assert_eq!((w.task.pid, w.latency), (27946, Nanos(741_317)));
    let part = |k: CauseKind| w.components.iter().find(|c| c.cause == k).map(|c| c.magnitude);
    assert_eq!(part(CauseKind::TimerIrqDelay), Some(Nanos(533_317)), "{:?}", w.components);
    assert_eq!(part(CauseKind::IrqHandler), Some(Nanos::from_us(2)));
    assert_eq!(w.remainder, 0, "{:?}", w.components);
    let h = w.headline.as_ref().expect("a headline");
    assert_eq!(h.cause, CauseKind::TimerIrqDelay);
    assert_eq!(h.within.first().map(|x| x.cause), Some(CauseKind::NoKernelEvent));
}

/// Item 4: cyclictest's `--tracemark` line anchors the explanation on the wakeup it is about (cyclictest's
/// 74 us wakeup), even though another real-time thread had a worse one in the same trace.
#[test]
fn the_threshold_mark_anchors_the_explanation() {
    let (name, t) = fixture("explain/tracemark-cyclictest-trace.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let r = &a.reported[a.anchor.expect("an anchor")];
    assert_eq!(r.by, ReportedBy::TraceMark { threshold: Nanos::from_us(60) });
    assert_eq!((r.pid, r.latency), (10526, Nanos::from_us(75)));
    assert!(a.anchored_wakeup);
    let w = &a.wakeups[0];
    assert_eq!(w.task.pid, 10526);
    assert_eq!(w.latency, Nanos(73_910));
    assert!(w.switch_in <= r.ts);
    let v = &a.verdicts[0];
    assert_eq!(v.kind, VerdictKind::Reported);
    assert_eq!(v.magnitude, Nanos::from_us(75));
    assert_eq!(v.explanation.cause, CauseKind::TimerIrqDelay);
    assert!(v.evidence.iter().any(|e| e.index == r.index), "the mark is evidence");
    assert!(a.verdicts.iter().all(|v| v.kind != VerdictKind::Wakeup), "the anchored wakeup is not stated twice");
    // The worse wakeup of the other thread is still decomposed, after the anchored one.
    assert!(a.wakeups.iter().skip(1).any(|w| w.latency > Nanos::from_us(75)));
}

/// Item 5: sections with bottom halves off in task context (the `b` flag of net_dev_queue … net_dev_xmit on
/// loopback transmits) are measured, with their evidence.
#[test]
fn bottom_halves_off_sections_are_measured() {
    let (name, t) = fixture("explain/bh-off-loopback-tcp-trace.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let c = a.disabled.cpus.iter().find(|c| c.disabled == Disabled::BottomHalves).expect("bh-off sections");
    assert_eq!((c.cpu, c.count), (CpuId(1), 16));
    let s = &c.longest[0];
    assert_eq!(&*s.comm, "python3");
    assert_eq!(s.duration(), Nanos::from_us(3));
    assert_eq!(s.sampled, Sampled { events: 7, max_gap: Nanos::from_us(1), switches: 0 });
    assert!(t.events[s.start_index].flags.has(latscope_model::Flags::BH_OFF));
    // Too short for a verdict of its own.
    assert!(a.verdicts.iter().all(|v| v.kind != VerdictKind::Disabled));
}

/// Item 6: a 100 kHz tick storm (tick_sched_timer every ~10 us) is recognised and named.
#[test]
fn a_tick_storm_is_named() {
    let (name, t) = fixture("explain/tick-storm-rt-timersd-2022-latency-format.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let s = a.tick_storms.first().expect("a tick storm");
    assert_eq!((s.function.as_str(), s.expiries), ("tick_sched_timer", 9));
    assert_eq!(s.median_interval, Nanos::from_us(10));
    assert_eq!(s.rate_hz(), 100_000);
    let v = &a.verdicts[0];
    assert_eq!(v.kind, VerdictKind::TickStorm);
    let e = &v.explanation;
    assert_eq!((e.cause, e.count, e.magnitude), (CauseKind::TimerTick, 9, Nanos::from_us(76)));
    assert_eq!(e.hint.as_ref().and_then(|h| h.pattern), Some(Pattern::TickStorm));
}

/// Item 6: a synthetic event of a histogram trigger that carries a latency is read as one.
#[test]
fn a_synthetic_latency_event_is_read_as_a_latency() {
    let (name, t) = fixture("explain/synthetic-block_lat-stack-doc-6.x.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    assert_eq!(a.reported.len(), 2);
    let r = &a.reported[a.anchor.expect("an anchor")];
    assert_eq!(
        r.by,
        ReportedBy::SyntheticEvent { event: "block_lat".into(), field: "delta".into(), unit_assumed: true }
    );
    assert_eq!((r.pid, r.latency), (0, Nanos::from_us(8322)));
    assert!(!a.anchored_wakeup);
    let v = &a.verdicts[0];
    assert_eq!((v.kind, v.magnitude), (VerdictKind::Reported, Nanos::from_us(8322)));
    assert_eq!(v.explanation.cause, CauseKind::NotTraced);
}

/// Item 7: the middle 216 us of a 1.13 s preemptoff report (pasted in a mail): what it covers and the
/// block completion it repeats in softirq, not its largest gap.
#[test]
fn a_latency_report_excerpt_is_summarised_by_its_repeated_work() {
    let (name, t) = fixture("explain/preemptoff-5.11-arm64-mmc-softirq-excerpt-mailwrapped.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let r = a.latency_trace.as_ref().expect("a latency report");
    assert_eq!(r.latency, Nanos::from_us(1_130_504));
    let x = r.excerpt.as_ref().expect("an excerpt");
    assert_eq!(x.recorded, 51247);
    assert!(x.shown <= 249, "{}", x.shown);
    assert!(!x.has_start);
    assert_eq!((x.from, x.to), (Nanos::from_us(1_055_999), Nanos::from_us(1_056_215)));
    let c = &x.repeated[0];
    assert_eq!((&*c.func, &*c.parent, c.count, c.in_softirq), ("end_page_writeback", "ext4_finish_bio", 4, 4));
    assert!(near(c.every, Nanos::from_us(45), Nanos::from_us(2)), "{:?}", c.every);
    let e = &a.verdicts[0].explanation;
    assert_eq!(e.cause, CauseKind::PreemptOff);
    assert_eq!(e.culprit.name, "end_page_writeback");
    assert_eq!(e.culprit.chain, ["end_page_writeback", "ext4_finish_bio"]);
}

/// Item 7: an abridged report that keeps its start ("[omitted for brevity]" lines) is an excerpt too.
#[test]
fn an_abridged_latency_report_is_an_excerpt_with_its_start() {
    let (name, t) = fixture("latency/wakeup_rt-5.4.140-rt64-rpi4-arm64-abridged.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let x = a.latency_trace.as_ref().and_then(|r| r.excerpt.as_ref()).expect("an excerpt");
    assert_eq!((x.shown, x.recorded, x.has_start), (10, 345, true));
    assert!(x.repeated.is_empty());
}

/// Item 8: irqs-off evidence from sparse `d`-flagged function entries is reported with its granularity and
/// gets no verdict when a gap is large against the section.
#[test]
fn sampled_irqs_off_sections_carry_their_granularity() {
    let (name, t) = fixture("events/rpi-4.19-armv7-function-stacktrace-symoffset-126k.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let f = a.irqs_off.longest().expect("a section");
    assert_eq!(f.section.duration(), Nanos::from_us(584));
    let IrqsOffSource::Flags { sampled, .. } = &f.section.source else { panic!("from the flags column") };
    assert_eq!(*sampled, Sampled { events: 26, max_gap: Nanos::from_us(63), switches: 0 });
    // Said as what its events show (not "nothing stands out", not a proven section): a verdict whose section
    // is not dense, without a remedy.
    assert_eq!(a.verdicts.len(), 1, "{:?}", a.verdicts);
    let v = &a.verdicts[0];
    assert_eq!(
        (v.kind, v.explanation.cause, v.magnitude),
        (VerdictKind::IrqsOff, CauseKind::IrqsOff, Nanos::from_us(584))
    );
    let s = v.section.as_ref().expect("the sampled section");
    assert!(!s.dense());
    assert_eq!((s.sampled.events, s.sampled.max_gap), (26, Nanos::from_us(63)));
    assert!(v.explanation.hint.is_none());
}

/// Item 4: interrupts stay off across a context switch, from `__schedule` in the previous task to
/// `finish_task_switch` in the next one (a function trace of PREEMPT_RT 6.1: the switch code after the
/// `sched_switch` event still runs under the previous task's name).
#[test]
fn irqs_off_across_a_sched_switch_is_one_section_from_schedule_to_finish_task_switch() {
    let (name, t) = fixture("explain/function-6.1-rt-x86_64-tcg-irqsoff-across-sched_switch.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let cpu = a.irqs_off.cpus.iter().find(|c| c.cpu == CpuId(1)).expect("CPU 1");
    let at = |ts: Nanos| cpu.longest.iter().map(|f| &f.section).find(|s| s.start == ts).expect("a section there");
    let flags = |s: &latscope_analyze::timeline::IrqsOffSection| match &s.source {
        IrqsOffSource::Flags { sampled, end_task, from, to } => {
            (*sampled, end_task.map(|(c, p)| (c.to_string(), p)), from.to_string(), to.to_string())
        }
        IrqsOffSource::Preemptirq { .. } => panic!("from the flags column"),
    };
    // The switch to the woken SCHED_FIFO thread. sh-119 calls `schedule` with irqs on (`.n.....` at
    // 9.529969), then shows them off from `rcu_note_context_switch` at 9.529972 through `psi_task_switch`
    // (9.529995), its `sched_switch` to latscope-t1 (9.529999) and `switch_mm_irqs_off` (9.530002, still sh-119);
    // latscope-t1-124 shows them off in `finish_task_switch.isra.0` at 9.530022 and on in
    // `hrtimer_try_to_cancel` at 9.530028. Section: 9.530022 - 9.529972 = 50 us; 8 events show `d` (972, 974,
    // 979, 981, 990, 995, 30.002, 30.022; the `sched_switch` is always emitted with irqs off and counts as no
    // evidence); the longest gap is 30.022 - 30.002 = 20 us.
    let s = at(Nanos(9_529_972_000));
    assert_eq!(s.duration(), Nanos::from_us(50));
    assert_eq!((s.comm.to_string(), s.pid), ("sh".to_string(), 119));
    assert_eq!(
        flags(s),
        (
            Sampled { events: 8, max_gap: Nanos::from_us(20), switches: 1 },
            Some(("latscope-t1".to_string(), 124)),
            "rcu_note_context_switch".to_string(),
            "finish_task_switch".to_string()
        )
    );
    // The switch from latscope-t1 to rcuc/1 ends in rcuc/1's `finish_task_switch` at 9.529072, which enables
    // interrupts: rcuc/1's `try_to_wake_up` 238 us later shows them off again (`D...412`) in a section of its own.
    // 9.529072 - 9.529008 = 64 us; 9 events (008, 011, 013, 014, 032, 034, 037, 041, 072), longest gap 072 - 041.
    let s = at(Nanos(9_529_008_000));
    assert_eq!(s.duration(), Nanos::from_us(64));
    assert_eq!(
        flags(s),
        (
            Sampled { events: 9, max_gap: Nanos::from_us(31), switches: 1 },
            Some(("rcuc/1".to_string(), 27)),
            "rcu_note_context_switch".to_string(),
            "finish_task_switch".to_string()
        )
    );
    // Each of the four switches in the file is one such section.
    let across: Vec<_> = cpu.longest.iter().filter(|f| flags(&f.section).0.switches == 1).collect();
    assert_eq!(across.len(), 4, "{:?}", cpu.longest);
    assert!(across.iter().all(|f| flags(&f.section).3 == "finish_task_switch"));
}

/// Item 3, a device interrupt on an otherwise idle CPU (PREEMPT_RT 6.1, virtio disk completions from `dd
/// oflag=direct`): between the timer interrupt's exit (7.080242) and latscope-t1's switch-in (7.080300) the
/// idle task is interrupted by `virtio0-req.1` (entry 7.080264, exit 7.080266: 2 us), which then wakes its
/// irq thread `irq/26-virtio0-` in hard-IRQ context (`dn.h` events from 7.080270 to 7.080280). The CPU never
/// left that interrupt between the handler's exit and the wakeup: the next event after the exit is already `h`,
/// no interrupt entry comes between (irq and irq_vectors events are both traced), and it wakes the thread of
/// IRQ 26 itself, which the IRQ core does from the same hard interrupt. So the hard IRQ after the handler runs
/// from 7.080266 to 7.080280: 14 us (it was 10 us, from the first `h` event, with the 4 us before it counted
/// as idle). The rest, 58 - 2 - 14 = 42 us, is the idle task's (its way out of idle with need-resched set).
#[test]
fn a_device_interrupt_on_an_idle_cpu_is_irq_time() {
    let (name, t) = fixture("explain/events-6.1-rt-x86_64-tcg-virtio-irq-on-idle-cpu.txt");
    let a = analyze(&name, &t, &AnalyzeOptions::default());
    let w = a.wakeups.iter().find(|w| w.task.pid == 133).expect("latscope-t1's wakeup");
    assert_eq!(w.switch_in, Nanos(7_080_300_000));
    let irq = |n: &str| w.components.iter().find(|c| c.cause == CauseKind::Irq && c.culprit.name == n);
    assert_eq!(irq("virtio0-req.1").map(|c| c.magnitude), Some(Nanos::from_us(2)), "{:?}", w.components);
    assert_eq!(irq("hard irq").map(|c| c.magnitude), Some(Nanos::from_us(14)), "{:?}", w.components);
    let idle = Nanos(w.components.iter().filter(|c| c.cause == CauseKind::Idle).map(|c| c.magnitude.0).sum());
    assert_eq!(idle, Nanos::from_us(42), "{:?}", w.components);
}
