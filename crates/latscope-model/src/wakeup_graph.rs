//! [`WakeupGraph`]: what `timer --trace --graph` adds — the function graph of the measured CPU during the worst
//! wakeup against a typical (median) one of the same run, compared by `analyze --diff`'s tree diff.

use crate::{CpuId, Text};
use serde::{Deserialize, Serialize};

/// One wakeup of the measuring thread as the trace shows it: its timer's expiry to its switch-in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphWindow {
    /// When the thread's timer was due (its `hrtimer_start` expiry), CLOCK_MONOTONIC ns.
    pub expected_ns: u64,
    /// When the CPU switched to the thread.
    pub woke_ns: u64,
}

impl GraphWindow {
    /// `woke - expected`.
    pub fn latency_ns(&self) -> u64 {
        self.woke_ns.saturating_sub(self.expected_ns)
    }
}

/// One call path that accounts for part of the difference (`analyze --diff`'s entry).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphDiffEntry {
    /// Calls from the outermost one seen in the window down to this one.
    pub path: Vec<Text>,
    /// `added` (only in the worst wakeup), `self_grew` (in both, its own time longer), `removed`.
    pub kind: String,
    /// Its time inside the normal wakeup's window.
    pub normal_ns: Option<u64>,
    /// Its time inside the worst wakeup's window.
    pub worst_ns: Option<u64>,
    /// Time it adds (negative when removed).
    pub extra_ns: i64,
    /// For an added call: the way down its most expensive callees (each holding at least half of its
    /// caller's time), with their times inside the window: where its time went.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hot_path: Vec<(Text, u64)>,
}

impl WakeupGraph {
    /// The worst wakeup's measured latency and its part after the window (after the switch-in), when that is
    /// most of it: the window's calls then do not show where the measured time went.
    pub fn measured_after_window(&self) -> Option<(u64, u64)> {
        let window = self.worst.latency_ns();
        self.measured_ns.filter(|&m| m > window.saturating_mul(2)).map(|m| (m, m - window))
    }
}

/// The worst wakeup's function graph against a normal one's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WakeupGraph {
    /// The measured CPU (the only one traced with function_graph).
    pub cpu: CpuId,
    /// The worst wakeup.
    pub worst: GraphWindow,
    /// The median wakeup among those the trace holds.
    pub normal: GraphWindow,
    /// Wakeups of the measuring thread the trace holds (the normal one is their median by latency).
    pub wakeups: u64,
    /// The latency latscope measured for the worst wakeup, when it is a measured sample: its part beyond the
    /// window's came after the switch-in (the thread's clock read follows it), which the window does not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_ns: Option<u64>,
    /// Time the traced calls took inside each window.
    pub worst_calls_ns: u64,
    /// Same, normal window.
    pub normal_calls_ns: u64,
    /// The calls present in the worst wakeup and absent or shorter in the normal one (and the reverse,
    /// negative), largest first.
    pub entries: Vec<GraphDiffEntry>,
}
