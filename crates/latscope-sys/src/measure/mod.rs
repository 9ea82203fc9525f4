//! Measurement threads and what they need: the clock, real-time setup guards, timer latency
//! measurement, and a known-load injector for ground-truth tests.

pub mod clock;
pub mod cycles;
pub mod inject;
pub mod noise;
pub mod rt;
pub mod timer;
