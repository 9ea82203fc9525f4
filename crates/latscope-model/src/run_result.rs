//! The `latscope run` result on the wire (`"schema": "latscope/1"`, `"kind": "run"`): the audit, the timer
//! and noise measurements, the verdict (top causes as typed explanations with their evidence) and what was
//! skipped.

use crate::audit_result::AuditResult;
use crate::noise_result::NoiseResult;
use crate::wire::{ResultKind, SCHEMA};
use crate::{CpuId, Explanation, Finding, MissingFeature, Nanos, RunMetadata, SampleMatch, TaskRef, TimerResult};
use serde::{Deserialize, Serialize};

/// Where a cause in the verdict was seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The trace taken during the timer measurement.
    #[default]
    Trace,
    /// The timer measurement alone.
    Timer,
    /// The noise measurement (with its trace, when taken).
    Noise,
    /// The audit of the configuration.
    Audit,
}

impl Source {
    /// The lower-case name (`trace`, `timer`, `noise`, `audit`).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Trace => "trace",
            Source::Timer => "timer",
            Source::Noise => "noise",
            Source::Audit => "audit",
        }
    }
}

/// A measurement or fact that shows a cause in the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Observation {
    /// The worst wakeup the timer measured, with the run's p99 and sample count for scale.
    WorstWakeup {
        /// The measuring thread, as the trace names it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<TaskRef>,
        /// Its CPU.
        cpu: CpuId,
        /// Its latency, ns.
        latency_ns: Nanos,
        /// When it should have woken, CLOCK_MONOTONIC ns.
        expected_ns: Nanos,
        /// p99 over all CPUs, ns.
        p99_ns: Option<Nanos>,
        /// Samples over all CPUs.
        samples: u64,
    },
    /// Why the trace does not explain that wakeup.
    NotExplained {
        /// How the match failed.
        matched: SampleMatch,
    },
    /// One part of a traced wakeup, or one traced cause of a CPU's noise.
    Part(Explanation),
    /// More parts, summed.
    OtherParts {
        /// How many.
        count: u64,
        /// Their total, ns.
        total_ns: Nanos,
    },
    /// Latency that no trace event covers, ns.
    Uncovered {
        /// How much.
        ns: Nanos,
    },
    /// Gaps that match RT throttling.
    ThrottleGaps {
        /// How many.
        matched: u64,
        /// Their median length, ns.
        median_gap_ns: Nanos,
        /// Median time between their starts, ns.
        median_interval_ns: Nanos,
        /// Their total, ns.
        total_ns: Nanos,
    },
    /// The RT bandwidth settings.
    RtBandwidth {
        /// `kernel.sched_rt_runtime_us` (-1 = unlimited).
        runtime_us: Option<i64>,
        /// `kernel.sched_rt_period_us`.
        period_us: Option<u64>,
    },
    /// The longest gap of a noise measurement and its CPU's noise.
    LongestGap {
        /// The CPU.
        cpu: CpuId,
        /// The gap, ns.
        gap_ns: Nanos,
        /// Gaps above the threshold.
        gaps: u64,
        /// The threshold, ns.
        threshold_ns: Nanos,
        /// Gaps per second.
        per_second: f64,
        /// Noise as a share of the CPU, percent.
        noise_pct: f64,
    },
    /// An interrupt line that fired on the CPU during the run (`/proc/interrupts`).
    Interrupts {
        /// The line (`LOC`, `24`).
        id: String,
        /// Its description.
        description: String,
        /// How often.
        delta: u64,
    },
    /// Steal time over the run (the hypervisor ran something else on this vCPU), ns.
    Steal {
        /// How much.
        ns: Nanos,
    },
    /// The noise spinner ran as SCHED_OTHER: every other runnable task's time counts as noise.
    SchedOtherSpinner,
    /// The timer threads ran as SCHED_OTHER (asked for, or SCHED_FIFO refused without root): any runnable
    /// task delays their wakeups.
    SchedOtherTimer,
    /// The share of a CPU's traced gaps that carry no kernel event, percent.
    SilentGaps {
        /// Percent of the gaps.
        pct: f64,
    },
    /// The machine runs under this hypervisor.
    Hypervisor {
        /// Its name.
        name: String,
    },
    /// An audit finding: its facts, why it matters and its fixes.
    Finding(Finding),
}

/// One cause of latency on this machine, as the verdict states it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    /// Where it was seen.
    pub source: Source,
    /// The worst latency or gap it explains, ns (0 for a configuration risk without a measurement): what
    /// the verdict ranks by.
    pub impact_ns: Nanos,
    /// The cause, what it explains (`magnitude`: the worst latency or gap, 0 for a configuration risk
    /// without a measurement), its culprit and remedy.
    pub explanation: Explanation,
    /// The measurements and facts that show it.
    pub evidence: Vec<Observation>,
}

/// The whole `latscope run` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Always [`ResultKind::Run`].
    pub kind: ResultKind,
    /// What ran, where, when.
    pub metadata: RunMetadata,
    /// Duration of each measurement, ns.
    pub duration_each_ns: u64,
    /// The audit, when it ran.
    #[serde(default)]
    pub audit: Option<AuditResult>,
    /// The timer measurement, when it ran.
    #[serde(default)]
    pub timer: Option<TimerResult>,
    /// The noise measurement, when it ran.
    #[serde(default)]
    pub noise: Option<NoiseResult>,
    /// The verdict: causes, most important first.
    #[serde(default)]
    pub causes: Vec<Cause>,
    /// What could not run, why, and what would enable it.
    #[serde(default)]
    pub skipped: Vec<MissingFeature>,
    /// Other things the reader must know.
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl RunResult {
    /// An empty result with the schema and kind set.
    pub fn new(metadata: RunMetadata, duration_each_ns: u64) -> RunResult {
        RunResult {
            schema: SCHEMA.to_string(),
            kind: ResultKind::Run,
            metadata,
            duration_each_ns,
            audit: None,
            timer: None,
            noise: None,
            causes: Vec::new(),
            skipped: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_envelope() {
        let mut r = RunResult::new(RunMetadata::default(), 3_000_000_000);
        let mut e = crate::Explanation::new(
            crate::CauseKind::RtThrottling,
            crate::Culprit::named("kernel.sched_rt_runtime_us"),
            crate::Nanos::from_ms(50),
            Some(CpuId(1)),
        );
        e.hint = Some(crate::Hint { remedy: "sysctl -w kernel.sched_rt_runtime_us=-1".into(), ..Default::default() });
        r.causes.push(Cause {
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
        });
        r.skipped.push(MissingFeature::new("tracefs", "not mounted", "mount -t tracefs nodev /sys/kernel/tracing"));
        let v = serde_json::to_value(&r).expect("json");
        assert_eq!((v["schema"].as_str(), v["kind"].as_str()), (Some("latscope/1"), Some("run")));
        assert_eq!(v["causes"][0]["explanation"]["cause"], "rt_throttling");
        assert_eq!(v["causes"][0]["evidence"][0]["kind"], "throttle_gaps");
        let back: RunResult = serde_json::from_value(v).expect("back");
        assert_eq!(back, r);
    }
}
