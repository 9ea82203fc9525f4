//! The worst wakeup the kernel's wakeup latency tracer (`wakeup_rt`, `wakeup_dl`) measured while latscope
//! measured (`timer --wakeup-tracer`): the woken task, who woke it, what ran on its CPU until the switch, and
//! whether it was one of the run's own measuring threads.

use crate::{CpuId, Nanos};
use serde::{Deserialize, Serialize};

/// A task as the latency tracer's records name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracerTask {
    /// Its name as printed (the records' task column is cut to a few characters; the header's is whole).
    pub comm: String,
    /// Its pid (thread id).
    pub pid: i32,
    /// Its kernel priority (0-98 real-time, 99 − the SCHED_FIFO/RR priority; 100-139 normal), when printed.
    pub prio: Option<i32>,
}

/// What the kernel's wakeup latency tracer recorded over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelWakeup {
    /// The tracer (`wakeup_rt`, `wakeup_dl`).
    pub tracer: String,
    /// The tracing directory it ran in (`instances/latscope-…`, or the top level).
    pub ran_in: String,
    /// Whether `options/function-trace` was on (the functions the CPU ran between wakeup and switch).
    pub function_trace: bool,
    /// The worst wakeup-to-switch latency it measured (`tracing_max_latency`); zero when it measured none.
    #[serde(rename = "latency_ns")]
    pub latency: Nanos,
    /// The CPU the woken task ran on.
    pub cpu: Option<CpuId>,
    /// The woken task (its SCHED_FIFO/RR priority as `rt_prio` in the header, the kernel priority in `prio`).
    pub task: Option<TracerTask>,
    /// Its SCHED_FIFO/RR priority, from the header.
    pub rt_prio: Option<i64>,
    /// The task running where the wakeup happened (the waker, or the task an interrupt woke it from).
    pub waker: Option<TracerTask>,
    /// The task the CPU switched away from to run the woken task: what ran until the switch.
    pub before: Option<TracerTask>,
    /// Whether the woken task is one of this run's measuring threads.
    pub ours: bool,
    /// Entries the trace holds (records, functions, stacks), for the reader to judge its detail.
    pub entries: u64,
    /// What the trace did not say or what went wrong reading it.
    pub notes: Vec<String>,
}
