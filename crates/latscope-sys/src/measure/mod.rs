//! Measurement threads and what they need: the clock, real-time setup guards, timer latency
//! measurement, and a known-load injector for ground-truth tests.

pub mod clock;
mod cycles;
mod hwlat;
mod inject;
mod noise;
mod noise_bursts;
mod osnoise;
mod rt;
mod tap;
mod timer;
mod timerlat;
mod tracer_run;

pub use cycles::{Calibration, ClockPair, COUNTER_NAME};
pub use hwlat::{hwlat_missing, HwlatConfig, HwlatRun};
pub use inject::{start_injector, InjectSpec, InjectionReport, Injector, Spin, DEFAULT_RECORDED_SPINS};
pub use noise::{
    environment as noise_environment, run_noise, start_noise, CpuSamples, LiveNoise, NoiseConfig, NoiseHandle,
    NoiseRun, DEFAULT_GAP_CAPACITY,
};
pub use noise_bursts::{start_noise_bursts, Burst, BurstConfig, NoiseBursts};
pub use osnoise::{osnoise_available, OsnoiseConfig, OsnoiseRun, OSNOISE_PERIOD_RANGE};
pub use rt::{
    allowed_cpus, hold_dma_latency_zero, keep_off, lock_memory, pin_current_thread, run_on, DmaLatency, MemoryLock,
    Policy,
};
pub use tap::{SampleTap, TapCursor, DEFAULT_TAP_SAMPLES};
pub use timer::{
    start_timer, CpuMeasurement, LiveCpu as LiveTimerCpu, LiveSnapshot, TimerConfig, TimerMeasurement, TimerRun,
};
pub use timerlat::{timerlat_available, TimerlatConfig, TimerlatRun, TIMERLAT_PERIOD_RANGE};
pub use tracer_run::TracerRun;
