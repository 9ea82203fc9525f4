//! Per-CPU ring-buffer counters from `per_cpu/cpuN/stats`: entries, overruns and dropped (lost) events.

use crate::SysError;
use latscope_model::CpuId;
use std::path::Path;

/// The counters of one CPU's ring buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// The CPU.
    pub cpu: CpuId,
    /// Events in the buffer now.
    pub entries: u64,
    /// Events overwritten before they were read (overwrite mode): lost.
    pub overrun: u64,
    /// Events lost because a writer overran an uncommitted one (nested writers): lost.
    pub commit_overrun: u64,
    /// Bytes in the buffer now.
    pub bytes: u64,
    /// Events dropped because the buffer was full (non-overwrite mode): lost.
    pub dropped_events: u64,
    /// Events read so far.
    pub read_events: u64,
    /// The raw text, kept for the `.dat` CPUSTAT option.
    pub text: String,
}

impl CpuStats {
    /// Events the kernel lost on this CPU (overrun, commit overrun and dropped).
    pub fn lost(&self) -> u64 {
        self.overrun + self.commit_overrun + self.dropped_events
    }

    /// Parses a `stats` file; unknown lines are ignored, missing ones stay 0.
    pub fn parse(cpu: CpuId, text: &str) -> CpuStats {
        let mut s = CpuStats { cpu, text: text.to_string(), ..CpuStats::default() };
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else { continue };
            let Ok(v) = value.trim().parse::<u64>() else { continue };
            match key.trim() {
                "entries" => s.entries = v,
                "overrun" => s.overrun = v,
                "commit overrun" => s.commit_overrun = v,
                "bytes" => s.bytes = v,
                "dropped events" => s.dropped_events = v,
                "read events" => s.read_events = v,
                _ => {}
            }
        }
        s
    }

    /// Reads `per_cpu/cpuN/stats` of a tracefs directory (an instance).
    pub fn read(dir: &Path, cpu: CpuId) -> Result<CpuStats, SysError> {
        let path = dir.join(format!("per_cpu/cpu{cpu}/stats"));
        let text = std::fs::read_to_string(&path).map_err(|e| SysError::file(&path, e))?;
        Ok(CpuStats::parse(cpu, &text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_stats_file() {
        let text = "entries: 102\noverrun: 7\ncommit overrun: 1\nbytes: 6740\n\
                    oldest event ts:   590.282639\nnow ts:   595.145321\ndropped events: 3\nread events: 40\n";
        let s = CpuStats::parse(CpuId(1), text);
        assert_eq!((s.entries, s.overrun, s.commit_overrun, s.bytes), (102, 7, 1, 6740));
        assert_eq!((s.dropped_events, s.read_events), (3, 40));
        assert_eq!(s.lost(), 11);
        assert_eq!(s.text, text);
        assert_eq!(CpuStats::parse(CpuId(0), "garbage\n").lost(), 0);
    }
}
