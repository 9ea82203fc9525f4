//! Text of the hwlat tracer's samples: the `latscope hwlat` result (options, one row per sample, the
//! summary, SMI counts) and what a sample means here, in plain words; and the sentence of `analyze`'s
//! verdict on a trace with hwlat samples. A sample is never worded as a kernel culprit.

use crate::human::{counted, human};
use latscope_analyze::hwlat::HwlatReport;
use latscope_model::{Explanation, HwlatResult, HwlatSample, HwlatSource, HwlatSummary, Nanos};
use std::io::{self, Write};

/// What one hwlat sample is, whatever the machine.
pub const WHAT_A_SAMPLE_IS: &str = "The kernel's hwlat tracer kept one CPU at a time in a loop with interrupts \
     off, reading its clock back to back; a sample is a sampling width whose longest gap between two reads \
     (inner) or two loop turns (outer) crossed the threshold. Nothing in Linux can run there (no interrupt, \
     no task, no softirq): the time went below the kernel, to the hardware, the firmware (SMIs) or a \
     hypervisor. It does not say that the kernel or a driver is slow.";

/// The plain words for what the gaps can be blamed on, and for the NMIs in them.
pub fn meaning(source: &HwlatSource, summary: &HwlatSummary) -> Vec<String> {
    let mut out = Vec::new();
    out.push(match source {
        HwlatSource::NoGap => {
            "No gap crossed the threshold: the hardware and firmware gave the CPU back in time while sampled.".into()
        }
        HwlatSource::Virtualized { hypervisor } => format!(
            "This is a virtual machine ({hypervisor}): the gaps are time the host took the virtual CPU (its \
             hypervisor, other guests, the host's own interrupts) or the host's firmware; the guest cannot tell \
             which. Measure on the host, or pin and isolate the host CPUs behind this guest's vCPUs."
        ),
        HwlatSource::Smis { smis } => format!(
            "The CPUs counted {} during the run (MSR_SMI_COUNT): firmware in System Management Mode ran; a sample \
             whose SMI column is above 0 had them in its interval. The firmware (BIOS settings, a BIOS update) \
             is where to look.",
            counted(*smis, "SMI", "SMIs")
        ),
        HwlatSource::NoSmi => "The CPUs counted no SMI during the run: the gaps are hardware or firmware time the \
             SMI counter does not see (deep power states, a machine check, a microcode assist, the platform's \
             management engine)."
            .into(),
        HwlatSource::Unknown => "The SMI counter is not readable here: the gaps are firmware (SMIs) or hardware \
             time, not told apart."
            .into(),
    });
    if summary.with_nmi > 0 {
        out.push(format!(
            "NMIs ran in the width of {} of the samples ({} in all): the kernel's NMI handler ran there and its \
             time is part of the gap (NMI time); the rest is still below the kernel.",
            summary.with_nmi,
            counted(summary.nmis, "NMI", "NMIs")
        ));
    }
    out
}

/// The header of the sample table.
fn write_header(out: &mut dyn Write, smi: bool) -> io::Result<()> {
    writeln!(
        out,
        "  {:>6}  {:>4}  {:>12}  {:>10}  {:>10}  {:>5}  {:>4}  {:>10}{}",
        "sample",
        "CPU",
        "time",
        "inner",
        "outer",
        "gaps",
        "NMIs",
        "NMI time",
        if smi { "   SMIs" } else { "" }
    )
}

/// One sample; `time` is counted from `start`.
fn write_row(out: &mut dyn Write, x: &HwlatSample, start: Nanos, smi: bool) -> io::Result<()> {
    let t = x.time.saturating_sub(start);
    writeln!(
        out,
        "  {:>6}  {:>4}  {:>10.3} s  {:>10}  {:>10}  {:>5}  {:>4}  {:>10}{}",
        format!("#{}", x.seqnum),
        x.cpu.0,
        t.0 as f64 / 1e9,
        human(x.inner),
        human(x.outer),
        x.count,
        x.nmi_count,
        x.nmi_total.map_or_else(|| "-".into(), human),
        if smi { format!("  {:>5}", x.smi_delta.map_or_else(|| "-".into(), |d| d.to_string())) } else { String::new() }
    )
}

/// One sample as a line of its own, as `latscope hwlat` shows them while it runs.
pub fn sample_line(x: &HwlatSample, start: Nanos) -> String {
    let mut s = format!(
        "hwlat sample #{} on CPU {} at {:.3} s: inner {}, outer {}",
        x.seqnum,
        x.cpu.0,
        x.time.saturating_sub(start).0 as f64 / 1e9,
        human(x.inner),
        human(x.outer)
    );
    if x.nmi_count > 0 {
        s.push_str(&format!(", {}", counted(u64::from(x.nmi_count), "NMI", "NMIs")));
    }
    if let Some(d) = x.smi_delta {
        s.push_str(&format!(", {}", counted(d, "SMI", "SMIs")));
    }
    s.push('\n');
    s
}

/// The summary lines.
fn write_summary(out: &mut dyn Write, s: &HwlatSummary, threshold: Option<Nanos>) -> io::Result<()> {
    match threshold {
        Some(t) => writeln!(out, "  samples recorded: {} (over {}: {})", s.samples, human(t), s.over_threshold)?,
        None => writeln!(out, "  samples recorded: {}", s.samples)?,
    }
    if let Some((seq, cpu)) = s.worst {
        writeln!(
            out,
            "  max latency: {} (sample #{seq}, CPU {}); largest inner gap {}, largest outer gap {}",
            human(s.max),
            cpu.0,
            human(s.max_inner),
            human(s.max_outer)
        )?;
    }
    if s.seq_gaps > 0 {
        writeln!(
            out,
            "  {} skipped by the kernel's sequence numbers (lost)",
            counted(s.seq_gaps, "sample", "samples")
        )?;
    }
    Ok(())
}

/// Writes `latscope hwlat`'s result.
pub fn write_result(out: &mut dyn Write, r: &HwlatResult) -> io::Result<()> {
    let o = &r.options;
    writeln!(
        out,
        "latscope hwlat: CPUs {}, threshold {}, width {} per window {}{}, ran {}",
        o.cpus,
        human(Nanos(o.threshold_ns)),
        human(Nanos(o.width_ns)),
        human(Nanos(o.window_ns)),
        o.mode.as_deref().map(|m| format!(", mode {m}")).unwrap_or_default(),
        human(Nanos(r.metadata.duration_ns))
    )?;
    let smi = r.smi.unreadable.is_none();
    if r.samples.is_empty() {
        writeln!(out, "  no sample crossed the threshold")?;
    } else {
        write_header(out, smi)?;
        for x in &r.samples {
            write_row(out, x, Nanos(r.start_monotonic_ns), smi)?;
        }
    }
    write_summary(out, &r.summary, Some(Nanos(o.threshold_ns)))?;
    match (&r.smi.unreadable, r.smi.total()) {
        (Some(why), _) => writeln!(out, "  SMI count: not readable here ({why})")?,
        (None, Some(n)) => writeln!(out, "  SMI count: {} on CPUs {} during the run", n, o.cpus)?,
        (None, None) => {}
    }
    for w in &r.warnings {
        writeln!(out, "  warning: {w}")?;
    }
    writeln!(out)?;
    writeln!(out, "{WHAT_A_SAMPLE_IS}")?;
    for m in meaning(&r.source, &r.summary) {
        writeln!(out, "{m}")?;
    }
    Ok(())
}

/// The sentence of `analyze`'s verdict on the worst hwlat sample of a trace.
pub fn verdict_sentence(r: Option<&HwlatReport>, e: &Explanation) -> String {
    let Some(r) = r else { return super::explain::label(e) };
    let worst = r.summary.worst.and_then(|(seq, cpu)| r.samples.iter().find(|s| s.seqnum == seq && s.cpu == cpu));
    let Some(w) = worst else { return super::explain::label(e) };
    let mut s = format!(
        "The hwlat tracer recorded {}; the worst, #{} on CPU {}, lost {} (inner {}, outer {}) with interrupts off: \
         time the CPU spent below the kernel (hardware, firmware/SMI or a hypervisor; the trace alone does not say \
         which).",
        counted(r.summary.samples, "sample", "samples"),
        w.seqnum,
        w.cpu.0,
        human(w.latency()),
        human(w.inner),
        human(w.outer)
    );
    if w.nmi_count > 0 {
        s.push_str(&format!(
            " {} ran in its width{}: that part of the gap is the kernel's NMI handler.",
            counted(u64::from(w.nmi_count), "NMI", "NMIs"),
            w.nmi_total.map(|t| format!(" for {}", human(t))).unwrap_or_default()
        ));
    }
    s
}

/// The sample table and summary under `analyze`'s details.
pub fn write_report(out: &mut dyn Write, r: &HwlatReport) -> io::Result<()> {
    writeln!(out, "hwlat samples:")?;
    write_header(out, false)?;
    let start = r.samples.first().map_or(Nanos::ZERO, |s| s.time);
    for x in &r.samples {
        write_row(out, x, start, false)?;
    }
    if r.unlisted > 0 {
        writeln!(
            out,
            "  ({} not listed: the worst are; the summary counts all)",
            counted(r.unlisted, "sample", "samples")
        )?;
    }
    write_summary(out, &r.summary, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuId, RunMetadata, SmiCounts};

    #[test]
    fn says_what_a_sample_means_on_a_vm_and_counts_its_nmis() {
        let x = HwlatSample {
            seqnum: 3,
            cpu: CpuId(1),
            time: Nanos::from_secs(2),
            inner: Nanos::from_us(40),
            outer: Nanos::from_us(12),
            count: 2,
            nmi_count: 1,
            nmi_total: Some(Nanos::from_us(7)),
            ..HwlatSample::default()
        };
        let summary = latscope_analyze::hwlat::summarize(std::slice::from_ref(&x), None);
        let mut r = HwlatResult::new(RunMetadata::default(), latscope_model::HwlatOptions::default());
        r.options.threshold_ns = 10_000;
        r.start_monotonic_ns = Nanos::from_secs(1).0;
        r.samples = vec![x];
        r.summary = summary;
        r.smi = SmiCounts { cpus: vec![], unreadable: Some("/dev/cpu/1/msr: no such file".into()) };
        r.source = HwlatSource::Virtualized { hypervisor: "KVM".into() };
        let mut out = Vec::new();
        write_result(&mut out, &r).expect("write");
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains("#3") && text.contains("40 us") && text.contains("1.000 s"), "{text}");
        assert!(text.contains("SMI count: not readable here (/dev/cpu/1/msr: no such file)"), "{text}");
        assert!(text.contains("virtual machine (KVM)") && text.contains("cannot tell which"), "{text}");
        assert!(text.contains("NMIs ran in the width of 1 of the samples (1 NMI in all)"), "{text}");
        assert!(!text.contains("SMIs\n"), "no SMI column when unreadable: {text}");
    }
}
