//! The verdict of `latscope run` in words: each cause's title, its evidence lines and remedy, numbered,
//! most important first.

use super::explain::{self, WakeupView};
use crate::human::counted;
use latscope_model::{Cause, CauseKind, Nanos, Observation, Source};

fn us(ns: Nanos) -> String {
    ns.to_string()
}

/// One line that names the cause.
pub fn title(c: &Cause) -> String {
    let e = &c.explanation;
    let cpu = e.cpu.map_or_else(|| "?".to_string(), |c| c.to_string());
    let silent = c.evidence.iter().find_map(|o| match o {
        Observation::SilentGaps { pct } => Some(*pct),
        _ => None,
    });
    let hypervisor = c.evidence.iter().find_map(|o| match o {
        Observation::Hypervisor { name } => Some(name.as_str()),
        _ => None,
    });
    match c.source {
        Source::Trace => {
            let view = c.evidence.iter().find_map(|o| match o {
                Observation::WorstWakeup { task, cpu, latency_ns, .. } => Some(WakeupView {
                    task: task.as_ref(),
                    tid: task.as_ref().map_or(0, |t| t.pid),
                    latency: *latency_ns,
                    cpu: *cpu,
                    ..WakeupView::default()
                }),
                _ => None,
            });
            explain::wakeup_sentence(&view.unwrap_or_default(), Some(e))
        }
        Source::Timer => {
            let why = if c.evidence.iter().any(|o| matches!(o, Observation::NotExplained { .. })) {
                "the trace does not explain it"
            } else {
                "no trace to say why"
            };
            format!("Timer wakeups reach {} on CPU {cpu} ({why})", us(c.impact_ns))
        }
        Source::Noise => match e.cause {
            CauseKind::RtThrottling => {
                format!("RT throttling stopped the real-time spinner on CPU {cpu} for {}", us(e.magnitude))
            }
            CauseKind::NoKernelEvent => format!(
                "Hardware or hypervisor noise on CPU {cpu}: {:.0} % of the gaps (up to {}) carry no kernel event",
                silent.unwrap_or(0.0),
                us(c.impact_ns)
            ),
            CauseKind::NotTraced => match hypervisor {
                Some(h) => format!(
                    "OS/hypervisor noise on CPU {cpu}: gaps up to {} under {h} (no trace to say what ran)",
                    us(c.impact_ns)
                ),
                None => format!("OS noise on CPU {cpu}: gaps up to {} (no trace to say what ran)", us(c.impact_ns)),
            },
            _ => format!(
                "OS noise on CPU {cpu}: gaps up to {}, mostly {} ({:.0} % of the noise)",
                us(c.impact_ns),
                super::noise_causes::label(e),
                e.share.unwrap_or(0.0)
            ),
        },
        Source::Audit => c
            .evidence
            .iter()
            .find_map(|o| match o {
                Observation::Finding(f) => Some(format!("{} ({})", f.title, f.severity)),
                _ => None,
            })
            .unwrap_or_else(|| explain::label(e)),
    }
}

/// The evidence of a cause, one line per fact.
pub fn evidence(c: &Cause) -> Vec<String> {
    c.evidence.iter().flat_map(|o| observation(c.source, o)).collect()
}

fn observation(source: Source, o: &Observation) -> Vec<String> {
    let line = match o {
        Observation::WorstWakeup { cpu, latency_ns, expected_ns, p99_ns, samples, .. } => format!(
            "worst wakeup {} late on CPU {cpu} at {:.6} s (p99 over all CPUs {}, {samples} samples)",
            us(*latency_ns),
            expected_ns.0 as f64 / 1e9,
            p99_ns.map_or("-".into(), us)
        ),
        Observation::NotExplained { matched } => {
            let w = latscope_model::TracedWakeup { matched: matched.clone(), ..Default::default() };
            format!(
                "the trace does not explain it: {}",
                super::traced_wakeups::note(&w).unwrap_or_else(|| "no wakeup matched".into())
            )
        }
        Observation::Part(e) if source == Source::Noise => format!(
            "traced: {} in {}, {} in total ({:.1} % of the noise), longest {}",
            super::noise_causes::label(e),
            counted(e.count, "gap", "gaps"),
            e.magnitude,
            e.share.unwrap_or(0.0),
            e.max.unwrap_or(e.magnitude)
        ),
        Observation::Part(e) => format!("{} {}{}", explain::label(e), e.magnitude, explain::times(e)),
        Observation::OtherParts { count, total_ns } => {
            format!("{}: {}", counted(*count, "other part", "other parts"), us(*total_ns))
        }
        Observation::Uncovered { ns } => format!("not covered by a trace event: {}", us(*ns)),
        Observation::ThrottleGaps { matched, median_gap_ns, median_interval_ns, total_ns } => format!(
            "{} of ~{} every ~{}, {} in total",
            counted(*matched, "gap", "gaps"),
            us(*median_gap_ns),
            us(*median_interval_ns),
            us(*total_ns)
        ),
        Observation::RtBandwidth { runtime_us, period_us } => format!(
            "kernel.sched_rt_runtime_us = {} of sched_rt_period_us = {}",
            runtime_us.map_or("?".into(), |v| v.to_string()),
            period_us.map_or("?".into(), |v| v.to_string())
        ),
        Observation::LongestGap { cpu, gap_ns, gaps, threshold_ns, per_second, noise_pct } => format!(
            "longest gap {} on CPU {cpu}; {} above {} ({per_second:.1}/s), {noise_pct:.3} % of the CPU",
            us(*gap_ns),
            counted(*gaps, "gap", "gaps"),
            us(*threshold_ns)
        ),
        Observation::Interrupts { id, description, delta } => {
            format!("{} from {id} ({description})", counted(*delta, "interrupt", "interrupts"))
        }
        Observation::Steal { ns } => {
            format!("steal time {} (the hypervisor ran something else on this vCPU)", us(*ns))
        }
        Observation::SchedOtherSpinner => "the spinner ran as SCHED_OTHER: every other runnable task's time counts \
                                           as noise (a real-time thread would preempt them; --noise-priority N \
                                           measures that)"
            .into(),
        Observation::SchedOtherTimer => "the timer threads ran as SCHED_OTHER, not SCHED_FIFO: any other runnable \
                                         task delays their wakeups (as root, or with CAP_SYS_NICE, they run as \
                                         real-time threads)"
            .into(),
        Observation::SilentGaps { pct } => format!("{pct:.0} % of the traced gaps carry no kernel event"),
        Observation::Hypervisor { name } => format!("the machine runs under {name}"),
        Observation::Finding(f) => {
            let mut v: Vec<String> =
                f.evidence.iter().map(|e| format!("{} = {} ({})", e.fact, e.value, e.from)).collect();
            v.push(f.why.clone());
            return v;
        }
    };
    vec![line]
}

/// The remedy of a cause, when there is one.
pub fn remedy(c: &Cause) -> Option<&str> {
    explain::remedy(&c.explanation)
}

/// The verdict as text, one numbered cause with its evidence and remedy.
pub fn render(causes: &[Cause]) -> String {
    let mut out = String::from("Verdict: ");
    if causes.is_empty() {
        out.push_str("no cause of latency stood out.\n");
        return out;
    }
    let n = counted(causes.len() as u64, "cause", "causes");
    out.push_str(&format!("{n} of latency on this machine, most important first\n"));
    for (i, c) in causes.iter().enumerate() {
        out.push_str(&format!("  {}. {} [{}]\n", i + 1, title(c), c.source.as_str()));
        for e in evidence(c) {
            out.push_str(&format!("       evidence: {e}\n"));
        }
        if let Some(r) = remedy(c) {
            out.push_str(&format!("       remedy:   {r}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuId, Culprit, Explanation, Hint, TaskRef};

    #[test]
    fn rt_throttling_is_numbered_with_its_evidence_and_remedy() {
        let mut e = Explanation::new(
            CauseKind::RtThrottling,
            Culprit::named("kernel.sched_rt_runtime_us"),
            Nanos::from_ms(50),
            Some(CpuId(0)),
        );
        e.hint = Some(Hint { remedy: "sysctl -w kernel.sched_rt_runtime_us=-1".into(), ..Hint::default() });
        let c = Cause {
            source: Source::Noise,
            impact_ns: Nanos(50_000_000),
            explanation: e,
            evidence: vec![
                Observation::ThrottleGaps {
                    matched: 3,
                    median_gap_ns: Nanos(50_000_000),
                    median_interval_ns: Nanos(1_000_000_000),
                    total_ns: Nanos(150_000_000),
                },
                Observation::RtBandwidth { runtime_us: Some(950_000), period_us: Some(1_000_000) },
            ],
        };
        let text = render(&[c]);
        assert!(text.contains("1. RT throttling stopped the real-time spinner on CPU 0 for 50ms [noise]"), "{text}");
        assert!(text.contains("evidence: 3 gaps of ~50ms every ~1s, 150ms in total"), "{text}");
        assert!(text.contains("kernel.sched_rt_runtime_us = 950000 of sched_rt_period_us = 1000000"), "{text}");
        assert!(text.contains("remedy:   sysctl -w kernel.sched_rt_runtime_us=-1"), "{text}");
    }

    #[test]
    fn a_traced_wakeup_is_titled_by_its_sentence() {
        let victim = TaskRef::new("latscope-timer1", 77, Some(4));
        let h = Explanation::new(
            CauseKind::BlockingTask,
            Culprit::task(TaskRef::new("spinner", 4242, Some(2))),
            Nanos::from_us(600),
            Some(CpuId(1)),
        )
        .share_of(Nanos::from_us(605));
        let c = Cause {
            source: Source::Trace,
            impact_ns: Nanos(605_000),
            explanation: h.clone(),
            evidence: vec![
                Observation::WorstWakeup {
                    task: Some(victim),
                    cpu: CpuId(1),
                    latency_ns: Nanos(605_000),
                    expected_ns: Nanos(1_100_000),
                    p99_ns: Some(Nanos(20_000)),
                    samples: 1000,
                },
                Observation::Part(h),
            ],
        };
        assert_eq!(
            title(&c),
            "latscope-timer1:77 (prio 95) woke 605 us late on CPU 1; 99% of it (600 us) was spinner (pid 4242, \
             SCHED_FIFO/RR prio 97) running on CPU 1: a task of higher or equal real-time priority."
        );
        let ev = evidence(&c);
        assert!(ev[0].starts_with("worst wakeup 605us late on CPU 1 at 0.001100 s (p99 over all CPUs 20us"), "{ev:?}");
        assert_eq!(ev[1], "task spinner (pid 4242, SCHED_FIFO/RR prio 97) 600us");
    }
}
