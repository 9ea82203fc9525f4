//! [`TimeShift`]: a guest trace's host time-sync samples (trace-cmd's TIME_SHIFT option), which move the
//! guest's timestamps onto the host's clock the way `trace-cmd report` does.
//!
//! `trace-cmd record -A GUEST` measures, per guest CPU and several times during the recording, the offset
//! between the guest's trace clock and the host's (and, with some protocols, a scaling ratio). A guest
//! timestamp becomes `(ts * scaling) >> fraction` plus the offset of the samples around it, interpolated
//! linearly between them when the option's flags ask for it.

use crate::raw::page::read_uint;

/// The flag bit asking for the offset to be interpolated between two samples (trace-cmd's
/// `TRACECMD_TSYNC_FLAG_INTERPOLATE`); without it the earlier sample's offset is used as is.
const FLAG_INTERPOLATE: u32 = 0x1;

/// One time-sync sample: at guest time `time`, guest timestamps are `(ts * scaling) >> fraction`
/// plus `offset` on the host's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncSample {
    /// Guest time at which the sample was taken.
    pub time: i64,
    /// Host minus guest, in the host clock's units.
    pub offset: i64,
    /// Multiplier of the guest's clock (1 when the clocks tick at the same rate).
    pub scaling: i64,
    /// Fraction bits of `scaling` (0 when the file has none).
    pub fraction: i64,
}

/// The TIME_SHIFT option of a guest's trace: the host's trace id, the protocol flags and the samples of
/// each guest CPU, sorted by time with duplicate times removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeShift {
    /// The trace id of the host recording these samples belong to.
    pub peer_trace_id: u64,
    /// Protocol flags (bit 0: interpolate between samples).
    pub flags: u32,
    /// Samples per guest CPU.
    pub cpus: Vec<Vec<SyncSample>>,
}

impl TimeShift {
    /// Reads the option's bytes: the peer trace id (8 bytes), flags (4), CPU count (4), then per CPU a
    /// sample count (4) and that many times, offsets and scalings (8 bytes each), then, when bytes are
    /// left, every CPU's fraction bits (8 bytes per sample). The error names what is cut short.
    pub fn parse(data: &[u8], big_endian: bool) -> Result<TimeShift, String> {
        let at = std::cell::Cell::new(0usize);
        let take = |size: usize, what: &str| {
            let v = read_uint(data, at.get(), size, big_endian)
                .ok_or_else(|| format!("the option ends at byte {} of {} inside {what}", at.get(), data.len()))?;
            at.set(at.get() + size);
            Ok::<u64, String>(v)
        };
        let peer_trace_id = take(8, "the peer trace id")?;
        let flags = take(4, "the flags")? as u32;
        let ncpus = take(4, "the CPU count")? as usize;
        let mut cpus = Vec::new();
        for cpu in 0..ncpus {
            let count = take(4, &format!("CPU {cpu}'s sample count"))? as usize;
            // Each sample needs at least 24 bytes: a count larger than the data is a broken option.
            if count > data.len() / 24 {
                return Err(format!(
                    "CPU {cpu} claims {count} samples, more than the option's {} bytes hold",
                    data.len()
                ));
            }
            let mut samples = vec![SyncSample { time: 0, offset: 0, scaling: 1, fraction: 0 }; count];
            for s in samples.iter_mut() {
                s.time = take(8, &format!("CPU {cpu}'s sample times"))? as i64;
            }
            for s in samples.iter_mut() {
                s.offset = take(8, &format!("CPU {cpu}'s sample offsets"))? as i64;
            }
            for s in samples.iter_mut() {
                s.scaling = take(8, &format!("CPU {cpu}'s sample scalings"))? as i64;
            }
            cpus.push(samples);
        }
        if at.get() < data.len() {
            for (cpu, samples) in cpus.iter_mut().enumerate() {
                for s in samples.iter_mut() {
                    s.fraction = take(8, &format!("CPU {cpu}'s sample fraction bits"))? as i64;
                }
            }
        }
        for samples in &mut cpus {
            samples.sort_by_key(|s| s.time);
            samples.dedup_by_key(|s| s.time);
        }
        Ok(TimeShift { peer_trace_id, flags, cpus })
    }

    /// CPUs without a sample: their timestamps are left on the guest's clock.
    pub fn cpus_without_samples(&self) -> Vec<usize> {
        self.cpus.iter().enumerate().filter(|(_, s)| s.is_empty()).map(|(cpu, _)| cpu).collect()
    }

    /// The host time of guest timestamp `ts` recorded on guest CPU `cpu` (unchanged for a CPU the option
    /// has no samples for).
    pub fn apply(&self, ts: u64, cpu: usize) -> u64 {
        let Some(samples) = self.cpus.get(cpu) else { return ts };
        match samples.len() {
            0 => ts,
            // One sample: its offset only (trace-cmd applies no scaling then).
            1 => ts.wrapping_add(samples[0].offset as u64),
            n => {
                // The pair around `ts`; before the first or after the last sample, the first or last pair.
                let i = samples.partition_point(|s| s.time <= ts as i64).saturating_sub(1).min(n - 2);
                self.correct(ts, &samples[i], &samples[i + 1])
            }
        }
    }

    fn correct(&self, ts: u64, min: &SyncSample, max: &SyncSample) -> u64 {
        let correction = if self.flags & FLAG_INTERPOLATE != 0 {
            // Rounded to the nearest, as trace-cmd does it (times are distinct: duplicates were removed).
            let delta = max.time.wrapping_sub(min.time);
            let part = (ts as i64).wrapping_sub(min.time).wrapping_mul(max.offset.wrapping_sub(min.offset));
            min.offset.wrapping_add(part.wrapping_add(delta / 2) / delta)
        } else {
            min.offset
        };
        let scaled = ts.wrapping_mul(min.scaling as u64).checked_shr(min.fraction as u32).unwrap_or(0);
        scaled.wrapping_add(correction as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(flags: u32, cpus: &[&[(i64, i64)]]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&7u64.to_le_bytes());
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&(cpus.len() as u32).to_le_bytes());
        for samples in cpus {
            b.extend_from_slice(&(samples.len() as u32).to_le_bytes());
            for (t, _) in *samples {
                b.extend_from_slice(&t.to_le_bytes());
            }
            for (_, o) in *samples {
                b.extend_from_slice(&o.to_le_bytes());
            }
            for _ in *samples {
                b.extend_from_slice(&1i64.to_le_bytes());
            }
        }
        b
    }

    #[test]
    fn interpolates_between_the_samples_around_a_time() {
        let data = option(FLAG_INTERPOLATE, &[&[(2_000, -100), (1_000, 100), (3_000, -100)], &[(5, 40)]]);
        let s = TimeShift::parse(&data, false).expect("a whole option");
        assert_eq!(s.peer_trace_id, 7);
        assert_eq!(s.cpus[0].iter().map(|x| x.time).collect::<Vec<_>>(), [1_000, 2_000, 3_000], "sorted by time");
        // -99.5 truncates towards zero, as in trace-cmd.
        assert_eq!(s.apply(1_500, 0), 1_501, "halfway from +100 to -100");
        assert_eq!(s.apply(1_000, 0), 1_100);
        assert_eq!(s.apply(500, 0), 500 + 200, "before the first sample: the first pair, extrapolated");
        assert_eq!(s.apply(2_500, 0), 2_400, "the second pair: -100 flat");
        assert_eq!(s.apply(10, 1), 50, "one sample: its offset");
        assert_eq!(s.apply(10, 2), 10, "a CPU without samples is left alone");
        let flat = TimeShift { flags: 0, ..s };
        assert_eq!(flat.apply(1_500, 0), 1_600, "without the interpolate flag: the earlier sample's offset");
    }

    #[test]
    fn a_cut_option_is_an_error_that_says_where() {
        let data = option(FLAG_INTERPOLATE, &[&[(1, 2), (3, 4)]]);
        let err = TimeShift::parse(&data[..data.len() - 3], false).expect_err("cut in the scalings");
        assert!(err.contains("CPU 0's sample scalings"), "{err}");
        assert!(TimeShift::parse(&data[..10], false).expect_err("cut in the flags").contains("flags"));
    }
}
