//! `latscope monitor --noise --trace`: the noise bursts' gaps explained from the flight recorder's rolling
//! trace (the attribution of `latscope noise --trace`), summed by cause per CPU for the metrics. A burst is
//! explained once its trace has been read (half a second after it ended); gaps made by this monitor's own
//! threads (its timer thread waking in the middle of a burst) are left out of the causes.

use crate::capture;
use latscope_analyze::noise_attribution::{attribute, CpuGaps};
use latscope_model::{CauseKind, CpuId, MonitorSnapshot, Nanos, Pid};
use latscope_sys::measure::{clock, Burst};
use latscope_sys::tracefs::Capture;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// How long after a burst's end its pages are surely read (the readers poll every 50 ms).
const SETTLE: Nanos = Nanos::from_ms(500);
/// Pages that start this long before a burst are decoded with it (who ran when the burst began).
const BEFORE: Nanos = Nanos::from_secs(1);

/// Gaps by cause: count and total.
type ByCause = BTreeMap<CauseKind, (u64, Nanos)>;

/// The bursts waiting for their trace, and the causes found so far.
#[derive(Debug, Default)]
pub struct NoiseCauses {
    pending: Mutex<Vec<Burst>>,
    causes: Mutex<BTreeMap<CpuId, ByCause>>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl NoiseCauses {
    /// Queues finished bursts for attribution.
    pub fn queue(&self, bursts: &[Burst]) {
        locked(&self.pending).extend(bursts.iter().filter(|b| b.gap_count > 0).cloned());
    }

    /// Forgets the bursts waiting (their trace is gone: the capture was frozen for a breach).
    pub fn drop_pending(&self) {
        locked(&self.pending).clear();
    }

    /// Explains the bursts whose trace is read by now from `capture`'s rolling window.
    pub fn attribute(&self, c: &Capture) {
        let now = clock::now();
        let ready: Vec<Burst> = {
            let mut p = locked(&self.pending);
            let (ready, wait): (Vec<Burst>, Vec<Burst>) = p.drain(..).partition(|b| b.end + SETTLE <= now);
            *p = wait;
            ready
        };
        let Some(from) = ready.iter().map(|b| b.start).min() else { return };
        let pages: Vec<_> = c.snapshot().into_iter().filter(|p| p.ts + BEFORE.0 >= from.0).collect();
        let Ok(mut dec) = capture::decoder_for(c.formats(), "") else { return };
        let mut events = Vec::new();
        for p in &pages {
            dec.decode_page(p.cpu, &p.data, &mut |e| events.push(e));
        }
        events.sort_by_key(|e| e.ts);
        let gaps: Vec<CpuGaps<'_>> = ready
            .iter()
            .map(|b| CpuGaps { cpu: b.cpu, spinner: b.tid, gaps: &b.gaps, measured_noise: b.noise, steal_ns: None })
            .collect();
        let own = own_threads();
        let mut causes = locked(&self.causes);
        for cpu in attribute(&events, &gaps) {
            let by = causes.entry(cpu.cpu).or_default();
            for e in cpu.causes {
                if e.culprit.task.as_ref().is_some_and(|t| own.contains(&t.pid)) {
                    continue;
                }
                let x = by.entry(e.cause).or_default();
                x.0 += e.count;
                x.1 = x.1 + e.magnitude;
            }
        }
    }

    /// Puts the causes into the snapshot's CPUs that sample noise.
    pub fn fill(&self, snap: &mut MonitorSnapshot) {
        let causes = locked(&self.causes);
        for c in &mut snap.cpus {
            if let (Some(n), Some(by)) = (c.noise.as_mut(), causes.get(&c.cpu)) {
                n.causes = by.clone();
            }
        }
    }
}

/// This process's threads (the timer and noise threads among them).
fn own_threads() -> Vec<Pid> {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| t.file_name().to_string_lossy().parse().ok())
        .collect()
}
