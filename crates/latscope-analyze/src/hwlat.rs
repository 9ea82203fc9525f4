//! The hwlat tracer's samples ➜ data: the samples of a trace ([`samples`]), their summary ([`summarize`]),
//! what the gaps can be blamed on here ([`HwlatSource`]: the hypervisor or firmware in a VM, SMIs where the
//! CPU counted some, else hardware or firmware the CPU does not count), and the verdict `analyze` gives a
//! trace with hwlat samples. A sample is time the CPU did not run the kernel while interrupts were off;
//! never a kernel culprit.

use crate::remedy;
use crate::verdict::{EvidenceLine, Verdict, VerdictKind};
use latscope_model::{
    CauseKind, Culprit, Event, EventKind, Explanation, HwlatSample, HwlatSource, HwlatSummary, Nanos, SmiCounts,
};
use serde::Serialize;

/// The samples of `events` (the hwlat tracer's records, from text or raw pages), in order.
pub fn samples(events: &[Event]) -> Vec<HwlatSample> {
    events.iter().filter_map(sample).collect()
}

/// One event as a sample, if it is one.
pub fn sample(e: &Event) -> Option<HwlatSample> {
    let EventKind::Hwlat { seqnum, count, nmi_count, inner, outer, nmi_total, wall } = e.kind else { return None };
    Some(HwlatSample {
        seqnum,
        cpu: e.cpu,
        time: e.ts,
        wall,
        inner,
        outer,
        count,
        nmi_count,
        nmi_total,
        smi_delta: None,
    })
}

/// The summary of `samples`; `threshold` counts those above it (every sample when `None`: the kernel
/// records only the widths over its own threshold).
pub fn summarize(samples: &[HwlatSample], threshold: Option<Nanos>) -> HwlatSummary {
    let mut s = HwlatSummary { samples: samples.len() as u64, ..HwlatSummary::default() };
    let mut last_seq: Option<u32> = None;
    for x in samples {
        let lat = x.latency();
        if threshold.map_or(true, |t| lat > t) {
            s.over_threshold += 1;
        }
        if s.worst.is_none() || lat > s.max {
            s.max = lat;
            s.worst = Some((x.seqnum, x.cpu));
        }
        s.max_inner = s.max_inner.max(x.inner);
        s.max_outer = s.max_outer.max(x.outer);
        if x.nmi_count > 0 {
            s.with_nmi += 1;
            s.nmis += u64::from(x.nmi_count);
        }
        if let Some(p) = last_seq {
            s.seq_gaps += u64::from(x.seqnum.saturating_sub(p).saturating_sub(1));
        }
        last_seq = Some(x.seqnum);
    }
    s
}

/// What `samples` can be blamed on, given the hypervisor (`RunMetadata::hypervisor`) and the SMI counts.
pub fn source(summary: &HwlatSummary, hypervisor: Option<&str>, smi: Option<&SmiCounts>) -> HwlatSource {
    if summary.samples == 0 {
        return HwlatSource::NoGap;
    }
    if let Some(h) = hypervisor {
        return HwlatSource::Virtualized { hypervisor: h.to_string() };
    }
    match smi.and_then(SmiCounts::total) {
        Some(0) => HwlatSource::NoSmi,
        Some(n) => HwlatSource::Smis { smis: n },
        None => HwlatSource::Unknown,
    }
}

/// The hwlat samples of an analysed trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HwlatReport {
    /// Every sample, in order.
    pub samples: Vec<HwlatSample>,
    /// Their summary.
    pub summary: HwlatSummary,
}

/// The report on `events`' hwlat samples, or `None` when it has none.
pub fn report(events: &[Event]) -> Option<HwlatReport> {
    let samples = samples(events);
    if samples.is_empty() {
        return None;
    }
    let summary = summarize(&samples, None);
    Some(HwlatReport { samples, summary })
}

/// The verdict on the worst sample: time no kernel event accounts for (the hardware, firmware or a
/// hypervisor), with the NMIs of its width counted when there were any.
/// `events` are those the report was made from: the worst sample's record is the evidence.
pub fn verdict(r: &HwlatReport, events: &[Event], remedy_ctx: &remedy::RemedyContext) -> Option<Verdict> {
    let (seq, cpu) = r.summary.worst?;
    let worst = r.samples.iter().find(|s| s.seqnum == seq && s.cpu == cpu)?;
    let evidence = events
        .iter()
        .position(|e| {
            e.cpu == cpu && e.ts == worst.time && matches!(e.kind, EventKind::Hwlat { seqnum, .. } if seqnum == seq)
        })
        .map(|index| EvidenceLine { index, event: events[index].clone() });
    let mut e = Explanation::new(CauseKind::NoKernelEvent, Culprit::default(), worst.latency(), Some(cpu));
    if worst.nmi_count > 0 {
        let nmi = worst.nmi_total.unwrap_or_default();
        let mut n = Explanation::new(CauseKind::Nmi, Culprit::default(), nmi, Some(cpu));
        n.count = u64::from(worst.nmi_count);
        e.within.push(n);
    }
    Some(Verdict {
        kind: VerdictKind::Hwlat,
        magnitude: worst.latency(),
        explanation: remedy::with_hint(e, None, remedy_ctx),
        diff: None,
        section: None,
        evidence: evidence.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CpuId;

    fn s(seq: u32, cpu: u32, inner: u64, outer: u64, nmi: u32) -> HwlatSample {
        HwlatSample {
            seqnum: seq,
            cpu: CpuId(cpu),
            inner: Nanos::from_us(inner),
            outer: Nanos::from_us(outer),
            nmi_count: nmi,
            ..HwlatSample::default()
        }
    }

    #[test]
    fn summarizes_the_worst_gap_nmis_and_skipped_sequence_numbers() {
        let xs = [s(1, 0, 11, 12, 0), s(2, 1, 16, 9, 1), s(5, 0, 9, 30, 2)];
        let sum = summarize(&xs, Some(Nanos::from_us(12)));
        assert_eq!(sum.samples, 3);
        assert_eq!(sum.over_threshold, 2, "12 us is not above 12 us");
        assert_eq!((sum.max, sum.worst), (Nanos::from_us(30), Some((5, CpuId(0)))));
        assert_eq!((sum.max_inner, sum.max_outer), (Nanos::from_us(16), Nanos::from_us(30)));
        assert_eq!((sum.with_nmi, sum.nmis, sum.seq_gaps), (2, 3, 2));
        assert_eq!(summarize(&xs, None).over_threshold, 3);
    }

    #[test]
    fn never_names_a_culprit_the_machine_cannot_tell() {
        let one = summarize(&[s(1, 0, 20, 3, 0)], None);
        assert_eq!(source(&HwlatSummary::default(), Some("KVM"), None), HwlatSource::NoGap);
        assert_eq!(source(&one, Some("KVM"), None), HwlatSource::Virtualized { hypervisor: "KVM".into() });
        let read = |a, b| SmiCounts { cpus: vec![(CpuId(0), a, b)], unreadable: None };
        assert_eq!(source(&one, None, Some(&read(4, 4))), HwlatSource::NoSmi);
        assert_eq!(source(&one, None, Some(&read(4, 7))), HwlatSource::Smis { smis: 3 });
        let no = SmiCounts { cpus: vec![], unreadable: Some("no /dev/cpu/0/msr".into()) };
        assert_eq!(source(&one, None, Some(&no)), HwlatSource::Unknown);
        assert_eq!(source(&one, None, None), HwlatSource::Unknown);
    }
}
