//! The timerlat tracer's real records with the osnoise events (`fixtures/dat/debian-6.1.0-56-rt-amd64-qemu-
//! timerlat*`: Debian's 6.1 PREEMPT_RT kernel in a qemu guest, CPU 1, 10 ms period, a SCHED_FIFO 97 thread
//! spinning 30 ms three times above the FIFO 95 timerlat thread): `analyze` (#17 item 4) leads with the
//! worst thread latency and the spinner it waited for, from the text and the raw pages alike.

use latscope_analyze::analysis::{analyze, Analysis, AnalyzeOptions};
use latscope_analyze::verdict::VerdictKind;
use latscope_decode::decode_file;
use latscope_model::event::TimerlatContext;
use latscope_model::{CauseKind, CpuId, Nanos};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(name)
}

fn analysed(name: &str) -> Analysis {
    let t = decode_file(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    analyze(name, &t, &AnalyzeOptions::default())
}

#[test]
fn the_worst_thread_latency_names_the_spinner_in_text_and_dat_alike() {
    let text = std::fs::read_to_string(fixture("dat/debian-6.1.0-56-rt-amd64-qemu-timerlat.txt")).expect("text");
    let spins =
        std::fs::read_to_string(fixture("dat/debian-6.1.0-56-rt-amd64-qemu-timerlat-spins.txt")).expect("spins");
    let longest_spin = spins
        .lines()
        .skip(1)
        .filter_map(|l| {
            let v: Vec<u64> = l.split_whitespace().filter_map(|t| t.parse().ok()).collect();
            (v.len() == 2).then(|| v[1] - v[0])
        })
        .max()
        .expect("spins");
    let txt = analysed("dat/debian-6.1.0-56-rt-amd64-qemu-timerlat.txt");
    let dat = analysed("dat/debian-6.1.0-56-rt-amd64-qemu-timerlat-v7.dat");
    for a in [&txt, &dat] {
        let v = &a.verdicts[0];
        assert_eq!(v.kind, VerdictKind::Timerlat, "{}", a.source.name);
        let e = &v.explanation;
        assert_eq!((e.cause, e.culprit.pid(), e.cpu), (CauseKind::BlockingTask, Some(122), Some(CpuId(1))));
        assert_eq!(v.magnitude, Nanos(37_911_920), "activation #43's thread latency, the largest the kernel printed");
        let r = a.timerlat.as_ref().expect("timerlat report");
        let w = r.worst.as_ref().expect("worst");
        assert_eq!((w.seqnum, w.context, w.irq_latency), (43, TimerlatContext::Thread, Some(Nanos(125_330))));
        // The thread waited behind the spinner: its noise is most of the latency, and no longer than a spin.
        let main = &w.within[0];
        assert_eq!((main.name.as_str(), main.duration), ("latscope-inject", Nanos(36_922_346)));
        assert!(main.duration.0 <= longest_spin && w.latency.0 <= longest_spin + longest_spin / 20, "{longest_spin}");
        // Per context, as many samples as the kernel printed.
        let c = &r.cpus[0];
        let thread = c.thread.expect("thread samples");
        assert_eq!(thread.count as usize, text.matches("context thread timer_latency").count());
        assert_eq!(c.irq.expect("irq samples").count as usize, text.matches("context    irq timer_latency").count());
        assert_eq!(thread.max, Nanos(37_911_920));
        assert!(e.hint.as_ref().is_some_and(|h| h.remedy.contains("latscope-inject off CPU 1")), "{:?}", e.hint);
        assert_eq!(v.evidence.len(), 3);
    }
    let (a, b) = (&txt.verdicts[0], &dat.verdicts[0]);
    assert_eq!(
        (a.magnitude, a.explanation.cause, &a.explanation.culprit),
        (b.magnitude, b.explanation.cause, &b.explanation.culprit)
    );
    assert_eq!(txt.timerlat.as_ref().map(|t| &t.cpus), dat.timerlat.as_ref().map(|t| &t.cpus));
}

/// The kernel documentation's timerlat lines have no osnoise events: the worst sample leads, and nothing is
/// named as its cause.
#[test]
fn without_osnoise_events_the_worst_sample_is_stated_not_explained() {
    let a = analysed("rtla/timerlat-tracer-trace-doc.txt");
    let v = &a.verdicts[0];
    assert_eq!(
        (v.kind, v.explanation.cause, v.magnitude),
        (VerdictKind::Timerlat, CauseKind::NotTraced, Nanos(11_700))
    );
    assert_eq!(a.timerlat.as_ref().map(|t| t.cpus.len()), Some(2));
}
