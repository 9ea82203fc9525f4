//! What `latscope record --json` writes: the recording's file, size and clock, the command it ran and how
//! that ended, and per CPU the pages, events and lost events, with the events counted by name.

use crate::wire::{ResultKind, SCHEMA};
use crate::CpuId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A recording, as `latscope record` wrote it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordResult {
    /// [`SCHEMA`].
    pub schema: String,
    /// [`ResultKind::Record`].
    pub kind: ResultKind,
    /// The file written (`-`: standard output).
    pub output: String,
    /// Its size, bytes.
    pub bytes: u64,
    /// Its format (`trace-cmd .dat v6`, `trace-cmd .dat v7, zstd`).
    pub format: String,
    /// Bytes of ring-buffer pages recorded (before compression).
    #[serde(default)]
    pub data_bytes: u64,
    /// Bytes they take in the file (compressed with `--compress`).
    #[serde(default)]
    pub data_bytes_in_file: u64,
    /// How long the recording ran, ns.
    #[serde(default)]
    pub recorded_ns: u64,
    /// How long writing (and compressing) the file took, ns.
    #[serde(default)]
    pub write_ns: u64,
    /// The trace clock.
    pub clock: String,
    /// The command recorded while it ran (after `--`), if any.
    pub command: Vec<String>,
    /// How the command ended (`exit status: 0`), if one ran.
    pub command_status: Option<String>,
    /// Per recorded CPU.
    pub cpus: Vec<RecordedCpu>,
    /// Events by name, over every CPU.
    pub events: BTreeMap<String, u64>,
    /// What the reader should know (lost events, pages that could not be decoded).
    pub warnings: Vec<String>,
}

impl RecordResult {
    /// An empty recording result with the schema and kind set.
    pub fn new(output: String) -> RecordResult {
        RecordResult {
            schema: SCHEMA.to_string(),
            kind: ResultKind::Record,
            output,
            bytes: 0,
            format: String::new(),
            data_bytes: 0,
            data_bytes_in_file: 0,
            recorded_ns: 0,
            write_ns: 0,
            clock: String::new(),
            command: Vec::new(),
            command_status: None,
            cpus: Vec::new(),
            events: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }
}

/// One recorded CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedCpu {
    /// The CPU.
    pub cpu: CpuId,
    /// Ring-buffer pages written.
    pub pages: u64,
    /// Events decoded from them.
    pub events: u64,
    /// Events lost (the kernel's count, or the pages' flags when larger).
    pub lost: u64,
    /// Events overwritten in the ring buffer.
    pub overrun: u64,
    /// Pages say events were lost before them without a count.
    pub lost_uncounted: bool,
    /// Why the CPU's reader stopped early, if it did.
    pub error: Option<String>,
}
