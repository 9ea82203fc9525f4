//! The hwlat tracer's findings as data: each sample it recorded ([`HwlatSample`]), their summary
//! ([`HwlatSummary`]), the SMI counts where the CPU's MSR is readable ([`SmiCounts`]), and the
//! `latscope hwlat` result on the wire (`"kind": "hwlat"`). `analyze` carries the same samples and
//! summary when a trace holds hwlat records.

use crate::wire::{ResultKind, SCHEMA};
use crate::{CpuId, CpuList, Nanos, RunMetadata, StopReason};
use serde::{Deserialize, Serialize};

/// One hwlat sample: a sampling width (interrupts off, the CPU reading its clock in a loop) whose
/// longest gap crossed the threshold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HwlatSample {
    /// The kernel's sequence number (1 for the first sample of a run).
    pub seqnum: u32,
    /// The CPU the width ran on.
    pub cpu: CpuId,
    /// When the kernel recorded it, in the trace's clock (CLOCK_MONOTONIC for latscope's runs).
    pub time: Nanos,
    /// Its CLOCK_REALTIME, when the format shows it (the text does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall: Option<Nanos>,
    /// Longest gap between two back-to-back clock reads.
    pub inner: Nanos,
    /// Longest gap between the end of one loop turn and the start of the next.
    pub outer: Nanos,
    /// Gaps over the threshold within the width (0 when the kernel does not count them).
    pub count: u32,
    /// NMIs that ran during the width.
    pub nmi_count: u32,
    /// Their total time, when the kernel shows it (not on architectures whose sched_clock is not NMI safe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmi_total: Option<Nanos>,
    /// SMIs the CPU counted between this sample and the one before it (MSR_SMI_COUNT), where readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smi_delta: Option<u64>,
}

impl HwlatSample {
    /// The larger of the inner and outer gap: the sample's latency.
    pub fn latency(&self) -> Nanos {
        self.inner.max(self.outer)
    }
}

/// What a set of hwlat samples adds up to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HwlatSummary {
    /// Samples recorded (each one a width whose longest gap crossed the kernel's threshold).
    pub samples: u64,
    /// Of them, those over the threshold asked for (all of them when it is the kernel's own).
    pub over_threshold: u64,
    /// The worst sample's latency (its larger gap), and the largest inner and outer gaps.
    pub max: Nanos,
    /// Largest inner gap.
    pub max_inner: Nanos,
    /// Largest outer gap.
    pub max_outer: Nanos,
    /// The worst sample's sequence number and CPU.
    pub worst: Option<(u32, CpuId)>,
    /// Samples with an NMI in their width, and the NMIs' count.
    pub with_nmi: u64,
    /// NMIs in all samples.
    pub nmis: u64,
    /// Sequence numbers the kernel skipped (samples lost or filtered before latscope read them).
    pub seq_gaps: u64,
}

/// SMI counts (MSR_SMI_COUNT, 0x34, Intel) per CPU at the start and end, or why they are not readable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmiCounts {
    /// Per CPU: the count at the start and at the end.
    pub cpus: Vec<(CpuId, u64, u64)>,
    /// Why not readable here (`/dev/cpu/N/msr` missing, not Intel, the MSR refused…); `None` when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

impl SmiCounts {
    /// SMIs over the run on all CPUs, when readable.
    pub fn total(&self) -> Option<u64> {
        self.unreadable.is_none().then(|| self.cpus.iter().map(|&(_, a, b)| b.saturating_sub(a)).sum())
    }
}

/// What the gaps can be blamed on on this machine, as far as it can tell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum HwlatSource {
    /// No sample: no gap over the threshold.
    #[default]
    NoGap,
    /// A virtual machine: the host (its hypervisor, other guests' vCPUs) or the firmware took the time; the
    /// guest cannot tell which.
    Virtualized { hypervisor: String },
    /// The CPU counted SMIs during the run: firmware (System Management Mode) ran; a sample whose own
    /// SMI delta is set had them in its interval.
    Smis { smis: u64 },
    /// The CPU counted no SMI: the gaps are hardware or firmware time the SMI counter does not see (power
    /// management, a machine check, a microcode assist…).
    NoSmi,
    /// Bare metal without a readable SMI counter: firmware (SMI) or hardware, not told apart.
    Unknown,
}

/// The options `latscope hwlat` ran with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HwlatOptions {
    /// Sampled CPUs.
    pub cpus: CpuList,
    /// A gap above this is a sample (`tracing_thresh`), ns.
    pub threshold_ns: u64,
    /// The sampling width with interrupts off in each window (`hwlat_detector/width`), ns.
    pub width_ns: u64,
    /// The window (`hwlat_detector/window`), ns.
    pub window_ns: u64,
    /// Requested duration; `None` ran until Ctrl-C.
    pub duration_ns: Option<u64>,
    /// The kernel's thread mode (`hwlat_detector/mode`: `round-robin`, `per-cpu`, `none`), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// `latscope hwlat`'s result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HwlatResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Always [`ResultKind::Hwlat`].
    pub kind: ResultKind,
    /// What ran, where, when (`hypervisor` says whether the gaps can be told apart from the host's).
    pub metadata: RunMetadata,
    /// The options used.
    pub options: HwlatOptions,
    /// Why the run ended.
    pub stopped_by: StopReason,
    /// Start of the run, CLOCK_MONOTONIC ns (the samples' `time` counts in the same clock).
    pub start_monotonic_ns: u64,
    /// Every sample the kernel recorded, in order.
    pub samples: Vec<HwlatSample>,
    /// Their summary.
    pub summary: HwlatSummary,
    /// SMI counts, or why there are none.
    pub smi: SmiCounts,
    /// What the gaps can be blamed on here.
    pub source: HwlatSource,
    /// Things the reader must know (lost samples, restore failures…).
    pub warnings: Vec<String>,
}

impl HwlatResult {
    /// An empty result for `options`.
    pub fn new(metadata: RunMetadata, options: HwlatOptions) -> HwlatResult {
        HwlatResult {
            schema: SCHEMA.into(),
            kind: ResultKind::Hwlat,
            metadata,
            options,
            stopped_by: StopReason::Duration,
            start_monotonic_ns: 0,
            samples: Vec::new(),
            summary: HwlatSummary::default(),
            smi: SmiCounts::default(),
            source: HwlatSource::NoGap,
            warnings: Vec::new(),
        }
    }
}
