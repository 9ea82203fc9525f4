//! The cycle counter a noise loop reads (`lfence; rdtsc` on x86-64, `cntvct_el0` on arm64, CLOCK_MONOTONIC
//! elsewhere), its calibration against CLOCK_MONOTONIC_RAW, and the mapping of counter values to
//! CLOCK_MONOTONIC nanoseconds (the clock trace events use).

use latscope_model::Nanos;

/// The counter's name as results report it.
#[cfg(target_arch = "x86_64")]
pub const COUNTER_NAME: &str = "tsc";
/// The counter's name as results report it.
#[cfg(target_arch = "aarch64")]
pub const COUNTER_NAME: &str = "cntvct_el0";
/// The counter's name as results report it.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const COUNTER_NAME: &str = "clock_monotonic";

/// Reads the counter. `lfence` keeps the read from being executed before earlier instructions finish,
/// so consecutive reads bracket the loop body. No system call, no allocation.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn read() -> u64 {
    // SAFETY: lfence and rdtsc are available on every x86-64 CPU and have no memory effects we rely on.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
}

/// Reads the counter. `isb` keeps the read from being executed before earlier instructions finish.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn read() -> u64 {
    let v: u64;
    // SAFETY: cntvct_el0 is readable from EL0 on Linux (the kernel enables it); isb is a barrier only.
    unsafe { core::arch::asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v, options(nostack, nomem)) };
    v
}

/// Reads the counter: CLOCK_MONOTONIC ns through the vDSO on architectures without a user-readable counter.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
pub fn read() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Reads a clock in ns (vDSO for the monotonic clocks).
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clocks we pass always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A counter value and a clock reading taken at the same instant (the clock read bracketed by two counter
/// reads; the counter value is their midpoint).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockPair {
    /// Counter value.
    pub cycles: u64,
    /// Clock value, ns.
    pub clock_ns: u64,
}

/// Takes the tightest of a few bracketed readings of `clock` against the counter.
pub fn pair(clock: libc::clockid_t) -> ClockPair {
    let mut best = ClockPair::default();
    let mut best_width = u64::MAX;
    for _ in 0..5 {
        let a = read();
        let ns = clock_ns(clock);
        let b = read();
        let width = b.wrapping_sub(a);
        if width < best_width {
            best_width = width;
            best = ClockPair { cycles: a + width / 2, clock_ns: ns };
        }
    }
    best
}

/// Counter frequency and the mapping from counter values to CLOCK_MONOTONIC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// Counter ticks per second, measured against CLOCK_MONOTONIC_RAW (not slewed by NTP).
    pub freq_hz: f64,
    /// A counter value and CLOCK_MONOTONIC at the same instant, the origin of [`Calibration::to_monotonic`].
    pub origin: ClockPair,
    /// Counter ticks per CLOCK_MONOTONIC second, the slope of [`Calibration::to_monotonic`]. NTP slews
    /// CLOCK_MONOTONIC against CLOCK_MONOTONIC_RAW by up to 500 ppm (82 ppm on the development VM): mapped
    /// at the raw rate, a time 2 s after the origin would be up to 1 ms off the clock trace events and
    /// other threads read. Equal to `freq_hz` until [`Calibration::until`] measures it.
    pub mono_hz: f64,
}

impl Calibration {
    /// Calibrates from two CLOCK_MONOTONIC_RAW pairs; `mono` anchors the CLOCK_MONOTONIC mapping.
    /// Returns `None` when the pairs are not in order (the counter or clock did not advance).
    pub fn from_pairs(raw_start: ClockPair, raw_end: ClockPair, mono: ClockPair) -> Option<Calibration> {
        let dc = raw_end.cycles.checked_sub(raw_start.cycles)?;
        let dns = raw_end.clock_ns.checked_sub(raw_start.clock_ns)?;
        if dc == 0 || dns == 0 {
            return None;
        }
        let freq_hz = dc as f64 * 1e9 / dns as f64;
        Some(Calibration { freq_hz, origin: mono, mono_hz: freq_hz })
    }

    /// The same calibration with CLOCK_MONOTONIC's own rate, measured from the origin to `mono_end` (a
    /// pair taken at the end of the run): times then map onto CLOCK_MONOTONIC at both ends whatever NTP
    /// does to its rate. Unchanged when `mono_end` is not after the origin.
    pub fn until(self, mono_end: ClockPair) -> Calibration {
        let dc = mono_end.cycles.saturating_sub(self.origin.cycles);
        let dns = mono_end.clock_ns.saturating_sub(self.origin.clock_ns);
        if dc == 0 || dns == 0 {
            return self;
        }
        Calibration { mono_hz: dc as f64 * 1e9 / dns as f64, ..self }
    }

    /// Measures over `span` (a short busy wait; 10 ms gives a few ppm).
    pub fn quick(span: Nanos) -> Option<Calibration> {
        let start = pair(libc::CLOCK_MONOTONIC_RAW);
        let mono = pair(libc::CLOCK_MONOTONIC);
        let until = start.clock_ns + span.0;
        while clock_ns(libc::CLOCK_MONOTONIC_RAW) < until {
            std::hint::spin_loop();
        }
        Calibration::from_pairs(start, pair(libc::CLOCK_MONOTONIC_RAW), mono)
    }

    /// A duration in counter ticks, in ns.
    pub fn to_ns(&self, cycles: u64) -> Nanos {
        Nanos((cycles as f64 * 1e9 / self.freq_hz).round() as u64)
    }

    /// A duration in ns, in counter ticks.
    pub fn to_cycles(&self, ns: Nanos) -> u64 {
        (ns.0 as f64 * self.freq_hz / 1e9).round() as u64
    }

    /// A counter value as CLOCK_MONOTONIC ns.
    pub fn to_monotonic(&self, cycles: u64) -> Nanos {
        let d = cycles as i128 - self.origin.cycles as i128;
        let ns = self.origin.clock_ns as i128 + (d as f64 * 1e9 / self.mono_hz).round() as i128;
        Nanos(ns.max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_advances_and_calibrates() {
        let a = read();
        let b = read();
        assert!(b >= a, "counter went backwards");
        let cal = Calibration::quick(Nanos::from_ms(20)).expect("calibration");
        // Any real counter runs between 1 MHz (arm64 generic timers are >= 1 MHz) and 10 GHz.
        assert!((1e6..1e10).contains(&cal.freq_hz), "freq {}", cal.freq_hz);
        // The mapping is consistent with the monotonic clock to within a millisecond.
        let p = pair(libc::CLOCK_MONOTONIC);
        let mapped = cal.to_monotonic(p.cycles);
        assert!(mapped.0.abs_diff(p.clock_ns) < 1_000_000, "mapped {} vs clock {}", mapped.0, p.clock_ns);
    }

    #[test]
    fn conversions_are_inverse() {
        let origin = ClockPair { cycles: 1_000_000, clock_ns: 5_000_000_000 };
        let cal = Calibration { freq_hz: 2.5e9, origin, mono_hz: 2.5e9 };
        assert_eq!(cal.to_ns(2_500), Nanos(1_000));
        assert_eq!(cal.to_cycles(Nanos(1_000)), 2_500);
        assert_eq!(cal.to_monotonic(1_002_500), Nanos(5_000_001_000));
        assert_eq!(cal.to_monotonic(997_500), Nanos(4_999_999_000));
        let p = |c, n| ClockPair { cycles: c, clock_ns: n };
        assert_eq!(Calibration::from_pairs(p(0, 0), p(3_000, 1_000), p(0, 0)).map(|c| c.freq_hz), Some(3e9));
        assert!(Calibration::from_pairs(p(5, 5), p(5, 9), p(0, 0)).is_none());
    }

    #[test]
    fn times_map_onto_a_slewed_monotonic_clock_at_both_ends() {
        let p = |c, n| ClockPair { cycles: c, clock_ns: n };
        // A 1 GHz counter; CLOCK_MONOTONIC runs 500 ppm fast (NTP's largest slew) over a 2 s run.
        let raw = Calibration::from_pairs(p(0, 0), p(2_000_000_000, 2_000_000_000), p(0, 10_000)).expect("cal");
        let cal = raw.until(p(2_000_000_000, 2_001_010_000));
        // At the raw rate the end would be 1 ms early; at CLOCK_MONOTONIC's it is exact.
        assert_eq!(raw.to_monotonic(2_000_000_000), Nanos(2_000_010_000));
        assert_eq!(cal.to_monotonic(2_000_000_000), Nanos(2_001_010_000));
        assert_eq!(cal.to_monotonic(1_000_000_000), Nanos(1_000_510_000));
        // Durations stay in true (raw) seconds.
        assert_eq!(cal.to_ns(1_000_000), Nanos(1_000_000));
        // An end not after the origin leaves the calibration as it was.
        assert_eq!(raw.until(p(0, 10_000)), raw);
    }
}
