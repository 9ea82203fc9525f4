//! An rtla output ➜ an [`Analysis`]: each timerlat auto-analysis becomes a verdict whose explanation is
//! its largest part (timer IRQ delay, the timerlat IRQ handler, the blocking thread, IRQ/softirq/thread
//! interference) with the other parts `within`; without an auto-analysis, the worst thread (or IRQ)
//! latency of the table — or, for osnoise and hwnoise, the longest single noise — is the verdict, marked
//! as not traced.

use crate::analysis::{analyze, Analysis, AnalyzeOptions};
use crate::remedy;
use crate::verdict::{Verdict, VerdictKind};
use latscope_model::{
    CauseKind, Culprit, DecodedTrace, Explanation, Nanos, RtlaAnalysis, RtlaBlocking, RtlaCpu, RtlaMode, RtlaOutput,
    RtlaPart, RtlaTool, TaskRef,
};

/// The analysis of rtla output `out` read from `name`.
pub fn analyze_rtla(name: &str, out: RtlaOutput, opts: &AnalyzeOptions) -> Analysis {
    let mut a = analyze(name, &DecodedTrace::default(), opts);
    a.source.format = Some(
        match (out.tool, out.mode) {
            (RtlaTool::Hwnoise, _) => "rtla hwnoise",
            (RtlaTool::Osnoise, RtlaMode::Hist) => "rtla osnoise hist",
            (RtlaTool::Osnoise, _) => "rtla osnoise top",
            (RtlaTool::Timerlat, RtlaMode::Top) => "rtla timerlat top",
            (RtlaTool::Timerlat, RtlaMode::Hist) => "rtla timerlat hist",
            (RtlaTool::Timerlat, RtlaMode::AutoAnalysis) => "rtla timerlat auto-analysis",
        }
        .to_string(),
    );
    a.source.cpus = out.cpus.iter().map(|c| c.cpu).collect();
    a.source.warnings = out.skipped.iter().map(|(l, t)| format!("{name}:{l}: not rtla output, skipped: {t}")).collect();
    let mut verdicts: Vec<Verdict> = out.analyses.iter().map(|x| auto_analysis(x, opts)).collect();
    if verdicts.is_empty() {
        verdicts.extend(worst_of_table(&out, opts));
    }
    a.verdicts = verdicts;
    a.rtla = Some(out);
    a.exceeded = a.threshold.is_some_and(|t| a.worst() > t);
    a
}

/// A verdict on a latency of `magnitude` (the auto-analysis' total) explained by `e`.
fn verdict(magnitude: Nanos, e: Explanation) -> Verdict {
    Verdict { kind: VerdictKind::Rtla, magnitude, explanation: e, diff: None, section: None, evidence: vec![] }
}

/// Interrupt entry code: the frames above it in rtla's stack are the interrupt, those below it what
/// the CPU was running when the interrupt came.
fn is_irq_entry(f: &str) -> bool {
    f.starts_with("asm_")
        || matches!(f, "el1h_64_irq" | "el0t_64_irq" | "el1_interrupt" | "gic_handle_irq" | "__irq_svc" | "irq_svc")
}

/// The frames of the blocking thread's stack below the interrupt entry (what the CPU was running).
fn interrupted_code(b: &RtlaBlocking) -> Vec<String> {
    match b.stack.iter().rposition(|f| is_irq_entry(f)) {
        Some(i) => b.stack[i + 1..].to_vec(),
        None => Vec::new(),
    }
}

/// What held the timer interrupt back for `d`: leaving idle, or the kernel code the blocking thread was
/// in when it finally came (kept irqs off there, or the CPU stalled).
fn held_back(a: &RtlaAnalysis, d: Nanos) -> Option<Explanation> {
    if a.exit_from_idle {
        return Some(Explanation::new(CauseKind::Idle, Culprit::default(), d, a.cpu));
    }
    let b = a.blocking.as_ref()?;
    (!interrupted_code(b).is_empty()).then(|| Explanation::new(CauseKind::KernelCode, blocking_culprit(b), d, a.cpu))
}

fn blocking_culprit(b: &RtlaBlocking) -> Culprit {
    Culprit {
        task: Some(TaskRef::new(b.comm.as_str(), b.pid, None)),
        chain: interrupted_code(b),
        syscall: b
            .stack
            .iter()
            .find_map(|f| f.strip_prefix("__x64_sys_").or(f.strip_prefix("__arm64_sys_")))
            .map(str::to_string),
        ..Culprit::default()
    }
}

fn part(cause: CauseKind, p: &RtlaPart, culprit: Culprit, a: &RtlaAnalysis) -> Explanation {
    let mut e = Explanation::new(cause, culprit, p.duration, a.cpu);
    e.share = p.share;
    e.within = p
        .entries
        .iter()
        .map(|x| {
            let who = match cause {
                CauseKind::BlockingTask => {
                    Culprit { task: Some(TaskRef::new(x.name.as_str(), x.id as i32, None)), ..Culprit::default() }
                }
                _ => Culprit { irq: u32::try_from(x.id).ok(), ..Culprit::named(x.name.clone()) },
            };
            Explanation::new(cause, who, x.duration, a.cpu)
        })
        .collect();
    e
}

/// The parts of one auto-analysis, largest first.
pub fn parts(a: &RtlaAnalysis) -> Vec<Explanation> {
    let blocker = a.blocking.as_ref().map(blocking_culprit).unwrap_or_default();
    let mut v = Vec::new();
    if let Some(p) = &a.irq_handler_delay {
        // What held the timer interrupt back: the code the blocking thread was in when it came.
        let mut e = part(CauseKind::TimerIrqDelay, p, Culprit::named("timerlat"), a);
        e.within.extend(held_back(a, p.duration));
        v.push(e);
    }
    if let Some(p) = &a.timerlat_irq {
        v.push(part(CauseKind::IrqHandler, p, Culprit::named("timerlat_irq"), a));
    }
    if let Some(p) = a.blocking.as_ref().and_then(|b| b.part.as_ref()) {
        v.push(part(CauseKind::BlockingTask, p, blocker.clone(), a));
    }
    for (cause, p) in [
        (CauseKind::Nmi, &a.nmi),
        (CauseKind::Irq, &a.irqs),
        (CauseKind::Softirq, &a.softirqs),
        (CauseKind::BlockingTask, &a.threads),
    ] {
        if let Some(p) = p {
            let one = (p.entries.len() == 1).then(|| p.entries[0].clone());
            let who = match (cause, one) {
                (CauseKind::BlockingTask, Some(x)) => {
                    Culprit { task: Some(TaskRef::new(x.name.as_str(), x.id as i32, None)), ..Culprit::default() }
                }
                (_, Some(x)) => Culprit { irq: u32::try_from(x.id).ok(), ..Culprit::named(x.name) },
                _ => Culprit::default(),
            };
            v.push(part(cause, p, who, a));
        }
    }
    v.sort_by_key(|x| std::cmp::Reverse(x.magnitude));
    v
}

/// One auto-analysis as a verdict on the whole latency, explained by its largest part (the other parts
/// follow the part's own entries in `within`).
fn auto_analysis(a: &RtlaAnalysis, opts: &AnalyzeOptions) -> Verdict {
    let total = a.total.or(a.irq_latency).unwrap_or_default();
    let mut shares = parts(a);
    let mut e = if a.irq_stop {
        // The IRQ latency hit the limit: rtla shows only where the CPU was (the blocking thread's stack).
        let mut e = Explanation::new(CauseKind::TimerIrqDelay, Culprit::named("timerlat"), total, a.cpu);
        e.within.extend(held_back(a, total));
        e
    } else if shares.is_empty() {
        Explanation::new(CauseKind::NotTraced, Culprit::named("rtla"), total, a.cpu)
    } else {
        let mut head = shares.remove(0);
        head.within.append(&mut shares);
        head
    };
    e.within.extend(shares);
    verdict(total, remedy::with_hint(e, None, &opts.remedy))
}

/// Without an auto-analysis: the worst latency of the table (for osnoise and hwnoise: the longest single
/// noise), which rtla measured but did not explain.
fn worst_of_table(out: &RtlaOutput, opts: &AnalyzeOptions) -> Option<Verdict> {
    let (cpu, max) = out
        .cpus
        .iter()
        .filter_map(|c| worst_of_cpu(c).map(|m| (c.cpu, m)))
        .max_by_key(|(cpu, m)| (*m, std::cmp::Reverse(*cpu)))?;
    let e = Explanation::new(CauseKind::NotTraced, Culprit::named("rtla"), max, Some(cpu));
    Some(verdict(max, remedy::with_hint(e, None, &opts.remedy)))
}

/// A CPU's worst: its thread latency (or IRQ latency), or its longest single noise.
fn worst_of_cpu(c: &RtlaCpu) -> Option<Nanos> {
    c.thread.or(c.irq).and_then(|s| s.max).or(c.noise.map(|n| n.max_single)).or(c.noise_hist.and_then(|s| s.max))
}

/// The worst latency (or single noise) in the table, as rtla's whole microseconds.
pub fn worst_in_table(out: &RtlaOutput) -> Option<Nanos> {
    out.cpus.iter().filter_map(worst_of_cpu).max()
}
