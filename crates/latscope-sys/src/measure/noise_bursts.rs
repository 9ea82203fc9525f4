//! Noise sampled in bursts, for `latscope monitor --noise DUTY`: one pinned thread per CPU runs the noise
//! loop of [`super::noise`] for `on` at the start of every `period` (e.g. 10 ms of each second) and sleeps
//! the rest, so the CPU stays free for its real work. Each finished burst (its span, noise, longest gap and
//! the gaps themselves, on CLOCK_MONOTONIC) is queued for a reader that takes them as they come.
//!
//! The loop inside a burst is the `noise` command's: no system call, allocation, lock or print. Between
//! bursts the thread converts and queues the burst (one allocation, one lock) and sleeps.

use super::cycles::{self, Calibration};
use super::noise::{spin, LiveCpu, SpinState};
use super::rt::{pin_current_thread, set_current_thread_policy, Policy};
use crate::SysError;
use latscope_model::noise_result::Gap;
use latscope_model::{CpuId, CpuList, Nanos};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};

/// Bursts queued per CPU before the oldest are let go (a reader that stopped reading).
const QUEUE: usize = 120;

/// What to sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BurstConfig {
    /// CPUs to sample (one thread each).
    pub cpus: CpuList,
    /// The loops' scheduling policy.
    pub policy: Policy,
    /// Gaps longer than this are noise.
    pub threshold: Nanos,
    /// How long each burst spins.
    pub on: Nanos,
    /// A burst starts every `period` (on the CLOCK_MONOTONIC grid of the first one).
    pub period: Nanos,
    /// Gaps kept per burst (more are counted in the burst's totals).
    pub gap_capacity: usize,
}

/// One finished burst of one CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Burst {
    /// The CPU.
    pub cpu: CpuId,
    /// The sampling thread's id (its `pid` in trace events).
    pub tid: i32,
    /// When the loop started and ended, CLOCK_MONOTONIC.
    pub start: Nanos,
    /// End of the loop.
    pub end: Nanos,
    /// Gaps above the threshold.
    pub gap_count: u64,
    /// Their total.
    pub noise: Nanos,
    /// The longest.
    pub max_gap: Gap,
    /// The gaps, in time order (at most the capacity).
    pub gaps: Vec<Gap>,
}

impl Burst {
    /// How long the loop ran.
    pub fn span(&self) -> Nanos {
        self.end.saturating_sub(self.start)
    }
}

/// The queue of one CPU's finished bursts.
#[derive(Debug, Default)]
struct Queue {
    bursts: VecDeque<Burst>,
    dropped: u64,
}

/// Running burst samplers; stopped (and joined) on [`NoiseBursts::stop`] or drop.
#[derive(Debug)]
pub struct NoiseBursts {
    halt: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
    queues: Vec<Arc<Mutex<Queue>>>,
    tids: Vec<(CpuId, i32)>,
}

/// Starts one sampler per CPU; returns once each is pinned and at its policy (setup errors come back
/// before anything spins). `cfg.on` must be shorter than `cfg.period`.
pub fn start_noise_bursts(cfg: &BurstConfig) -> Result<NoiseBursts, SysError> {
    if cfg.cpus.is_empty() {
        return Err(SysError::Invalid("no CPU to sample noise on; pass e.g. -c 1".into()));
    }
    if cfg.on.0 == 0 || cfg.on >= cfg.period {
        return Err(SysError::Invalid(format!(
            "a noise burst of {} every {} is not a duty cycle; give a share between 0 and 100 %, e.g. 1%",
            cfg.on, cfg.period
        )));
    }
    crate::host::cpus::check_online(&cfg.cpus)?;
    let cal = Calibration::quick(Nanos::from_ms(10)).ok_or_else(|| {
        SysError::Invalid(format!("the {} counter does not advance; cannot calibrate it", cycles::COUNTER_NAME))
    })?;
    let thresh = cal.to_cycles(cfg.threshold).max(1);
    let highest = cal.to_cycles(Nanos::from_secs(3600)).max(1 << 20);
    let halt = Arc::new(AtomicBool::new(false));
    let first = super::clock::now() + Nanos::from_ms(1);
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(CpuId, i32), SysError>>();
    let mut out = NoiseBursts { halt: Arc::clone(&halt), handles: Vec::new(), queues: Vec::new(), tids: Vec::new() };
    for cpu in cfg.cpus.iter() {
        let queue = Arc::new(Mutex::new(Queue::default()));
        out.queues.push(Arc::clone(&queue));
        let (halt, ready, cfg) = (Arc::clone(&halt), ready_tx.clone(), cfg.clone());
        let spawned = std::thread::Builder::new().name(format!("latscope-noise{cpu}")).spawn(move || {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let setup = pin_current_thread(cpu)
                .and_then(|()| SpinState::new(cfg.gap_capacity, highest, Arc::new(LiveCpu::default())))
                .and_then(|st| set_current_thread_policy(cfg.policy).map(|()| st));
            match setup {
                Ok(mut st) => {
                    let _ = ready.send(Ok((cpu, tid)));
                    drop(ready);
                    sample((cpu, tid), &mut st, &cfg, &cal, thresh, first, &halt, &queue);
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                }
            }
        });
        match spawned {
            Ok(h) => out.handles.push(h),
            Err(e) => {
                return Err(SysError::Call {
                    call: format!("spawn noise thread for CPU {cpu}"),
                    source: e,
                    hint: String::new(),
                });
            }
        }
    }
    drop(ready_tx);
    for _ in 0..out.handles.len() {
        match ready_rx.recv() {
            Ok(Ok(t)) => out.tids.push(t),
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(SysError::Invalid("a noise sampling thread died at start".into())),
        }
    }
    Ok(out)
}

/// One CPU's sampler: a burst at each `period` until `halt`.
#[allow(clippy::too_many_arguments)]
fn sample(
    (cpu, tid): (CpuId, i32),
    st: &mut SpinState,
    cfg: &BurstConfig,
    cal: &Calibration,
    thresh: u64,
    first: Nanos,
    halt: &AtomicBool,
    queue: &Mutex<Queue>,
) {
    let on = cal.to_cycles(cfg.on);
    let mut next = first;
    while !halt.load(Ordering::Relaxed) {
        // Sleep in slices so that a stop is seen within 100 ms.
        while super::clock::now() < next && !halt.load(Ordering::Relaxed) {
            super::clock::sleep_until(next.min(super::clock::now() + Nanos::from_ms(100)));
        }
        if halt.load(Ordering::Relaxed) {
            return;
        }
        st.reset_burst();
        let begin = cycles::pair(libc::CLOCK_MONOTONIC);
        spin(st, halt, thresh, false, begin.cycles.saturating_add(on));
        let end = cycles::pair(libc::CLOCK_MONOTONIC);
        // The burst calibrates itself: its own counter ticks against CLOCK_MONOTONIC.
        let c = Calibration::from_pairs(begin, end, begin).unwrap_or(*cal);
        let to_gap = |(start, d): (u64, u64)| Gap { start_ns: c.to_monotonic(start), duration_ns: c.to_ns(d) };
        let burst = Burst {
            cpu,
            tid,
            start: c.to_monotonic(st.start),
            end: c.to_monotonic(st.end),
            gap_count: st.gap_count,
            noise: c.to_ns(st.noise_cycles),
            max_gap: if st.max_gap.1 > 0 { to_gap(st.max_gap) } else { Gap::default() },
            gaps: st.gaps.iter().copied().map(to_gap).collect(),
        };
        {
            let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
            if q.bursts.len() >= QUEUE {
                q.bursts.pop_front();
                q.dropped += 1;
            }
            q.bursts.push_back(burst);
        }
        // The next burst on the grid; bursts missed (a stopped machine) are skipped, not caught up.
        let now = super::clock::now();
        next = next + cfg.period;
        if next <= now {
            next = Nanos(now.0 + cfg.period.0 - (now.0 - next.0) % cfg.period.0);
        }
    }
}

impl NoiseBursts {
    /// The sampling threads' ids (their `pid` in trace events), per CPU.
    pub fn thread_ids(&self) -> &[(CpuId, i32)] {
        &self.tids
    }

    /// The bursts of the CPU at `index` (in the config's order) finished since the last call, and how
    /// many were let go since the start because nobody took them.
    pub fn take(&self, index: usize) -> (Vec<Burst>, u64) {
        let Some(q) = self.queues.get(index) else { return (Vec::new(), 0) };
        let mut q = q.lock().unwrap_or_else(PoisonError::into_inner);
        (q.bursts.drain(..).collect(), q.dropped)
    }

    /// Stops the samplers and waits for them.
    pub fn stop(mut self) {
        self.halt_and_join();
    }

    fn halt_and_join(&mut self) {
        self.halt.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl Drop for NoiseBursts {
    fn drop(&mut self) {
        self.halt_and_join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_take_their_share_of_each_period_and_queue_their_gaps() {
        let cfg = BurstConfig {
            cpus: CpuList(vec![CpuId(0)]),
            policy: Policy::Other,
            threshold: Nanos::from_us(5),
            on: Nanos::from_ms(20),
            period: Nanos::from_ms(100),
            gap_capacity: 4096,
        };
        let b = start_noise_bursts(&cfg).expect("start");
        std::thread::sleep(std::time::Duration::from_millis(550));
        let (bursts, dropped) = b.take(0);
        let tid = b.thread_ids()[0].1;
        b.stop();
        assert!(tid > 0 && bursts.iter().all(|x| x.tid == tid));
        assert_eq!(dropped, 0);
        // 0.55 s at one burst per 100 ms: 5 or 6 (the first starts 1 ms after the start).
        assert!((4..=6).contains(&bursts.len()), "{} bursts", bursts.len());
        for w in bursts.windows(2) {
            let step = w[1].start.saturating_sub(w[0].start);
            // On the 100 ms grid (a burst delayed by the machine starts late, never early).
            assert!(step >= Nanos::from_ms(60) && step <= Nanos::from_ms(200), "bursts {step} apart");
        }
        for x in &bursts {
            // The loop ends at a cycle count from the start-up calibration; the span is converted with the
            // burst's own (begin, end) pair, so it may come out a little under 20 ms (a make test run: "20ms",
            // below by less than the display's rounding). 1 % is far more than the calibrations differ by.
            let span = x.span();
            assert!(span >= Nanos::from_us(19_800) && span < Nanos::from_ms(60), "burst of {} ns", span.0);
            assert!(x.noise <= x.span());
            assert_eq!(x.gaps.len() as u64, x.gap_count);
            for g in &x.gaps {
                assert!(g.start_ns >= x.start && g.end() <= x.end + Nanos::from_us(1), "{g:?} outside {x:?}");
            }
        }
    }

    #[test]
    fn a_duty_of_the_whole_period_is_refused() {
        let cfg = BurstConfig {
            cpus: CpuList(vec![CpuId(0)]),
            policy: Policy::Other,
            threshold: Nanos::from_us(5),
            on: Nanos::from_secs(1),
            period: Nanos::from_secs(1),
            gap_capacity: 16,
        };
        let e = start_noise_bursts(&cfg).expect_err("100 %");
        assert!(e.to_string().contains("duty"), "{e}");
    }
}
