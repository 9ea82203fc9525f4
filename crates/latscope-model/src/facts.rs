//! [`SystemFacts`]: a plain, serialisable snapshot of everything about a machine that shapes its latency,
//! each fact with where it was read and, when it could not be read, why (unknown is never guessed).

use crate::{CpuId, CpuList};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One fact read from the system: its value when it could be read, where it was read, and why not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fact<T> {
    /// The value; `None` when unknown (absent, unreadable, not applicable). Never a guess.
    pub value: Option<T>,
    /// Where it was read: a path (`/proc/sys/kernel/sched_rt_runtime_us`), `cpuid 0x40000000`,
    /// `/proc/config.gz`…
    pub from: String,
    /// Why the value is unknown, when it is (`permission denied; run as root`, `absent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl<T> Default for Fact<T> {
    fn default() -> Self {
        Fact { value: None, from: String::new(), note: None }
    }
}

impl<T> Fact<T> {
    /// A fact that was read.
    pub fn known(value: T, from: impl Into<String>) -> Fact<T> {
        Fact { value: Some(value), from: from.into(), note: None }
    }

    /// A fact that could not be read, and why.
    pub fn unknown(from: impl Into<String>, why: impl Into<String>) -> Fact<T> {
        Fact { value: None, from: from.into(), note: Some(why.into()) }
    }

    /// The value, when known.
    pub fn get(&self) -> Option<&T> {
        self.value.as_ref()
    }

    /// Maps the value, keeping where it was read.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Fact<U> {
        Fact { value: self.value.map(f), from: self.from, note: self.note }
    }
}

/// Everything `latscope audit` judges. Collected by `latscope_sys::host::facts`, judged by
/// `latscope_analyze::audit`; a fixture in JSON describes a whole machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SystemFacts {
    /// Whether the collector ran as root (effective uid 0); without it some facts are unknown.
    pub as_root: bool,
    /// CPU architecture (`x86_64`, `aarch64`).
    pub arch: String,
    /// Kernel release, build and configuration.
    pub kernel: KernelFacts,
    /// The kernel command line, with the latency-relevant parameters picked out.
    pub boot: Fact<BootParams>,
    /// CPUs: online state, isolation, SMT, frequency, idle states, PM QoS.
    pub cpus: CpuFacts,
    /// Scheduler knobs: RT throttling (global and cgroup), timer migration.
    pub sched: SchedFacts,
    /// printk levels and registered consoles.
    pub console: ConsoleFacts,
    /// Clocksource.
    pub clock: ClockFacts,
    /// Transparent huge pages and resource limits.
    pub memory: MemoryFacts,
    /// Soft-lockup, NMI and hardware watchdogs.
    pub watchdogs: WatchdogFacts,
    /// IRQ affinity, irqbalance, workqueue mask.
    pub irqs: IrqFacts,
    /// Hypervisor presence and steal time.
    pub hypervisor: HypervisorFacts,
    /// SMI counts (MSR 0x34).
    pub smi: Fact<Vec<CpuCount>>,
    /// Available tracers, events and BPF.
    pub tracing: TracingFacts,
}

/// Kernel release, build string, preemption model and the configuration options that matter here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelFacts {
    /// `uname -r`.
    pub release: Fact<String>,
    /// `uname -v` (names `PREEMPT_RT`, `PREEMPT_DYNAMIC` builds).
    pub version: Fact<String>,
    /// Preemption model in effect: `none`, `voluntary`, `full`, `lazy` or `rt`.
    pub preemption: Fact<String>,
    /// Whether the model can be switched at boot or run time (`CONFIG_PREEMPT_DYNAMIC`).
    pub preempt_dynamic: Fact<bool>,
    /// Selected `CONFIG_*` options (`y`, `m`, `n` for "is not set", or the value), from `/proc/config.gz`
    /// or `/boot/config-<release>`; only the options the audit uses are kept.
    pub config: Fact<BTreeMap<String, String>>,
}

impl KernelFacts {
    /// The value of a `CONFIG_*` option: `Some("y")`, `Some("n")` when not set, `None` when the config is
    /// unknown or does not mention it.
    pub fn config(&self, name: &str) -> Option<&str> {
        self.config.get().and_then(|c| c.get(name)).map(String::as_str)
    }
}

/// The kernel command line and the parameters that shape latency (`None`/`false`: not given).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BootParams {
    /// The whole command line as read.
    pub raw: String,
    /// `isolcpus=` (flags and list, e.g. `managed_irq,domain,2-3`).
    pub isolcpus: Option<String>,
    /// `nohz_full=`.
    pub nohz_full: Option<String>,
    /// `rcu_nocbs=`.
    pub rcu_nocbs: Option<String>,
    /// `irqaffinity=`.
    pub irqaffinity: Option<String>,
    /// `idle=` (`poll`, `halt`, `nomwait`).
    pub idle: Option<String>,
    /// `processor.max_cstate=`.
    pub processor_max_cstate: Option<String>,
    /// `intel_idle.max_cstate=`.
    pub intel_idle_max_cstate: Option<String>,
    /// `tsc=` (`reliable`, `nowatchdog`…).
    pub tsc: Option<String>,
    /// `clocksource=`.
    pub clocksource: Option<String>,
    /// `skew_tick=`.
    pub skew_tick: Option<String>,
    /// `nosoftlockup` given.
    pub nosoftlockup: bool,
    /// `nowatchdog` given.
    pub nowatchdog: bool,
    /// `nmi_watchdog=`.
    pub nmi_watchdog: Option<String>,
    /// `nosmt` or `nosmt=force` given (the value, `""` for plain `nosmt`).
    pub nosmt: Option<String>,
    /// `mitigations=`.
    pub mitigations: Option<String>,
    /// `preempt=` (dynamic-preemption kernels).
    pub preempt: Option<String>,
    /// `loglevel=`.
    pub loglevel: Option<String>,
    /// `quiet` given (console loglevel 4).
    pub quiet: bool,
    /// `threadirqs` given.
    pub threadirqs: bool,
    /// `rcu_nocb_poll` given.
    pub rcu_nocb_poll: bool,
    /// `transparent_hugepage=`.
    pub transparent_hugepage: Option<String>,
    /// Every `console=` value, in order.
    pub consoles: Vec<String>,
}

impl BootParams {
    /// The CPU list of `isolcpus=`, without its flags (`nohz`, `domain`, `managed_irq`).
    pub fn isolcpus_list(&self) -> Option<CpuList> {
        let v = self.isolcpus.as_deref()?;
        let list: Vec<&str> = v.split(',').filter(|p| !matches!(*p, "nohz" | "domain" | "managed_irq")).collect();
        CpuList::parse(&list.join(",")).ok()
    }

    /// Whether `isolcpus=` carries the `managed_irq` flag (kernel-managed IRQs kept off those CPUs).
    pub fn isolcpus_managed_irq(&self) -> bool {
        self.isolcpus.as_deref().is_some_and(|v| v.split(',').any(|p| p == "managed_irq"))
    }
}

/// CPU-wide and per-CPU facts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuFacts {
    /// `/sys/devices/system/cpu/online`.
    pub online: Fact<CpuList>,
    /// `/sys/devices/system/cpu/present`.
    pub present: Fact<CpuList>,
    /// CPUs isolated from the scheduler domains (`/sys/devices/system/cpu/isolated`, from `isolcpus=`);
    /// an empty list when none are.
    pub isolated: Fact<CpuList>,
    /// Tickless CPUs (`/sys/devices/system/cpu/nohz_full`); an empty list when none are.
    pub nohz_full: Fact<CpuList>,
    /// `/sys/devices/system/cpu/smt/control`: `on`, `off`, `forceoff`, `notsupported`, `notimplemented`.
    pub smt_control: Fact<String>,
    /// `/sys/devices/system/cpu/smt/active`.
    pub smt_active: Fact<bool>,
    /// The cpuidle driver (`intel_idle`, `acpi_idle`, `haltpoll`, `none`).
    pub cpuidle_driver: Fact<String>,
    /// The cpuidle governor (`menu`, `teo`, `ladder`, `haltpoll`).
    pub cpuidle_governor: Fact<String>,
    /// The PM QoS CPU latency limit in effect and who holds requests on `/dev/cpu_dma_latency`.
    pub dma_latency: DmaLatencyFacts,
    /// One entry per present CPU.
    pub per_cpu: Vec<CpuFact>,
}

impl CpuFacts {
    /// The entry of `cpu`, if present.
    pub fn cpu(&self, cpu: CpuId) -> Option<&CpuFact> {
        self.per_cpu.iter().find(|c| c.cpu == cpu)
    }
}

/// Facts about one CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuFact {
    /// The CPU.
    pub cpu: CpuId,
    /// Whether it is online.
    pub online: bool,
    /// Its hardware threads, itself included (`topology/thread_siblings_list`).
    pub thread_siblings: Fact<CpuList>,
    /// Frequency scaling; `None` with a note when the CPU has no cpufreq driver.
    pub cpufreq: Fact<CpuFreq>,
    /// Idle states; `None` with a note when cpuidle is absent.
    pub idle_states: Fact<Vec<IdleState>>,
}

/// Frequency scaling state of one CPU (`/sys/devices/system/cpu/cpuN/cpufreq`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuFreq {
    /// `scaling_driver`.
    pub driver: Option<String>,
    /// `scaling_governor`.
    pub governor: Option<String>,
    /// `scaling_min_freq`, kHz.
    pub min_khz: Option<u64>,
    /// `scaling_max_freq`, kHz.
    pub max_khz: Option<u64>,
    /// `scaling_cur_freq`, kHz.
    pub cur_khz: Option<u64>,
    /// `cpuinfo_min_freq`, kHz.
    pub hw_min_khz: Option<u64>,
    /// `cpuinfo_max_freq`, kHz.
    pub hw_max_khz: Option<u64>,
    /// `energy_performance_preference` (intel_pstate/amd-pstate active mode).
    pub energy_performance_preference: Option<String>,
}

/// One cpuidle state (`/sys/devices/system/cpu/cpuN/cpuidle/stateK`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IdleState {
    /// `stateK`.
    pub index: u32,
    /// `name` (`POLL`, `C1`, `C6`…).
    pub name: String,
    /// `desc`.
    pub desc: String,
    /// `latency`: worst-case exit latency, µs.
    pub exit_latency_us: u64,
    /// `residency`: target residency, µs.
    pub residency_us: u64,
    /// `disable` is set (by the user or the driver).
    pub disabled: bool,
}

/// PM QoS CPU latency (`/dev/cpu_dma_latency`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DmaLatencyFacts {
    /// The limit in effect, µs (2000000000 = no limit), read from `/dev/cpu_dma_latency` (root only).
    pub current_us: Fact<i64>,
    /// Processes holding `/dev/cpu_dma_latency` open (each holds a request); unknown without root.
    pub holders: Fact<Vec<ProcessRef>>,
}

/// A process, by pid and command name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRef {
    /// Process id.
    pub pid: u32,
    /// `/proc/PID/comm`.
    pub comm: String,
}

/// Scheduler knobs that cut real-time tasks off.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SchedFacts {
    /// `kernel.sched_rt_period_us`.
    pub rt_period_us: Fact<u64>,
    /// `kernel.sched_rt_runtime_us` (-1 = no limit).
    pub rt_runtime_us: Fact<i64>,
    /// The RT budget of this process's cgroup (cgroup v1 `cpu.rt_runtime_us`, `CONFIG_RT_GROUP_SCHED`);
    /// `None` when the kernel has no RT group scheduling or the file is not visible.
    pub cgroup_rt: Fact<CgroupRt>,
    /// `kernel.timer_migration`.
    pub timer_migration: Fact<bool>,
    /// Container runtime marker found (`docker`, `podman`, `kubepods`, a cgroup path), if any.
    pub container: Fact<String>,
    /// Kernel threads that do a CPU's deferred work or run at a real-time priority (IRQ threads, `ktimers`,
    /// `ksoftirqd`, `rcuc`, …), with their policy, priority and CPUs.
    pub kernel_threads: Fact<Vec<KernelThread>>,
}

/// A kernel thread's scheduling, from `/proc/PID/stat` and `/proc/PID/status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelThread {
    /// Process id.
    pub pid: u32,
    /// `/proc/PID/comm` (`irq/24-ttyS0`, `ktimers/1`, `rcuc/1`).
    pub comm: String,
    /// Scheduling policy: `FIFO`, `RR`, `DEADLINE`, `OTHER`, `BATCH` or `IDLE`.
    pub policy: String,
    /// Real-time priority (1-99; 0 for the time-sharing policies).
    pub rt_priority: u32,
    /// `Cpus_allowed_list`: where it may run.
    pub cpus: CpuList,
}

impl KernelThread {
    /// Whether it runs under a real-time policy (FIFO, RR or DEADLINE).
    pub fn is_rt(&self) -> bool {
        matches!(self.policy.as_str(), "FIFO" | "RR" | "DEADLINE")
    }
}

/// The RT bandwidth of a cgroup.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupRt {
    /// The cgroup path (as in `/proc/self/cgroup`).
    pub cgroup: String,
    /// `cpu.rt_runtime_us` (-1 = no limit, 0 = no RT tasks allowed).
    pub runtime_us: i64,
    /// `cpu.rt_period_us`.
    pub period_us: u64,
}

/// printk levels and consoles.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsoleFacts {
    /// `kernel.printk`.
    pub printk: Fact<PrintkLevels>,
    /// `/proc/consoles`.
    pub consoles: Fact<Vec<Console>>,
}

/// The four numbers of `/proc/sys/kernel/printk`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrintkLevels {
    /// Messages with a level below this reach the consoles (`dmesg -n`).
    pub console_loglevel: u8,
    /// Level of messages printed without one.
    pub default_message_loglevel: u8,
    /// The lowest value `console_loglevel` may be set to.
    pub minimum_console_loglevel: u8,
    /// `console_loglevel` at boot.
    pub default_console_loglevel: u8,
}

/// One registered console (`/proc/consoles`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Console {
    /// Device name (`ttyS0`, `tty0`, `hvc0`, `netcon0`).
    pub name: String,
    /// The flag letters (`EC  p a`): E enabled, C preferred console, B boot, p printk buffer, b blocking,
    /// a safe when CPU offline.
    pub flags: String,
    /// The `E` flag.
    pub enabled: bool,
    /// A UART or similar slow device that prints synchronously (`ttyS`, `ttyAMA`, `ttymxc`…).
    pub serial: bool,
}

/// The clocksource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClockFacts {
    /// `current_clocksource`.
    pub current: Fact<String>,
    /// `available_clocksource`.
    pub available: Fact<Vec<String>>,
    /// TSC-related CPU flags present (`constant_tsc`, `nonstop_tsc`, `tsc_reliable`, `tsc_known_freq`).
    pub tsc_flags: Fact<Vec<String>>,
}

/// Memory management and process limits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryFacts {
    /// Transparent huge pages mode in effect (`always`, `madvise`, `never`).
    pub thp_enabled: Fact<String>,
    /// THP defrag mode in effect.
    pub thp_defrag: Fact<String>,
    /// `RLIMIT_MEMLOCK` of this process, bytes.
    pub memlock: Fact<Limit>,
    /// `RLIMIT_RTPRIO` of this process.
    pub rtprio: Fact<Limit>,
}

/// A resource limit (`u64::MAX` = unlimited).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    /// Soft limit.
    pub soft: u64,
    /// Hard limit.
    pub hard: u64,
}

impl Limit {
    /// The value meaning "unlimited".
    pub const UNLIMITED: u64 = u64::MAX;
}

/// Watchdogs that interrupt every CPU periodically.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WatchdogFacts {
    /// Soft-lockup detector on (`kernel.watchdog` and `kernel.soft_watchdog`).
    pub soft: Fact<bool>,
    /// NMI (hard-lockup) watchdog on (`kernel.nmi_watchdog`).
    pub nmi: Fact<bool>,
    /// `kernel.watchdog_thresh`, seconds.
    pub thresh_s: Fact<u32>,
    /// `kernel.watchdog_cpumask`: CPUs the lockup detectors run on.
    pub cpumask: Fact<CpuList>,
    /// Hardware watchdog devices (`/sys/class/watchdog/*/identity`: `iTCO_wdt`, `softdog`…).
    pub hardware: Fact<Vec<String>>,
}

/// IRQ placement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IrqFacts {
    /// `/proc/irq/default_smp_affinity`.
    pub default_affinity: Fact<CpuList>,
    /// Every numbered IRQ with its affinity.
    pub irqs: Fact<Vec<IrqInfo>>,
    /// Running irqbalance processes (empty when none).
    pub irqbalance: Fact<Vec<ProcessRef>>,
    /// `/sys/devices/virtual/workqueue/cpumask`: CPUs unbound workqueues may run on.
    pub workqueue_cpumask: Fact<CpuList>,
}

/// One numbered IRQ.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IrqInfo {
    /// IRQ number.
    pub irq: u32,
    /// Its description in `/proc/interrupts` (`IO-APIC 4-edge ttyS0`).
    pub name: String,
    /// `smp_affinity_list`, when readable.
    pub affinity: Option<CpuList>,
    /// `effective_affinity_list`, when readable.
    pub effective: Option<CpuList>,
    /// Interrupts handled since boot, per CPU (from `/proc/interrupts`).
    pub counts: Vec<CpuCount>,
}

/// A per-CPU counter value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuCount {
    /// The CPU.
    pub cpu: CpuId,
    /// The value.
    pub count: u64,
}

/// Whether a hypervisor is underneath, and how much it takes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HypervisorFacts {
    /// The `hypervisor` CPU flag (`/proc/cpuinfo`).
    pub cpu_flag: Fact<bool>,
    /// CPUID leaf 0x40000000 vendor signature (`KVMKVMKVM`, `Microsoft Hv`, `XenVMMXenVMM`…).
    pub cpuid_vendor: Fact<String>,
    /// `/sys/hypervisor/type` (Xen).
    pub sys_type: Fact<String>,
    /// DMI system vendor and product (`/sys/class/dmi/id/sys_vendor`, `product_name`).
    pub dmi: Fact<String>,
    /// Steal time since boot per CPU, ns (`/proc/stat`).
    pub steal_ns: Fact<Vec<CpuCount>>,
}

impl HypervisorFacts {
    /// The hypervisor's name when any source shows one, with where it was read.
    pub fn detected(&self) -> Option<(String, String)> {
        if let Some(v) = self.cpuid_vendor.get().filter(|v| !v.is_empty()) {
            return Some((hypervisor_name(v), self.cpuid_vendor.from.clone()));
        }
        if let Some(t) = self.sys_type.get().filter(|t| !t.is_empty()) {
            return Some((t.clone(), self.sys_type.from.clone()));
        }
        if self.cpu_flag.get() == Some(&true) {
            let name = self.dmi.get().cloned().unwrap_or_else(|| "unknown hypervisor".into());
            return Some((name, self.cpu_flag.from.clone()));
        }
        None
    }
}

/// A readable name for a CPUID hypervisor vendor signature.
pub fn hypervisor_name(signature: &str) -> String {
    let s = signature.trim_matches(char::from(0)).trim();
    let name = match s {
        "KVMKVMKVM" => "KVM",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU (TCG)",
        "ACRNACRNACRN" => "ACRN",
        "bhyve bhyve" => "bhyve",
        "QNXQVMBSQG" => "QNX",
        "VBoxVBoxVBox" => "VirtualBox",
        "Linux KVM Hv" => "KVM (Hyper-V enlightenments)",
        "lrpepyh  vr" | "prl hyperv" => "Parallels",
        other => other,
    };
    format!("{name} ({s})")
}

/// What the kernel can trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TracingFacts {
    /// Where tracefs is mounted.
    pub tracefs: Fact<String>,
    /// `available_tracers`.
    pub tracers: Fact<Vec<String>>,
    /// Event subsystems (`events/*` directories).
    pub event_systems: Fact<Vec<String>>,
    /// `kprobe_events` exists.
    pub kprobe_events: Fact<bool>,
    /// `kernel.unprivileged_bpf_disabled` (0 allowed, 1 and 2 disabled).
    pub unprivileged_bpf_disabled: Fact<u32>,
    /// BTF type information (`/sys/kernel/btf/vmlinux`), needed by CO-RE BPF tools.
    pub btf_vmlinux: Fact<bool>,
    /// `kernel.perf_event_paranoid`.
    pub perf_event_paranoid: Fact<i32>,
    /// Tracing switched on in the top-level buffer and in every instance (this process's own excepted), as
    /// found: each costs time on the CPUs it records, also while latscope measures.
    pub active: Fact<Vec<ActiveTracing>>,
}

/// A trace buffer (the top level or an instance) with tracing on and something to record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActiveTracing {
    /// `instances/<name>`, or empty for the top-level buffer.
    pub instance: String,
    /// `current_tracer` when it is not `nop`.
    pub tracer: Option<String>,
    /// Events enabled (`set_event`), as `system:event`.
    pub events: Vec<String>,
    /// The pid in a latscope instance's name (`latscope-<pid>`), and whether that process still runs.
    pub latscope_owner: Option<(u32, bool)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_round_trip_and_unknown_is_explicit() {
        let mut f = SystemFacts::default();
        f.sched.rt_runtime_us = Fact::known(950_000, "/proc/sys/kernel/sched_rt_runtime_us");
        f.smi = Fact::unknown("/dev/cpu/0/msr", "msr driver not loaded");
        let text = serde_json::to_string(&f).expect("serialize");
        let back: SystemFacts = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, f);
        let v: serde_json::Value = serde_json::from_str(&text).expect("value");
        assert_eq!(v["sched"]["rt_runtime_us"]["value"], 950_000);
        assert!(v["smi"]["value"].is_null());
        assert_eq!(v["smi"]["note"], "msr driver not loaded");
        // Missing sections default to unknown.
        let partial: SystemFacts = serde_json::from_str(r#"{"as_root": true}"#).expect("partial");
        assert!(partial.as_root && partial.sched.rt_period_us.get().is_none());
    }

    #[test]
    fn isolcpus_flags_are_stripped() {
        let b = BootParams { isolcpus: Some("managed_irq,domain,2-3".into()), ..BootParams::default() };
        assert_eq!(b.isolcpus_list(), CpuList::parse("2,3").ok());
        assert!(b.isolcpus_managed_irq());
        let plain = BootParams { isolcpus: Some("1".into()), ..BootParams::default() };
        assert_eq!(plain.isolcpus_list(), CpuList::parse("1").ok());
    }

    #[test]
    fn hypervisor_detection_prefers_cpuid() {
        let mut h = HypervisorFacts { cpu_flag: Fact::known(true, "/proc/cpuinfo"), ..HypervisorFacts::default() };
        assert_eq!(h.detected().map(|d| d.0), Some("unknown hypervisor".into()));
        h.cpuid_vendor = Fact::known("KVMKVMKVM".into(), "cpuid 0x40000000");
        assert_eq!(h.detected(), Some(("KVM (KVMKVMKVM)".into(), "cpuid 0x40000000".into())));
        assert_eq!(HypervisorFacts::default().detected(), None);
    }
}
