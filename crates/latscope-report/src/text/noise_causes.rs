//! Text for `latscope noise --trace`: what ran in the gaps, by cause (count, total, max, share), saying
//! plainly when most gaps carry no kernel event at all, with the steal-time counter beside it.

use super::explain;
use latscope_model::{CauseKind, CpuNoiseCauses, Explanation, NoiseCauses};
use std::io::{self, Write};

/// A gap's cause as the report names it: `IRQ 30 virtio0`, `task kworker/1:1 (pid 42, …)`, … (idle in a
/// gap means the spinner was switched out).
pub fn label(c: &Explanation) -> String {
    match c.cause {
        CauseKind::Idle => "the CPU went idle (spinner switched out)".into(),
        _ => explain::label(c),
    }
}

/// Writes the causes of every CPU's gaps.
pub fn write_noise_causes(out: &mut dyn Write, n: &NoiseCauses) -> io::Result<()> {
    writeln!(out)?;
    if n.events == 0 && n.cpus.is_empty() {
        // Nothing was traced: the gaps are measured, what ran in them is not known.
        writeln!(out, "What ran in the gaps: not known, no trace was taken")?;
        return n.notes.iter().try_for_each(|note| writeln!(out, "  note: {note}"));
    }
    write!(out, "What ran in the gaps (from the trace, {} events", n.events)?;
    if n.lost_events > 0 {
        write!(out, ", {} lost", n.lost_events)?;
    }
    writeln!(out, "):")?;
    for c in &n.cpus {
        write_cpu(out, c)?;
    }
    for note in &n.notes {
        writeln!(out, "  note: {note}")?;
    }
    Ok(())
}

fn write_cpu(out: &mut dyn Write, c: &CpuNoiseCauses) -> io::Result<()> {
    let (attributed, measured) = (c.attributed_ns.0 as f64, c.measured_noise_ns.0 as f64);
    let diff = if measured == 0.0 { 0.0 } else { (attributed - measured) * 100.0 / measured };
    writeln!(
        out,
        "  CPU {}: {}, {} attributed of {} measured ({diff:+.1}%)",
        c.cpu,
        crate::human::counted(c.gaps, "gap", "gaps"),
        c.attributed_ns,
        c.measured_noise_ns
    )?;
    if c.outside_trace > 0 {
        writeln!(out, "    {} more gaps fell outside the trace's window and are not attributed", c.outside_trace)?;
    }
    writeln!(out, "    {:<48} {:>7} {:>10} {:>10} {:>7}", "cause", "gaps", "total", "max", "share")?;
    for x in &c.causes {
        writeln!(
            out,
            "    {:<48} {:>7} {:>10} {:>10} {:>6.1}%",
            label(x),
            x.count,
            x.magnitude.to_string(),
            x.max.unwrap_or(x.magnitude).to_string(),
            x.share.unwrap_or(0.0)
        )?;
    }
    let steal = c.steal_ns.map_or("not readable".to_string(), |s| s.to_string());
    if c.no_kernel_event_pct >= 50.0 {
        writeln!(
            out,
            "    {:.0}% of the gaps had no kernel event at all: the time went to the hardware or the hypervisor \
             (steal time over the run: {steal}).",
            c.no_kernel_event_pct
        )?;
    } else {
        writeln!(out, "    {:.0}% of the gaps had no kernel event (steal time: {steal}).", c.no_kernel_event_pct)?;
    }
    Ok(())
}

/// A cause for tests: `count` gaps of equal length adding up to `total_ns`.
#[cfg(test)]
pub(crate) fn test_cause(kind: CauseKind, name: &str, count: u64, total_ns: u64, share_pct: f64) -> Explanation {
    use latscope_model::Nanos;
    let mut e = Explanation::new(kind, latscope_model::Culprit::named(name), Nanos(total_ns), None);
    e.count = count;
    e.max = Some(Nanos(total_ns / count));
    e.share = Some(share_pct);
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CpuId;
    use latscope_model::Nanos;

    use super::test_cause as cause;

    #[test]
    fn says_plainly_when_most_gaps_have_no_kernel_event() {
        let n = NoiseCauses {
            cpus: vec![CpuNoiseCauses {
                cpu: CpuId(1),
                gaps: 10,
                attributed_ns: Nanos(150_000_000),
                measured_noise_ns: Nanos(151_000_000),
                outside_trace: 2,
                no_kernel_event_pct: 70.0,
                steal_ns: Some(Nanos(2_000_000)),
                causes: vec![
                    cause(CauseKind::RtThrottling, "kernel.sched_rt_runtime_us", 3, 149_800_000, 99.8),
                    cause(CauseKind::NoKernelEvent, "", 7, 200_000, 0.2),
                ],
            }],
            events: 42,
            ..NoiseCauses::default()
        };
        let mut buf = Vec::new();
        write_noise_causes(&mut buf, &n).expect("write");
        let s = String::from_utf8(buf).expect("utf8");
        for want in [
            "42 events",
            "CPU 1: 10 gaps, 150ms attributed of 151ms measured (-0.7%)",
            "RT throttling (kernel.sched_rt_runtime_us)",
            "no kernel event (hardware or hypervisor)",
            "70% of the gaps had no kernel event at all",
            "steal time over the run: 2ms",
            "2 more gaps fell outside the trace's window",
        ] {
            assert!(s.contains(want), "missing {want:?} in\n{s}");
        }
    }
}
