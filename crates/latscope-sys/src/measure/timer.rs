//! Timer wakeup-latency measurement, the cyclictest method: one thread per CPU, pinned, at the requested
//! policy, sleeping with TIMER_ABSTIME on CLOCK_MONOTONIC and recording how late each wakeup came.
//!
//! The hot loop only sleeps, reads the clock, and writes into memory allocated before the run: the
//! histogram, the window accumulators, the worst-samples table and the live atomics. A wakeup more than one
//! period late counts the periods it missed (overruns) and re-aligns to the next period still ahead.
//! Threads are staggered by `interval / n` so they do not wake together.

use super::clock::{now, sleep_until};
use super::rt::{pin_current_thread, set_current_thread_policy, Policy};
use super::tap::SampleTap;
use crate::SysError;
use latscope_model::{
    keep_worst, CpuId, CpuList, LatencyHistogram, Nanos, StopReason, TimerProgress, WakeupSample, WindowAccum,
    WindowSeries,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// Default number of worst wakeups kept per CPU.
pub const DEFAULT_WORST_KEPT: usize = 16;
/// Default cap on windows kept per CPU when the run has no duration (later windows are counted as dropped).
pub const DEFAULT_MAX_WINDOWS: usize = 10_000;
/// Delay between the threads being ready and the first wakeup, so every thread starts from its sleep.
const START_DELAY: Nanos = Nanos::from_ms(10);
/// Longest interval whose periods are phase-aligned (longer ones start right away).
pub const ALIGN_LIMIT: Nanos = Nanos::from_secs(1);

/// Where the first CPU's deadlines sit within the interval: half an interval past multiples of the
/// interval (CLOCK_MONOTONIC). A known phase lets a load be injected at a known point of the period (see
/// `inject::InjectSpec::align`, which is relative to these deadlines). Half an interval keeps the wakeups
/// off the scheduler tick, which the kernel aligns to multiples of the tick period: deadlines on a whole-ms
/// grid share tick interrupts and measured a 10–15 % higher median latency here (cyclictest's random phase
/// has no such bias).
pub fn period_phase(interval: Nanos) -> Nanos {
    Nanos(interval.0 / 2)
}

/// The first expected wakeup at or after `earliest`: `period_phase` past a multiple of the interval.
fn aligned_start(earliest: Nanos, interval: Nanos) -> Nanos {
    if interval.0 == 0 || interval > ALIGN_LIMIT {
        return earliest;
    }
    let base = earliest.0 - earliest.0 % interval.0 + period_phase(interval).0;
    Nanos(if base >= earliest.0 { base } else { base + interval.0 })
}

/// What to measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerConfig {
    /// CPUs to measure, one thread each (check they are online first: `host::cpus::check_online`).
    pub cpus: CpuList,
    /// Timer period.
    pub interval: Nanos,
    /// Policy of the measurement threads.
    pub policy: Policy,
    /// Run length; `None` runs until stopped.
    pub duration: Option<Nanos>,
    /// Latencies strictly above it are counted (and can stop the run).
    pub threshold: Option<Nanos>,
    /// Stop every thread at the first latency above `threshold`.
    pub stop_on_threshold: bool,
    /// Window length for per-window accumulators; `None` keeps none.
    pub window: Option<Nanos>,
    /// Most windows kept per CPU.
    pub max_windows: usize,
    /// Worst wakeups kept per CPU, with their absolute times.
    pub worst_kept: usize,
    /// Hand every latency to a reader during the run through a [`SampleTap`] of this many samples per CPU
    /// ([`TimerRun::tap`]); `None` keeps none.
    pub tap: Option<usize>,
}

impl TimerConfig {
    /// A configuration with the defaults for everything but the CPUs, period and policy.
    pub fn new(cpus: CpuList, interval: Nanos, policy: Policy) -> TimerConfig {
        TimerConfig {
            cpus,
            interval,
            policy,
            duration: None,
            threshold: None,
            stop_on_threshold: false,
            window: None,
            max_windows: DEFAULT_MAX_WINDOWS,
            worst_kept: DEFAULT_WORST_KEPT,
            tap: None,
        }
    }

    fn validate(&self) -> Result<(), SysError> {
        if self.cpus.is_empty() {
            return Err(SysError::Invalid("no CPU to measure; give at least one, e.g. -c 0".into()));
        }
        if self.interval.0 == 0 {
            return Err(SysError::Invalid("the interval must be longer than 0, e.g. 1ms".into()));
        }
        if let Some(w) = self.window {
            if w < self.interval {
                return Err(SysError::Invalid(format!(
                    "the window ({w}) is shorter than the interval ({}); make it at least one interval",
                    self.interval
                )));
            }
        }
        if self.duration.is_some_and(|d| d.0 == 0) {
            return Err(SysError::Invalid("the duration must be longer than 0, e.g. 10s".into()));
        }
        Ok(())
    }
}

/// Progress of one CPU, updated by its measurement thread after every wakeup (relaxed atomics: a reader
/// may see fields from two consecutive samples, which is fine for a live display).
#[derive(Debug)]
#[repr(align(64))]
pub struct LiveCpu {
    /// The CPU.
    pub cpu: CpuId,
    count: AtomicU64,
    cur_ns: AtomicU64,
    min_ns: AtomicU64,
    max_ns: AtomicU64,
    sum_ns: AtomicU64,
    overruns: AtomicU64,
    above: AtomicU64,
    last_above_expected_ns: AtomicU64,
    last_above_actual_ns: AtomicU64,
}

/// A copy of one CPU's live progress.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LiveSnapshot {
    /// Counts and latencies so far.
    pub progress: TimerProgress,
    /// The latest sample above the threshold, as (expected, actual) CLOCK_MONOTONIC ns: a tracer can stop
    /// its capture when this changes and look around `expected`.
    pub last_above: Option<(u64, u64)>,
}

impl From<LiveSnapshot> for crate::tracefs::CpuProgress {
    /// What a [`crate::tracefs::Trigger`] watches of a timer run.
    fn from(s: LiveSnapshot) -> Self {
        crate::tracefs::CpuProgress {
            cpu: s.progress.cpu,
            max_ns: s.progress.max_ns,
            above_threshold: s.progress.above_threshold,
            last_above: s.last_above,
        }
    }
}

impl LiveCpu {
    fn new(cpu: CpuId) -> LiveCpu {
        LiveCpu {
            cpu,
            count: AtomicU64::new(0),
            cur_ns: AtomicU64::new(0),
            min_ns: AtomicU64::new(u64::MAX),
            max_ns: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            above: AtomicU64::new(0),
            last_above_expected_ns: AtomicU64::new(0),
            last_above_actual_ns: AtomicU64::new(0),
        }
    }

    /// Reads the current values.
    pub fn snapshot(&self) -> LiveSnapshot {
        let count = self.count.load(Ordering::Relaxed);
        let sum = self.sum_ns.load(Ordering::Relaxed);
        let min = self.min_ns.load(Ordering::Relaxed);
        let expected = self.last_above_expected_ns.load(Ordering::Relaxed);
        let progress = TimerProgress {
            cpu: self.cpu,
            count,
            cur_ns: self.cur_ns.load(Ordering::Relaxed),
            min_ns: (min != u64::MAX).then_some(min),
            avg_ns: if count == 0 { 0.0 } else { sum as f64 / count as f64 },
            max_ns: self.max_ns.load(Ordering::Relaxed),
            overruns: self.overruns.load(Ordering::Relaxed),
            above_threshold: self.above.load(Ordering::Relaxed),
        };
        LiveSnapshot {
            progress,
            last_above: (expected != 0).then(|| (expected, self.last_above_actual_ns.load(Ordering::Relaxed))),
        }
    }
}

/// Everything one CPU's thread measured.
#[derive(Clone, Debug)]
pub struct CpuMeasurement {
    /// The CPU.
    pub cpu: CpuId,
    /// The measuring thread's id (as in trace events' `pid`).
    pub tid: i32,
    /// Every latency, ns.
    pub histogram: LatencyHistogram,
    /// Periods missed in total.
    pub overruns: u64,
    /// Samples above the threshold.
    pub above_threshold: u64,
    /// Per-window accumulators, in order (empty without a window).
    pub windows: Vec<WindowAccum>,
    /// Windows not kept because the buffer was full.
    pub windows_dropped: u64,
    /// The worst wakeups, worst first.
    pub worst: Vec<WakeupSample>,
    /// First expected wakeup, CLOCK_MONOTONIC.
    pub first_expected: Nanos,
    /// Last actual wakeup, CLOCK_MONOTONIC (equal to `first_expected` when there was none).
    pub last_actual: Nanos,
}

/// The measurement of every CPU.
#[derive(Clone, Debug)]
pub struct TimerMeasurement {
    /// Per CPU, in the order of the configuration's CPU list.
    pub cpus: Vec<CpuMeasurement>,
    /// The common start (first expected wakeup of the first CPU), CLOCK_MONOTONIC.
    pub start: Nanos,
    /// When the last thread ended, CLOCK_MONOTONIC.
    pub end: Nanos,
    /// Why the run ended.
    pub stopped_by: StopReason,
}

/// A running measurement. Poll [`TimerRun::live`] / [`TimerRun::is_done`], then [`TimerRun::join`].
/// Dropping it stops the threads.
#[derive(Debug)]
pub struct TimerRun {
    config: TimerConfig,
    live: Arc<[LiveCpu]>,
    stop: Arc<AtomicBool>,
    threshold_hit: Arc<AtomicBool>,
    external_stop: &'static AtomicBool,
    threads: Vec<JoinHandle<CpuMeasurement>>,
    tids: Vec<(CpuId, i32)>,
    start: Nanos,
    taps: Arc<[SampleTap]>,
}

struct Shared {
    live: Arc<[LiveCpu]>,
    taps: Arc<[SampleTap]>,
    stop: Arc<AtomicBool>,
    threshold_hit: Arc<AtomicBool>,
    external_stop: &'static AtomicBool,
    start_at: Arc<AtomicU64>,
}

/// Starts one measurement thread per CPU and returns once all of them run pinned at the policy, or with the
/// first setup error (no permission for SCHED_FIFO, CPU not usable) after stopping the others.
/// `external_stop` (e.g. the SIGINT flag) ends the run like [`TimerRun::stop`].
pub fn start_timer(config: TimerConfig, external_stop: &'static AtomicBool) -> Result<TimerRun, SysError> {
    config.validate()?;
    let live: Arc<[LiveCpu]> = config.cpus.iter().map(LiveCpu::new).collect();
    let taps: Arc<[SampleTap]> = match config.tap {
        Some(len) => config.cpus.iter().map(|_| SampleTap::new(len)).collect(),
        None => Arc::new([]),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let threshold_hit = Arc::new(AtomicBool::new(false));
    let start_at = Arc::new(AtomicU64::new(0));
    let n = config.cpus.len() as u64;
    let (ready_tx, ready_rx) = mpsc::channel::<(usize, Result<i32, SysError>)>();
    let mut threads = Vec::with_capacity(config.cpus.len());
    for (index, cpu) in config.cpus.iter().enumerate() {
        let shared = Shared {
            live: Arc::clone(&live),
            taps: Arc::clone(&taps),
            stop: Arc::clone(&stop),
            threshold_hit: Arc::clone(&threshold_hit),
            external_stop,
            start_at: Arc::clone(&start_at),
        };
        let offset = Nanos(config.interval.0 * index as u64 / n);
        let cfg = config.clone();
        let tx = ready_tx.clone();
        let spawned = std::thread::Builder::new().name(format!("latscope-t{cpu}")).spawn(move || {
            let setup = pin_current_thread(cpu).and_then(|()| set_current_thread_policy(cfg.policy));
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let ok = setup.is_ok();
            let _ = tx.send((index, setup.map(|()| tid)));
            measure_cpu(&cfg, index, cpu, tid, offset, &shared, ok)
        });
        match spawned {
            Ok(h) => threads.push(h),
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                threads.into_iter().for_each(|h| drop(h.join()));
                return Err(SysError::Call {
                    call: format!("spawn thread for CPU {cpu}"),
                    source: e,
                    hint: String::new(),
                });
            }
        }
    }
    drop(ready_tx);
    let mut tids = vec![(CpuId(0), 0); threads.len()];
    let mut first_err = None;
    for _ in 0..threads.len() {
        match ready_rx.recv() {
            Ok((i, Ok(tid))) => tids[i] = (config.cpus.0[i], tid),
            Ok((i, Err(e))) => {
                let cpu = config.cpus.0[i];
                first_err.get_or_insert(match e {
                    SysError::Call { call, source, hint } => {
                        SysError::Call { call: format!("CPU {cpu}: {call}"), source, hint }
                    }
                    other => other,
                });
            }
            Err(_) => {
                first_err.get_or_insert(SysError::Invalid("a measurement thread died during setup".into()));
                break;
            }
        }
    }
    let start = aligned_start(now() + START_DELAY, config.interval);
    let mut run = TimerRun { config, live, stop, threshold_hit, external_stop, threads, tids, start, taps };
    if let Some(e) = first_err {
        run.stop();
        run.join_threads();
        return Err(e);
    }
    start_at.store(start.0, Ordering::SeqCst);
    Ok(run)
}

/// One CPU's thread body: wait for the common start, then the measurement loop.
fn measure_cpu(
    cfg: &TimerConfig,
    index: usize,
    cpu: CpuId,
    tid: i32,
    offset: Nanos,
    shared: &Shared,
    setup_ok: bool,
) -> CpuMeasurement {
    // Everything the loop writes is allocated here, before the start.
    let window_cap = match (cfg.window, cfg.duration) {
        (None, _) => 0,
        (Some(w), Some(d)) => ((d.0 / w.0) as usize + 2).min(cfg.max_windows),
        (Some(_), None) => cfg.max_windows,
    };
    let mut windows = cfg.window.map(|w| WindowSeries::new(0, w, window_cap));
    let mut m = CpuMeasurement {
        cpu,
        tid,
        histogram: LatencyHistogram::new(),
        overruns: 0,
        above_threshold: 0,
        windows: Vec::new(),
        windows_dropped: 0,
        worst: Vec::with_capacity(cfg.worst_kept),
        first_expected: Nanos::ZERO,
        last_actual: Nanos::ZERO,
    };
    let stopped = || shared.stop.load(Ordering::Relaxed) || shared.external_stop.load(Ordering::Relaxed);
    let start = loop {
        if !setup_ok || stopped() {
            return m;
        }
        let s = shared.start_at.load(Ordering::SeqCst);
        if s != 0 {
            break Nanos(s);
        }
        sleep_until(now() + Nanos::from_us(500));
    };
    let live = &shared.live[index];
    let tap = shared.taps.get(index);
    let interval = cfg.interval.0;
    let threshold = cfg.threshold.map_or(u64::MAX, |t| t.0);
    let end = cfg.duration.map_or(u64::MAX, |d| start.0.saturating_add(d.0));
    let mut next = start.0 + offset.0;
    m.first_expected = Nanos(next);
    m.last_actual = Nanos(next);
    if let Some(w) = windows.as_mut() {
        w.start_at(start.0);
    }
    let (mut count, mut sum, mut min, mut max, mut overruns, mut above) = (0u64, 0u64, u64::MAX, 0u64, 0u64, 0u64);
    let mut worst_floor = 0u64;

    while next < end && !stopped() {
        let rc = sleep_until(Nanos(next));
        if rc == libc::EINTR {
            continue; // a signal: re-check the stop flags, then sleep again towards the same deadline
        }
        let actual = now().0;
        if rc != 0 {
            break; // cannot happen with a valid timespec; end the run rather than spin
        }
        let latency = actual.saturating_sub(next);
        // Periods whose deadline passed while this wakeup was late (only those inside the run).
        let missed = (latency / interval).min((end - 1 - next) / interval);

        let is_above = latency > threshold;
        m.histogram.record(Nanos(latency));
        if let Some(t) = tap {
            t.push(latency);
        }
        // Windows are keyed by the expected time.
        if let Some(w) = windows.as_mut() {
            w.record(next, latency, is_above, missed);
        }
        count += 1;
        sum = sum.saturating_add(latency);
        min = min.min(latency);
        max = max.max(latency);
        overruns += missed;
        if latency >= worst_floor && cfg.worst_kept > 0 {
            let sample = WakeupSample {
                seq: count - 1,
                expected_ns: next,
                actual_ns: actual,
                latency_ns: latency,
                missed_periods: missed,
            };
            worst_floor = keep_worst(&mut m.worst, cfg.worst_kept, sample);
        }
        live.count.store(count, Ordering::Relaxed);
        live.cur_ns.store(latency, Ordering::Relaxed);
        live.min_ns.store(min, Ordering::Relaxed);
        live.max_ns.store(max, Ordering::Relaxed);
        live.sum_ns.store(sum, Ordering::Relaxed);
        live.overruns.store(overruns, Ordering::Relaxed);
        if is_above {
            above += 1;
            live.above.store(above, Ordering::Relaxed);
            live.last_above_expected_ns.store(next, Ordering::Relaxed);
            live.last_above_actual_ns.store(actual, Ordering::Relaxed);
            shared.threshold_hit.store(true, Ordering::Relaxed);
            if cfg.stop_on_threshold {
                shared.stop.store(true, Ordering::Relaxed);
            }
        }
        m.last_actual = Nanos(actual);
        // Re-align: skip the periods whose deadline already passed.
        next += interval * (missed + 1);
    }
    if let Some(w) = &windows {
        (m.windows, m.windows_dropped) = w.finished();
    }
    m.overruns = overruns;
    m.above_threshold = above;
    m.worst.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.seq.cmp(&b.seq)));
    m
}

impl TimerRun {
    /// Live progress of every CPU, in the configuration's CPU order.
    pub fn live(&self) -> Vec<LiveSnapshot> {
        self.live.iter().map(LiveCpu::snapshot).collect()
    }

    /// The live counters themselves, for a caller that polls without allocating.
    pub fn live_cpus(&self) -> &[LiveCpu] {
        &self.live
    }

    /// The tap of the CPU at `index` in the configuration's CPU list, when the run keeps taps
    /// ([`TimerConfig::tap`]).
    pub fn tap(&self, index: usize) -> Option<&SampleTap> {
        self.taps.get(index)
    }

    /// The measuring threads' ids per CPU (the `pid` their trace events carry).
    pub fn thread_ids(&self) -> &[(CpuId, i32)] {
        &self.tids
    }

    /// The configuration it runs.
    pub fn config(&self) -> &TimerConfig {
        &self.config
    }

    /// The common start, CLOCK_MONOTONIC: the first CPU's first expected wakeup.
    pub fn start(&self) -> Nanos {
        self.start
    }

    /// Whether a latency above the threshold was seen.
    pub fn threshold_hit(&self) -> bool {
        self.threshold_hit.load(Ordering::Relaxed)
    }

    /// Whether every thread has ended (duration elapsed, stopped, or threshold with stop-on-threshold).
    pub fn is_done(&self) -> bool {
        self.threads.iter().all(|h| h.is_finished())
    }

    /// Asks every thread to end after its current sleep.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    fn join_threads(&mut self) -> Vec<Result<CpuMeasurement, CpuId>> {
        let cpus = self.config.cpus.0.clone();
        self.threads.drain(..).zip(cpus).map(|(h, cpu)| h.join().map_err(|_| cpu)).collect()
    }

    /// Waits for every thread to end and returns what they measured.
    pub fn join(mut self) -> Result<TimerMeasurement, SysError> {
        let results = self.join_threads();
        let end = now();
        let mut cpus = Vec::with_capacity(results.len());
        for r in results {
            cpus.push(r.map_err(|cpu| SysError::Invalid(format!("the measurement thread of CPU {cpu} panicked")))?);
        }
        let stopped_by = if self.config.stop_on_threshold && self.threshold_hit() {
            StopReason::Threshold
        } else if self.external_stop.load(Ordering::Relaxed) {
            StopReason::Signal
        } else {
            StopReason::Duration
        };
        Ok(TimerMeasurement { cpus, start: self.start, end, stopped_by })
    }
}

impl Drop for TimerRun {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop();
            self.join_threads();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::TapCursor;

    static NO_STOP: AtomicBool = AtomicBool::new(false);

    fn here() -> CpuId {
        crate::host::cpus::current_cpu().unwrap_or(CpuId(0))
    }

    #[test]
    fn counts_every_period_of_the_duration() {
        let mut cfg = TimerConfig::new(CpuList(vec![here()]), Nanos::from_ms(1), Policy::Other);
        cfg.duration = Some(Nanos::from_ms(200));
        cfg.window = Some(Nanos::from_ms(50));
        let m = start_timer(cfg, &NO_STOP).expect("start").join().expect("join");
        let c = &m.cpus[0];
        // count + missed periods = the periods in the duration, whatever the machine's noise.
        assert_eq!(c.histogram.count() + c.overruns, 200);
        assert_eq!(m.start.0 % 1_000_000, 500_000, "deadlines sit half an interval off the 1 ms grid");
        let in_windows: u64 = c.windows.iter().map(|w| w.count).sum();
        assert_eq!(in_windows, c.histogram.count());
        assert!((4..=5).contains(&c.windows.len()), "{} windows", c.windows.len());
        assert!(!c.worst.is_empty() && c.worst.windows(2).all(|p| p[0].latency_ns >= p[1].latency_ns));
        assert_eq!(c.worst[0].latency_ns, c.worst[0].actual_ns - c.worst[0].expected_ns);
        assert_eq!(m.stopped_by, StopReason::Duration);
    }

    #[test]
    fn the_tap_hands_over_every_latency_during_the_run() {
        let mut cfg = TimerConfig::new(CpuList(vec![here()]), Nanos::from_ms(1), Policy::Other);
        cfg.duration = Some(Nanos::from_ms(300));
        cfg.tap = Some(64); // smaller than the run: only a reader that keeps up sees every sample
        let run = start_timer(cfg, &NO_STOP).expect("start");
        let tap = run.tap(0).expect("a tap");
        let mut cursor = TapCursor::default();
        let (mut seen, mut max) = (0u64, 0u64);
        loop {
            let done = run.is_done();
            tap.drain(&mut cursor, |v| {
                seen += 1;
                max = max.max(v);
            });
            if done {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let m = run.join().expect("join");
        let c = &m.cpus[0];
        assert_eq!(seen + cursor.lost, c.histogram.count());
        assert!(seen > 0 && cursor.lost < c.histogram.count() / 2, "seen {seen}, lost {}", cursor.lost);
        assert!(max <= c.histogram.quantile(1.0).0 + c.histogram.quantile(1.0).0 / 500, "{max}");
    }

    #[test]
    fn stop_on_threshold_stops_early() {
        let mut cfg = TimerConfig::new(CpuList(vec![here()]), Nanos::from_ms(1), Policy::Other);
        cfg.duration = Some(Nanos::from_secs(5));
        cfg.threshold = Some(Nanos(1)); // every wakeup is later than 1 ns
        cfg.stop_on_threshold = true;
        let t0 = now();
        let run = start_timer(cfg, &NO_STOP).expect("start");
        let m = run.join().expect("join");
        assert!(now() - t0 < Nanos::from_secs(1));
        assert_eq!(m.stopped_by, StopReason::Threshold);
        assert!(m.cpus[0].above_threshold >= 1);
    }

    #[test]
    fn aligns_the_start() {
        let i = Nanos::from_ms(1);
        assert_eq!(aligned_start(Nanos(10_200_000), i), Nanos(10_500_000));
        assert_eq!(aligned_start(Nanos(10_600_000), i), Nanos(11_500_000));
        assert_eq!(aligned_start(Nanos(10_600_000), Nanos::from_secs(2)), Nanos(10_600_000));
    }

    #[test]
    fn refuses_bad_configs() {
        let cfg = TimerConfig::new(CpuList(vec![]), Nanos::from_ms(1), Policy::Other);
        assert!(start_timer(cfg, &NO_STOP).is_err());
        let mut cfg = TimerConfig::new(CpuList(vec![here()]), Nanos::from_ms(1), Policy::Other);
        cfg.window = Some(Nanos::from_us(10));
        assert!(start_timer(cfg, &NO_STOP).is_err());
        let cfg = TimerConfig::new(CpuList(vec![CpuId(1 << 20)]), Nanos::from_ms(1), Policy::Other);
        let err = start_timer(cfg, &NO_STOP).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("CPU 1048576"), "{err}");
    }
}
