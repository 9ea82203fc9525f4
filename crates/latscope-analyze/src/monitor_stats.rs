//! [`MonitorStats`]: one CPU's latencies as `latscope monitor` accumulates them during an endless run, in
//! bounded memory: the HDR histogram since the start, the exact counts of the exposed buckets, and a
//! rolling window kept as a ring of [`WINDOW_SLOTS`] sub-window histograms (the oldest is dropped whole as
//! time moves on, so the window covers between `(n-1)/n` and all of its length).

use latscope_model::{CpuId, CpuMonitor, LatencyHistogram, Nanos, NoiseMonitor, LATENCY_BUCKETS};

/// How many sub-windows the rolling window is kept in.
pub const WINDOW_SLOTS: usize = 6;

/// One CPU's accumulated latencies.
#[derive(Clone, Debug)]
pub struct MonitorStats {
    cpu: CpuId,
    total: LatencyHistogram,
    /// Samples per bucket (not cumulative): `LATENCY_BUCKETS[i-1] < v <= LATENCY_BUCKETS[i]`.
    buckets: [u64; LATENCY_BUCKETS.len()],
    sum_ns: u128,
    max: Nanos,
    slots: Vec<LatencyHistogram>,
    /// The exact largest latency of each sub-window (the histograms round up by up to 0.1 %).
    slot_max: [Nanos; WINDOW_SLOTS],
    slot_len: Nanos,
    /// Index of the current sub-window in `slots`, and when it began.
    current: usize,
    current_start: Nanos,
    /// The sampled noise (`--noise`): `None` until a burst is recorded.
    noise: Option<NoiseSums>,
}

/// The noise bursts' sums since the start and per sub-window.
#[derive(Clone, Debug, Default)]
struct NoiseSums {
    total: NoiseSlot,
    slots: [NoiseSlot; WINDOW_SLOTS],
}

/// Sampled time, noise within it and the longest gap.
#[derive(Clone, Copy, Debug, Default)]
struct NoiseSlot {
    sampled: Nanos,
    noise: Nanos,
    max_gap: Nanos,
}

impl NoiseSlot {
    fn add(&mut self, sampled: Nanos, noise: Nanos, max_gap: Nanos) {
        self.sampled = self.sampled + sampled;
        self.noise = self.noise + noise;
        self.max_gap = self.max_gap.max(max_gap);
    }
}

impl MonitorStats {
    /// Empty statistics for `cpu`, with a rolling window of `window` starting at `now`.
    pub fn new(cpu: CpuId, window: Nanos, now: Nanos) -> MonitorStats {
        MonitorStats {
            cpu,
            total: LatencyHistogram::new(),
            buckets: [0; LATENCY_BUCKETS.len()],
            sum_ns: 0,
            max: Nanos::ZERO,
            slots: (0..WINDOW_SLOTS).map(|_| LatencyHistogram::new()).collect(),
            slot_max: [Nanos::ZERO; WINDOW_SLOTS],
            slot_len: Nanos((window.0 / WINDOW_SLOTS as u64).max(1)),
            current: 0,
            current_start: now,
            noise: None,
        }
    }

    /// Moves the rolling window on to `now`, clearing the sub-windows that fell out of it.
    pub fn advance(&mut self, now: Nanos) {
        let mut steps = 0;
        while now >= self.current_start + self.slot_len && steps < WINDOW_SLOTS {
            self.current = (self.current + 1) % WINDOW_SLOTS;
            self.slots[self.current] = LatencyHistogram::new();
            self.slot_max[self.current] = Nanos::ZERO;
            if let Some(n) = &mut self.noise {
                n.slots[self.current] = NoiseSlot::default();
            }
            self.current_start = self.current_start + self.slot_len;
            steps += 1;
        }
        if now >= self.current_start + self.slot_len {
            // Longer than the whole window without a call: every sub-window is already empty.
            let behind = (now.0 - self.current_start.0) / self.slot_len.0;
            self.current_start = Nanos(self.current_start.0 + behind * self.slot_len.0);
        }
    }

    /// Records one latency (in the current sub-window: call [`advance`](Self::advance) first).
    pub fn record(&mut self, latency: Nanos) {
        self.total.record(latency);
        self.slots[self.current].record(latency);
        self.slot_max[self.current] = self.slot_max[self.current].max(latency);
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| latency <= *b) {
            self.buckets[i] += 1;
        }
        self.sum_ns += u128::from(latency.0);
        self.max = self.max.max(latency);
    }

    /// Records one burst of the noise loop: how long it ran, the gaps' total and the longest gap (in the
    /// current sub-window, like [`record`](Self::record)).
    pub fn record_noise(&mut self, sampled: Nanos, noise: Nanos, max_gap: Nanos) {
        let n = self.noise.get_or_insert_with(NoiseSums::default);
        n.total.add(sampled, noise, max_gap);
        n.slots[self.current].add(sampled, noise, max_gap);
    }

    /// The CPU.
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }

    /// Every latency since the start.
    pub fn total(&self) -> &LatencyHistogram {
        &self.total
    }

    /// The latencies of the rolling window, merged.
    pub fn window(&self) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for s in &self.slots {
            h.merge(s);
        }
        h
    }

    /// The largest latency in the rolling window.
    pub fn window_max(&self) -> Nanos {
        self.slot_max.iter().copied().max().unwrap_or(Nanos::ZERO)
    }

    /// The counters to expose, with what the measuring thread counted itself (`overruns`,
    /// `threshold_exceeded`) and the samples its reader lost.
    pub fn snapshot(&self, overruns: u64, threshold_exceeded: u64, samples_lost: u64) -> CpuMonitor {
        CpuMonitor {
            cpu: self.cpu,
            buckets: self.buckets,
            count: self.total.count(),
            sum_ns: self.sum_ns,
            max: self.max,
            window_max: self.window_max(),
            overruns,
            threshold_exceeded,
            samples_lost,
            noise: self.noise.as_ref().map(|n| {
                let mut w = NoiseSlot::default();
                for s in &n.slots {
                    w.add(s.sampled, s.noise, s.max_gap);
                }
                NoiseMonitor {
                    sampled: n.total.sampled,
                    noise: n.total.noise,
                    max_gap: n.total.max_gap,
                    window_sampled: w.sampled,
                    window_noise: w.noise,
                    window_max_gap: w.max_gap,
                    causes: Default::default(),
                }
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_latency_in_the_first_bucket_that_holds_it() {
        let mut s = MonitorStats::new(CpuId(1), Nanos::from_secs(60), Nanos::ZERO);
        for ns in [500, 1_000, 1_001, 7_000, 150_000_000] {
            s.record(Nanos(ns));
        }
        let c = s.snapshot(3, 2, 1);
        // ≤1 µs: 500 and 1000; ≤2 µs: 1001; ≤10 µs: 7000; 150 ms is above every bound.
        assert_eq!(&c.buckets[..5], &[2, 1, 0, 1, 0]);
        assert_eq!(c.buckets.iter().sum::<u64>(), 4);
        assert_eq!(c.count, 5);
        assert_eq!(c.sum_ns, 150_009_501);
        assert_eq!(c.max, Nanos(150_000_000));
        assert_eq!((c.overruns, c.threshold_exceeded, c.samples_lost), (3, 2, 1));
    }

    #[test]
    fn the_rolling_window_forgets_what_is_older_than_it() {
        let mut s = MonitorStats::new(CpuId(0), Nanos::from_secs(60), Nanos::ZERO);
        s.record(Nanos::from_us(900));
        s.advance(Nanos::from_secs(30));
        s.record(Nanos::from_us(40));
        assert_eq!(s.window_max(), Nanos::from_us(900), "within the window");
        s.advance(Nanos::from_secs(61));
        assert_eq!(s.window_max(), Nanos::from_us(40));
        assert_eq!(s.window().count(), 1);
        assert_eq!(s.total().count(), 2, "the total keeps everything");
        // A long silence empties the window and keeps the sub-windows aligned.
        s.advance(Nanos::from_secs(3_600));
        assert_eq!(s.window_max(), Nanos::ZERO);
        s.record(Nanos::from_us(5));
        s.advance(Nanos::from_secs(3_605));
        assert_eq!(s.window().count(), 1);
        assert_eq!(s.snapshot(0, 0, 0).max, Nanos::from_us(900));
    }

    #[test]
    fn noise_bursts_sum_since_the_start_and_within_the_window() {
        let mut s = MonitorStats::new(CpuId(1), Nanos::from_secs(60), Nanos::ZERO);
        assert_eq!(s.snapshot(0, 0, 0).noise, None, "no noise series before the first burst");
        s.record_noise(Nanos::from_ms(10), Nanos::from_ms(1), Nanos::from_us(700));
        s.advance(Nanos::from_secs(30));
        s.record_noise(Nanos::from_ms(10), Nanos::from_us(100), Nanos::from_us(60));
        let n = s.snapshot(0, 0, 0).noise.expect("noise");
        assert_eq!((n.sampled, n.noise, n.max_gap), (Nanos::from_ms(20), Nanos::from_us(1_100), Nanos::from_us(700)));
        assert_eq!(n.window_max_gap, Nanos::from_us(700));
        assert!((n.ratio() - 0.055).abs() < 1e-9, "{}", n.ratio());
        s.advance(Nanos::from_secs(61));
        let n = s.snapshot(0, 0, 0).noise.expect("noise");
        // The first burst left the window; the total keeps it.
        assert_eq!(
            (n.window_sampled, n.window_noise, n.window_max_gap),
            (Nanos::from_ms(10), Nanos::from_us(100), Nanos::from_us(60))
        );
        assert!((n.window_ratio() - 0.01).abs() < 1e-9);
        assert_eq!(n.max_gap, Nanos::from_us(700));
        s.advance(Nanos::from_secs(200));
        assert_eq!(s.snapshot(0, 0, 0).noise.expect("noise").window_ratio(), 0.0);
    }
}
