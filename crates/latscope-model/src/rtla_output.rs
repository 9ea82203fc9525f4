//! [`RtlaOutput`]: what an `rtla timerlat top`/`hist` run printed — per-CPU IRQ, thread and user
//! latency, histograms, and the auto-analysis of the CPU that hit the stop condition — or an `rtla osnoise
//! top`/`hist` or `rtla hwnoise` run (per-CPU noise and its sources' counts), as data.

use crate::{CpuId, Nanos, Pid};
use serde::{Deserialize, Serialize};

/// Which rtla tool printed the output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtlaTool {
    /// `rtla timerlat`: timer wakeup latency.
    #[default]
    Timerlat,
    /// `rtla osnoise`: operating system noise seen by a busy loop.
    Osnoise,
    /// `rtla hwnoise`: osnoise with interrupts off, so only NMIs and hardware-related noise remain.
    Hwnoise,
}

/// Which rtla output the text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtlaMode {
    /// `rtla timerlat top` (one row per CPU), `rtla osnoise top`, `rtla hwnoise`.
    Top,
    /// `rtla timerlat hist` (one column per CPU and context), `rtla osnoise hist` (one column per CPU).
    Hist,
    /// Only the auto-analysis (`--aa-only`, or a pasted excerpt).
    AutoAnalysis,
}

/// One context's latency on one CPU, as rtla prints it (whole microseconds in top and hist).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtlaStats {
    /// Samples (top: the `#COUNT` column; hist: `count:`).
    pub count: u64,
    /// Lowest, when there were samples.
    #[serde(default, rename = "min_ns", skip_serializing_if = "Option::is_none")]
    pub min: Option<Nanos>,
    /// Average, when there were samples.
    #[serde(default, rename = "avg_ns", skip_serializing_if = "Option::is_none")]
    pub avg: Option<Nanos>,
    /// Highest, when there were samples.
    #[serde(default, rename = "max_ns", skip_serializing_if = "Option::is_none")]
    pub max: Option<Nanos>,
    /// Samples over the histogram's last bucket (hist only).
    #[serde(default)]
    pub over: u64,
}

/// One CPU's rows or columns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RtlaCpu {
    /// The CPU.
    pub cpu: CpuId,
    /// Timer IRQ latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq: Option<RtlaStats>,
    /// Thread (kernel or user-space workload) wakeup latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<RtlaStats>,
    /// Return to user space latency (`-u`, the `Usr` columns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<RtlaStats>,
    /// An osnoise or hwnoise top row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<RtlaNoise>,
    /// The durations of single noise occurrences (`rtla osnoise hist`, the `CPU-N` columns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_hist: Option<RtlaStats>,
}

/// One CPU's row of `rtla osnoise top` or `rtla hwnoise` (whole microseconds as rtla prints them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RtlaNoise {
    /// Periods the workload ran.
    pub periods: u64,
    /// How long the workload ran.
    #[serde(rename = "runtime_ns")]
    pub runtime: Nanos,
    /// The sum of the noise it saw.
    #[serde(rename = "noise_ns")]
    pub noise: Nanos,
    /// The share of the runtime left to the workload, percent (`% CPU Aval`).
    pub available_pct: f64,
    /// The most noise in one period.
    #[serde(rename = "max_period_noise_ns")]
    pub max_period_noise: Nanos,
    /// The longest single noise.
    #[serde(rename = "max_single_ns")]
    pub max_single: Nanos,
    /// Hardware-related noise occurrences: noise with no operating system activity to account for it.
    pub hw: u64,
    /// NMI occurrences.
    pub nmi: u64,
    /// IRQ occurrences (osnoise, not hwnoise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq: Option<u64>,
    /// Softirq occurrences (osnoise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq: Option<u64>,
    /// Thread occurrences (osnoise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<u64>,
}

/// An interference entry under an auto-analysis line (`local_timer:236  4.93 us`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtlaEntry {
    /// IRQ or softirq name, or thread name.
    pub name: String,
    /// IRQ vector or number, softirq number, or thread pid.
    pub id: i64,
    /// Its time.
    #[serde(rename = "duration_ns")]
    pub duration: Nanos,
}

/// One part of an auto-analysis with its share of the total (`27.49 us (65.52 %)`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RtlaPart {
    /// Its time.
    #[serde(rename = "duration_ns")]
    pub duration: Nanos,
    /// Its share of the total as rtla printed it, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// The entries listed under it (IRQs, softirqs, threads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<RtlaEntry>,
}

/// The auto-analysis of one CPU that hit the stop condition (`## CPU N hit stop tracing …`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RtlaAnalysis {
    /// The CPU, when the `## CPU N` line is there (rtla before 6.5 did not print it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuId>,
    /// Whether the IRQ latency hit the stop condition (the total is then the IRQ latency, not the thread's).
    pub irq_stop: bool,
    /// IRQ interference before the timer IRQ (`Previous IRQ interference: up to …`).
    #[serde(default, rename = "previous_irq_ns", skip_serializing_if = "Option::is_none")]
    pub previous_irq: Option<Nanos>,
    /// The delay before the timer IRQ handler started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_handler_delay: Option<RtlaPart>,
    /// Whether rtla marked that delay `(exit from idle)`.
    pub exit_from_idle: bool,
    /// The timer IRQ latency.
    #[serde(default, rename = "irq_latency_ns", skip_serializing_if = "Option::is_none")]
    pub irq_latency: Option<Nanos>,
    /// How long the timerlat IRQ handler ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timerlat_irq: Option<RtlaPart>,
    /// The task that was running (and, for a thread stop, how long it kept the workload from running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<RtlaBlocking>,
    /// NMI, IRQ, softirq and thread interference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmi: Option<RtlaPart>,
    /// IRQs that ran before the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqs: Option<RtlaPart>,
    /// Softirqs that ran before the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirqs: Option<RtlaPart>,
    /// Other threads that ran before the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<RtlaPart>,
    /// The total (the thread latency, or the IRQ latency when `irq_stop`).
    #[serde(default, rename = "total_ns", skip_serializing_if = "Option::is_none")]
    pub total: Option<Nanos>,
}

/// The task running when the timer fired.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RtlaBlocking {
    /// Its name.
    pub comm: String,
    /// Its pid.
    pub pid: Pid,
    /// How long it kept the workload from running (not printed for an IRQ stop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<RtlaPart>,
    /// The stack rtla printed (`-> fn` lines), innermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
}

/// Everything read from one rtla output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RtlaOutput {
    /// Which tool (absent in JSON written before osnoise was read: timerlat).
    #[serde(default)]
    pub tool: RtlaTool,
    /// Which output.
    pub mode: RtlaMode,
    /// The run's duration as printed (`0 00:10:00`), when printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Per CPU, in CPU order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<RtlaCpu>,
    /// Histogram buckets (hist): bucket index (µs) and the count per column, in `columns` order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
    /// The rows of the histogram.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<(u64, Vec<u64>)>,
    /// Whether rtla printed `hit stop tracing`.
    pub stopped: bool,
    /// The auto-analyses, one per CPU that hit the stop condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analyses: Vec<RtlaAnalysis>,
    /// `Max timerlat IRQ latency from idle: X us in cpu N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_irq_max: Option<(Nanos, CpuId)>,
    /// What was not understood, with its line number (1-based).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<(usize, String)>,
}
