//! Sections with bottom halves or preemption disabled, read from the flags column (`b`/`D`, the preempt
//! depth): the longest per CPU and kind, each with its evidence's granularity (see [`crate::flag_sections`]).

use crate::flag_sections::{Disabled, FlagSection};
use crate::timeline::Timeline;
use serde::Serialize;

/// The flag sections of one CPU and kind.
#[derive(Clone, Debug, Serialize)]
pub struct CpuDisabled {
    /// CPU.
    pub cpu: latscope_model::CpuId,
    /// What was disabled.
    pub disabled: Disabled,
    /// How many sections.
    pub count: usize,
    /// The longest ones, longest first.
    pub longest: Vec<FlagSection>,
}

/// Bottom-halves-off and preemption-off sections of a trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DisabledReport {
    /// Per CPU and kind.
    pub cpus: Vec<CpuDisabled>,
}

impl DisabledReport {
    /// The longest section of `kind` whose evidence is dense enough to state ([`FlagSection::dense`]).
    pub fn longest_dense(&self, kind: Disabled) -> Option<&FlagSection> {
        self.cpus
            .iter()
            .filter(|c| c.disabled == kind)
            .flat_map(|c| c.longest.iter())
            .filter(|s| s.dense())
            .max_by_key(|s| s.duration())
    }
}

/// The `top` longest sections per CPU and kind.
pub fn report(timeline: &Timeline, top: usize) -> DisabledReport {
    let mut rep = DisabledReport::default();
    for (cpu, t) in &timeline.cpus {
        for kind in [Disabled::BottomHalves, Disabled::Preemption] {
            let mut v: Vec<&FlagSection> = t.disabled.iter().filter(|s| s.disabled == kind).collect();
            if v.is_empty() {
                continue;
            }
            let count = v.len();
            // Dense sections first (they can be stated), then by length.
            v.sort_by_key(|s| (std::cmp::Reverse(s.dense()), std::cmp::Reverse(s.duration())));
            let longest = v.into_iter().take(top).cloned().collect();
            rep.cpus.push(CpuDisabled { cpu: *cpu, disabled: kind, count, longest });
        }
    }
    rep
}
