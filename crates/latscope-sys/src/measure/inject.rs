//! A known load for ground-truth tests and benchmarks: a thread pinned to one CPU that, at a given
//! scheduling policy, spins for `spin` every `every`, and records when each spin really ran.
//!
//! ```no_run
//! use latscope_model::{CpuId, Nanos};
//! use latscope_sys::measure::{start_injector, InjectSpec, Policy};
//!
//! let spec = InjectSpec::new(CpuId(1), Policy::Fifo(97), Nanos::from_ms(2), Nanos::from_ms(50));
//! let injector = start_injector(spec)?; // errors (no permission, offline CPU) come back here
//! // ... measure CPU 1 ...
//! let report = injector.stop(); // report.spins: CLOCK_MONOTONIC start/end of every spin
//! # Ok::<(), latscope_sys::SysError>(())
//! ```

use super::clock::{now, sleep_until, spin_until};
use super::rt::{pin_current_thread, set_current_thread_policy, Policy};
use crate::SysError;
use latscope_model::{CpuId, Nanos};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// The injector thread's name, as it appears in `comm` of trace events (15 characters at most).
pub const INJECTOR_COMM: &str = "latscope-inject";

/// How many spins a report keeps with their times when `max_spins` is not set (later spins are counted only).
pub const DEFAULT_RECORDED_SPINS: usize = 1 << 16;

/// The longest the injector sleeps at once, so that `stop` returns promptly even with a long `every`.
const SLEEP_SLICE: Nanos = Nanos::from_ms(20);

/// What load to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InjectSpec {
    /// The CPU the load runs on.
    pub cpu: CpuId,
    /// Its scheduling policy; use a higher SCHED_FIFO priority than the thread it should delay.
    pub policy: Policy,
    /// How long each spin lasts (wall time, CLOCK_MONOTONIC).
    pub spin: Nanos,
    /// The period between spin starts; must be longer than `spin`.
    pub every: Nanos,
    /// Time between the start of the injector and its first spin.
    pub start_delay: Nanos,
    /// Stop on its own after this many spins (`None`: until stopped).
    pub max_spins: Option<u64>,
    /// Phase alignment to a `latscope timer` run with interval `align`, as (`align`, `phase`): spins start
    /// `phase` after the timer's deadlines, which sit `timer::period_phase(align)` past multiples of `align`
    /// (CLOCK_MONOTONIC). With a 1 ms interval, `(1 ms, 800 µs)` makes each spin begin 200 µs before a timer
    /// deadline: the delay it causes is then known (spin − 200 µs) rather than phase-dependent.
    pub align: Option<(Nanos, Nanos)>,
}

impl InjectSpec {
    /// A load spinning `spin` every `every` on `cpu`, starting one period after start, until stopped.
    pub fn new(cpu: CpuId, policy: Policy, spin: Nanos, every: Nanos) -> InjectSpec {
        InjectSpec { cpu, policy, spin, every, start_delay: every, max_spins: None, align: None }
    }
}

/// One spin as it really happened: CLOCK_MONOTONIC times of its start and end, and when it was due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spin {
    /// When the spin was due (the injector's wakeup deadline). `start − due` is how long the injector
    /// waited for the CPU: its own wakeup latency, or longer when something else held the CPU then.
    pub due: Nanos,
    /// When the spin started (the injector had woken up and begun to burn CPU).
    pub start: Nanos,
    /// When it ended.
    pub end: Nanos,
}

impl Spin {
    /// How long the spin held the CPU (wall time).
    pub fn duration(&self) -> Nanos {
        self.end.saturating_sub(self.start)
    }

    /// How long after it was due the spin started.
    pub fn lateness(&self) -> Nanos {
        self.start.saturating_sub(self.due)
    }
}

/// What the injector did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InjectionReport {
    /// The request.
    pub spec: InjectSpec,
    /// Every spin done, in order (at most `max_spins` or [`DEFAULT_RECORDED_SPINS`] are kept).
    pub spins: Vec<Spin>,
    /// Number of spins done, including any beyond the kept ones.
    pub total_spins: u64,
    /// Periods skipped because the injector itself woke up more than one period late.
    pub missed_periods: u64,
}

/// A running injector. Stop it with [`Injector::stop`]; dropping it stops it too (and discards the report).
#[derive(Debug)]
pub struct Injector {
    stop: Arc<AtomicBool>,
    spins: Arc<AtomicU64>,
    handle: Option<JoinHandle<InjectionReport>>,
    spec: InjectSpec,
}

/// Starts the injector thread and returns once it runs pinned at its policy, or with the setup error
/// (invalid spec, CPU not usable, no permission for SCHED_FIFO).
pub fn start_injector(spec: InjectSpec) -> Result<Injector, SysError> {
    if spec.spin.0 == 0 || spec.every <= spec.spin {
        return Err(SysError::Invalid(format!(
            "injection spins {} every {}: the period must be longer than the spin, and the spin longer than 0",
            spec.spin, spec.every
        )));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let spins = Arc::new(AtomicU64::new(0));
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), SysError>>();
    let (t_stop, t_spins) = (Arc::clone(&stop), Arc::clone(&spins));
    let handle = std::thread::Builder::new()
        .name(INJECTOR_COMM.into())
        .spawn(move || {
            let setup = pin_current_thread(spec.cpu).and_then(|()| set_current_thread_policy(spec.policy));
            let ok = setup.is_ok();
            let _ = ready_tx.send(setup);
            if !ok {
                return InjectionReport { spec, spins: Vec::new(), total_spins: 0, missed_periods: 0 };
            }
            inject_loop(spec, &t_stop, &t_spins)
        })
        .map_err(|e| SysError::Call { call: "spawn injector thread".into(), source: e, hint: String::new() })?;
    let setup = ready_rx.recv().unwrap_or_else(|_| Err(SysError::Invalid("the injector thread died at start".into())));
    let mut injector = Injector { stop, spins, handle: Some(handle), spec };
    match setup {
        Ok(()) => Ok(injector),
        Err(e) => {
            injector.finish();
            Err(e)
        }
    }
}

fn inject_loop(spec: InjectSpec, stop: &AtomicBool, counter: &AtomicU64) -> InjectionReport {
    let cap = spec.max_spins.map_or(DEFAULT_RECORDED_SPINS, |m| m.min(DEFAULT_RECORDED_SPINS as u64) as usize);
    let mut spins = Vec::with_capacity(cap);
    let mut total = 0u64;
    let mut missed = 0u64;
    let mut next = first_spin(now() + spec.start_delay, spec.align);
    while !stop.load(Ordering::Relaxed) && spec.max_spins.map_or(true, |m| total < m) {
        // Sleep in slices so a stop request is seen within SLEEP_SLICE.
        let mut t = now();
        while t < next && !stop.load(Ordering::Relaxed) {
            sleep_until(next.min(t + SLEEP_SLICE));
            t = now();
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let start = now();
        let end = spin_until(start + spec.spin);
        if spins.len() < cap {
            spins.push(Spin { due: next, start, end });
        }
        total += 1;
        counter.store(total, Ordering::Relaxed);
        next = next + spec.every;
        if end >= next {
            let behind = (end.0 - next.0) / spec.every.0 + 1;
            missed += behind;
            next = Nanos(next.0 + behind * spec.every.0);
        }
    }
    InjectionReport { spec, spins, total_spins: total, missed_periods: missed }
}

/// The first time at or after `earliest` that is `phase` past a multiple of `align`.
fn first_spin(earliest: Nanos, align: Option<(Nanos, Nanos)>) -> Nanos {
    match align {
        Some((a, phase)) if a.0 > 0 => {
            let offset = (super::timer::period_phase(a).0 + phase.0) % a.0;
            let base = earliest.0 - earliest.0 % a.0 + offset;
            Nanos(if base >= earliest.0 { base } else { base + a.0 })
        }
        _ => earliest,
    }
}

impl Injector {
    /// Spins done so far.
    pub fn spins_done(&self) -> u64 {
        self.spins.load(Ordering::Relaxed)
    }

    /// The request this injector runs.
    pub fn spec(&self) -> &InjectSpec {
        &self.spec
    }

    /// Whether the injector ended on its own (it reached `max_spins`).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().map_or(true, |h| h.is_finished())
    }

    /// Stops the injector (waiting for a spin in progress to end) and returns what it did.
    pub fn stop(mut self) -> InjectionReport {
        self.finish()
    }

    /// Waits until the injector ends on its own (use with `max_spins`), then returns what it did.
    pub fn wait(mut self) -> InjectionReport {
        let report = self.handle.take().and_then(|h| h.join().ok());
        report.unwrap_or_else(|| self.empty_report())
    }

    fn finish(&mut self) -> InjectionReport {
        self.stop.store(true, Ordering::Relaxed);
        let report = self.handle.take().and_then(|h| h.join().ok());
        report.unwrap_or_else(|| self.empty_report())
    }

    fn empty_report(&self) -> InjectionReport {
        InjectionReport { spec: self.spec, spins: Vec::new(), total_spins: self.spins_done(), missed_periods: 0 }
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        if self.handle.is_some() {
            self.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_the_requested_time_and_count() {
        let cpu = crate::host::cpus::current_cpu().unwrap_or(CpuId(0));
        let mut spec = InjectSpec::new(cpu, Policy::Other, Nanos::from_ms(2), Nanos::from_ms(10));
        spec.start_delay = Nanos::ZERO;
        spec.max_spins = Some(5);
        let t0 = now();
        let report = start_injector(spec).expect("start").wait();
        assert_eq!(report.total_spins, 5);
        assert_eq!(report.spins.len(), 5);
        for s in &report.spins {
            assert!(s.start >= t0);
            assert!(s.start >= s.due, "a spin started before it was due: {s:?}");
            assert_eq!(s.lateness(), s.start - s.due);
            assert!(s.duration() >= Nanos::from_ms(2), "spin of {}", s.duration());
        }
        for pair in report.spins.windows(2) {
            assert!(pair[1].start >= pair[0].end);
            // Due on the period grid (a whole number of periods apart: a late injector skips periods).
            let apart = pair[1].due - pair[0].due;
            assert!(apart.0 > 0 && apart.0 % 10_000_000 == 0, "{pair:?}");
        }
    }

    #[test]
    fn stop_is_prompt_and_reports() {
        let cpu = crate::host::cpus::current_cpu().unwrap_or(CpuId(0));
        let spec = InjectSpec::new(cpu, Policy::Other, Nanos::from_us(100), Nanos::from_secs(10));
        let injector = start_injector(spec).expect("start");
        let t0 = now();
        let report = injector.stop();
        assert!(now() - t0 < Nanos::from_ms(500));
        assert_eq!(report.total_spins, 0);
    }

    #[test]
    fn aligns_the_first_spin() {
        // Timer deadlines for a 1000 ns interval sit at …500; 800 ns after them is …300.
        let a = Some((Nanos(1_000), Nanos(800)));
        assert_eq!(first_spin(Nanos(10_200), a), Nanos(10_300));
        assert_eq!(first_spin(Nanos(10_400), a), Nanos(11_300));
        assert_eq!(first_spin(Nanos(10_300), a), Nanos(10_300));
        assert_eq!(first_spin(Nanos(10_900), None), Nanos(10_900));
    }

    #[test]
    fn refuses_bad_specs() {
        let spec = InjectSpec::new(CpuId(0), Policy::Other, Nanos::from_ms(5), Nanos::from_ms(5));
        assert!(start_injector(spec).is_err());
        let spec = InjectSpec::new(CpuId(1 << 20), Policy::Other, Nanos::from_ms(1), Nanos::from_ms(5));
        assert!(start_injector(spec).is_err());
    }
}
