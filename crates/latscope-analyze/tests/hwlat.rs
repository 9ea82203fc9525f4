//! The hwlat tracer's output explained (#17 items 2 and 4): its samples are read with their NMIs, the worst
//! is the verdict as time below the kernel, and the records' own irqs-off flag is no section of code.

use latscope_analyze::analysis::{analyze, Analysis, AnalyzeOptions};
use latscope_analyze::verdict::VerdictKind;
use latscope_decode::decode_file;
use latscope_model::{CauseKind, CpuId, Nanos};

fn analysed(rel: &str) -> Analysis {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hwlat").join(rel);
    let t = decode_file(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
    analyze(rel, &t, &AnalyzeOptions::default())
}

#[test]
fn the_kernel_documentation_sample_run_is_read_as_time_below_the_kernel() {
    let a = analysed("hwlat-tracer-5.6-doc.txt");
    let h = a.hwlat.as_ref().expect("hwlat samples");
    assert_eq!(h.summary.samples, 12);
    assert_eq!((h.summary.max, h.summary.worst), (Nanos::from_us(18), Some((7, CpuId(3)))));
    assert_eq!((h.summary.max_inner, h.summary.max_outer), (Nanos::from_us(18), Nanos::from_us(17)));
    assert_eq!((h.summary.with_nmi, h.summary.nmis, h.summary.seq_gaps), (2, 2, 0));
    let tenth = &h.samples[9];
    assert_eq!((tenth.seqnum, tenth.cpu, tenth.nmi_total), (10, CpuId(1), Some(Nanos::from_us(7))));
    assert_eq!(tenth.wall, Some(Nanos(1_581_527_668_970_010_500)));
    // One verdict: the worst sample, time no kernel event accounts for; the records' `d` flag (written
    // inside the tracer's interrupts-off loop) is not read as an irqs-off section of the code around them.
    let kinds: Vec<VerdictKind> = a.verdicts.iter().map(|v| v.kind).collect();
    assert_eq!(kinds, [VerdictKind::Hwlat]);
    let v = &a.verdicts[0];
    assert_eq!(
        (v.explanation.cause, v.magnitude, v.explanation.cpu),
        (CauseKind::NoKernelEvent, Nanos::from_us(18), Some(CpuId(3)))
    );
    assert!(v.explanation.culprit.task.is_none(), "no task is blamed for a hwlat gap");
    assert_eq!(v.evidence.len(), 1);
    assert!(a.irqs_off.longest().is_none() && a.disabled.cpus.is_empty());
}
