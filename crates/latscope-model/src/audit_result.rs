//! The `latscope audit` result on the wire (`"schema": "latscope/1"`, `"kind": "audit"`): run metadata,
//! the CPUs audited, the collected facts and the findings.

use crate::facts::SystemFacts;
use crate::finding::{Finding, Severity};
use crate::wire::{ResultKind, SCHEMA};
use crate::{CpuList, RunMetadata};
use serde::{Deserialize, Serialize};

/// The whole `latscope audit` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Always [`ResultKind::Audit`].
    pub kind: ResultKind,
    /// What ran, where, when.
    pub metadata: RunMetadata,
    /// The CPUs the findings were judged for.
    pub cpus: CpuList,
    /// Everything collected.
    pub facts: SystemFacts,
    /// The findings, worst first.
    pub findings: Vec<Finding>,
}

impl AuditResult {
    /// A result with the schema and kind set.
    pub fn new(metadata: RunMetadata, cpus: CpuList, facts: SystemFacts, findings: Vec<Finding>) -> AuditResult {
        AuditResult { schema: SCHEMA.to_string(), kind: ResultKind::Audit, metadata, cpus, facts, findings }
    }

    /// The worst severity found (`Ok` when there are no findings).
    pub fn worst(&self) -> Severity {
        self.findings.iter().map(|f| f.severity).max().unwrap_or(Severity::Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_and_worst() {
        let r = AuditResult::new(
            RunMetadata::default(),
            CpuList::default(),
            SystemFacts::default(),
            vec![Finding::new("a", Severity::Warn, "t", "w"), Finding::new("b", Severity::Info, "t", "w")],
        );
        assert_eq!(r.worst(), Severity::Warn);
        let v = serde_json::to_value(&r).expect("json");
        assert_eq!(v["schema"], "latscope/1");
        assert_eq!(v["kind"], "audit");
        assert!(v["facts"].is_object() && v["findings"].is_array());
    }
}
