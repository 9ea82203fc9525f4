//! latscope's analyses: samples and events ➜ findings (data, never text).

pub mod audit;
pub mod noise;
pub mod timer_summary;
pub mod windows;
