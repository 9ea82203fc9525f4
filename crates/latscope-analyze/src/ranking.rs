//! The verdict of `latscope run` as data: the causes of latency on this machine from the traced timer
//! wakeups, the noise measurement and the audit, each a typed [`Explanation`] with the observations that
//! show it, ranked by the latency they explain, a configuration risk dropped when the cause it warns of
//! was measured.

use crate::remedy::{self, RemedyContext};
use latscope_model::noise_result::{CpuNoise, NoiseResult};
use latscope_model::{
    AuditResult, Cause, CauseKind, CpuId, Culprit, Explanation, Hint, Nanos, Observation, Severity, Source, TaskRef,
    TimerResult, TracedWakeup,
};

/// How many causes the verdict keeps.
pub const MAX_CAUSES: usize = 5;
/// How many traced wakeups the verdict states.
pub const MAX_WAKEUPS: usize = 2;
/// How many parts of a wakeup, interrupt lines and traced noise causes a cause lists as evidence.
const PARTS: usize = 5;
const LINES: usize = 3;

/// The verdict: measured causes by the latency they explain, then audit findings; at most [`MAX_CAUSES`].
pub fn rank(
    audit: Option<&AuditResult>,
    timer: Option<&TimerResult>,
    noise: Option<&NoiseResult>,
    ctx: &RemedyContext,
) -> Vec<Cause> {
    let mut all: Vec<Cause> = timer.map(|t| timer_causes(t, ctx)).unwrap_or_default();
    all.extend(noise.map(|n| noise_causes(n, ctx)).unwrap_or_default());
    all.sort_by_key(|c| std::cmp::Reverse(c.impact_ns));
    for c in audit.map(audit_causes).unwrap_or_default() {
        let measured = |kind| all.iter().any(|m| m.source != Source::Audit && m.explanation.cause == kind);
        if !warned_of(&c).is_some_and(measured) {
            all.push(c);
        }
    }
    all.truncate(MAX_CAUSES);
    all
}

/// The worst measured wakeup and its scale, as the first observation of a timer cause.
fn worst_wakeup(t: &TimerResult, task: Option<TaskRef>, cpu: CpuId, latency: Nanos, expected: Nanos) -> Observation {
    Observation::WorstWakeup {
        task,
        cpu,
        latency_ns: latency,
        expected_ns: expected,
        p99_ns: t.all.percentile("99").map(Nanos),
        samples: t.all.count,
    }
}

/// Causes from the timer's worst wakeups: the traced ones that the trace explains, else the worst one
/// with what is not known about it.
pub fn timer_causes(t: &TimerResult, ctx: &RemedyContext) -> Vec<Cause> {
    let traced: Vec<&TracedWakeup> = t.trace.iter().flat_map(|tr| &tr.worst).collect();
    let explained: Vec<Cause> =
        traced.iter().filter(|w| w.found()).filter_map(|w| traced_cause(t, w)).take(MAX_WAKEUPS).collect();
    if !explained.is_empty() {
        return explained;
    }
    let Some((cpu, w)) = t.worst_first().first().copied() else { return Vec::new() };
    let mut evidence = vec![worst_wakeup(t, None, cpu, Nanos(w.latency_ns), Nanos(w.expected_ns))];
    let unmatched = traced.iter().find(|x| x.cpu == cpu && x.seq == w.seq).map(|x| x.matched.clone());
    evidence.extend(unmatched.map(|matched| Observation::NotExplained { matched }));
    // An imported result that does not say its policy is not known to have run as SCHED_OTHER.
    if t.options.priority == 0 && !matches!(&t.imported, Some(i) if i.priority.is_none()) {
        evidence.push(Observation::SchedOtherTimer);
    }
    let e = Explanation::new(CauseKind::NotTraced, Culprit::default(), Nanos(w.latency_ns), Some(cpu));
    vec![Cause {
        source: Source::Timer,
        impact_ns: Nanos(w.latency_ns),
        explanation: remedy::with_hint(e, None, ctx),
        evidence,
    }]
}

/// A traced wakeup as a cause: its headline, the largest parts, the part no event covers.
fn traced_cause(t: &TimerResult, w: &TracedWakeup) -> Option<Cause> {
    let headline = w.headline.clone()?;
    let mut evidence = vec![worst_wakeup(t, w.task.clone(), w.cpu, w.trace_latency_ns, w.expected_ns)];
    let mut parts = w.shares.clone();
    parts.sort_by_key(|c| std::cmp::Reverse(c.magnitude));
    let rest: Vec<Explanation> = parts.split_off(parts.len().min(PARTS));
    evidence.extend(parts.into_iter().map(Observation::Part));
    if !rest.is_empty() {
        let total_ns = rest.iter().fold(Nanos::ZERO, |a, c| a + c.magnitude);
        evidence.push(Observation::OtherParts { count: rest.len() as u64, total_ns });
    }
    if w.remainder_ns > 0 {
        evidence.push(Observation::Uncovered { ns: Nanos(w.remainder_ns as u64) });
    }
    // An imported result that does not say its policy is not known to have run as SCHED_OTHER.
    if t.options.priority == 0 && !matches!(&t.imported, Some(i) if i.priority.is_none()) {
        evidence.push(Observation::SchedOtherTimer);
    }
    Some(Cause {
        source: Source::Trace,
        impact_ns: w.trace_latency_ns.max(w.sample_latency_ns),
        explanation: headline,
        evidence,
    })
}

/// Causes from the noise measurement: RT throttling per CPU, and for the CPU with the longest gap what the
/// trace attributed most of its noise to, or that no kernel event accounts for it, or that it was not
/// traced.
pub fn noise_causes(n: &NoiseResult, ctx: &RemedyContext) -> Vec<Cause> {
    let mut causes: Vec<Cause> = n.cpus.iter().filter_map(|c| throttling_cause(c, ctx)).collect();
    let Some(c) = n.cpus.iter().max_by_key(|c| c.max_gap_ns).filter(|c| c.max_gap_ns > 0) else { return causes };
    let throttled = c.rt_throttling.detected && c.rt_throttling.median_gap_ns * 2 > c.max_gap_ns;
    if throttled {
        return causes;
    }
    let mut evidence = vec![Observation::LongestGap {
        cpu: c.cpu,
        gap_ns: Nanos(c.max_gap_ns),
        gaps: c.gaps.count,
        threshold_ns: Nanos(n.options.threshold_ns),
        per_second: c.gaps.per_second,
        noise_pct: c.noise_pct,
    }];
    evidence.extend(c.counters.interrupts.iter().take(LINES).map(|d| Observation::Interrupts {
        id: d.id.clone(),
        description: d.description.clone(),
        delta: d.delta,
    }));
    if let Some(ns) = c.counters.steal_ns.filter(|s| *s > 0) {
        evidence.push(Observation::Steal { ns: Nanos(ns) });
    }
    if n.options.priority == 0 {
        evidence.push(Observation::SchedOtherSpinner);
    }
    let traced = n.causes.as_ref().and_then(|t| t.cpus.iter().find(|t| t.cpu == c.cpu));
    if let Some(t) = traced {
        evidence.extend(t.causes.iter().take(LINES).cloned().map(Observation::Part));
    }
    let gap = Nanos(c.max_gap_ns);
    let explanation = match traced {
        Some(t) if t.no_kernel_event_pct >= 50.0 => {
            evidence.push(Observation::SilentGaps { pct: t.no_kernel_event_pct });
            Explanation::new(CauseKind::NoKernelEvent, Culprit::default(), gap, Some(c.cpu))
        }
        Some(t) if !t.causes.is_empty() => t.causes[0].clone(),
        _ => Explanation::new(CauseKind::NotTraced, Culprit::default(), gap, Some(c.cpu)),
    };
    // The hypervisor is context for noise no kernel event (or no trace) explains, not for a named culprit.
    if let (Some(name), CauseKind::NoKernelEvent | CauseKind::NotTraced) = (&ctx.hypervisor, explanation.cause) {
        evidence.push(Observation::Hypervisor { name: name.clone() });
    }
    let pattern = crate::patterns::recognise(&explanation);
    causes.push(Cause {
        source: Source::Noise,
        impact_ns: Nanos(c.max_gap_ns),
        explanation: remedy::with_hint(explanation, pattern, ctx),
        evidence,
    });
    causes
}

/// RT throttling of one CPU's spinner, when its gaps show it.
fn throttling_cause(c: &CpuNoise, ctx: &RemedyContext) -> Option<Cause> {
    let t = &c.rt_throttling;
    if !t.detected {
        return None;
    }
    let mut e = Explanation::new(
        CauseKind::RtThrottling,
        Culprit::named(t.sysctl.clone()),
        Nanos(t.median_gap_ns),
        Some(c.cpu),
    );
    e.count = t.matched_gaps;
    let ctx = RemedyContext { rt_runtime_us: t.runtime_us, rt_period_us: t.period_us, ..ctx.clone() };
    Some(Cause {
        source: Source::Noise,
        impact_ns: Nanos(t.median_gap_ns),
        explanation: remedy::with_hint(e, None, &ctx),
        evidence: vec![
            Observation::ThrottleGaps {
                matched: t.matched_gaps,
                median_gap_ns: Nanos(t.median_gap_ns),
                median_interval_ns: Nanos(t.median_interval_ns),
                total_ns: Nanos(t.throttled_ns),
            },
            Observation::RtBandwidth { runtime_us: t.runtime_us, period_us: t.period_us },
        ],
    })
}

/// The measurable cause an audit cause's finding warns of.
fn warned_of(c: &Cause) -> Option<CauseKind> {
    c.evidence.iter().find_map(|o| match o {
        Observation::Finding(f) => f.cause,
        _ => None,
    })
}

/// Causes from the audit: its `fail` and `warn` findings, worst first (a configuration risk explains no
/// measured latency, so they rank after the measured causes).
fn audit_causes(a: &AuditResult) -> Vec<Cause> {
    let mut f: Vec<&latscope_model::Finding> = a.findings.iter().filter(|f| f.severity >= Severity::Warn).collect();
    f.sort_by_key(|f| std::cmp::Reverse(f.severity));
    f.into_iter()
        .map(|f| {
            let mut e = Explanation::new(CauseKind::Configuration, Culprit::named(f.id.clone()), Nanos::ZERO, None);
            let fixes: Vec<&str> = f.fix.iter().map(|x| x.action.as_str()).collect();
            e.hint = Some(Hint { pattern: None, why: f.why.clone(), remedy: fixes.join("; ") });
            Cause {
                source: Source::Audit,
                impact_ns: Nanos::ZERO,
                explanation: e,
                evidence: vec![Observation::Finding(f.clone())],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::noise_result::{CounterInfo, NoiseOptions, RtThrottling};
    use latscope_model::{CpuNoiseCauses, Finding, NoiseCauses, RunMetadata, SystemFacts, TimerOptions};

    fn throttled_noise() -> NoiseResult {
        let mut n = NoiseResult::new(RunMetadata::default(), NoiseOptions::default(), CounterInfo::default());
        n.cpus.push(CpuNoise {
            cpu: CpuId(0),
            max_gap_ns: 50_000_000,
            rt_throttling: RtThrottling {
                detected: true,
                matched_gaps: 3,
                median_gap_ns: 50_000_000,
                median_interval_ns: 1_000_000_000,
                throttled_ns: 150_000_000,
                in_longer_gaps: 0,
                runtime_us: Some(950_000),
                period_us: Some(1_000_000),
                sysctl: "kernel.sched_rt_runtime_us".into(),
                suggested_value: "-1".into(),
                ..RtThrottling::default()
            },
            ..CpuNoise::default()
        });
        n
    }

    #[test]
    fn rt_throttling_measured_replaces_the_audit_warning() {
        let audit = AuditResult::new(
            RunMetadata::default(),
            Default::default(),
            SystemFacts::default(),
            vec![
                Finding::new("sched.rt_throttling", Severity::Warn, "RT throttling on", "stops RT tasks")
                    .causes(CauseKind::RtThrottling),
                Finding::new("cpu.smt", Severity::Warn, "SMT on", "siblings share a core"),
            ],
        );
        let v = rank(Some(&audit), None, Some(&throttled_noise()), &RemedyContext::default());
        let kinds: Vec<(Source, CauseKind)> = v.iter().map(|c| (c.source, c.explanation.cause)).collect();
        assert_eq!(kinds, [(Source::Noise, CauseKind::RtThrottling), (Source::Audit, CauseKind::Configuration)]);
        assert_eq!(v[0].impact_ns, Nanos(50_000_000));
        assert!(v[0].explanation.hint.as_ref().is_some_and(|h| h.remedy.contains("sched_rt_runtime_us=-1")));
        assert_eq!(v[1].explanation.culprit.name, "cpu.smt");
    }

    #[test]
    fn silent_noise_is_blamed_on_no_kernel_event_with_the_hypervisor_named() {
        let mut n = NoiseResult::new(RunMetadata::default(), NoiseOptions::default(), CounterInfo::default());
        n.cpus.push(CpuNoise { cpu: CpuId(1), max_gap_ns: 400_000, ..CpuNoise::default() });
        let silent = Explanation::new(CauseKind::NoKernelEvent, Culprit::default(), Nanos(2_000_000), Some(CpuId(1)));
        let tick =
            Explanation::new(CauseKind::TimerTick, Culprit::named("local_timer"), Nanos(800_000), Some(CpuId(1)));
        n.causes = Some(NoiseCauses {
            cpus: vec![CpuNoiseCauses {
                cpu: CpuId(1),
                gaps: 100,
                no_kernel_event_pct: 80.0,
                causes: vec![silent, tick],
                ..CpuNoiseCauses::default()
            }],
            ..NoiseCauses::default()
        });
        let ctx = RemedyContext { hypervisor: Some("KVM".into()), ..RemedyContext::default() };
        let v = rank(None, None, Some(&n), &ctx);
        assert_eq!(v.len(), 1, "{v:?}");
        let e = &v[0].explanation;
        assert_eq!((e.cause, e.magnitude, e.cpu), (CauseKind::NoKernelEvent, Nanos(400_000), Some(CpuId(1))));
        assert!(e.hint.as_ref().is_some_and(|h| h.remedy.contains("KVM host")), "{e:?}");
        assert!(v[0].evidence.contains(&Observation::SilentGaps { pct: 80.0 }));
        let parts = v[0].evidence.iter().filter(|o| matches!(o, Observation::Part(_))).count();
        assert_eq!(parts, 2);
    }

    #[test]
    fn an_unexplained_worst_wakeup_says_it_was_not_traced() {
        let mut t = TimerResult::new(RunMetadata::default(), TimerOptions::default());
        t.cpus.push(latscope_model::CpuTimer {
            cpu: CpuId(1),
            worst: vec![latscope_model::WakeupSample { seq: 3, latency_ns: 605_000, ..Default::default() }],
            ..Default::default()
        });
        let v = timer_causes(&t, &RemedyContext::default());
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].source, v[0].explanation.cause, v[0].impact_ns),
            (Source::Timer, CauseKind::NotTraced, Nanos(605_000))
        );
    }
}
