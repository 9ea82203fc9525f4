//! The noise measurement: one pinned thread per CPU spins on the cycle counter, records every
//! iteration's duration into a preallocated HDR histogram and every gap above the threshold into a
//! preallocated buffer; counters are snapshotted around the run. Also reads the few environment facts
//! that change how the result reads (SMT siblings, isolation, RT throttling, hypervisor).
//!
//! The hot loop makes no system call, allocation, lock or print: a counter read, a subtraction, a
//! histogram increment, a compare, and a relaxed load of the halt flag every 1024 iterations.

use super::cycles::{self, Calibration, ClockPair};
use super::rt::{lock_memory, pin_current_thread, set_current_thread_policy, Policy};
use crate::host::counters::{self, CounterSnapshot};
use crate::host::read_opt;
use crate::SysError;
use hdrhistogram::Histogram;
use latscope_model::noise_result::{Gap, NoiseEnvironment, SmtSiblings};
use latscope_model::{CpuId, CpuList, LatencyHistogram, Nanos};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

/// Default gap buffer per CPU: 256 Ki gaps (4 MiB, locked and prefaulted): about six minutes of a machine
/// as noisy as this VM (~700 gaps/s above 5 µs). Later gaps are still counted in the totals.
pub const DEFAULT_GAP_CAPACITY: usize = 1 << 18;

/// Iterations below this many ticks go to a direct-indexed front array merged into the HDR histogram
/// after the run (the common case costs one increment; the result is the same histogram).
const FAST_TICKS: usize = 1024;

/// How often (iterations) the loop looks at the halt flag.
const HALT_CHECK_MASK: u64 = 1023;

/// What to measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoiseConfig {
    /// CPUs to spin on (one thread each).
    pub cpus: CpuList,
    /// The spinners' scheduling policy.
    pub policy: Policy,
    /// Run time; `None` until the stop flag is set.
    pub duration: Option<Nanos>,
    /// Gaps longer than this are recorded.
    pub threshold: Nanos,
    /// Gaps kept per CPU; more are counted and dropped.
    pub gap_capacity: usize,
    /// End the run at the first gap above the threshold.
    pub stop_on_threshold: bool,
}

/// What one CPU's loop measured, already converted to ns.
#[derive(Clone, Debug)]
pub struct CpuSamples {
    /// The CPU.
    pub cpu: CpuId,
    /// The spinning thread's id (as in trace events' `pid`).
    pub tid: i32,
    /// Iterations.
    pub loops: u64,
    /// Counter ticks the loop ran for.
    pub runtime_cycles: u64,
    /// How long the loop ran, ns.
    pub runtime: Nanos,
    /// Cheapest iteration, ticks.
    pub min_cycles: u64,
    /// Mean ticks of the iterations at or below the threshold: the loop's own cost, the detection floor.
    pub loop_cycles: f64,
    /// Every iteration's duration, ns.
    pub histogram: LatencyHistogram,
    /// Gaps above the threshold in time order (CLOCK_MONOTONIC start), at most the capacity.
    pub gaps: Vec<Gap>,
    /// All gaps above the threshold, kept or not.
    pub gap_count: u64,
    /// Gaps that did not fit in the buffer.
    pub dropped: u64,
    /// Total duration of all gaps above the threshold.
    pub noise: Nanos,
    /// The longest gap (kept or not).
    pub max_gap: Gap,
    /// A gap exceeded the threshold and the run was stopped for it.
    pub stopped_on_threshold: bool,
}

/// A finished noise run.
#[derive(Clone, Debug)]
pub struct NoiseRun {
    /// Counter calibration over the whole run (CLOCK_MONOTONIC_RAW), with the CLOCK_MONOTONIC origin.
    pub calibration: Calibration,
    /// Start and end of the run, CLOCK_MONOTONIC.
    pub start: Nanos,
    /// End of the run, CLOCK_MONOTONIC.
    pub end: Nanos,
    /// Per CPU, in the order of the config's CPU list.
    pub cpus: Vec<CpuSamples>,
    /// Counters just before the loops started.
    pub counters_before: CounterSnapshot,
    /// Counters just after they stopped.
    pub counters_after: CounterSnapshot,
    /// Degraded setup (memory not locked…), to show the user.
    pub warnings: Vec<String>,
}

/// Running totals of one CPU, published from the loop's gap path (never from the per-iteration path) for
/// a live view.
#[derive(Debug, Default)]
pub struct LiveCpu {
    /// Gaps above the threshold so far.
    pub gaps: AtomicU64,
    /// Their total, counter ticks.
    pub noise_cycles: AtomicU64,
    /// The longest, counter ticks.
    pub max_cycles: AtomicU64,
}

/// A live view of one CPU, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveNoise {
    /// The CPU.
    pub cpu: CpuId,
    /// Gaps above the threshold so far.
    pub gaps: u64,
    /// Their total.
    pub noise: Nanos,
    /// The longest.
    pub max_gap: Nanos,
}

/// Raw per-thread state, preallocated before the loop starts.
pub(super) struct SpinState {
    live: Arc<LiveCpu>,
    fast: Box<[u64; FAST_TICKS]>,
    hist: Histogram<u64>,
    pub(super) gaps: Vec<(u64, u64)>,
    pub(super) gap_count: u64,
    dropped: u64,
    pub(super) noise_cycles: u64,
    pub(super) max_gap: (u64, u64),
    loops: u64,
    pub(super) start: u64,
    pub(super) end: u64,
    stopped_on_threshold: bool,
}

impl SpinState {
    pub(super) fn new(capacity: usize, highest: u64, live: Arc<LiveCpu>) -> Result<SpinState, SysError> {
        let hist = Histogram::new_with_bounds(1, highest.max(2 * FAST_TICKS as u64), 3)
            .map_err(|e| SysError::Invalid(format!("cannot build the noise histogram: {e}")))?;
        // Touch the gap buffer now so the first gaps do not page-fault inside the loop.
        let mut gaps = vec![(0u64, 0u64); capacity];
        gaps.clear();
        Ok(SpinState {
            live,
            fast: Box::new([0; FAST_TICKS]),
            hist,
            gaps,
            gap_count: 0,
            dropped: 0,
            noise_cycles: 0,
            max_gap: (0, 0),
            loops: 0,
            start: 0,
            end: 0,
            stopped_on_threshold: false,
        })
    }

    /// Forgets the gaps and totals of the previous burst (the histogram keeps counting; nothing is freed).
    pub(super) fn reset_burst(&mut self) {
        self.gaps.clear();
        self.gap_count = 0;
        self.dropped = 0;
        self.noise_cycles = 0;
        self.max_gap = (0, 0);
    }

    #[cold]
    #[inline(never)]
    fn gap(&mut self, start: u64, d: u64) {
        self.gap_count += 1;
        self.noise_cycles += d;
        if d > self.max_gap.1 {
            self.max_gap = (start, d);
        }
        if self.gaps.len() < self.gaps.capacity() {
            self.gaps.push((start, d));
        } else {
            self.dropped += 1;
        }
        self.live.gaps.store(self.gap_count, Ordering::Relaxed);
        self.live.noise_cycles.store(self.noise_cycles, Ordering::Relaxed);
        self.live.max_cycles.store(self.max_gap.1, Ordering::Relaxed);
    }

    #[cold]
    #[inline(never)]
    fn slow_record(&mut self, d: u64) {
        self.hist.saturating_record(d);
    }
}

/// The hot loop. Runs until `halt` is set, the counter passes `until` (both looked at every 1024
/// iterations), or, with `stop_on`, the first gap above `thresh`.
#[inline(never)]
pub(super) fn spin(st: &mut SpinState, halt: &AtomicBool, thresh: u64, stop_on: bool, until: u64) {
    let mut loops: u64 = 0;
    let mut prev = cycles::read();
    st.start = prev;
    loop {
        let now = cycles::read();
        let d = now.wrapping_sub(prev);
        loops += 1;
        if (d as usize) < FAST_TICKS {
            st.fast[d as usize] += 1;
        } else {
            st.slow_record(d);
        }
        if d > thresh {
            st.gap(prev, d);
            if stop_on {
                st.stopped_on_threshold = true;
                halt.store(true, Ordering::Relaxed);
                prev = now;
                break;
            }
        }
        prev = now;
        if loops & HALT_CHECK_MASK == 0 && (halt.load(Ordering::Relaxed) || now >= until) {
            break;
        }
    }
    st.end = prev;
    st.loops = loops;
}

/// A running noise measurement: threads spinning, counters snapshotted. Poll [`NoiseHandle::live`] and
/// [`NoiseHandle::is_done`], then [`NoiseHandle::join`].
#[derive(Debug)]
pub struct NoiseHandle<'a> {
    cfg: NoiseConfig,
    stop: &'a AtomicBool,
    halt: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<Option<(CpuId, i32, SpinState)>>>,
    live: Vec<(CpuId, Arc<LiveCpu>)>,
    pre: Calibration,
    thresh: u64,
    raw_start: ClockPair,
    mono_start: ClockPair,
    counters_before: CounterSnapshot,
    warnings: Vec<String>,
    tids: Vec<(CpuId, i32)>,
    _mem: Option<super::rt::MemoryLock>,
}

impl std::fmt::Debug for SpinState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpinState").field("loops", &self.loops).field("gap_count", &self.gap_count).finish()
    }
}

/// Runs the measurement to its end (see [`start_noise`]).
pub fn run_noise(cfg: &NoiseConfig, stop: &AtomicBool) -> Result<NoiseRun, SysError> {
    start_noise(cfg, stop)?.join()
}

/// Starts the measurement and returns once every loop runs. `stop` (the binary's Ctrl-C flag) ends it
/// early; so does the duration and, with `stop_on_threshold`, the first gap above the threshold. Setup
/// errors (offline CPU, no permission for SCHED_FIFO) come back before anything runs. Not being able to
/// lock memory is a warning.
pub fn start_noise<'a>(cfg: &NoiseConfig, stop: &'a AtomicBool) -> Result<NoiseHandle<'a>, SysError> {
    if cfg.cpus.is_empty() {
        return Err(SysError::Invalid("no CPU to measure; pass e.g. -c 1".into()));
    }
    crate::host::cpus::check_online(&cfg.cpus)?;
    let pre = Calibration::quick(Nanos::from_ms(10)).ok_or_else(|| {
        SysError::Invalid(format!("the {} counter does not advance; cannot calibrate it", cycles::COUNTER_NAME))
    })?;
    let thresh = pre.to_cycles(cfg.threshold).max(1);
    // The histogram tracks up to an hour of ticks; longer gaps are clamped.
    let highest = pre.to_cycles(Nanos::from_secs(3600)).max(1 << 20);

    let mut warnings = Vec::new();
    let mem = match lock_memory() {
        Ok(g) => Some(g),
        Err(e) => {
            warnings.push(format!("memory not locked, page faults may add noise: {e}"));
            None
        }
    };

    let halt = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    let mut gos = Vec::new();
    let mut live = Vec::new();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(CpuId, i32), SysError>>();
    for cpu in cfg.cpus.iter() {
        let (halt, ready) = (Arc::clone(&halt), ready_tx.clone());
        let (go_tx, go_rx) = mpsc::channel::<bool>();
        let (policy, cap, stop_on) = (cfg.policy, cfg.gap_capacity, cfg.stop_on_threshold);
        let cpu_live = Arc::new(LiveCpu::default());
        live.push((cpu, Arc::clone(&cpu_live)));
        let spawned = std::thread::Builder::new().name(format!("latscope-noise{cpu}")).spawn(move || {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let setup = pin_current_thread(cpu)
                .and_then(|()| SpinState::new(cap, highest, cpu_live))
                .and_then(|st| set_current_thread_policy(policy).map(|()| st));
            let mut st = match setup {
                Ok(st) => st,
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return None;
                }
            };
            let _ = ready.send(Ok((cpu, tid)));
            // `true` starts the loop; `false` or a dropped sender (setup failed elsewhere) ends the thread.
            if go_rx.recv() != Ok(true) {
                return None;
            }
            spin(&mut st, &halt, thresh, stop_on, u64::MAX);
            Some((cpu, tid, st))
        });
        match spawned {
            Ok(h) => {
                handles.push(h);
                gos.push(go_tx);
            }
            Err(e) => {
                drop(gos);
                for h in handles {
                    let _ = h.join();
                }
                return Err(SysError::Call {
                    call: format!("spawn noise thread for CPU {cpu}"),
                    source: e,
                    hint: String::new(),
                });
            }
        }
    }
    drop(ready_tx);
    let mut setup_error = None;
    let mut tids = Vec::with_capacity(handles.len());
    for _ in 0..handles.len() {
        match ready_rx.recv() {
            Ok(Ok(t)) => tids.push(t),
            Ok(Err(e)) => {
                setup_error.get_or_insert(e);
            }
            Err(_) => {
                setup_error.get_or_insert(SysError::Invalid("a noise measurement thread died at start".into()));
            }
        }
    }
    if let Some(e) = setup_error {
        drop(gos);
        for h in handles {
            let _ = h.join();
        }
        return Err(e);
    }

    let counters_before = counters::snapshot(&cfg.cpus);
    let raw_start = cycles::pair(libc::CLOCK_MONOTONIC_RAW);
    let mono_start = cycles::pair(libc::CLOCK_MONOTONIC);
    for go in &gos {
        let _ = go.send(true);
    }
    Ok(NoiseHandle {
        cfg: cfg.clone(),
        stop,
        halt,
        handles,
        live,
        pre,
        thresh,
        raw_start,
        mono_start,
        counters_before,
        warnings,
        tids,
        _mem: mem,
    })
}

impl NoiseHandle<'_> {
    /// The spinning threads' ids (their `pid` in trace events), per CPU.
    pub fn thread_ids(&self) -> &[(CpuId, i32)] {
        &self.tids
    }

    /// CLOCK_MONOTONIC start of the run.
    pub fn start(&self) -> Nanos {
        Nanos(self.mono_start.clock_ns)
    }

    /// Gaps so far per CPU (relaxed reads of the loops' running totals).
    pub fn live(&self) -> Vec<LiveNoise> {
        self.live
            .iter()
            .map(|(cpu, l)| LiveNoise {
                cpu: *cpu,
                gaps: l.gaps.load(Ordering::Relaxed),
                noise: self.pre.to_ns(l.noise_cycles.load(Ordering::Relaxed)),
                max_gap: self.pre.to_ns(l.max_cycles.load(Ordering::Relaxed)),
            })
            .collect()
    }

    /// Whether the run should end now: duration over, stop flag set, or a loop halted on the threshold.
    pub fn is_done(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self.halt.load(Ordering::Relaxed)
            || self
                .cfg
                .duration
                .is_some_and(|d| cycles::clock_ns(libc::CLOCK_MONOTONIC) >= self.mono_start.clock_ns + d.0)
    }

    /// Waits for the end of the run, stops the loops and returns what they measured.
    pub fn join(self) -> Result<NoiseRun, SysError> {
        wait_for_end(self.cfg.duration, self.mono_start.clock_ns, self.stop, &self.halt);
        self.halt.store(true, Ordering::Relaxed);
        let states: Vec<(CpuId, i32, SpinState)> =
            self.handles.into_iter().filter_map(|h| h.join().ok().flatten()).collect();
        let raw_end = cycles::pair(libc::CLOCK_MONOTONIC_RAW);
        let mono_end = cycles::pair(libc::CLOCK_MONOTONIC);
        let counters_after = counters::snapshot(&self.cfg.cpus);
        if states.len() != self.cfg.cpus.len() {
            return Err(SysError::Invalid("a noise measurement thread panicked; no result".into()));
        }
        let calibration =
            Calibration::from_pairs(self.raw_start, raw_end, self.mono_start).unwrap_or(self.pre).until(mono_end);
        let cpus = states.into_iter().map(|(cpu, tid, st)| convert(cpu, tid, st, &calibration, self.thresh)).collect();
        Ok(NoiseRun {
            calibration,
            start: Nanos(self.mono_start.clock_ns),
            end: Nanos(mono_end.clock_ns),
            cpus,
            counters_before: self.counters_before,
            counters_after,
            warnings: self.warnings,
        })
    }
}

/// Sleeps (in slices, so Ctrl-C is seen within 100 ms) until the duration ends, `stop` is set, or a loop
/// halted itself.
fn wait_for_end(duration: Option<Nanos>, start_ns: u64, stop: &AtomicBool, halt: &AtomicBool) {
    let deadline = duration.map(|d| start_ns + d.0);
    loop {
        if stop.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed) {
            return;
        }
        let now = cycles::clock_ns(libc::CLOCK_MONOTONIC);
        let next = match deadline {
            Some(d) if now >= d => return,
            Some(d) => d.min(now + 100_000_000),
            None => now + 100_000_000,
        };
        super::clock::sleep_until(Nanos(next));
    }
}

fn convert(cpu: CpuId, tid: i32, st: SpinState, cal: &Calibration, thresh: u64) -> CpuSamples {
    let mut histogram = LatencyHistogram::new();
    let mut min_cycles = u64::MAX;
    let (mut quiet_loops, mut quiet_cycles) = (0u64, 0u128);
    for (ticks, &n) in st.fast.iter().enumerate() {
        if n > 0 {
            histogram.record_n(cal.to_ns(ticks as u64), n);
            min_cycles = min_cycles.min(ticks as u64);
            if ticks as u64 <= thresh {
                quiet_loops += n;
                quiet_cycles += ticks as u128 * n as u128;
            }
        }
    }
    for v in st.hist.iter_recorded() {
        let ticks = st.hist.median_equivalent(v.value_iterated_to());
        let n = v.count_at_value();
        histogram.record_n(cal.to_ns(ticks), n);
        min_cycles = min_cycles.min(st.hist.lowest_equivalent(v.value_iterated_to()));
        if ticks <= thresh {
            quiet_loops += n;
            quiet_cycles += ticks as u128 * n as u128;
        }
    }
    let to_gap = |(start, d): (u64, u64)| Gap { start_ns: cal.to_monotonic(start), duration_ns: cal.to_ns(d) };
    let runtime_cycles = st.end.saturating_sub(st.start);
    CpuSamples {
        cpu,
        tid,
        loops: st.loops,
        runtime_cycles,
        runtime: cal.to_ns(runtime_cycles),
        min_cycles: if min_cycles == u64::MAX { 0 } else { min_cycles },
        loop_cycles: if quiet_loops > 0 { quiet_cycles as f64 / quiet_loops as f64 } else { 0.0 },
        histogram,
        gaps: st.gaps.iter().copied().map(to_gap).collect(),
        gap_count: st.gap_count,
        dropped: st.dropped,
        noise: cal.to_ns(st.noise_cycles),
        max_gap: if st.max_gap.1 > 0 { to_gap(st.max_gap) } else { Gap::default() },
        stopped_on_threshold: st.stopped_on_threshold,
    }
}

/// Reads the environment facts that change a noise reading of `cpus`. Unreadable facts stay empty.
/// `hypervisor`: the one the run's metadata names.
pub fn environment(cpus: &CpuList, hypervisor: Option<String>) -> NoiseEnvironment {
    let sys = "/sys/devices/system/cpu";
    let online = crate::host::cpus::online_cpus().unwrap_or_default();
    let smt = cpus
        .iter()
        .map(|cpu| {
            let list = read_opt(format!("{sys}/cpu{cpu}/topology/thread_siblings_list"))
                .and_then(|s| CpuList::parse(&s).ok())
                .unwrap_or_default();
            let siblings = CpuList(list.iter().filter(|c| *c != cpu).collect());
            let on = CpuList(siblings.iter().filter(|c| online.contains(*c)).collect());
            SmtSiblings { cpu, siblings, online: on }
        })
        .collect();
    let subset = |path: &str| {
        let all = read_opt(path).and_then(|s| CpuList::parse(&s).ok()).unwrap_or_default();
        CpuList(cpus.iter().filter(|c| all.contains(*c)).collect())
    };
    NoiseEnvironment {
        smt,
        smt_active: read_opt(format!("{sys}/smt/active")).map(|s| s == "1"),
        isolated: subset(&format!("{sys}/isolated")),
        nohz_full: subset(&format!("{sys}/nohz_full")),
        rt_period_us: read_opt("/proc/sys/kernel/sched_rt_period_us").and_then(|s| s.parse().ok()),
        rt_runtime_us: read_opt("/proc/sys/kernel/sched_rt_runtime_us").and_then(|s| s.parse().ok()),
        hypervisor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(cpu: CpuId, d: Nanos) -> NoiseConfig {
        NoiseConfig {
            cpus: CpuList(vec![cpu]),
            policy: Policy::Other,
            duration: Some(d),
            threshold: Nanos::from_us(5),
            gap_capacity: 1024,
            stop_on_threshold: false,
        }
    }

    #[test]
    fn short_run_accounts_every_iteration() {
        let stop = AtomicBool::new(false);
        let run = run_noise(&cfg(CpuId(0), Nanos::from_ms(200)), &stop).expect("run");
        let c = &run.cpus[0];
        assert!(c.loops > 1000, "loops {}", c.loops);
        assert_eq!(c.histogram.count(), c.loops, "every iteration is in the histogram");
        assert!(c.runtime >= Nanos::from_ms(150) && c.runtime <= Nanos::from_secs(2), "runtime {}", c.runtime);
        assert!(c.loop_cycles > 0.0 && c.min_cycles > 0);
        assert_eq!(c.gaps.len() as u64 + c.dropped, c.gap_count);
        let sum: u64 = c.gaps.iter().map(|g| g.duration_ns.0).sum();
        if c.dropped == 0 {
            // Per-gap conversion rounds each gap; the total is converted once.
            assert!(sum.abs_diff(c.noise.0) <= c.gap_count + 1, "sum {sum} vs noise {}", c.noise);
        }
        for g in &c.gaps {
            assert!(g.start_ns >= run.start && g.end() <= run.end + Nanos::from_ms(1), "gap {g:?} outside the run");
            assert!(g.duration_ns > Nanos::from_us(5));
        }
        assert!(run.counters_before.interrupts.is_some());
    }

    #[test]
    fn the_result_names_the_spinning_thread() {
        let stop = AtomicBool::new(false);
        let handle = start_noise(&cfg(CpuId(0), Nanos::from_ms(100)), &stop).expect("start");
        let named: Vec<i32> = std::fs::read_dir("/proc/self/task")
            .expect("/proc/self/task")
            .flatten()
            .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "latscope-noise0"))
            .filter_map(|t| t.file_name().to_string_lossy().parse().ok())
            .collect();
        let run = handle.join().expect("run");
        // Other tests may spin on CPU 0 at the same time, under the same name (why a lookup by name is not enough).
        assert!(named.contains(&run.cpus[0].tid), "tid {} is not a latscope-noise0 thread: {named:?}", run.cpus[0].tid);
    }

    #[test]
    fn stop_flag_ends_an_open_run_and_bad_cpus_fail() {
        let stop = AtomicBool::new(true);
        let mut c = cfg(CpuId(0), Nanos::from_secs(60));
        c.duration = None;
        let t = std::time::Instant::now();
        run_noise(&c, &stop).expect("run");
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
        let e = run_noise(&cfg(CpuId(4096), Nanos::from_ms(10)), &stop).expect_err("offline CPU");
        assert!(e.to_string().contains("4096"), "{e}");
    }

    #[test]
    fn environment_names_the_measured_cpus() {
        let env = environment(&CpuList(vec![CpuId(0)]), Some("KVM".into()));
        assert_eq!(env.smt.len(), 1);
        assert_eq!(env.smt[0].cpu, CpuId(0));
        assert!(!env.smt[0].siblings.contains(CpuId(0)));
    }
}
