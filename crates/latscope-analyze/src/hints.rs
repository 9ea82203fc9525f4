//! Known-cause knowledge: what a function, IRQ or pattern in a trace means for latency, and the remedy
//! (printk/console, RT bandwidth timer, RT throttling, idle exit and hypervisor, SMI, IRQ affinity…).

use serde::Serialize;

/// A known latency cause recognised in a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HintKind {
    /// printk writing to a console with interrupts disabled.
    ConsolePrint,
    /// The RT bandwidth (throttling) timer being started from `enqueue_task_rt`.
    RtBandwidthTimer,
    /// RT throttling (`kernel.sched_rt_runtime_us`).
    RtThrottling,
    /// Leaving an idle state, or a hypervisor holding the vCPU.
    IdleExit,
    /// Time with no kernel event at all: firmware (SMI) or hypervisor.
    Hypervisor,
    /// An NMI handler (perf, watchdog).
    Nmi,
}

/// A hint: what was recognised, why it matters and what to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hint {
    /// Which known cause.
    pub kind: HintKind,
    /// What it is, in one sentence.
    pub what: String,
    /// The concrete remedy.
    pub remedy: String,
}

/// Functions of the printk/console path (bare symbol names).
const CONSOLE_FUNCS: &[&str] = &[
    "console_unlock",
    "console_trylock_spinning",
    "console_flush_all",
    "console_emit_next_record",
    "call_console_drivers",
    "vprintk_emit",
    "serial8250_console_write",
    "univ8250_console_write",
    "pl011_console_write",
    "msm_geni_serial_console_write",
];

/// printk-family wrappers that add nothing to a call chain (`vprintk_default` …).
const PRINTK_INTERNAL: &[&str] =
    &["vprintk_default", "vprintk_func", "vprintk", "vprintk_emit", "vprintk_store", "vprintk_deferred"];

/// Generic frames at the bottom of every kernel-thread or syscall stack.
const GENERIC_TAIL: &[&str] = &[
    "kthread",
    "ret_from_fork",
    "ret_from_fork_asm",
    "worker_thread",
    "process_one_work",
    "el0_svc",
    "el0_svc_common",
    "el0_sync",
    "do_syscall_64",
    "entry_SYSCALL_64_after_hwframe",
    "system_call_fastpath",
];

/// Whether `func` (bare name) is part of the console/printk path.
pub fn is_console_func(func: &str) -> bool {
    CONSOLE_FUNCS.contains(&func) || func.ends_with("_console_write")
}

/// The console-printing hint.
pub fn console_print() -> Hint {
    Hint {
        kind: HintKind::ConsolePrint,
        what: "console printing with interrupts off is a known latency source: printk writes every message to \
               the (serial) console synchronously, with irqs disabled, on the CPU that printed"
            .into(),
        remedy: "lower the console loglevel so such messages are not written to the console (`dmesg -n 1`, or \
                 `loglevel=1`/`quiet` on the kernel command line), or move the print out of the hot path (lower \
                 its level, ratelimit it, or drop it)"
            .into(),
    }
}

/// The RT bandwidth timer hint (seed 001).
pub fn rt_bandwidth_timer() -> Hint {
    Hint {
        kind: HintKind::RtBandwidthTimer,
        what: "enqueue_task_rt started the RT bandwidth (throttling period) timer: start_rt_bandwidth() arms it \
               when the first RT task of a period is enqueued, under a global lock"
            .into(),
        remedy:
            "disable RT throttling on a dedicated real-time machine with `sysctl -w kernel.sched_rt_runtime_us=-1` \
                 (then a runaway RT task can starve the CPU), or keep at least one RT task runnable per period so \
                 the timer stays armed"
                .into(),
    }
}

/// The RT throttling hint.
pub fn rt_throttling(runtime_us: Option<u64>, period_us: Option<u64>) -> Hint {
    let split = match (runtime_us, period_us) {
        (Some(r), Some(p)) => format!("kernel.sched_rt_runtime_us={r} of kernel.sched_rt_period_us={p}"),
        _ => "kernel.sched_rt_runtime_us (default 950000 of a 1000000 us period: 50 ms off per second)".into(),
    };
    Hint {
        kind: HintKind::RtThrottling,
        what: format!(
            "RT throttling: real-time tasks used up their bandwidth ({split}), so the kernel kept them off the CPU \
             for the rest of the period although they were runnable (since Linux 6.12 the fair deadline server \
             enforces it: /sys/kernel/debug/sched/fair_server/cpuN/runtime, 50 ms per 1 s period by default)"
        ),
        remedy: "let the RT task sleep or block (a busy-looping SCHED_FIFO task is throttled by design), or, on a \
                 machine where that is intended and other CPUs keep the system alive, disable throttling with \
                 `sysctl -w kernel.sched_rt_runtime_us=-1`"
            .into(),
    }
}

/// The idle-exit / hypervisor hint.
pub fn idle_exit() -> Hint {
    Hint {
        kind: HintKind::IdleExit,
        what: "the CPU was idle when the timer fired: leaving a deep C-state (or, in a VM, the host rescheduling \
               the halted vCPU) takes time before any kernel code runs"
            .into(),
        remedy: "keep the CPU out of deep idle states while latency matters: hold /dev/cpu_dma_latency open at 0 \
                 (latscope and cyclictest do), or boot with `processor.max_cstate=1 intel_idle.max_cstate=0` (or \
                 `idle=poll`); in a VM, pin and isolate the vCPU on the host and use `idle=poll` or haltpoll"
            .into(),
    }
}

/// The "no kernel event" hint.
pub fn hypervisor() -> Hint {
    Hint {
        kind: HintKind::Hypervisor,
        what: "time that no kernel event accounts for: the CPU was taken away below the kernel (a hypervisor \
               running something else, or firmware SMIs)"
            .into(),
        remedy: "on bare metal, check the SMI count (MSR 0x34) and firmware power-management settings; in a VM, \
                 dedicate and pin physical CPUs to this vCPU on the host and check steal time"
            .into(),
    }
}

/// The NMI hint.
pub fn nmi() -> Hint {
    Hint {
        kind: HintKind::Nmi,
        what: "an NMI handler ran (perf sampling or the hard-lockup watchdog)".into(),
        remedy: "disable the NMI watchdog (`sysctl -w kernel.nmi_watchdog=0` or `nmi_watchdog=0`) and stop perf \
                 sampling on the real-time CPUs"
            .into(),
    }
}

/// The call chain worth naming from a stack (innermost first): printk internals and generic bottom frames dropped.
pub fn meaningful_chain(frames: &[&str]) -> Vec<String> {
    frames
        .iter()
        .map(|f| crate::symbol::bare(f))
        .filter(|f| !PRINTK_INTERNAL.contains(f) && !GENERIC_TAIL.contains(f) && !f.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printk_chain_of_seed_000() {
        let frames = [
            "vprintk_default",
            "vprintk_func",
            "printk",
            "__dynamic_pr_debug",
            "__qseecom_unload_app_kthread_func",
            "kthread",
            "ret_from_fork",
        ];
        assert_eq!(
            meaningful_chain(&frames),
            vec!["printk", "__dynamic_pr_debug", "__qseecom_unload_app_kthread_func"]
        );
        assert!(is_console_func("console_trylock_spinning"));
        assert!(is_console_func("foo_console_write"));
        assert!(!is_console_func("schedule"));
        assert!(rt_throttling(None, None).what.contains("sched_rt_runtime_us"));
        assert!(console_print().remedy.contains("dmesg -n 1"));
    }
}
