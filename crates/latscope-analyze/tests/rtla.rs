//! rtla timerlat outputs explained (#19 item 14): the auto-analysis' culprit becomes the typed explanation.

use latscope_analyze::analysis::AnalyzeOptions;
use latscope_analyze::rtla::analyze_rtla;
use latscope_analyze::verdict::VerdictKind;
use latscope_decode::import::rtla::parse;
use latscope_model::{CauseKind, CpuId, Nanos};

fn analysed(rel: &str) -> latscope_analyze::analysis::Analysis {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rtla-output").join(rel);
    let text = std::fs::read_to_string(p).expect("fixture");
    analyze_rtla(rel, parse(rel, &text).expect("parses"), &AnalyzeOptions::default())
}

#[test]
fn top_auto_analysis_names_the_kernel_code_that_held_the_timer_irq() {
    let a = analysed("timerlat-top-aa-doc-6.x.txt");
    let v = &a.verdicts[0];
    assert_eq!((v.kind, v.magnitude), (VerdictKind::Rtla, Nanos(41_960)));
    let e = &v.explanation;
    assert_eq!(
        (e.cause, e.magnitude, e.share, e.cpu),
        (CauseKind::TimerIrqDelay, Nanos(27_490), Some(65.52), Some(CpuId(23)))
    );
    let held = &e.within[0];
    assert_eq!(held.cause, CauseKind::KernelCode);
    let t = held.culprit.task.as_ref().expect("task");
    assert_eq!((t.comm.as_str(), t.pid), ("objtool", 49256));
    assert_eq!(
        held.culprit.chain[..2],
        ["_raw_spin_unlock_irqrestore".to_string(), "cgroup_rstat_flush_locked".into()]
    );
    assert_eq!(held.culprit.syscall.as_deref(), Some("pwrite64"));
    let others: Vec<(CauseKind, Nanos)> = e.within[1..].iter().map(|w| (w.cause, w.magnitude)).collect();
    assert_eq!(others, [(CauseKind::IrqHandler, Nanos(9_590)), (CauseKind::BlockingTask, Nanos(3_790))]);
    assert!(e.hint.as_ref().is_some_and(|h| h.remedy.contains("_raw_spin_unlock_irqrestore")), "{:?}", e.hint);
}

#[test]
fn an_irq_stop_pasted_with_no_break_spaces_names_the_interrupted_driver_code() {
    let a = analysed("timerlat-aa-irq-nbsp-quoted-wrapped-2025.txt");
    let v = &a.verdicts[0];
    assert_eq!(v.magnitude, Nanos(709_250));
    let e = &v.explanation;
    assert_eq!((e.cause, e.magnitude, e.cpu), (CauseKind::TimerIrqDelay, Nanos(709_250), Some(CpuId(1))));
    let held = &e.within[0];
    assert_eq!(held.cause, CauseKind::KernelCode);
    assert_eq!(held.culprit.task.as_ref().map(|t| (t.comm.as_str(), t.pid)), Some(("ip", 3567)));
    assert_eq!(held.culprit.chain.first().map(String::as_str), Some("igb_update_mc_addr_list"));
}

#[test]
fn blocking_thread_and_irq_interference_and_idle_exit() {
    let a = analysed("timerlat-aa-tabs-lost-webpaste-2024.txt");
    let e = &a.verdicts[0].explanation;
    assert_eq!((e.cause, e.magnitude, e.share), (CauseKind::BlockingTask, Nanos(1_223_160), Some(99.0)));
    assert_eq!(e.culprit.task.as_ref().map(|t| (t.comm.as_str(), t.pid)), Some(("insync", 4048)));
    let irq = e.within.iter().find(|w| w.cause == CauseKind::Irq).expect("irq interference");
    assert_eq!((irq.culprit.name.as_str(), irq.culprit.irq, irq.magnitude), ("local_timer", Some(236), Nanos(4_930)));

    let a = analysed("timerlat-hist-user-aa-idle-tabs-2024.txt");
    let e = &a.verdicts[0].explanation;
    assert_eq!((e.cause, e.magnitude), (CauseKind::TimerIrqDelay, Nanos(48_210)));
    assert_eq!(e.within[0].cause, CauseKind::Idle);
}

#[test]
fn a_table_without_auto_analysis_reports_the_worst_latency_as_not_explained() {
    let a = analysed("timerlat-hist-doc-6.x.txt");
    assert_eq!(a.verdicts.len(), 1);
    let v = &a.verdicts[0];
    assert_eq!(
        (v.magnitude, v.explanation.cause, v.explanation.cpu),
        (Nanos::from_us(58), CauseKind::NotTraced, Some(CpuId(1)))
    );
}

/// osnoise and hwnoise tables (kernel docs): the longest single noise is the verdict, not traced.
#[test]
fn the_longest_single_noise_of_an_osnoise_or_hwnoise_table_is_the_verdict() {
    for (rel, format, us, cpu) in [
        ("osnoise-top-doc-6.x.txt", "rtla osnoise top", 56, 0),
        ("hwnoise-doc-6.x.txt", "rtla hwnoise", 4, 4),
        ("osnoise-hist-doc-6.x.txt", "rtla osnoise hist", 50, 9),
    ] {
        let a = analysed(rel);
        assert_eq!(a.source.format.as_deref(), Some(format));
        assert_eq!(a.verdicts.len(), 1, "{rel}");
        let v = &a.verdicts[0];
        assert_eq!((v.kind, v.magnitude), (VerdictKind::Rtla, Nanos::from_us(us)), "{rel}");
        assert_eq!((v.explanation.cause, v.explanation.cpu), (CauseKind::NotTraced, Some(CpuId(cpu))), "{rel}");
    }
}
