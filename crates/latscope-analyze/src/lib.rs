//! latscope's analyses: samples and events ➜ findings (data, never text).

#![forbid(unsafe_code)]

pub mod analysis;
pub mod audit;
pub mod compare;
pub mod disabled;
pub mod flag_sections;
pub mod funcgraph;
pub mod funcgraph_stream;
pub mod held_back;
pub mod hrtimer;
pub mod hrtimer_expiries;
pub mod hwlat;
pub mod irq_stats;
pub mod irqsoff;
mod keep;
pub mod kernel_tracers;
pub mod kernel_wakeup;
pub mod latency_report;
pub mod latscope_threads;
pub mod lock_contention;
pub mod monitor_stats;
pub mod noise;
pub mod noise_attribution;
pub mod osnoise_report;
pub mod osnoise_samples;
mod parallel;
pub mod patterns;
pub mod per_cpu_thread;
pub mod pi_boost;
pub mod ranking;
pub mod remedy;
pub mod reported;
pub mod rtla;
pub mod sample_explain;
pub mod scan;
pub mod silence;
pub mod stacks;
pub use latscope_model::symbol;
#[cfg(test)]
mod testing;
pub mod throttling;
pub mod tick_storm;
pub mod timeline;
pub mod timer_summary;
pub mod timerlat_report;
pub mod timerlat_samples;
pub mod trace_stats;
pub mod verdict;
pub mod wakeup;
pub mod wakeup_graph;
pub mod window_found;
pub mod windowed;
pub mod windows;
