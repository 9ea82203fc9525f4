//! One module per subcommand: each owns its arguments and wiring.

pub mod analyze;
pub mod audit;
pub mod compare;
pub mod decode;
pub mod hwlat;
pub mod inject;
pub mod monitor;
pub mod noise;
mod noise_osnoise;
pub mod record;
pub mod report;
pub mod run;
pub mod timer;
mod timer_timerlat;
mod timer_wakeup;
