//! CLOCK_MONOTONIC reads and absolute sleeps: the only two calls a measurement hot loop makes.

use latscope_model::Nanos;

/// The current CLOCK_MONOTONIC time. Served by the vDSO: no system call, no allocation.
#[inline]
pub fn now() -> Nanos {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Nanos(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The resolution of CLOCK_MONOTONIC (`clock_getres`): 1 ns with high-resolution timers, a jiffy without.
pub fn resolution() -> Nanos {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        return Nanos(1);
    }
    Nanos(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline` (TIMER_ABSTIME: no drift from the time spent awake).
/// Returns 0 when the deadline passed, `EINTR` when a signal interrupted the sleep, or another errno.
#[inline]
pub fn sleep_until(deadline: Nanos) -> i32 {
    let ts = libc::timespec {
        tv_sec: (deadline.0 / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline.0 % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
}

/// Busy-waits (no sleep, no system call) until CLOCK_MONOTONIC reaches `deadline`; returns the time seen.
#[inline]
pub fn spin_until(deadline: Nanos) -> Nanos {
    loop {
        let t = now();
        if t >= deadline {
            return t;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_sleeps_to_deadline() {
        let a = now();
        let deadline = a + Nanos::from_ms(2);
        assert_eq!(sleep_until(deadline), 0);
        let b = now();
        assert!(b >= deadline, "woke at {b:?} before the deadline {deadline:?}");
        let c = spin_until(b + Nanos::from_us(100));
        assert!(c >= b + Nanos::from_us(100));
    }
}
