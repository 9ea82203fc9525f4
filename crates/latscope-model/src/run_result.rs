//! The `latscope run` result on the wire (`"schema": "latscope/1"`, `"kind": "run"`): the audit, the timer
//! and noise measurements, the verdict (top causes with evidence and remedy) and what was skipped.

use crate::audit_result::AuditResult;
use crate::noise_result::NoiseResult;
use crate::wire::{ResultKind, SCHEMA};
use crate::{MissingFeature, RunMetadata, TimerResult};
use serde::{Deserialize, Serialize};

/// One cause of latency on this machine, as the verdict states it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    /// One line: what causes latency (`RT throttling stops SCHED_FIFO tasks for 50 ms every second`).
    pub title: String,
    /// Where it was seen (`noise`, `timer`, `audit`, `trace`).
    pub source: String,
    /// The facts and measurements that show it.
    pub evidence: Vec<String>,
    /// What to do about it (a command, sysctl, boot parameter), empty when nothing can be done here.
    pub remedy: String,
    /// The worst latency or gap it explains, ns (0 when it is a configuration risk without a measurement).
    pub impact_ns: u64,
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
        r.causes.push(Cause {
            title: "RT throttling".into(),
            source: "noise".into(),
            evidence: vec!["3 gaps of 50 ms, 1 s apart".into()],
            remedy: "sysctl -w kernel.sched_rt_runtime_us=-1".into(),
            impact_ns: 50_000_000,
        });
        r.skipped.push(MissingFeature::new("tracefs", "not mounted", "mount -t tracefs nodev /sys/kernel/tracing"));
        let v = serde_json::to_value(&r).expect("json");
        assert_eq!((v["schema"].as_str(), v["kind"].as_str()), (Some("latscope/1"), Some("run")));
        let back: RunResult = serde_json::from_value(v).expect("back");
        assert_eq!(back, r);
    }
}
