//! The `latscope noise` result on the wire (`"schema": "latscope/1"`, `"kind": "noise"`): per-CPU noise
//! accounting, gaps, histogram, counter deltas, the environment facts that change the reading, and the
//! RT-throttling verdict.

use crate::wire::{ResultKind, SCHEMA};
use crate::{Bucket, CpuId, CpuList, Finding, Nanos, RunMetadata, StopReason, Summary};
use serde::{Deserialize, Serialize};

/// One interruption of the spinning loop: the loop saw the counter jump by `duration` after `start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// When the loop last ran before the gap, CLOCK_MONOTONIC ns (the clock trace events use, so a trace
    /// taken at the same time lines up).
    pub start_ns: Nanos,
    /// How long the loop did not run, ns (one loop iteration included).
    pub duration_ns: Nanos,
}

impl Gap {
    /// When the loop ran again.
    pub fn end(&self) -> Nanos {
        self.start_ns + self.duration_ns
    }
}

/// The options the run used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseOptions {
    /// Measured CPUs.
    pub cpus: CpuList,
    /// SCHED_FIFO priority of the spinners; 0 is SCHED_OTHER.
    pub priority: u32,
    /// Requested duration; `None` ran until Ctrl-C.
    pub duration_ns: Option<u64>,
    /// Gaps longer than this are recorded and counted as noise.
    pub threshold_ns: u64,
    /// Window length of the per-window rows, if asked for.
    pub window_ns: Option<u64>,
    /// Whether the run stops at the first gap above the threshold.
    pub stop_on_threshold: bool,
    /// How many gaps each CPU's buffer holds; more are counted but not kept.
    pub gap_capacity: u64,
    /// What measured: latscope's spinning loops or the kernel's osnoise tracer.
    #[serde(default)]
    pub backend: NoiseBackend,
    /// The osnoise tracer's settings, when it measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub osnoise: Option<OsnoiseSettings>,
}

/// What measures the noise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseBackend {
    /// latscope's spinning loops (oslat's method): every gap a user-space thread sees.
    #[default]
    Loop,
    /// The kernel's osnoise tracer (`osnoise/N` kernel threads, as rtla osnoise): each noise above the
    /// threshold with its source (IRQ, softirq, thread, NMI, or none: hardware).
    Osnoise,
}

/// The osnoise tracer's settings for the run (`osnoise/*`, `tracing_thresh`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsnoiseSettings {
    /// `osnoise/period_us`, ns.
    pub period_ns: u64,
    /// `osnoise/runtime_us`, ns: how much of each period the osnoise thread measures.
    pub runtime_ns: u64,
    /// `osnoise/stop_tracing_us`, ns: the kernel stops at the first single noise above it.
    pub stop_above_ns: Option<u64>,
    /// `osnoise/stop_tracing_total_us`, ns: the kernel stops at the first period whose noise passes it.
    pub stop_total_above_ns: Option<u64>,
}

/// The osnoise tracer's own accounting of one CPU, summed over its periods (what `rtla osnoise top` shows).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OsnoisePeriods {
    /// Periods the tracer reported.
    pub periods: u64,
    /// Runtime measured in them, ns.
    pub runtime_ns: u64,
    /// Noise in them, ns.
    pub noise_ns: u64,
    /// The share of the runtime left to the osnoise thread, percent.
    pub available_pct: f64,
    /// The noisiest period's noise, ns.
    pub max_period_noise_ns: u64,
    /// The longest single noise, ns.
    pub max_single_ns: u64,
    /// Interferences counted, per source.
    pub counts: crate::event::OsnoiseCounts,
}

/// The source of a noise, as the osnoise tracer's events name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseSourceKind {
    /// A hard IRQ (`irq_noise`).
    Irq,
    /// A softirq (`softirq_noise`).
    Softirq,
    /// A thread that ran instead of the osnoise thread (`thread_noise`).
    Thread,
    /// An NMI (`nmi_noise`).
    Nmi,
    /// A noise the osnoise thread saw with no interference behind it (`sample_threshold` with
    /// interference 0): hardware, firmware (SMI) or the hypervisor.
    Hardware,
}

/// The noise one source made on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseSource {
    /// Which kind of source.
    pub kind: NoiseSourceKind,
    /// Its name: the IRQ's action (`ttyS0`, `local_timer`), the softirq (`TIMER`), the thread's command
    /// (`kworker/1:1`); empty for NMIs and hardware.
    pub name: String,
    /// The IRQ's vector, the softirq's vector or the thread's pid, when known.
    pub number: Option<u32>,
    /// How many times it interfered.
    pub count: u64,
    /// The time it took in all, ns.
    pub total_ns: u64,
    /// Its longest interference, ns.
    pub max_ns: u64,
}

/// The counter the loop reads and its frequency.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterInfo {
    /// `tsc` (`lfence; rdtsc`), `cntvct_el0`, or `clock_monotonic` (fallback).
    pub name: String,
    /// Ticks per second, calibrated against CLOCK_MONOTONIC_RAW over the run.
    pub freq_hz: f64,
    /// The clock the frequency was calibrated against.
    pub calibrated_against: String,
}

/// Gap statistics of one CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GapStats {
    /// Gaps above the threshold (all of them, kept or dropped).
    pub count: u64,
    /// Gaps per second of run time.
    pub per_second: f64,
    /// Gaps that did not fit in the buffer: counted in `count` and the noise totals, but not in `top`
    /// or the windows.
    pub dropped: u64,
    /// The longest gaps, longest first.
    pub top: Vec<Gap>,
}

/// Change of one counter line over the run on the measured CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountDelta {
    /// The line's key: IRQ number (`24`) or name (`LOC`, `NMI`, `TIMER`…).
    pub id: String,
    /// The rest of the line (`IO-APIC 5-edge ACPI:Ged`, `Local timer interrupts`), whitespace collapsed.
    pub description: String,
    /// How much it grew.
    pub delta: u64,
}

/// SMI count read from MSR 0x34 (Intel `MSR_SMI_COUNT`), or why it could not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmiDelta {
    /// SMIs during the run, when the MSR was readable before and after.
    pub delta: Option<u64>,
    /// Why there is no count (driver not loaded, no permission, MSR absent on this CPU or hypervisor).
    pub unavailable: Option<String>,
}

/// Counter deltas of one CPU over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterDeltas {
    /// `/proc/interrupts` lines that grew, largest first.
    pub interrupts: Vec<CountDelta>,
    /// `/proc/softirqs` lines that grew, largest first.
    pub softirqs: Vec<CountDelta>,
    /// Steal time from `/proc/stat` (time the hypervisor ran something else on this vCPU), ns.
    pub steal_ns: Option<u64>,
    /// SMIs (MSR 0x34).
    pub smi: SmiDelta,
}

/// The RT-throttling verdict: whether the long gaps are the kernel stopping a SCHED_FIFO/RR spinner for
/// `period − runtime` every period (`kernel.sched_rt_period_us` / `kernel.sched_rt_runtime_us`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RtThrottling {
    /// The gap pattern matches RT throttling.
    pub detected: bool,
    /// Whether the spinner ran under an RT policy (throttling only applies then).
    pub rt_policy: bool,
    /// `sched_rt_period_us`, when known.
    pub period_us: Option<u64>,
    /// `sched_rt_runtime_us` (-1 = no limit), when known.
    pub runtime_us: Option<i64>,
    /// `period − runtime`, the gap throttling produces, ns.
    pub expected_gap_ns: Option<u64>,
    /// Gaps that match the expected length and spacing.
    pub matched_gaps: u64,
    /// Their median duration, ns.
    pub median_gap_ns: u64,
    /// Median time between their starts, ns.
    pub median_interval_ns: u64,
    /// Their total duration, ns (part of the noise total).
    pub throttled_ns: u64,
    /// Longer gaps that end a whole number of periods from a matched gap's end: a throttle that came right
    /// after other noise, so that the gap holds both. Not in `matched_gaps`, the median or the total (their
    /// length is not the throttle's).
    #[serde(default)]
    pub in_longer_gaps: u64,
    /// The sysctl to change (`kernel.sched_rt_runtime_us`).
    pub sysctl: String,
    /// The value that removes throttling (`-1`), to be set only when the RT tasks are trusted.
    pub suggested_value: String,
}

/// Noise in one window of the run (`--window`), computed from the kept gaps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseWindow {
    /// Window start, ns since the start of the run.
    pub offset_ns: u64,
    /// Window length, ns (the last one may be shorter).
    pub length_ns: u64,
    /// Gaps that started in the window.
    pub gaps: u64,
    /// Their total duration, ns.
    pub noise_ns: u64,
    /// Share of the window, percent.
    pub noise_pct: f64,
    /// Longest gap, ns.
    pub max_gap_ns: u64,
}

/// SMT siblings of a measured CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmtSiblings {
    /// The measured CPU.
    pub cpu: CpuId,
    /// Its hardware-thread siblings (itself excluded), from `topology/thread_siblings_list`.
    pub siblings: CpuList,
    /// Those siblings that are online (each one shares the core's execution units with the spinner).
    pub online: CpuList,
}

/// Facts that change how a noise reading should be read (a minimal set; `latscope audit` goes further).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseEnvironment {
    /// SMT siblings of each measured CPU.
    pub smt: Vec<SmtSiblings>,
    /// Whether SMT is active (`/sys/devices/system/cpu/smt/active`), when the file exists.
    pub smt_active: Option<bool>,
    /// Measured CPUs that are isolated (`/sys/devices/system/cpu/isolated`, from `isolcpus=`).
    pub isolated: CpuList,
    /// Measured CPUs in `nohz_full` (`/sys/devices/system/cpu/nohz_full`).
    pub nohz_full: CpuList,
    /// `kernel.sched_rt_period_us`.
    pub rt_period_us: Option<u64>,
    /// `kernel.sched_rt_runtime_us` (-1 = unlimited).
    pub rt_runtime_us: Option<i64>,
    /// The hypervisor, when running under one.
    pub hypervisor: Option<String>,
}

/// Everything measured on one CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuNoise {
    /// The CPU.
    pub cpu: CpuId,
    /// Loop iterations (counter reads).
    pub loops: u64,
    /// Mean cost of an undisturbed iteration, counter ticks: the detection floor.
    pub loop_cycles: f64,
    /// Cheapest iteration seen, counter ticks.
    pub loop_cycles_min: u64,
    /// The detection floor in ns (`loop_cycles` converted).
    pub loop_ns: f64,
    /// How long this CPU's loop ran, ns.
    pub runtime_ns: u64,
    /// Total duration of the gaps above the threshold, ns.
    pub noise_ns: u64,
    /// `noise_ns` as a share of `runtime_ns`, percent.
    pub noise_pct: f64,
    /// Longest gap, ns.
    pub max_gap_ns: u64,
    /// When it started, CLOCK_MONOTONIC ns (0 when there was no gap).
    pub max_gap_start_ns: u64,
    /// Gap count, rate and the longest ones.
    pub gaps: GapStats,
    /// Statistics of every iteration's duration.
    pub summary: Summary,
    /// Non-empty histogram buckets of every iteration's duration.
    pub histogram: Vec<Bucket>,
    /// Values above the histogram's range (clamped).
    pub histogram_saturated: u64,
    /// Counter deltas over the run.
    pub counters: CounterDeltas,
    /// RT-throttling verdict for this CPU.
    pub rt_throttling: RtThrottling,
    /// Per-window rows when `--window` was given.
    pub windows: Vec<NoiseWindow>,
    /// A gap exceeded the threshold and `--stop-on-threshold` ended the run.
    pub stopped_on_threshold: bool,
    /// The osnoise tracer's per-period accounting (`--backend osnoise`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub periods: Option<OsnoisePeriods>,
    /// The noise by source, most time first (`--backend osnoise`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<NoiseSource>,
}

/// The whole `latscope noise` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Always [`ResultKind::Noise`].
    pub kind: ResultKind,
    /// What ran, where, when.
    pub metadata: RunMetadata,
    /// The options used.
    pub options: NoiseOptions,
    /// The counter the loops read.
    pub counter: CounterInfo,
    /// Start of the run, CLOCK_MONOTONIC ns (gap times are on this clock).
    pub start_monotonic_ns: u64,
    /// What ended the run.
    pub stopped_by: StopReason,
    /// Facts that change the reading.
    pub environment: NoiseEnvironment,
    /// Per-CPU results, by CPU number.
    pub cpus: Vec<CpuNoise>,
    /// Things the reader must know (counters not readable, gaps dropped, degraded setup).
    pub warnings: Vec<String>,
    /// The audit findings that concern the measured CPUs, collected when the run started.
    pub findings: Vec<Finding>,
    /// What ran in each gap, by cause (`latscope noise --trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causes: Option<crate::noise_cause::NoiseCauses>,
}

impl NoiseResult {
    /// An empty result with the schema and kind set.
    pub fn new(metadata: RunMetadata, options: NoiseOptions, counter: CounterInfo) -> NoiseResult {
        NoiseResult {
            schema: SCHEMA.to_string(),
            kind: ResultKind::Noise,
            metadata,
            options,
            counter,
            start_monotonic_ns: 0,
            stopped_by: StopReason::Duration,
            environment: NoiseEnvironment::default(),
            cpus: Vec::new(),
            warnings: Vec::new(),
            findings: Vec::new(),
            causes: None,
        }
    }

    /// Whether any CPU saw a gap longer than `threshold`.
    pub fn exceeds(&self, threshold: Nanos) -> bool {
        self.cpus.iter().any(|c| c.max_gap_ns > threshold.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> NoiseResult {
        let mut r = NoiseResult::new(
            RunMetadata { tool_version: "0.1.0".into(), ..RunMetadata::default() },
            NoiseOptions { cpus: CpuList(vec![CpuId(1)]), threshold_ns: 5_000, ..NoiseOptions::default() },
            CounterInfo { name: "tsc".into(), freq_hz: 2.6e9, calibrated_against: "CLOCK_MONOTONIC_RAW".into() },
        );
        r.cpus.push(CpuNoise {
            cpu: CpuId(1),
            loops: 1000,
            loop_cycles: 58.5,
            noise_ns: 50_000_000,
            max_gap_ns: 50_000_000,
            gaps: GapStats {
                count: 1,
                per_second: 1.0,
                dropped: 0,
                top: vec![Gap { start_ns: Nanos(10), duration_ns: Nanos(50_000_000) }],
            },
            histogram: vec![Bucket { low_ns: 20, high_ns: 20, count: 999 }],
            counters: CounterDeltas {
                interrupts: vec![CountDelta {
                    id: "LOC".into(),
                    description: "Local timer interrupts".into(),
                    delta: 4,
                }],
                smi: SmiDelta { delta: None, unavailable: Some("no msr driver".into()) },
                ..CounterDeltas::default()
            },
            rt_throttling: RtThrottling {
                detected: true,
                sysctl: "kernel.sched_rt_runtime_us".into(),
                ..Default::default()
            },
            ..CpuNoise::default()
        });
        r
    }

    #[test]
    fn round_trips_through_json() {
        let r = sample();
        let text = serde_json::to_string_pretty(&r).expect("serialize");
        let back: NoiseResult = serde_json::from_str(&text).expect("parse back");
        assert_eq!(back, r);
        let v: serde_json::Value = serde_json::from_str(&text).expect("value");
        assert_eq!(v["schema"], "latscope/1");
        assert_eq!(v["kind"], "noise");
        let cpu = &v["cpus"][0];
        for key in
            ["cpu", "loops", "loop_cycles", "noise_ns", "noise_pct", "max_gap_ns", "gaps", "histogram", "counters"]
        {
            assert!(cpu.get(key).is_some(), "missing key {key}");
        }
        assert_eq!(cpu["gaps"]["top"][0]["duration_ns"], 50_000_000);
        assert!(v["findings"].as_array().is_some_and(|f| f.is_empty()));
        assert!(r.exceeds(Nanos::from_ms(1)));
        assert!(!r.exceeds(Nanos::from_ms(60)));
    }
}
