//! Plain-text renderers, one file per result kind.

pub mod analysis;
pub mod analysis_verdicts;
pub mod audit;
pub mod explain;
pub mod flag_sections;
pub mod hwlat;
pub mod kernel_wakeup;
pub mod noise;
pub mod noise_causes;
pub mod noise_sources;
pub mod osnoise;
pub mod rtla;
pub mod timer;
pub mod timerlat;
pub mod trace_stats;
pub mod traced_wakeups;
pub mod verdict;
pub mod windowed;
