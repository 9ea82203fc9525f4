//! The hwlat tracer's samples ➜ data: the samples of a trace ([`samples`]), their summary ([`summarize`]),
//! what the gaps can be blamed on here ([`HwlatSource`]: the hypervisor or firmware in a VM, SMIs where the
//! CPU counted some, else hardware or firmware the CPU does not count), and the verdict `analyze` gives a
//! trace with hwlat samples. A sample is time the CPU did not run the kernel while interrupts were off;
//! never a kernel culprit.

use crate::keep::keep_largest;
use crate::remedy;
use crate::verdict::{Evidence, Verdict, VerdictKind};
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
    let mut t = HwlatTally::new(threshold);
    for x in samples {
        t.add(x);
    }
    t.summary
}

/// A [`HwlatSummary`] taken one sample at a time.
#[derive(Clone, Debug, Default)]
pub struct HwlatTally {
    threshold: Option<Nanos>,
    summary: HwlatSummary,
    last_seq: Option<u32>,
}

impl HwlatTally {
    /// No sample yet; `threshold` as [`summarize`]'s.
    pub fn new(threshold: Option<Nanos>) -> HwlatTally {
        HwlatTally { threshold, ..HwlatTally::default() }
    }

    /// Takes the next sample; returns whether it is the worst so far (of two as bad, the first).
    pub fn add(&mut self, x: &HwlatSample) -> bool {
        let s = &mut self.summary;
        s.samples += 1;
        let lat = x.latency();
        if self.threshold.map_or(true, |t| lat > t) {
            s.over_threshold += 1;
        }
        let worst = s.worst.is_none() || lat > s.max;
        if worst {
            s.max = lat;
            s.worst = Some((x.seqnum, x.cpu));
        }
        s.max_inner = s.max_inner.max(x.inner);
        s.max_outer = s.max_outer.max(x.outer);
        if x.nmi_count > 0 {
            s.with_nmi += 1;
            s.nmis += u64::from(x.nmi_count);
        }
        if let Some(p) = self.last_seq {
            s.seq_gaps += u64::from(x.seqnum.saturating_sub(p).saturating_sub(1));
        }
        self.last_seq = Some(x.seqnum);
        worst
    }

    /// The summary so far.
    pub fn summary(&self) -> &HwlatSummary {
        &self.summary
    }
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

/// Most samples an [`HwlatReport`] lists: the tracer records at most one a sampling window (a second by
/// default), so hours of records are listed whole; past it, the worst are listed (the summary counts all).
pub const MAX_LISTED: usize = 10_000;

/// The hwlat samples of an analysed trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HwlatReport {
    /// Every sample, in order (past [`MAX_LISTED`], the worst of them, in order).
    pub samples: Vec<HwlatSample>,
    /// Samples not listed (past [`MAX_LISTED`]), counted in the summary.
    #[serde(skip_serializing_if = "is_zero")]
    pub unlisted: u64,
    /// Their summary.
    pub summary: HwlatSummary,
    /// The worst sample's record: its index in the trace and the sample (the verdict's evidence).
    #[serde(skip)]
    pub worst: Option<(usize, HwlatSample)>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The report on `events`' hwlat samples, or `None` when it has none.
pub fn report(events: &[Event]) -> Option<HwlatReport> {
    let mut s = HwlatStream::default();
    for (i, e) in events.iter().enumerate() {
        s.step(i, e);
    }
    s.finish()
}

/// The hwlat samples of a trace, fed one record at a time: the summary, the worst record and the samples
/// listed, in at most 2 × [`MAX_LISTED`] samples of 80 bytes (1.6 MB), whatever the trace's length.
#[derive(Clone, Debug, Default)]
pub struct HwlatStream {
    tally: HwlatTally,
    /// The samples listed, with their record's index.
    listed: Vec<(usize, HwlatSample)>,
    worst: Option<(usize, HwlatSample)>,
    /// The worst record itself (what the verdict shows).
    worst_event: Option<Event>,
}

impl HwlatStream {
    /// The trace's record `index`.
    pub fn step(&mut self, index: usize, e: &Event) {
        let Some(x) = sample(e) else { return };
        if self.tally.add(&x) {
            self.worst = Some((index, x.clone()));
            self.worst_event = Some(e.clone());
        }
        self.listed.push((index, x));
        keep_largest(&mut self.listed, MAX_LISTED, false, |(_, x)| x.latency());
    }

    /// The worst sample's record, by index (the verdict's evidence line).
    pub fn worst_line(&self) -> Option<(usize, Event)> {
        Some((self.worst.as_ref()?.0, self.worst_event.clone()?))
    }

    /// The report, or `None` without samples.
    pub fn finish(&self) -> Option<HwlatReport> {
        self.worst.as_ref()?;
        let mut listed = self.listed.clone();
        keep_largest(&mut listed, MAX_LISTED, true, |(_, x)| x.latency());
        listed.sort_by_key(|(i, _)| *i);
        let summary = self.tally.summary().clone();
        Some(HwlatReport {
            unlisted: summary.samples - listed.len() as u64,
            samples: listed.into_iter().map(|(_, x)| x).collect(),
            summary,
            worst: self.worst.clone(),
        })
    }
}

/// The verdict on the worst sample: time no kernel event accounts for (the hardware, firmware or a
/// hypervisor), with the NMIs of its width counted when there were any.
/// `events` are those the report was made from: the worst sample's record is the evidence.
pub fn verdict(r: &HwlatReport, events: &dyn Evidence, remedy_ctx: &remedy::RemedyContext) -> Option<Verdict> {
    let (index, worst) = r.worst.as_ref()?;
    let cpu = worst.cpu;
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
        evidence: crate::verdict::lines(events, [*index]),
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
    fn lists_the_worst_samples_past_the_limit_and_counts_them_all() {
        let mut stream = HwlatStream::default();
        let n = 2 * MAX_LISTED + 7;
        // Latencies 10 to 19 us in turn; the 42nd sample is the worst and the 43rd as bad (the first is kept).
        let record = |i: usize| {
            let inner = Nanos::from_us(if i == 42 || i == 43 { 100 } else { 10 + (i % 10) as u64 });
            let kind = EventKind::Hwlat {
                seqnum: i as u32 + 1,
                count: 1,
                nmi_count: 0,
                inner,
                outer: Nanos::ZERO,
                nmi_total: None,
                wall: None,
            };
            crate::testing::ev(1_000_000 * i as u64, (i % 2) as u32, "<idle>", 0, kind)
        };
        for i in 0..n {
            stream.step(i, &record(i));
            assert!(stream.listed.len() < 2 * MAX_LISTED, "{} samples held at {i}", stream.listed.len());
        }
        let r = stream.finish().expect("report");
        assert_eq!((r.summary.samples, r.samples.len(), r.unlisted), (n as u64, MAX_LISTED, (n - MAX_LISTED) as u64));
        assert_eq!(r.summary.worst, Some((43, CpuId(0))));
        assert_eq!(r.worst.as_ref().map(|(i, x)| (*i, x.seqnum)), Some((42, 43)));
        assert_eq!(stream.worst_line().map(|(i, e)| (i, e.ts)), Some((42, Nanos(42_000_000))));
        // The worst listed, in time order: every sample of 15 us or more, none below.
        assert!(r.samples.windows(2).all(|w| w[0].time < w[1].time));
        assert!(r.samples.iter().all(|x| x.latency() >= Nanos::from_us(15)));
        // Fewer samples than the limit are all listed, as `samples` reads them.
        let events: Vec<Event> = (0..50).map(record).collect();
        let r = report(&events).expect("report");
        assert_eq!((&r.samples, r.unlisted), (&samples(&events), 0));
        let v = verdict(&r, &events, &remedy::RemedyContext::default()).expect("verdict");
        assert_eq!((v.magnitude, v.evidence[0].index), (Nanos::from_us(100), 42));
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
