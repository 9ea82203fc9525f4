//! Plain-text renderers, one file per result kind.

pub mod analysis;
pub mod audit;
pub mod noise;
pub mod noise_causes;
pub mod timer;
pub mod traced_wakeups;
